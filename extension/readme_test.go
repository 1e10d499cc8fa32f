package extension

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestREADMEListsEveryCommandAndTool: the README's table of what pi-session
// adds to pi names every slash command and tool the extension registers,
// and nothing else.
func TestREADMEListsEveryCommandAndTool(t *testing.T) {
	sources, _ := filepath.Glob("pi-session/*.ts")
	commandRe := regexp.MustCompile(`registerCommand\(\s*"([^"]+)"`)
	toolRe := regexp.MustCompile(`registerTool\((?:tool\()?\{\s*name:\s*"([^"]+)"`)
	var registered []string
	for _, f := range sources {
		if strings.HasSuffix(f, ".test.ts") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range commandRe.FindAllStringSubmatch(string(src), -1) {
			registered = append(registered, "/"+m[1])
		}
		for _, m := range toolRe.FindAllStringSubmatch(string(src), -1) {
			registered = append(registered, m[1])
		}
	}
	if len(registered) < 10 {
		t.Fatalf("found only %d commands and tools in pi-session/*.ts: %v", len(registered), registered)
	}

	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Commands and tools pi-session adds to pi\n")
	if !ok {
		t.Fatal("README has no section \"Commands and tools pi-session adds to pi\"")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var listed []string
	for _, m := range regexp.MustCompile("(?m)^\\| `(/?[a-z_-]+)[^`]*`").FindAllStringSubmatch(section, -1) {
		if !slices.Contains(listed, m[1]) {
			listed = append(listed, m[1])
		}
	}
	slices.Sort(registered)
	slices.Sort(listed)
	if diff := cmp.Diff(slices.Compact(registered), listed); diff != "" {
		t.Errorf("the README's table (+) against what the extension registers (-):\n%s", diff)
	}
}
