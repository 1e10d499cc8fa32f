// Command testtotals reads `go test -json` on stdin, prints what plain `go test` prints (a line per package, the output of failing tests), then the totals: tests passed, skipped and failed, and which.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// event is one record of `go test -json` (cmd/test2json), with the build
// records of Go 1.24 and later.
type event struct {
	Time        time.Time
	Action      string
	Package     string
	Test        string
	Elapsed     float64
	Output      string
	ImportPath  string
	FailedBuild string
}

// result is one test's end.
type result struct {
	pkg, test, why string // why: a skip's reason, the last line it printed
}

// totals follows the stream: what to print now, and the counts.
type totals struct {
	out     map[string][]string // package + "\x00" + test: output held until the test ends
	passed  int
	skipped []result
	failed  []result
	pkgs    struct{ ok, failed, noTests, buildFailed int }
	first   time.Time
	last    time.Time
	broken  int // lines that were not JSON events
}

func newTotals() *totals { return &totals{out: map[string][]string{}} }

// add takes one event and returns what to print for it.
func (t *totals) add(e event) string {
	if !e.Time.IsZero() {
		if t.first.IsZero() {
			t.first = e.Time
		}
		t.last = e.Time
	}
	key := e.Package + "\x00" + e.Test
	switch e.Action {
	case "build-output":
		return e.Output
	case "build-fail":
		t.pkgs.buildFailed++
		return ""
	case "output":
		if e.Test == "" {
			if e.Output == "PASS\n" {
				return "" // plain go test says ok for a package that passes
			}
			return e.Output
		}
		if strings.HasPrefix(e.Output, "=== ") { // RUN, PAUSE, CONT, NAME: -v only
			return ""
		}
		t.out[key] = append(t.out[key], e.Output)
		return ""
	case "pass", "fail", "skip":
		if e.Test == "" {
			return t.packageEnd(e)
		}
		held := t.out[key]
		delete(t.out, key)
		switch e.Action {
		case "pass":
			t.passed++
		case "skip":
			t.skipped = append(t.skipped, result{e.Package, e.Test, reason(held)})
		case "fail":
			t.failed = append(t.failed, result{pkg: e.Package, test: e.Test})
			return strings.Join(held, "")
		}
	}
	return ""
}

// packageEnd counts a package's end; a failed one also prints what its
// tests printed without ending (a panic, a timeout).
func (t *totals) packageEnd(e event) string {
	switch {
	case e.Action == "skip":
		t.pkgs.noTests++
	case e.Action == "pass":
		t.pkgs.ok++
	case e.FailedBuild != "":
		// counted at build-fail
	default:
		t.pkgs.failed++
	}
	var b strings.Builder
	var keys []string
	for k := range t.out {
		if strings.HasPrefix(k, e.Package+"\x00") {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		if e.Action == "fail" {
			b.WriteString(strings.Join(t.out[k], ""))
		}
		delete(t.out, k)
	}
	return b.String()
}

// reason is a skipped test's last line before its "--- SKIP".
func reason(held []string) string {
	for i := len(held) - 1; i >= 0; i-- {
		l := strings.TrimSpace(held[i])
		if l != "" && !strings.HasPrefix(l, "--- SKIP") {
			return l
		}
	}
	return ""
}

// failedNow reports whether anything failed.
func (t *totals) failedNow() bool {
	return len(t.failed) > 0 || t.pkgs.failed > 0 || t.pkgs.buildFailed > 0
}

// summary is the totals block printed at the end.
func (t *totals) summary() string {
	var b strings.Builder
	b.WriteString("\n")
	topSkipped := 0
	for _, r := range t.skipped {
		if !strings.Contains(r.test, "/") {
			topSkipped++
		}
	}
	if len(t.skipped) > 0 {
		fmt.Fprintf(&b, "skipped (%d):\n", len(t.skipped))
		shown := t.skipped
		if len(shown) > 20 {
			shown = shown[:20]
		}
		for _, r := range shown {
			fmt.Fprintf(&b, "  %s %s", short(r.pkg), r.test)
			if r.why != "" {
				fmt.Fprintf(&b, ": %s", r.why)
			}
			b.WriteString("\n")
		}
		if len(t.skipped) > len(shown) {
			fmt.Fprintf(&b, "  and %d more\n", len(t.skipped)-len(shown))
		}
	}
	if len(t.failed) > 0 {
		fmt.Fprintf(&b, "failed (%d):\n", len(t.failed))
		for _, r := range t.failed {
			fmt.Fprintf(&b, "  %s %s\n", short(r.pkg), r.test)
		}
	}
	run := t.passed + len(t.failed) + len(t.skipped)
	verdict := "PASS"
	if t.failedNow() {
		verdict = "FAIL"
	}
	fmt.Fprintf(&b, "%s: %d tests run (subtests included): %d passed, %d skipped, %d failed", verdict, run, t.passed, len(t.skipped), len(t.failed))
	if !t.first.IsZero() {
		fmt.Fprintf(&b, "; %s", t.last.Sub(t.first).Round(100*time.Millisecond))
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "packages: %d ok, %d failed, %d did not build, %d without tests\n", t.pkgs.ok, t.pkgs.failed, t.pkgs.buildFailed, t.pkgs.noTests)
	if t.broken > 0 {
		fmt.Fprintf(&b, "(%d lines of the stream were not go test -json events; printed as they came)\n", t.broken)
	}
	return b.String()
}

// short is a package path without the module's prefix.
func short(pkg string) string {
	if i := strings.Index(pkg, "/pi-session/pi-session/"); i >= 0 {
		return pkg[i+len("/pi-session/pi-session/"):]
	}
	return pkg
}

// run copies the stream's readable form to w and returns the exit
// status: 1 when a test or package failed, 0 otherwise.
func run(r io.Reader, w io.Writer) int {
	t := newTotals()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	bw := bufio.NewWriter(w)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			t.broken++
			fmt.Fprintf(bw, "%s\n", sc.Bytes())
		} else {
			bw.WriteString(t.add(e))
		}
		if bw.Buffered() > 0 {
			bw.Flush() // as it comes: a package's line when it ends
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(bw, "testtotals: reading the stream: %v\n", err)
		t.pkgs.failed++
	}
	bw.WriteString(t.summary())
	bw.Flush()
	if t.failedNow() {
		return 1
	}
	return 0
}

func main() {
	os.Exit(run(os.Stdin, os.Stdout))
}
