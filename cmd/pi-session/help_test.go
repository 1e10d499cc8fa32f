package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestHelpNamesEveryVariable: every variable of the README's configuration
// table is in pi-session --help.
func TestHelpNamesEveryVariable(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(readme), "\n## Configuration\n")
	if !ok {
		t.Fatal("README has no Configuration section")
	}
	table, _, _ = strings.Cut(table, "\n## ")
	vars := regexp.MustCompile("(?m)^\\| `([A-Z_]+)` \\|").FindAllStringSubmatch(table, -1)
	if len(vars) < 10 {
		t.Fatalf("found %d variables in the README's table", len(vars))
	}
	for _, v := range vars {
		if !strings.Contains(helpText, "  "+v[1]+" ") {
			t.Errorf("pi-session --help does not name %s", v[1])
		}
	}
}
