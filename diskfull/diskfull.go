// Package diskfull gives tests a real file system that runs out of space: a small tmpfs mounted for the test.
package diskfull

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// Mount mounts a tmpfs of size bytes (rounded up to pages by the kernel)
// on a new directory and returns it; it is unmounted when the test ends.
// Mounting needs CAP_SYS_ADMIN (root): without it the test is skipped,
// saying so.
func Mount(t testing.TB, size int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tmpfs")
	MountOn(t, dir, size)
	return dir
}

// MountOn is Mount on dir, made when missing: a directory a program under
// test writes into (a state directory under an agent directory).
func MountOn(t testing.TB, dir string, size int) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	opts := "size=" + strconv.Itoa(size) + ",mode=0700"
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		if errors.Is(err, syscall.EPERM) {
			t.Skipf("diskfull: mounting a tmpfs needs CAP_SYS_ADMIN: %v", err)
		}
		t.Fatalf("diskfull: mount tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("diskfull: unmount %s: %v", dir, err)
		}
	})
}

// Fill takes every free byte of the file system dir is on, with a file in
// dir, and returns its path: the next write that needs a new block fails
// with ENOSPC. Removing the file frees the space again.
func Fill(t testing.TB, dir string) string {
	t.Helper()
	path := filepath.Join(dir, ".fill")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatalf("diskfull: %v", err)
	}
	defer f.Close()
	block := make([]byte, 4096)
	for _, n := range []int{4096, 512, 1} {
		for {
			if _, err := f.Write(block[:n]); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("diskfull: fill %s: %v", path, err)
				}
				break
			}
		}
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil || st.Bavail != 0 {
		t.Fatalf("diskfull: %s still has %d blocks free (%v)", dir, st.Bavail, err)
	}
	return path
}
