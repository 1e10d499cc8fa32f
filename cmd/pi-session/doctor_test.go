package main

import (
	"errors"
	"testing"
)

func TestFindingOneLine(t *testing.T) {
	f := finding{level: "FAIL", name: "socket", detail: "hooks: no usable socket directory: a: denied\nb: too long\n", fix: "make it\nwritable"}
	want := "FAIL  socket     hooks: no usable socket directory: a: denied; b: too long; fix: make it; writable"
	if got := f.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestMeaningfulLine(t *testing.T) {
	for _, tt := range []struct {
		lines []string
		want  string
	}{
		{[]string{"/x/cli.js:3", "import { a } from 'b';", "         ^^^", "SyntaxError: no export a", "    at X (node:y:1:2)", "Node.js v20.9.0"}, "SyntaxError: no export a"},
		{[]string{"node:internal/modules/cjs/loader:1080", "  throw err;", "  ^", "", "Error [ERR_REQUIRE_ESM]: require() of ES Module", "    at Object.<anonymous> (/x.js:1:1)"}, "Error [ERR_REQUIRE_ESM]: require() of ES Module"},
		{[]string{"/usr/bin/env: 'node': No such file or directory"}, "/usr/bin/env: 'node': No such file or directory"},
		{[]string{"   ^^^", "pi: cannot open the terminal"}, "pi: cannot open the terminal"},
	} {
		if got := meaningfulLine(tt.lines); got != tt.want {
			t.Errorf("meaningfulLine(%q) = %q, want %q", tt.lines, got, tt.want)
		}
	}
	e := &runError{command: "pi --version", err: errors.New("exit status 1"), stderr: []string{"a", "TypeError: x", "Node.js v20.1.0"}}
	if got, want := e.Error(), "pi --version: exit status 1: TypeError: x (Node.js v20.1.0) (2 more lines: run pi --version)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}
