package session

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

// File is a session read into memory: its header, its entries in file order
// and the problems found. A File read with [Open] can be brought up to date
// with [File.Update], which reads only what was appended since. A File is
// not safe for concurrent use.
type File struct {
	Header      *Header
	Entries     []*Entry
	Diagnostics []Diagnostic

	path    string
	info    os.FileInfo
	r       *Reader
	byID    map[string]int  // id -> index of the last entry with it
	forward map[string]bool // ids named as a parent before they existed
	dups    bool            // some id is used twice, so Entry.parent may be stale
}

// Open reads the session file at path. Only complete lines are read (see
// [Reader]); call [File.Update] to read lines appended later. An empty file
// gives a File without a header. Open never writes to the file.
func Open(path string) (*File, error) {
	f := &File{path: path, r: &Reader{}}
	if _, err := f.Update(); err != nil {
		return nil, err
	}
	return f, nil
}

// Parse reads a whole session from r. Unlike [Open], a last line without a
// newline that is not a complete JSON object is reported as malformed, as
// the input is known to be complete.
func Parse(r io.Reader) (*File, error) {
	f := &File{r: NewReader(r)}
	if _, err := f.read(); err != nil {
		return nil, err
	}
	// What is left is a last line without a newline that is no whole
	// object; pi parses it like any other line.
	if tail := f.r.buf[f.r.start:f.r.end]; len(skipSpaceBytes(tail)) > 0 {
		seen := len(f.r.diags)
		f.r.line++
		if _, err := f.r.handle(tail, f.r.off); err != nil {
			return nil, err
		}
		f.r.off += int64(len(tail))
		f.Diagnostics = append(f.Diagnostics, f.r.diags[seen:]...)
	}
	return f, nil
}

// Update reads the lines appended to the file since the last read and
// returns the number of new entries. It fails with ErrReplaced if the path
// now names another file and with ErrTruncated if the file shrank; the File
// is then unchanged, and the caller should Open the path again.
func (f *File) Update() (int, error) {
	if f.path == "" {
		return 0, fmt.Errorf("session: update: %w", ErrNoPath)
	}
	fd, err := os.Open(f.path)
	if err != nil {
		return 0, fmt.Errorf("session: %w", err)
	}
	defer fd.Close()
	info, err := fd.Stat()
	if err != nil {
		return 0, fmt.Errorf("session: %w", err)
	}
	if f.info != nil && !os.SameFile(f.info, info) {
		return 0, fmt.Errorf("session: update %s: %w", f.path, ErrReplaced)
	}
	if info.Size() < f.r.Offset() {
		return 0, fmt.Errorf("session: update %s: %d bytes, %d already read: %w", f.path, info.Size(), f.r.Offset(), ErrTruncated)
	}
	f.info = info
	if _, err := fd.Seek(f.r.Offset(), io.SeekStart); err != nil {
		return 0, fmt.Errorf("session: %w", err)
	}
	f.r.resume(fd)
	return f.read()
}

// read adds the entries the Reader yields until the end of its input.
func (f *File) read() (int, error) {
	if f.byID == nil {
		f.byID = make(map[string]int)
	}
	n := 0
	for {
		seen := len(f.r.diags)
		e, err := f.r.Next()
		// Line problems come before the entry that follows them.
		f.Diagnostics = append(f.Diagnostics, f.r.diags[seen:]...)
		if f.Header == nil {
			f.Header = f.r.Header()
		}
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		f.add(e)
		n++
	}
}

// Offset returns the number of bytes read: [File.Update] continues there.
func (f *File) Offset() int64 { return f.r.Offset() }

// add appends e and checks it against the tree read so far.
func (f *File) add(e *Entry) {
	i := len(f.Entries)
	f.Entries = append(f.Entries, e)
	prev, dup := f.byID[e.ID]
	if dup {
		f.dups = true
		f.problem(e, "id %q already used on line %d; the later entry wins: %w", e.ID, f.Entries[prev].Line, ErrDuplicateID)
	}
	if e.ParentID != "" {
		if p, ok := f.byID[e.ParentID]; ok {
			e.parent = p + 1
		} else if e.ParentID != e.ID {
			f.problem(e, "parentId %q names no earlier entry: %w", e.ParentID, ErrDanglingParent)
			if f.forward == nil {
				f.forward = make(map[string]bool)
			}
			f.forward[e.ParentID] = true
		}
	}
	f.byID[e.ID] = i
	// A loop through e needs a link to e's id made before e existed: a
	// forward reference, an earlier entry with the same id, or e itself.
	if dup || f.forward[e.ID] || e.ParentID == e.ID {
		if f.loops(i) {
			f.problem(e, "entry %q is its own ancestor: %w", e.ID, ErrCycle)
		}
	}
}

// loops reports whether walking up from entry i comes back to it.
func (f *File) loops(i int) bool {
	cur := f.Entries[i]
	for steps := 0; cur.ParentID != "" && steps <= len(f.Entries); steps++ {
		j, ok := f.byID[cur.ParentID]
		if !ok {
			return false
		}
		if j == i {
			return true
		}
		cur = f.Entries[j]
	}
	return cur.ParentID != ""
}

func (f *File) problem(e *Entry, format string, args ...any) {
	f.Diagnostics = append(f.Diagnostics, Diagnostic{
		Line:   e.Line,
		Offset: e.Offset,
		Err:    fmt.Errorf("session: line %d: "+format, append([]any{e.Line}, args...)...),
	})
}

// Entry returns the entry with the given id (the last one, if several
// share it), or nil.
func (f *File) Entry(id string) *Entry {
	if i, ok := f.byID[id]; ok {
		return f.Entries[i]
	}
	return nil
}

// Leaf returns the entry pi takes as the current position when it opens the
// file: the last entry. It returns nil for a file without entries.
func (f *File) Leaf() *Entry {
	if len(f.Entries) == 0 {
		return nil
	}
	return f.Entries[len(f.Entries)-1]
}

// Branch returns the path from the root to the entry leafID, root first;
// an empty leafID means [File.Leaf]. The path starts at the first entry
// whose parent is missing, as pi's does. Unlike pi, which falls back to the
// last entry, an unknown leafID is an error (ErrUnknownEntry), and so is a
// parent loop (ErrCycle), on which pi hangs.
func (f *File) Branch(leafID string) ([]*Entry, error) {
	leaf := f.Leaf()
	if leafID != "" {
		leaf = f.Entry(leafID)
		if leaf == nil {
			return nil, fmt.Errorf("session: branch from %q: %w", leafID, ErrUnknownEntry)
		}
	}
	if leaf == nil {
		return nil, nil
	}
	var path []*Entry
	for cur := leaf; cur != nil; {
		path = append(path, cur)
		if len(path) > len(f.Entries) {
			return nil, fmt.Errorf("session: branch from %q: parent links loop: %w", leaf.ID, ErrCycle)
		}
		switch {
		case cur.ParentID == "":
			cur = nil
		case cur.parent > 0 && !f.dups:
			cur = f.Entries[cur.parent-1]
		default:
			cur = f.Entry(cur.ParentID)
		}
	}
	slices.Reverse(path)
	return path, nil
}
