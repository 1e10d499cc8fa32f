package extension

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/pi-session/pi-session/hooks"
	"github.com/pi-session/pi-session/pitest"
)

// TestTypeScript runs the extension's own tests (pi-session/*.test.ts) on the
// pinned Node, which loads TypeScript directly.
func TestTypeScript(t *testing.T) {
	tests, _ := filepath.Glob("pi-session/*.test.ts")
	if len(tests) == 0 {
		t.Fatal("no pi-session/*.test.ts")
	}
	// A test that hangs fails after a minute with its name, instead of
	// holding the whole suite until go test's own timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(pitest.ToolsBin(t), "node"), append([]string{"--test", "--test-reporter=spec", "--test-timeout=60000"}, tests...)...)
	// A TMPDIR of their own: what a test forgets to remove there (a
	// mkdtemp without its rmSync) is an error, not a leftover in the
	// user's TMPDIR.
	tmp := t.TempDir()
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("node --test: %v\n%s", err, out)
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		var names []string
		for _, e := range left {
			names = append(names, e.Name())
		}
		t.Errorf("the TypeScript tests left %v in TMPDIR", names)
	}
}

// TestAgainstHost runs the TypeScript client against the Go host.
func TestAgainstHost(t *testing.T) {
	dir, err := os.MkdirTemp("", "ext")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	h, err := hooks.Listen(hooks.Config{Path: filepath.Join(dir, "h.sock"), Mode: "serve"})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	h.Register(hooks.Engine{Name: "test", Methods: map[string]hooks.Handler{
		"echo": func(ctx context.Context, r *hooks.Request) (any, error) {
			return hooks.Reply{Result: r.Params, Bulk: r.Bulk}, nil
		},
		"fail":  func(ctx context.Context, r *hooks.Request) (any, error) { return nil, errors.New("test: no") },
		"panic": func(ctx context.Context, r *hooks.Request) (any, error) { panic("boom") },
		"block": func(ctx context.Context, r *hooks.Request) (any, error) { <-ctx.Done(); return nil, ctx.Err() },
	}})
	go h.Serve(context.Background())
	cmd := exec.Command(filepath.Join(pitest.ToolsBin(t), "node"), "testdata/hostcheck.ts")
	cmd.Env = append(os.Environ(), "HOST_SOCKET="+h.Path())
	out, err := cmd.CombinedOutput()
	if err != nil || string(out) != "ok\n" {
		t.Fatalf("hostcheck.ts: %v\n%s", err, out)
	}
}

func TestManifest(t *testing.T) {
	fm := Files()
	var pkg struct {
		Name    string
		Version string
		Type    string
		Pi      struct{ Extensions []string }
		Deps    map[string]string `json:"dependencies"`
		Peers   map[string]string `json:"peerDependencies"`
	}
	if err := json.Unmarshal(fm["package.json"], &pkg); err != nil {
		t.Fatal(err)
	}
	if pkg.Name != Name || pkg.Type != "module" || len(pkg.Deps) != 0 {
		t.Errorf("package.json: name %q type %q dependencies %v; want %q, module, none", pkg.Name, pkg.Type, pkg.Deps, Name)
	}
	for _, e := range pkg.Pi.Extensions {
		if fm[filepath.ToSlash(filepath.Clean(e))] == nil {
			t.Errorf("pi.extensions names %s, which is not embedded", e)
		}
	}
	for _, p := range []string{"@earendil-works/pi-coding-agent", "@earendil-works/pi-ai", "typebox"} {
		if pkg.Peers[p] != "*" {
			t.Errorf("peerDependencies[%s] = %q, want \"*\"", p, pkg.Peers[p])
		}
	}
	var names []string
	for n := range fm {
		names = append(names, n)
	}
	slices.Sort(names)
	// Every module and skill on disk is embedded; tests and test data are not.
	want := []string{"package.json"}
	mods, _ := filepath.Glob("pi-session/*.ts")
	for _, m := range mods {
		if !strings.HasSuffix(m, ".test.ts") {
			want = append(want, m)
		}
	}
	skills, _ := filepath.Glob("skills/*/SKILL.md")
	want = append(want, skills...)
	slices.Sort(want)
	if !slices.Contains(want, "pi-session/index.ts") || len(skills) == 0 {
		t.Fatalf("the extension's sources are not where this test looks: %v", want)
	}
	if d := cmp.Diff(want, names); d != "" {
		t.Errorf("embedded files (-want +got):\n%s", d)
	}
	if m := regexp.MustCompile(`VERSION = "([^"]+)"`).FindSubmatch(fm["pi-session/version.ts"]); m == nil || string(m[1]) != pkg.Version {
		t.Errorf("pi-session/version.ts says %q, package.json %q", m, pkg.Version)
	}
	if m := regexp.MustCompile(`PROTOCOL = (\d+);`).FindSubmatch(fm["pi-session/client.ts"]); m == nil || string(m[1]) != strconv.Itoa(hooks.Protocol) {
		t.Errorf("client.ts PROTOCOL %q, hooks.Protocol %d", m, hooks.Protocol)
	}
}

func TestWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ext")
	wrote, err := Write(dir)
	if err != nil || len(wrote) != len(Files()) {
		t.Fatalf("Write into an empty dir = %v, %v; want every file", wrote, err)
	}
	if !IsPackage(dir) || len(Stale(dir)) != 0 {
		t.Errorf("after Write: IsPackage %v, Stale %v", IsPackage(dir), Stale(dir))
	}
	os.WriteFile(filepath.Join(dir, "pi-session", "index.ts"), []byte("// edited"), 0o644)
	os.WriteFile(filepath.Join(dir, "pi-session.json"), []byte("{}"), 0o644)
	if d := cmp.Diff([]string{"pi-session/index.ts"}, Stale(dir)); d != "" {
		t.Errorf("Stale after an edit (-want +got):\n%s", d)
	}
	if wrote, err := Write(dir); err != nil || !slices.Equal(wrote, []string{"pi-session/index.ts"}) {
		t.Errorf("second Write = %v, %v; want only pi-session/index.ts", wrote, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "pi-session.json")); err != nil {
		t.Errorf("Write removed a file it does not own: %v", err)
	}
	if IsPackage(t.TempDir()) {
		t.Errorf("an empty directory is a package")
	}
	if h := Hash(); len(h) != 12 || h != Hash() {
		t.Errorf("Hash = %q, want 12 stable hex digits", h)
	}
}

func TestWriteOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bundled-"+Hash())
	if err := WriteOnce(dir); err != nil {
		t.Fatal(err)
	}
	if len(Stale(dir)) != 0 {
		t.Errorf("Stale after WriteOnce: %v", Stale(dir))
	}
	// Once stamped, the directory is not read again.
	os.Remove(filepath.Join(dir, "package.json"))
	if err := WriteOnce(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "package.json")); !os.IsNotExist(err) {
		t.Errorf("WriteOnce rewrote a stamped directory")
	}
}
