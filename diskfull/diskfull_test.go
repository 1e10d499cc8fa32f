package diskfull

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestFill: a filled tmpfs refuses a new file's bytes with ENOSPC, and
// takes them again once the filler is gone.
func TestFill(t *testing.T) {
	dir := Mount(t, 64<<10)
	fill := Fill(t, dir)
	err := os.WriteFile(filepath.Join(dir, "x"), []byte("hello"), 0o600)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("writing to a full tmpfs: %v, want ENOSPC", err)
	}
	if err := os.Remove(fill); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "x"), []byte("hello"), 0o600); err != nil {
		t.Fatalf("writing after the filler was removed: %v", err)
	}
}
