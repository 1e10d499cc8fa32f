package budget

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/pi-session/pi-session/clip"
)

func sampleMetadata() Metadata {
	return Metadata{
		SessionID: "0198a2b4-5f2d-74b1-9cd8-17718871d66e", N: 2, Source: SourceBudget,
		CreatedAt:       time.Date(2026, 11, 30, 8, 27, 57, 0, time.UTC),
		Cwd:             "/home/u/repo",
		SessionFile:     "/home/u/.pi/agent/sessions/--home-u-repo--/s.jsonl",
		PreviousHandoff: "/home/u/repo/.ai-work/handoffs/0198a2b4-5f2d-74b1-9cd8-17718871d66e-1.md",
		Repo: &RepoState{Root: "/home/u/repo", Branch: "main", Head: "1f86e0f0b2c3d4e5f60718293a4b5c6d7e8f9012", Upstream: "origin/main",
			Ahead: 2, Dirty: 2, Changes: []string{" M budget/core.go", "?? budget/new.go"}, Known: true},
		Repos: []RepoState{
			{Root: "/home/u/repo", Branch: "main", Head: "1f86e0f0b2c3d4e5f60718293a4b5c6d7e8f9012", Upstream: "origin/main", Ahead: 2, Dirty: 2, Known: true},
			{Root: "/home/u/other", Error: "deadline"},
		},
		UserMessages: []string{"fix the flaky test", "do not touch the public API\nand keep commits small"},
		Resume:       &ResumeResult{Label: "bash /abs/check.sh", Output: "ci: green\n", ExitCode: 0},
		Lint:         []string{".ai-work/task/STATE.md predates the latest state-changing tool call"},
		Discarded:    []string{"/home/u/repo/.ai-work/handoffs/x-1.md (a new run started)"},
		Integrations: []string{"pending jobs/watches: unavailable (no pi-jobs registry in this process)"},
	}
}

func sampleArgs() Args {
	return Args{
		Goal:            "Make the budget engine's e2e test pass; the user asked: \"keep the session bounded\".",
		NextStep:        "Run go test ./e2e -run Budget and read the first failure.",
		Facts:           "HEAD 1f86e0f; go test ./budget passes.",
		UserConstraints: "Never push to main.",
		Hypotheses:      "The faux model's usage is too small to cross soft.",
		FilesToRead:     []string{"/home/u/repo/.ai-work/task/STATE.md"},
		WatchActions:    []WatchAction{{ID: "job-1", Target: "CI run 42", OnComplete: "read the result and continue"}},
	}
}

// TestRenderVisible: the document holds no raw control character or
// invalid byte whatever its parts held (a path, a repository, a resume
// check's output, a user message), and a carriage return before a newline
// (which arguments may hold) is part of the line end, not written out.
func TestRenderVisible(t *testing.T) {
	const h = "\x1b]0;PWNED\x07\u009b31m\xff"
	a, m := sampleArgs(), sampleMetadata()
	a.UserConstraints = "Never push to main.\r\nKeep commits small.\r\n"
	a.FilesToRead = []string{"/home/u/repo/" + h + ".md"}
	m.Repo.Changes = []string{" M " + h}
	m.Resume.Output = "ci: " + h + "\n"
	m.UserMessages = []string{"fix " + h}
	doc, err := Render(a, m, DefaultDocLimits)
	if err != nil {
		t.Fatal(err)
	}
	if i := strings.IndexFunc(doc, clip.IsControl); i >= 0 || !utf8.ValidString(doc) {
		t.Errorf("Render: raw text at %d:\n%q", i, doc)
	}
	for _, want := range []string{"Never push to main.\nKeep commits small.", "/home/u/repo/\\x1b]0;PWNED\\x07\\u009b31m\uFFFD.md", `ci: \x1b]0;PWNED`} {
		if !strings.Contains(doc, want) {
			t.Errorf("Render lacks %q:\n%s", want, doc)
		}
	}
	lone := a
	lone.UserConstraints = "over\rwrite"
	if doc, _ := Render(lone, m, DefaultDocLimits); !strings.Contains(doc, `over\x0dwrite`) {
		t.Errorf("a lone carriage return is not written out:\n%s", doc)
	}
}

