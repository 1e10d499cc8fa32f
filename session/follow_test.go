package session

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	fd, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fd.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if err := fd.Close(); err != nil {
		t.Fatal(err)
	}
}

func mustUpdate(t *testing.T, f *File) int {
	t.Helper()
	n, err := f.Update()
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	return n
}

// TestUpdate follows a file the way pi writes it, one step at a time.
func TestUpdate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	appendTo(t, path, "")
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if f.Header != nil || len(f.Entries) != 0 || f.Offset() != 0 {
		t.Fatalf("Open(empty) = header %v, %d entries, offset %d", f.Header, len(f.Entries), f.Offset())
	}

	a := ent("a", "")
	appendTo(t, path, hdr+"\n"+a+"\n")
	if n := mustUpdate(t, f); n != 1 || f.Header == nil {
		t.Fatalf("Update = %d, header %v; want 1 entry and a header", n, f.Header)
	}
	offset := f.Offset()
	if want := int64(len(hdr) + len(a) + 2); offset != want {
		t.Errorf("Offset = %d, want %d", offset, want)
	}

	// A line being written is left for later.
	b := ent("b", "a")
	appendTo(t, path, b[:20])
	if n := mustUpdate(t, f); n != 0 || f.Offset() != offset {
		t.Fatalf("Update with half a line = %d new, offset %d; want 0, %d", n, f.Offset(), offset)
	}
	appendTo(t, path, b[20:]+"\n")
	if n := mustUpdate(t, f); n != 1 || f.Leaf().ID != "b" || f.Leaf().Line != 3 || f.Leaf().Offset != offset {
		t.Fatalf("Update after the rest = %d new, leaf %+v", n, f.Leaf())
	}

	// A whole object without its newline is taken; the newline that follows
	// does not count as a line.
	c := ent("c", "b")
	appendTo(t, path, c)
	if n := mustUpdate(t, f); n != 1 || f.Leaf().ID != "c" {
		t.Fatalf("Update with an unterminated object = %d new, leaf %q", n, f.Leaf().ID)
	}
	appendTo(t, path, "\n"+ent("d", "c")+"\n")
	if n := mustUpdate(t, f); n != 1 || f.Leaf().ID != "d" || f.Leaf().Line != 5 {
		t.Fatalf("Update = %d new, leaf %q on line %d; want d on line 5", n, f.Leaf().ID, f.Leaf().Line)
	}
	if n := mustUpdate(t, f); n != 0 {
		t.Errorf("Update with nothing new = %d", n)
	}
	if len(f.Diagnostics) > 0 {
		t.Errorf("Diagnostics = %v", f.Diagnostics)
	}
	branch, err := f.Branch("")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "b", "c", "d"}, ids(branch)); diff != "" {
		t.Errorf("Branch mismatch (-want +got):\n%s", diff)
	}

	// Reading the whole file again gives the same.
	again, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(f.Entries, again.Entries, cmp.AllowUnexported(Entry{}, span{})); diff != "" {
		t.Errorf("entries read incrementally differ from a fresh Open (-incremental +fresh):\n%s", diff)
	}
}

func TestUpdateErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.jsonl")
	appendTo(t, path, hdr+"\n"+ent("a", "")+"\n")
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 10); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Update(); !errors.Is(err, ErrTruncated) {
		t.Errorf("Update after truncation: %v, want ErrTruncated", err)
	}
	other := filepath.Join(dir, "other.jsonl")
	appendTo(t, other, hdr+"\n"+ent("a", "")+"\n"+ent("b", "a")+"\n")
	if err := os.Rename(other, path); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Update(); !errors.Is(err, ErrReplaced) {
		t.Errorf("Update after replacement: %v, want ErrReplaced", err)
	}
	if len(f.Entries) != 1 {
		t.Errorf("failed updates changed the File: %d entries", len(f.Entries))
	}
	if _, err := Open(filepath.Join(dir, "missing.jsonl")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open(missing): %v, want ErrNotExist", err)
	}
	p, err := Parse(strings.NewReader(hdr))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Update(); !errors.Is(err, ErrNoPath) {
		t.Errorf("Update of a parsed File: %v, want ErrNoPath", err)
	}
}

// TestNeverWrites opens a file pi would repair (no final newline) while it
// is read-only, and checks it is left alone.
func TestNeverWrites(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "damaged.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.HasSuffix(src, []byte("\n")) {
		t.Fatal("damaged.jsonl should end without a newline")
	}
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(path, src, 0o400); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(path)
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Update(); err != nil {
		t.Fatal(err)
	}
	if f.Offset() != int64(len(src)) {
		t.Errorf("Offset = %d, want %d (the unterminated last entry is whole)", f.Offset(), len(src))
	}
	after, _ := os.Stat(path)
	got, _ := os.ReadFile(path)
	if !bytes.Equal(got, src) || !after.ModTime().Equal(before.ModTime()) {
		t.Error("the session file changed")
	}
}

// TestReaderFollows keeps one Reader on a growing file.
func TestReaderFollows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	appendTo(t, path, hdr+"\n")
	fd, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	r := NewReader(fd)
	if e, err := r.Next(); e != nil || err != io.EOF {
		t.Fatalf("Next = %v, %v; want io.EOF", e, err)
	}
	if r.Header() == nil || r.Offset() != int64(len(hdr)+1) {
		t.Fatalf("Header %v, Offset %d", r.Header(), r.Offset())
	}
	appendTo(t, path, ent("a", "")+"\n"+`{"type":"cust`)
	if e, err := r.Next(); err != nil || e.ID != "a" {
		t.Fatalf("Next = %v, %v; want entry a", e, err)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("Next on half a line: %v, want io.EOF", err)
	}
	appendTo(t, path, `om","id":"b","parentId":"a"}`+"\n")
	if e, err := r.Next(); err != nil || e.ID != "b" || e.Line != 3 {
		t.Fatalf("Next = %+v, %v; want entry b on line 3", e, err)
	}
	if len(r.Diagnostics()) != 0 || r.Line() != 3 {
		t.Errorf("Diagnostics %v, Line %d", r.Diagnostics(), r.Line())
	}
}

// TestOpenRefusesNonRegular: a session path that is a FIFO, a device or a
// directory is refused at once with the path and what it is. A FIFO with
// no writer blocked Open forever, and /dev/zero grew memory without bound.
func TestOpenRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{fifo, "is a named pipe"},
		{"/dev/null", "is a device"},
		{dir, "is a directory"},
	} {
		done := make(chan error, 1)
		go func() { _, err := Open(tc.path); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), tc.path) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Open(%s): %v, want ErrNotRegular naming the path and %q", tc.path, err, tc.want)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("Open(%s) still blocked after 20s", tc.path)
		}
	}
}
