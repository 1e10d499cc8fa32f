package budget

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-session/pi-session/owndir"
)

// TestHandoffDirTrust: a context_handoff into a handoff directory someone
// else could write to is refused with the reason and the fix, nothing
// written; one that is a symbolic link to a directory of yours is used,
// and the answer says where it leads, once.
func TestHandoffDirTrust(t *testing.T) {
	args := []byte(`{"goal":"finish the engine","next_step":"run the tests","facts":"HEAD is one commit"}`)
	handoff := func(e *testEnv, id string) HandoffAnswer {
		eng, p := e.start(id)
		return eng.Handoff(context.Background(), p, nil, HandoffParams{Args: args, ToolCallID: "c1"})
	}
	for _, c := range []struct {
		name, rel string
		mode      os.FileMode
		want      string
	}{
		{"handoffs writable by others", ".ai-work/handoffs", 0o777, "handoffs is writable by others (mode 0777)"},
		{".ai-work writable by the group", ".ai-work", 0o775, ".ai-work is writable by its group (mode 0775)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newTestEnv(t, enforceConfig)
			dir := filepath.Join(e.cwd, ".ai-work", "handoffs")
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(filepath.Join(e.cwd, c.rel), c.mode); err != nil {
				t.Fatal(err)
			}
			h := handoff(e, "s1")
			if !h.IsError || !strings.Contains(h.Text, c.want) || !strings.Contains(h.Text, "no handoff was written") || !strings.Contains(h.Text, "fix: chmod go-w") {
				t.Errorf("handoff = %+v, want a refusal saying %q", h, c.want)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("files written: %v", ents)
			}
		})
	}
	t.Run("a link to a directory of yours", func(t *testing.T) {
		e := newTestEnv(t, enforceConfig)
		elsewhere := t.TempDir()
		os.MkdirAll(filepath.Join(e.cwd, ".ai-work"), 0o700)
		if err := os.Symlink(elsewhere, filepath.Join(e.cwd, ".ai-work", "handoffs")); err != nil {
			t.Fatal(err)
		}
		h := handoff(e, "s1")
		if h.IsError || !strings.Contains(h.Text, "Warning: "+filepath.Join(e.cwd, ".ai-work", "handoffs")+" is a symbolic link to "+elsewhere) {
			t.Fatalf("handoff = %+v, want it written with the link's warning", h)
		}
		if _, err := os.Stat(filepath.Join(elsewhere, "s1-1.md")); err != nil {
			t.Errorf("handoff not written through the link: %v", err)
		}
		if h := handoff(e, "s2"); h.IsError || strings.Contains(h.Text, "Warning:") {
			t.Errorf("the second handoff = %+v, want it written without a second warning", h)
		}
	})
}

// TestSidecarTrust: a sidecar someone else could have written (owned by
// another user, writable by its group or others, a link) is not read;
// ReadPrior then falls back to the Markdown.
func TestSidecarTrust(t *testing.T) {
	for _, c := range []struct {
		name  string
		spoil func(t *testing.T, sidecar string)
		want  string
	}{
		{"writable by others", func(t *testing.T, p string) { os.Chmod(p, 0o666) }, "writable by others (mode 0666)"},
		{"writable by the group", func(t *testing.T, p string) { os.Chmod(p, 0o620) }, "writable by its group (mode 0620)"},
		{"owned by another user", func(t *testing.T, p string) {
			if os.Geteuid() != 0 {
				t.Skip("needs root to give a file to another user")
			}
			os.Chown(p, 54321, 54321)
		}, "owned by uid 54321, not by you"},
		{"a link", func(t *testing.T, p string) {
			real := p + ".real"
			os.Rename(p, real)
			os.Symlink(real, p)
		}, "a symbolic link, not followed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), ".ai-work", "handoffs")
			sc := &Sidecar{Version: 1, ID: "s-1", Path: filepath.Join(dir, "s-1.md"), Args: Args{Goal: "the sidecar's goal", NextStep: "n", Facts: "f"}}
			if err := WriteHandoff(dir, sc, "# Handoff\n\n## Goal\n\nthe Markdown's goal\n\n## Next step\n\nn\n"); err != nil {
				t.Fatal(err)
			}
			if got, err := ReadSidecar(sc.Path); err != nil || got.Args.Goal != "the sidecar's goal" {
				t.Fatalf("ReadSidecar before = %+v, %v", got, err)
			}
			c.spoil(t, filepath.Join(dir, "s-1.json"))
			_, err := ReadSidecar(sc.Path)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("ReadSidecar = %v, want a refusal saying %q", err, c.want)
			}
			if c.name != "a link" && !errors.Is(err, owndir.ErrUntrusted) {
				t.Errorf("ReadSidecar = %v, want ErrUntrusted", err)
			}
			prior, err := ReadPrior(sc.Path)
			if err != nil || prior.Args.Goal != "the Markdown's goal" {
				t.Errorf("ReadPrior = %+v, %v; want the Markdown's fields", prior, err)
			}
		})
	}
}