func TestRenderGolden(t *testing.T) {
	cases := map[string]func() (Args, Metadata){
		"handoff-basic.md": func() (Args, Metadata) { return sampleArgs(), sampleMetadata() },
		"handoff-minimal.md": func() (Args, Metadata) {
			m := Metadata{SessionID: "s", N: 1, Source: SourceManual, CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Cwd: "/tmp/x"}
			return Args{Goal: "g", NextStep: "n", Facts: "f"}, m
		},
		"handoff-oversize-sections.md": func() (Args, Metadata) {
			m := sampleMetadata()
			m.UserMessages = nil
			for i := 0; i < 40; i++ {
				m.UserMessages = append(m.UserMessages, fmt.Sprintf("request %02d: %s", i, strings.Repeat("word ", 30)))
			}
			m.UserMessages = append(m.UserMessages, strings.Repeat("a huge pasted log line\n", 400))
			m.Repo.Changes = nil
			for i := 0; i < 50; i++ {
				m.Repo.Changes = append(m.Repo.Changes, fmt.Sprintf(" M src/file_%03d_with_a_long_name_%s.go", i, strings.Repeat("x", 20)))
			}
			m.Repo.Dirty = 50
			for i := 0; i < 12; i++ {
				m.Repos = append(m.Repos, RepoState{Root: "/w/" + strings.Repeat("deep/", 80) + fmt.Sprint(i), Branch: "b", Head: "abc", Known: true})
			}
			m.Resume = &ResumeResult{Label: "check", Output: strings.Repeat("0123456789abcdef\n", 600), ExitCode: 3}
			for i := 0; i < 20; i++ {
				m.Lint = append(m.Lint, strings.Repeat("lint ", 100))
			}
			return sampleArgs(), m
		},
		"handoff-pins.md": func() (Args, Metadata) {
			// The agent quoted one pin in user_constraints and not the
			// other: both are in the pins section, first.
			m := sampleMetadata()
			m.Pins = []string{"Never push to main.", "Migrations:\n- each gets a down script\n- never edit an applied one"}
			return sampleArgs(), m
		},
		"handoff-long-constraints.md": func() (Args, Metadata) {
			a := sampleArgs()
			var b strings.Builder
			for i := 0; b.Len() < 20<<10; i++ {
				fmt.Fprintf(&b, "Constraint %d: keep this exact wording, including its tail marker END%d.\n", i, i)
			}
			a.UserConstraints = b.String()
			return a, sampleMetadata()
		},
	}
	for name, mk := range cases {
		t.Run(name, func(t *testing.T) {
			a, m := mk()
			doc, err := Render(a, m, DefaultDocLimits)
			if err != nil {
				t.Fatal(err)
			}
			if len(doc) > DocumentCap {
				t.Errorf("document of %d bytes, over the cap", len(doc))
			}
			if a.UserConstraints != "" && !strings.Contains(doc, strings.TrimRight(a.UserConstraints, "\n")) {
				t.Errorf("user constraints were not kept verbatim")
			}
			golden(t, name, []byte(doc))
		})
	}
}

func TestRenderOversizeIsAnError(t *testing.T) {
	a := sampleArgs()
	a.Facts = strings.Repeat("fact ", 3000)
	_, err := Render(a, sampleMetadata(), DefaultDocLimits)
	var oe *OversizeError
	if !errors.As(err, &oe) || !strings.Contains(err.Error(), "facts 15000") || !strings.Contains(err.Error(), "budget of 12288") {
		t.Errorf("oversize narrative: %v", err)
	}
	a = sampleArgs()
	a.UserConstraints = strings.Repeat("must ", 12000)
	_, err = Render(a, sampleMetadata(), DefaultDocLimits)
	if !errors.As(err, &oe) || !strings.Contains(err.Error(), "never cut") || !strings.Contains(err.Error(), "over the cap of 53248") {
		t.Errorf("oversize constraints: %v", err)
	}
}

