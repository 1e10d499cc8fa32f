package relay

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-session/pi-session/golden"
	"github.com/pi-session/pi-session/session"
)

// openReader reads a file with session.Open.
func openReader(path string, fn func(*session.File) error) error {
	f, err := session.Open(path)
	if err != nil {
		return err
	}
	return fn(f)
}

// fakeGit answers for the fixture's cwd and worktrees with fixed commits,
// and fails elsewhere (as git does outside a repository).
func fakeGit(ctx context.Context, dir, since string) ([]string, error) {
	if strings.Contains(dir, "/worktrees/") {
		return []string{"b2c3d4e work in " + filepath.Base(dir)}, nil
	}
	if strings.HasSuffix(dir, "/work") {
		return []string{"a1b2c3d Speed up symbol resolution", "9f8e7d6 Add NOTES.md"}, nil
	}
	return nil, os.ErrNotExist
}

// goldens are the notes checked against testdata/<name>.golden: every
// recorded session at its leaf, and the long one under small caps.
var goldens = []struct {
	name, fixture string
	limits        func(*Limits)
}{
	{"short", "short", nil},
	{"long", "long", nil},
	{"relayed", "relayed", nil},
	{"branch", "branch", nil},
	{"rules", "rules", nil},
	{"long-small", "long", func(l *Limits) { l.Total = 1500; l.UserMessages = 600; l.UserMessageEach = 200 }},
	{"long-tiny", "long", func(l *Limits) { l.Total = 500 }},
}

func composeFixture(t *testing.T, fixture string, cfg Config) Prepared {
	t.Helper()
	p, err := Compose(context.Background(), openReader, fakeGit, filepath.Join("testdata", fixture+".jsonl"), "", "", 0, cfg, 2, "/agent/context-relay/"+fixture+"/2.md")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestGoldenNotes(t *testing.T) {
	for _, g := range goldens {
		cfg := DefaultConfig()
		if g.limits != nil {
			g.limits(&cfg.Limits)
		}
		p := composeFixture(t, g.fixture, cfg)
		golden.Check(t, filepath.Join("testdata", g.name+".golden"), p.Text)
		if n := runes(p.Text); n > cfg.Limits.Total && g.name != "long-tiny" {
			t.Errorf("%s: the note has %d characters, over limits.total %d", g.name, n, cfg.Limits.Total)
		}
		// The same session gives the same note.
		if again := composeFixture(t, g.fixture, cfg); again.Text != p.Text {
			t.Errorf("%s: a second note differs from the first", g.name)
		}
	}
}

// TestNoteContents checks what the golden notes must hold, whatever their
// layout: constraints verbatim and current, edited and abandoned text
// absent, subagents with RUNNING first, changed files, git commits.
func TestNoteContents(t *testing.T) {
	long := composeFixture(t, "long", DefaultConfig()).Text
	for _, want := range []string{
		"- Never push to main without asking me.",
		"- Use spaces, not tabs.",
		"- Keep answers short.",
		"(superseded) Use tabs for indentation in new files.",
		"RUNNING a1 (profiler): profile the linker · worktree /tmp/relay-fixture/worktrees/profile-linker · branch profile-linker",
		"completed a2 (tester)",
		"NOTES.md (written, 1 edit)",
		"a1b2c3d Speed up symbol resolution",
		"b2c3d4e work in profile-linker",
		"Task (the user's first message", "Look at the ember_cache module in src/cache and explain what it does. Never push to main without asking me.\n",
	} {
		if !strings.Contains(long, want) {
			t.Errorf("the long note lacks %q:\n%s", want, long)
		}
	}
	if strings.Contains(long, "delete the database") {
		t.Errorf("the long note shows a message omitted by context_edit:\n%s", long)
	}
	if i, j := strings.Index(long, "RUNNING a1"), strings.Index(long, "completed a2"); i < 0 || j < i {
		t.Errorf("RUNNING subagents do not come first")
	}
	small := composeFixture(t, "long", func() Config { c := DefaultConfig(); c.Limits.Total = 500; return c }()).Text
	if !strings.Contains(small, "Never push to main without asking me.") {
		t.Errorf("a 500-character note dropped a current constraint:\n%s", small)
	}
	branch := composeFixture(t, "branch", DefaultConfig()).Text
	if strings.Contains(strings.ToLower(branch), "banana") {
		t.Errorf("the note shows text of an abandoned branch:\n%s", branch)
	}
	relayed := composeFixture(t, "relayed", DefaultConfig()).Text
	for _, want := range []string{"Never commit generated files.", "Always run gofmt first.", "Earlier: r2: what does the build target do?", "## Task (the user's first message, 2026-12-01 14:29, verbatim)\nr1: Never commit generated files."} {
		if !strings.Contains(relayed, want) {
			t.Errorf("the note after an earlier relay lacks %q:\n%s", want, relayed)
		}
	}
}
