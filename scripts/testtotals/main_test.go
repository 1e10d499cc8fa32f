package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pi-session/pi-session/golden"
)

// TestStreams replays recorded `go test -json` streams: a passing run of
// two packages, and one with a failing subtest, a skip, a panic, a build
// failure and a package without tests.
func TestStreams(t *testing.T) {
	for _, tt := range []struct {
		name string
		code int
	}{
		{"pass", 0},
		{"mixed", 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", tt.name+".jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var out strings.Builder
			if code := run(f, &out); code != tt.code {
				t.Errorf("status %d, want %d", code, tt.code)
			}
			golden.Check(t, filepath.Join("testdata", tt.name+".golden"), out.String())
		})
	}
}

// TestEvents: what each event prints, and the counts.
func TestEvents(t *testing.T) {
	p := "github.com/pi-session/pi-session/x"
	events := []event{
		{Action: "start", Package: p},
		{Action: "run", Package: p, Test: "TestA"},
		{Action: "output", Package: p, Test: "TestA", Output: "=== RUN   TestA\n"},
		{Action: "output", Package: p, Test: "TestA", Output: "    a_test.go:1: said\n"},
		{Action: "output", Package: p, Test: "TestA", Output: "--- PASS: TestA (0.00s)\n"},
		{Action: "pass", Package: p, Test: "TestA"},
		{Action: "output", Package: p, Test: "TestB", Output: "    b_test.go:2: no pi\n"},
		{Action: "output", Package: p, Test: "TestB", Output: "--- SKIP: TestB (0.00s)\n"},
		{Action: "skip", Package: p, Test: "TestB"},
		{Action: "output", Package: p, Test: "TestC", Output: "    c_test.go:3: wrong\n"},
		{Action: "output", Package: p, Test: "TestC", Output: "--- FAIL: TestC (0.00s)\n"},
		{Action: "fail", Package: p, Test: "TestC"},
		{Action: "output", Package: p, Test: "TestD", Output: "    d_test.go:4: cut off by a timeout\n"},
		{Action: "output", Package: p, Output: "PASS\n"},
		{Action: "output", Package: p, Output: "FAIL\tgithub.com/pi-session/pi-session/x\t1.0s\n"},
		{Action: "fail", Package: p},
	}
	var got []string
	tt := newTotals()
	for _, e := range events {
		got = append(got, tt.add(e))
	}
	want := []string{"", "", "", "", "", "", "", "", "", "", "", "    c_test.go:3: wrong\n--- FAIL: TestC (0.00s)\n",
		"", "", "FAIL\tgithub.com/pi-session/pi-session/x\t1.0s\n", "    d_test.go:4: cut off by a timeout\n"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("printed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]result{{p, "TestB", "b_test.go:2: no pi"}}, tt.skipped, cmp.AllowUnexported(result{})); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
	if tt.passed != 1 || len(tt.failed) != 1 || tt.pkgs.failed != 1 || !tt.failedNow() {
		t.Errorf("counts: %+v", tt)
	}
	if s := tt.summary(); !strings.Contains(s, "FAIL: 3 tests run (subtests included): 1 passed, 1 skipped, 1 failed\n") || !strings.Contains(s, "  x TestB: b_test.go:2: no pi\n") {
		t.Errorf("summary:\n%s", s)
	}
}

// TestNotJSON: a line that is no event is printed as it came and counted.
func TestNotJSON(t *testing.T) {
	var out strings.Builder
	code := run(strings.NewReader("go: downloading x\n{\"Action\":\"pass\",\"Package\":\"p\"}\n"), &out)
	if code != 0 || !strings.HasPrefix(out.String(), "go: downloading x\n") || !strings.Contains(out.String(), "(1 lines of the stream were not go test -json events") {
		t.Errorf("status %d, output:\n%s", code, out.String())
	}
}
