package budget

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A document this writer renders parses back to the fields the backstop
// uses, with every other section left out.
func TestParseHandoffMarkdownRoundTrip(t *testing.T) {
	a := sampleArgs()
	a.UserConstraints = "Never push to main.\n\n### From the kickoff\n\n## Release notes (the user's own heading)\n\nKeep the changelog format.\n\n```\n## not a heading: inside a fence\n```"
	a.FilesToRead = []string{"/home/u/repo/.ai-work/task/STATE.md", "docs/design notes.md"}
	doc, err := Render(a, sampleMetadata(), DefaultDocLimits)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := ParseHandoffMarkdown(doc)
	if !ok {
		t.Fatal("no section found")
	}
	want := Args{Goal: a.Goal, NextStep: a.NextStep, Facts: a.Facts, UserConstraints: a.UserConstraints, FilesToRead: a.FilesToRead}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parsed\n%#v\nwant\n%#v", got, want)
	}
}

func TestParseHandoffMarkdown(t *testing.T) {
	for _, tt := range []struct {
		name string
		doc  string
		want Args
		ok   bool
	}{
		{"older titles, nested headings kept", "# Handoff s-1\r\n\r\n## Objective\r\n\r\nShip it.\r\n\r\n### Detail\r\n\r\nthe why\r\n\r\n## Constraints\r\n\r\n- never force-push\r\n\r\n## Next steps\r\n\r\nrun make\r\n\r\n## Read first\r\n\r\n* `a/b.go`\r\n- c.md\r\nprose is not a path\r\n",
			Args{Goal: "Ship it.\n\n### Detail\n\nthe why", UserConstraints: "- never force-push", NextStep: "run make", FilesToRead: []string{"a/b.go", "c.md"}}, true},
		{"a level-1 heading ends a section", "## Goal\n\ng\n\n# Appendix\n\nnot the goal\n", Args{Goal: "g"}, true},
		{"a fenced heading is text", "## Facts\n\n~~~\n## Goal\n~~~\n", Args{Facts: "~~~\n## Goal\n~~~"}, true},
		{"an unclosed fence runs to the end", "## Facts\n\n```\n## Goal\nx\n", Args{Facts: "```\n## Goal\nx"}, true},
		{"empty sections are not found", "## Goal\n\n   \n## Next step\n", Args{}, false},
		{"no known section", "# Notes\n\n## Things\n\nstuff\n", Args{}, false},
		{"empty", "", Args{}, false},
	} {
		got, ok := ParseHandoffMarkdown(tt.doc)
		if ok != tt.ok || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: got %#v, %v\nwant %#v, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

// ReadPrior reads the sidecar, falls back to the Markdown when the
// sidecar is missing or damaged, and says why when neither can be read.
func TestReadPrior(t *testing.T) {
	dir := t.TempDir()
	a := sampleArgs()
	doc, err := Render(a, sampleMetadata(), DefaultDocLimits)
	if err != nil {
		t.Fatal(err)
	}
	sc := &Sidecar{Version: 1, ID: "s-1", Path: filepath.Join(dir, "s-1.md"), Args: a}
	if err := WriteHandoff(dir, sc, doc); err != nil {
		t.Fatal(err)
	}
	got, err := ReadPrior(sc.Path)
	if err != nil || got.recovered != "" || !reflect.DeepEqual(got.Args, a) {
		t.Fatalf("with its sidecar: %v, %q, %#v", err, got.recovered, got)
	}
	side := strings.TrimSuffix(sc.Path, ".md") + ".json"
	for _, damage := range []func(){
		func() { os.WriteFile(side, []byte(`{"args": {"goal": `), 0o600) },
		func() { os.Remove(side) },
	} {
		damage()
		got, err = ReadPrior(sc.Path)
		if err != nil || got.recovered != "markdown" || got.Args.Goal != a.Goal || got.Args.UserConstraints != a.UserConstraints || got.Path != sc.Path {
			t.Errorf("without a usable sidecar: %v, %#v", err, got)
		}
	}
	os.Remove(sc.Path)
	if _, err := ReadPrior(sc.Path); err == nil || !strings.Contains(err.Error(), "no sidecar") || !strings.Contains(err.Error(), "s-1.md") {
		t.Errorf("neither file: %v", err)
	}
	if p := priorHandoff(sc.Path); p == nil || p.Path != sc.Path || !strings.HasPrefix(p.recovered, "unreadable: ") {
		t.Errorf("priorHandoff of a lost handoff = %#v, want its path and why", p)
	}
	if p := priorHandoff(""); p != nil {
		t.Errorf("priorHandoff without a prior = %#v", p)
	}
	// The prior's path comes from the session: FIFOs in place of the
	// handoff and its sidecar are refused at once, not waited on forever.
	if err := syscall.Mkfifo(side, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(sc.Path, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan *Sidecar, 1)
	go func() { done <- priorHandoff(sc.Path) }()
	select {
	case p := <-done:
		if !strings.Contains(p.recovered, "s-1.json: a named pipe") || !strings.Contains(p.recovered, "s-1.md: a named pipe") {
			t.Errorf("priorHandoff of FIFOs = %q, want both named as named pipes", p.recovered)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("priorHandoff of a FIFO still blocked after 20s")
	}
}

// The mechanical summary: bounded, marked excerpts from a sidecar, the
// same from a Markdown-only handoff (nested headings kept), and a cited
// prior that could not be read.
func TestMechanicalSummaryGolden(t *testing.T) {
	big := sampleArgs()
	big.Goal = strings.Repeat("goal words ", 200)
	big.Facts = strings.Repeat("a fact. ", 300)
	big.NextStep = strings.Repeat("step ", 200)
	big.UserConstraints = "Never push to main.\n\n### Style\n\nKeep commits small."
	big.FilesToRead = []string{"/short/path.md", "/" + strings.Repeat("long/", 300) + "path.md", "/another.md"}
	requests := []string{"fix the flaky test", "and do not touch the public API"}
	const file = "/home/u/.pi/agent/sessions/s.jsonl"

	md := "# Handoff s-1\n\n## Goal\n\nShip the relay.\n\n## User constraints (verbatim)\n\nNever push to main.\n\n### Style\n\nKeep commits small.\n\n## Verified facts\n\ngo test passes\n\n## Files to read first\n\n- /repo/STATE.md\n"
	legacy, _ := ParseHandoffMarkdown(md)

	var b strings.Builder
	for _, c := range []struct {
		name  string
		prior *Sidecar
	}{
		{"sidecar, oversize fields", &Sidecar{Path: "/repo/.ai-work/handoffs/s-1.md", Args: big}},
		{"markdown only", &Sidecar{Path: "/repo/.ai-work/handoffs/s-1.md", Args: legacy, recovered: "markdown"}},
		{"unreadable", &Sidecar{Path: "/repo/.ai-work/handoffs/s-1.md", recovered: "unreadable: no sidecar (open /repo/.ai-work/handoffs/s-1.json: no such file or directory) and no Markdown: open /repo/.ai-work/handoffs/s-1.md: no such file or directory"}},
		{"no prior handoff", nil},
	} {
		out := MechanicalSummary(c.prior, requests, nil, file)
		if strings.Contains(out, strings.Repeat("long/", 300)) {
			t.Errorf("%s: an oversize read-first path was cut into the summary instead of omitted", c.name)
		}
		b.WriteString("==== " + c.name + "\n" + out + "\n")
	}
	golden(t, "mechanical.golden", []byte(b.String()))
}

func FuzzParseHandoffMarkdown(f *testing.F) {
	f.Add("## Goal\n\ng\n## Next step\n\nn\n")
	f.Add("## Constraints\n\n```\n## Goal\n```\n### x\n")
	f.Add("## Read first\n\n- a\n* `b`\n")
	f.Fuzz(func(t *testing.T, doc string) {
		a, ok := ParseHandoffMarkdown(doc)
		total := len(a.Goal) + len(a.NextStep) + len(a.Facts) + len(a.UserConstraints)
		for _, p := range a.FilesToRead {
			total += len(p)
			if p == "" || !strings.Contains(doc, p) {
				t.Fatalf("file %q is not in the document", p)
			}
		}
		if total > len(doc) {
			t.Fatalf("recovered %d bytes from a %d-byte document", total, len(doc))
		}
		for _, s := range []string{a.Goal, a.NextStep, a.Facts, a.UserConstraints} {
			if s != "" && !strings.Contains(strings.ReplaceAll(doc, "\r\n", "\n"), s) {
				t.Fatalf("field %q is not in the document", s)
			}
		}
		if ok != (total > 0) {
			t.Fatalf("found=%v with %d bytes recovered", ok, total)
		}
	})
}

func TestNestHeadings(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"# A\n\n## B\ntext", "#### A\n\n##### B\ntext"},
		{"### A\n###### deep", "#### A\n###### deep"},
		{"#hashtag\n#### already nested", "#hashtag\n#### already nested"},
		{"## A\n```\n# code comment\n```\n~~~\n## x\n~~~", "#### A\n```\n# code comment\n```\n~~~\n## x\n~~~"},
		{"no headings", "no headings"},
	} {
		if got := nestHeadings(tt.in, 4); got != tt.want {
			t.Errorf("nestHeadings(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