// TestRenderPinsUncapped: pins are not counted against the cap: 40 pins
// of 2,000 characters on top of a document near its cap are all there,
// whole, before the goal; the same document 1 KiB over the cap without
// them is still refused.
func TestRenderPinsUncapped(t *testing.T) {
	a := sampleArgs()
	m := sampleMetadata()
	for i := range 40 {
		m.Pins = append(m.Pins, fmt.Sprintf("Rule %d: %s", i, strings.Repeat("ü", 1990)))
	}
	bare, err := Render(a, Metadata{SessionID: "s", N: 1}, DefaultDocLimits)
	if err != nil {
		t.Fatal(err)
	}
	a.UserConstraints = strings.Repeat("c", DocumentCap-len(bare)-2048)
	doc, err := Render(a, m, DefaultDocLimits)
	if err != nil {
		t.Fatalf("a document near its cap with 40 pins: %v", err)
	}
	goal := strings.Index(doc, "## Goal")
	for _, p := range m.Pins {
		if i := strings.Index(doc, "- "+p+"\n"); i < 0 || i > goal {
			t.Fatalf("pin %.20q is not whole before the goal (at %d, goal at %d)", p, i, goal)
		}
	}
	if !strings.HasPrefix(doc[strings.Index(doc, "\n## "):], "\n## "+PinsTitle+"\n\n- Rule 0: ") {
		t.Errorf("the pins are not the first section:\n%.600s", doc)
	}
	a.UserConstraints += strings.Repeat("c", 4096)
	var oe *OversizeError
	if _, err := Render(a, m, DefaultDocLimits); !errors.As(err, &oe) || !strings.Contains(err.Error(), "the user's pins are not counted") {
		t.Errorf("over the cap without the pins: %v", err)
	}
}

func TestParseArgs(t *testing.T) {
	long := strings.Repeat("x", 400)
	for _, c := range []struct {
		name, in string
		want     []string // substrings of the error; nil: valid
	}{
		{"valid", `{"goal":"g","next_step":"n","facts":"f","files_to_read":["notes.md","/abs/a.md"]}`, nil},
		{"missing required", `{"goal":"g"}`, []string{"next_step: required", "facts: required"}},
		{"empty goal", `{"goal":"  ","next_step":"n","facts":"f"}`, []string{"goal: required"}},
		{"wrong type", `{"goal":5,"next_step":"n","facts":["a"]}`, []string{"goal: must be a string, got 5", `facts: must be a string, got ["a"]`}},
		{"not an object", `[1]`, []string{"must be a JSON object"}},
		{"unknown", `{"goal":"g","next_step":"n","facts":"f","nextstep":"x"}`, []string{"nextstep: unknown argument"}},
		{"files not array", `{"goal":"g","next_step":"n","facts":"f","files_to_read":"a.md"}`, []string{"files_to_read: must be an array"}},
		{"watch missing", `{"goal":"g","next_step":"n","facts":"f","watch_actions":[{"id":"a"}]}`, []string{"watch_actions[0].target: required", "watch_actions[0].on_complete: required"}},
		{"watch too long", `{"goal":"g","next_step":"n","facts":"f","watch_actions":[{"id":"a","target":"` + long + `","on_complete":"c"}]}`, []string{"watch_actions[0].target: 400 characters, at most 300", "…(400 chars)"}},
		{"watch dup", `{"goal":"g","next_step":"n","facts":"f","watch_actions":[{"id":"a","target":"t","on_complete":"c"},{"id":"a","target":"t","on_complete":"c"}]}`, []string{"watch_actions[1].id: duplicate id a"}},
		{"escape in goal", `{"goal":"g\u001b]52;c;SGk=\u0007","next_step":"n\u0000x","facts":"f\u009b2J"}`, []string{"goal: contains the control character U+001B at byte 1", "next_step: contains the control character U+0000 at byte 1", "facts: contains the control character U+009B at byte 1"}},
		{"escape in watch", `{"goal":"g","next_step":"n","facts":"f","watch_actions":[{"id":"\u001b[2J","target":"t","on_complete":"c"}]}`, []string{"watch_actions[0].id: contains the control character U+001B"}},
		{"long value echoed clipped", `{"goal":"g","next_step":"n","facts":{"x":"` + long + `"}}`, []string{"facts: must be a string", "…(408 chars)"}},
	} {
		a, err := ParseArgs([]byte(c.in), "/w")
		if c.want == nil {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			} else if a.FilesToRead[0] != "/w/notes.md" {
				t.Errorf("%s: relative path resolved to %q", c.name, a.FilesToRead[0])
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error lacks %q:\n%v", c.name, w, err)
			}
		}
		if !strings.Contains(err.Error(), "call context_handoff again") {
			t.Errorf("%s: error does not ask for a corrected call", c.name)
		}
	}
}

