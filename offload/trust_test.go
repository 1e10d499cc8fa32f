package offload

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStoreDirTrust: a store directory someone else could write to is not
// used (the result stays in the context and the session is told why and
// how to fix it); one that is a symbolic link to a directory of yours is
// used, and the first stored result of each session says where it leads.
func TestStoreDirTrust(t *testing.T) {
	ctx := context.Background()
	big := buildLog(1000)
	t.Run("writable by others", func(t *testing.T) {
		e, ws := newTestEngine(t, "")
		store := filepath.Join(ws, ".pi", "context-store")
		if err := os.MkdirAll(store, 0o700); err != nil {
			t.Fatal(err)
		}
		os.Chmod(store, 0o777)
		rep, err := e.ToolResult(ctx, tr("bash", text(big)))
		if err != nil {
			t.Fatal(err)
		}
		if rep.Action == "replace" || !strings.Contains(rep.Notice, "context-store is writable by others (mode 0777)") || !strings.Contains(rep.Notice, "chmod go-w") {
			t.Errorf("ToolResult = %s, notice %q; want the result kept and the refusal said", rep.Action, rep.Notice)
		}
		if fi, _ := os.Stat(store); fi.Mode().Perm() != 0o777 {
			t.Errorf("the store directory's mode was changed to %04o", fi.Mode().Perm())
		}
	})
	t.Run("a link to a directory of yours", func(t *testing.T) {
		e, ws := newTestEngine(t, "")
		elsewhere := t.TempDir()
		os.MkdirAll(filepath.Join(ws, ".pi"), 0o755)
		if err := os.Symlink(elsewhere, filepath.Join(ws, ".pi", "context-store")); err != nil {
			t.Fatal(err)
		}
		want := "context-store is a symbolic link to " + elsewhere
		for i, session := range []string{"s1", "s1", "s2"} {
			req := tr("bash", text(big+strings.Repeat("x", i)))
			req.SessionID = session
			rep, err := e.ToolResult(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Action != "replace" {
				t.Fatalf("result %d: %s, want it stored", i, rep.Action)
			}
			if said := strings.Contains(rep.Notice, want); said != (i != 1) {
				t.Errorf("result %d of %s: notice %q; want the link said once a session", i, session, rep.Notice)
			}
		}
		if ents, _ := os.ReadDir(filepath.Join(elsewhere, "blobs")); len(ents) == 0 {
			t.Error("nothing stored through the link")
		}
	})
}
