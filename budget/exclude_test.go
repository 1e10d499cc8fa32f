package budget

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-session/pi-session/gitexclude"
)

// TestHandoffExcluded: the first handoff written in a repository lists
// .ai-work/ in its .git/info/exclude (never a .gitignore), so git status
// does not offer the handoff for a commit; a second handoff adds nothing.
func TestHandoffExcluded(t *testing.T) {
	e := newTestEnv(t, enforceConfig)
	os.Remove(filepath.Join(e.cwd, "b.txt")) // a clean tree but for what the handoff writes
	eng, p := e.start("sx")
	defer eng.Close()
	ctx := context.Background()
	for i, goal := range []string{"first", "second"} {
		h := eng.Handoff(ctx, p, nil, HandoffParams{Args: []byte(`{"goal":"` + goal + `","next_step":"n","facts":"f"}`)})
		if h.IsError || h.Details == nil {
			t.Fatalf("handoff %d: %+v", i+1, h)
		}
		if strings.Contains(h.Text, "gitexclude") {
			t.Errorf("handoff %d warns: %s", i+1, h.Text)
		}
	}
	exclude, err := os.ReadFile(filepath.Join(e.cwd, ".git", "info", "exclude"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(exclude), "\n/.ai-work/\n"); n != 1 || strings.Count(string(exclude), gitexclude.Comment) != 1 {
		t.Errorf("exclude file (%d patterns):\n%s", n, exclude)
	}
	if _, err := os.Stat(filepath.Join(e.cwd, ".gitignore")); err == nil {
		t.Error("a .gitignore was written")
	}
	out, err := exec.Command("git", "-C", e.cwd, "status", "--porcelain", "--untracked-files=all").CombinedOutput()
	if err != nil || len(out) != 0 {
		t.Errorf("git status after two handoffs: %q, %v", out, err)
	}
	if ents, _ := os.ReadDir(HandoffDir(e.cwd)); len(ents) < 4 {
		t.Errorf("handoff dir holds %d files, want 2 handoffs with sidecars", len(ents))
	}
}