func FuzzParseArgs(f *testing.F) {
	f.Add([]byte(`{"goal":"g","next_step":"n","facts":"f","files_to_read":["a"],"watch_actions":[{"id":"a","target":"t","on_complete":"c"}]}`))
	f.Add([]byte(`{"goal":null}`))
	f.Add([]byte(`{"goal":"g\u001b]52;c;SGk=\u0007","next_step":"n\u0000","facts":"\u009b2J","x\u001b[2J":1}`))
	f.Add([]byte(`{"watch_actions":[{"id":"a","id":"b"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := ParseArgs(data, "/w")
		if err != nil {
			if len(err.Error()) > 8*600+400 {
				t.Fatalf("error of %d bytes", len(err.Error()))
			}
			return
		}
		if a.Goal == "" || a.NextStep == "" || a.Facts == "" {
			t.Fatalf("valid args without a required field: %+v", a)
		}
		for _, f := range []string{a.Goal, a.NextStep, a.Facts, a.UserConstraints, a.Decisions, a.Hypotheses, a.OpenItems, a.LaunchPrompt} {
			if _, r, ok := controlChar(f); ok {
				t.Fatalf("valid args with the control character %U", r)
			}
		}
		doc, err := Render(a, Metadata{SessionID: "s", N: 1}, DefaultDocLimits)
		if err == nil && len(doc) > DocumentCap {
			t.Fatalf("document of %d bytes", len(doc))
		}
	})
}

// TestCheckArgsFiles: files_to_read that the next process could not read
// are named for what they are: a FIFO (reading it blocks) or a device is
// refused, a link loop is "cannot be read" with the reason rather than
// "does not exist", and a long path is echoed clipped.
func TestCheckArgsFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	loop := filepath.Join(dir, "loop")
	if err := os.Symlink(loop, loop); err != nil {
		t.Fatal(err)
	}
	long := filepath.Join(dir, strings.Repeat("d/", 150)+"x")
	a := Args{FilesToRead: []string{fifo, "/dev/zero", loop, dir, long}}
	problems, missing := CheckArgs(a, nil)
	want := []string{
		"files_to_read: " + fifo + " is a named pipe, not a file to read",
		"files_to_read: /dev/zero is a device, not a file to read",
		"files_to_read: " + loop + " cannot be read: too many levels of symbolic links",
		"files_to_read: " + clip.Echo(long) + " does not exist",
	}
	if diff := cmp.Diff(want, problems); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{loop, long}, missing); diff != "" {
		t.Errorf("missing (-want +got):\n%s", diff)
	}
	// A launch_prompt file is the relaunched pi's first prompt: capped
	// like the text (a 1 MB file was accepted).
	big := filepath.Join(dir, "prompt.md")
	if err := os.WriteFile(big, make([]byte, MaxLaunchPrompt+1), 0o600); err != nil {
		t.Fatal(err)
	}
	problems, _ = CheckArgs(Args{LaunchPrompt: big}, nil)
	if want := fmt.Sprintf("launch_prompt: %s is %d bytes, over the limit of %d for a launch prompt", big, MaxLaunchPrompt+1, MaxLaunchPrompt); !slices.Contains(problems, want) {
		t.Errorf("oversize launch prompt file: %q", problems)
	}
}
