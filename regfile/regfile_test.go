package regfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	small := filepath.Join(dir, "small")
	big := filepath.Join(dir, "big")
	link := filepath.Join(dir, "link")
	for p, n := range map[string]int{small: 10, big: 11} {
		if err := os.WriteFile(p, []byte(strings.Repeat("x", n)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(small, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		want error  // nil: read
		say  string // in the error
	}{
		{small, nil, ""},
		{link, nil, ""},
		{big, ErrTooLarge, "11 bytes, over the limit of 10"},
		{fifo, ErrNotRegular, "a named pipe"},
		{"/dev/zero", ErrNotRegular, "a device"},
		{dir, ErrNotRegular, "a directory"},
		{filepath.Join(dir, "missing"), fs.ErrNotExist, "no such file"},
	} {
		done := make(chan error, 1)
		go func() {
			data, err := Read(tc.path, 10)
			if err == nil && len(data) != 10 {
				t.Errorf("Read(%s) = %d bytes, want 10", tc.path, len(data))
			}
			done <- err
		}()
		select {
		case err := <-done:
			if tc.want == nil && err != nil {
				t.Errorf("Read(%s): %v", tc.path, err)
			}
			if tc.want != nil && (!errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.path) || !strings.Contains(err.Error(), tc.say)) {
				t.Errorf("Read(%s): %v, want %v naming the path and %q", tc.path, err, tc.want, tc.say)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("Read(%s) still blocked after 20s", tc.path)
		}
	}
	if _, err := ReadNoFollow(link, 10); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("ReadNoFollow(link): %v", err)
	}
	if data, err := ReadNoFollow(small, 10); err != nil || len(data) != 10 {
		t.Errorf("ReadNoFollow(small) = %d bytes, %v", len(data), err)
	}
}
