package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestWriteFileReplacesAndSetsMode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rec.json")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, []byte("new"), 0o600); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "new" {
		t.Fatalf("ReadFile = %q, %v; want %q", got, err, "new")
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600", fi.Mode().Perm())
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("directory holds %d entries after WriteFile, want 1 (no temp file left)", len(ents))
	}
}

func TestWriteFileMissingDir(t *testing.T) {
	err := WriteFile(filepath.Join(t.TempDir(), "no", "such", "f"), []byte("x"), 0o600)
	if err == nil {
		t.Fatal("WriteFile into a missing directory succeeded, want error")
	}
}

func TestIsTemp(t *testing.T) {
	for name, want := range map[string]bool{
		".rec.json.tmp-123": true,
		"rec.json":          false,
		".hidden":           false,
		"rec.tmp-1":         false,
	} {
		if got := IsTemp(name); got != want {
			t.Errorf("IsTemp(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestCreate(t *testing.T) {
	noRename := func(string, string) error { return errNoRenameNoReplace }
	for _, tt := range []struct {
		name   string
		rename func(string, string) error
	}{
		{"rename without replacing", renameNoReplace},
		{"hard link", noRename},
	} {
		t.Run(tt.name, func(t *testing.T) {
			exclusiveRename = tt.rename
			defer func() { exclusiveRename = renameNoReplace }()
			dir := t.TempDir()
			path := filepath.Join(dir, "1.md")
			if err := Create(path, []byte("first"), 0o600); err != nil {
				t.Fatalf("Create: %v", err)
			}
			err := Create(path, []byte("second"), 0o600)
			if !errors.Is(err, fs.ErrExist) {
				t.Errorf("Create over an existing file = %v, want fs.ErrExist", err)
			}
			if got, _ := os.ReadFile(path); string(got) != "first" {
				t.Errorf("file = %q after a refused Create, want %q", got, "first")
			}
			if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("mode = %v, %v; want 0600", fi.Mode().Perm(), err)
			}
			ents, _ := os.ReadDir(dir)
			if len(ents) != 1 {
				t.Errorf("directory holds %d entries, want 1 (no temporary file left)", len(ents))
			}
		})
	}
	t.Run("in place", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "1.md")
		if err := createInPlace(path, []byte("first"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := createInPlace(path, []byte("second"), 0o600); !errors.Is(err, fs.ErrExist) {
			t.Errorf("createInPlace over an existing file = %v, want fs.ErrExist", err)
		}
		if got, _ := os.ReadFile(path); string(got) != "first" {
			t.Errorf("file = %q, want %q", got, "first")
		}
	})
}

// TestCreateOneWinner: writers racing for one name, exactly one gets it
// and the file is that writer's whole data.
func TestCreateOneWinner(t *testing.T) {
	dir := t.TempDir()
	for round := 0; round < 50; round++ {
		path := filepath.Join(dir, fmt.Sprintf("%d.md", round))
		const writers = 8
		errs := make(chan error, writers)
		var start sync.WaitGroup
		start.Add(1)
		for w := 0; w < writers; w++ {
			go func() {
				start.Wait()
				errs <- Create(path, []byte(strings.Repeat(fmt.Sprint(w), 4096)), 0o600)
			}()
		}
		start.Done()
		won := 0
		for w := 0; w < writers; w++ {
			err := <-errs
			switch {
			case err == nil:
				won++
			case !errors.Is(err, fs.ErrExist):
				t.Fatalf("round %d: %v", round, err)
			}
		}
		got, _ := os.ReadFile(path)
		if won != 1 || len(got) != 4096 || strings.Count(string(got), string(got[0])) != 4096 {
			t.Errorf("round %d: %d writers won, file of %d bytes", round, won, len(got))
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 50 {
		t.Errorf("%d entries, want 50 (no temporary file left)", len(ents))
	}
}
