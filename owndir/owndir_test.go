package owndir

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMake sets up each kind of directory pi-session may find where it
// writes and checks what Make says and does.
func TestMake(t *testing.T) {
	cases := []struct {
		name    string
		setup   func(t *testing.T, root string) // makes root/a/b or not
		levels  int
		kind    error  // the refusal, nil when used
		what    string // in the refusal, or in the warning
		warning bool
	}{
		{name: "missing", setup: func(t *testing.T, root string) {}, levels: 2},
		{name: "yours, 0755", setup: mk("a/b", 0o755), levels: 2},
		{name: "writable by the group", setup: mk("a/b", 0o775), levels: 2, kind: ErrUntrusted, what: "writable by its group (mode 0775)"},
		{name: "writable by others", setup: mk("a/b", 0o777), levels: 2, kind: ErrUntrusted, what: "writable by others (mode 0777)"},
		{name: "writable by others, sticky", setup: mk("a/b", 0o1777), levels: 2, kind: ErrUntrusted, what: "writable by others (mode 0777)"},
		{name: "parent writable by others", setup: mk("a", 0o777), levels: 2, kind: ErrUntrusted, what: "/a is writable by others"},
		{name: "parent writable by others, not checked", setup: mk("a", 0o777), levels: 1},
		{name: "a file", setup: file("a/b"), levels: 2, kind: ErrNotDir, what: "not a directory"},
		{name: "a link to a directory of yours", setup: link("a/b", "elsewhere", 0o700), levels: 2, warning: true, what: "is a symbolic link to "},
		{name: "a link to a directory writable by others", setup: link("a/b", "elsewhere", 0o777), levels: 2, kind: ErrUntrusted, what: "(a symbolic link to "},
		{name: "a link in the parent", setup: link("a", "elsewhere", 0o700), levels: 2, warning: true, what: "/a is a symbolic link to "},
		{name: "a link that leads nowhere", setup: dangling("a/b"), levels: 2, kind: ErrNotDir, what: "leads nowhere"},
		{name: "owned by another user", setup: foreign("a/b"), levels: 2, kind: ErrUntrusted, what: "owned by uid 54321, not by you"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			c.setup(t, root)
			dir := filepath.Join(root, "a", "b")
			warning, err := Make(dir, c.levels)
			if c.kind != nil {
				if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.what) {
					t.Fatalf("Make = %v, want %v saying %q", err, c.kind, c.what)
				}
				if _, err2 := Check(dir, c.levels); err2 == nil || err2.Error() != err.Error() {
					t.Errorf("Check = %v, want Make's refusal", err2)
				}
				if strings.Contains(err.Error(), "writable by") && !strings.Contains(err.Error(), "fix: chmod go-w ") {
					t.Errorf("refusal without its fix: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Make = %v", err)
			}
			if c.warning != (warning != "") || c.warning && !strings.Contains(warning, c.what) {
				t.Fatalf("Make warned %q, want a warning %v saying %q", warning, c.warning, c.what)
			}
			if again, _ := Make(dir, c.levels); again != "" {
				t.Errorf("the second Make warned again: %q", again)
			}
			fi, err := os.Stat(dir)
			if err != nil || !fi.IsDir() {
				t.Fatalf("Make left no directory: %v", err)
			}
			if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestMakeCreates0700 checks what Make creates is private.
func TestMakeCreates0700(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "x", "y", "z")
	if _, err := Make(dir, 2); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, filepath.Dir(dir), filepath.Dir(filepath.Dir(dir))} {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s made with mode %04o", d, fi.Mode().Perm())
		}
	}
}

// TestCheckMissing: nothing to check is no problem, and nothing is made.
func TestCheckMissing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	if w, err := Check(dir, 2); w != "" || err != nil {
		t.Fatalf("Check(missing) = %q, %v", w, err)
	}
	if _, err := os.Stat(filepath.Dir(dir)); err == nil {
		t.Error("Check made a directory")
	}
}

func mk(rel string, mode os.FileMode) func(*testing.T, string) {
	return func(t *testing.T, root string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
}

func file(rel string) func(*testing.T, string) {
	return func(t *testing.T, root string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func link(rel, target string, mode os.FileMode) func(*testing.T, string) {
	return func(t *testing.T, root string) {
		p, to := filepath.Join(root, rel), filepath.Join(root, target)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(to, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(to, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(to, p); err != nil {
			t.Fatal(err)
		}
	}
}

func dangling(rel string) func(*testing.T, string) {
	return func(t *testing.T, root string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(root, "gone"), p); err != nil {
			t.Fatal(err)
		}
	}
}

func foreign(rel string) func(*testing.T, string) {
	return func(t *testing.T, root string) {
		if os.Geteuid() != 0 {
			t.Skip("needs root to give a directory to another user")
		}
		mk(rel, 0o700)(t, root)
		if err := os.Chown(filepath.Join(root, rel), 54321, 54321); err != nil {
			t.Fatal(err)
		}
	}
}
