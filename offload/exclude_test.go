package offload

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestStoreExcluded: the first payload stored in a repository's
// workspace lists .pi/context-store/ (not .pi/, which holds pi's project
// settings) in the repository's .git/info/exclude, and git status shows
// none of the store.
func TestStoreExcluded(t *testing.T) {
	root := t.TempDir()
	if out, err := exec.Command("git", "-C", root, "init", "-q", "-b", "main").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	ws := filepath.Join(root, "pkg")
	if err := os.MkdirAll(filepath.Join(ws, ".pi"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".pi", "settings.json"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := New(Options{Workspace: ws, Now: newClock().now, ArtifactDirs: []string{ws}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	rep, err := e.ToolResult(context.Background(), tr("bash", text(buildLog(2000))))
	if err != nil || rep.Handle == "" {
		t.Fatalf("not offloaded: %+v, %v", rep, err)
	}
	exclude, err := os.ReadFile(filepath.Join(root, ".git", "info", "exclude"))
	if err != nil || strings.Count(string(exclude), "\n/pkg/.pi/context-store/\n") != 1 {
		t.Errorf("exclude file: %q, %v", exclude, err)
	}
	out, err := exec.Command("git", "-C", root, "status", "--porcelain", "--untracked-files=all").CombinedOutput()
	if err != nil || string(out) != "?? pkg/.pi/settings.json\n" {
		t.Errorf("git status: %q, %v; want only pi's settings", out, err)
	}
}
