package session

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/pi-session/pi-session/clip"
	"github.com/pi-session/pi-session/regfile"
)

// File is a session read into memory: its header, its entries in file order
// and the problems found. A File read with [Open] can be brought up to date
// with [File.Update], which reads only what was appended since. A File is
// not safe for concurrent use.
type File struct {
	Header      *Header
	Entries     []*Entry
	Diagnostics []Diagnostic // at most MaxDiagnostics; see Omitted and AllDiagnostics
	// Omitted counts the diagnostics found past MaxDiagnostics.
	Omitted int

	path    string // where Update reads from
	name    string // the file's name in diagnostics
	info    os.FileInfo
	r       *Reader
	byID    map[string]int  // id -> index of the last entry with it
	omitted int             // tree problems past MaxDiagnostics
	forward map[string]bool // ids named as a parent before they existed
	dups    bool            // some id is used twice, so Entry.parent may be stale
	end     *Diagnostic     // the state of the file's end: incomplete last line, empty file
	printed snapshot        // of what was read, to notice a rewrite in place
	scratch []byte          // for comparing printed's windows
}

// Open reads the session file at path. Only complete lines are read (see
// [Reader]); call [File.Update] to read lines appended later. An empty file
// gives a File without a header. Open never writes to the file.
func Open(path string) (*File, error) {
	f := &File{path: path, name: path, r: &Reader{name: path, fp: fingerprint{on: true}}}
	if _, err := f.Update(); err != nil {
		return nil, err
	}
	return f, nil
}

// Parse reads a whole session from r. Unlike [Open], a last line without a
// newline that is not a complete JSON object is reported as malformed, as
// the input is known to be complete. Diagnostics name r's file when r has
// a Name method (an *os.File).
func Parse(r io.Reader) (*File, error) {
	f := &File{r: NewReader(r)}
	if n, ok := r.(interface{ Name() string }); ok {
		f.name = n.Name()
		f.r.name = f.name
	}
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
		_, _, err := scanLine(tail)
		var se *syntaxError
		cut := errors.As(err, &se) && (strings.HasPrefix(se.msg, "unexpected end") || strings.HasPrefix(se.msg, "unterminated"))
		for _, d := range f.r.diags[seen:] {
			if cut && errors.Is(d.Err, ErrMalformed) {
				d.Err = fmt.Errorf("the last line is cut short (no newline): %w", d.Err)
			}
			f.addDiagnostic(d)
		}
		f.end = nil
	}
	return f, nil
}

// Update reads the lines appended to the file since the last read and
// returns the number of new entries. It fails with ErrReplaced if the path
// now names another file, with ErrTruncated if the file shrank below what
// was read, and with ErrRewritten if what was read is no longer what the
// file holds (a rewrite in place, same inode); the File is then
// unchanged, and the caller should Open the path again. Checking costs two
// reads of 4 KiB, and one read of what was read when the file was written
// to without growing (see fingerprint.go).
func (f *File) Update() (int, error) {
	if f.path == "" {
		return 0, fmt.Errorf("session: update: %w", ErrNoPath)
	}
	// O_NONBLOCK: opening a FIFO must not wait for a writer. It changes
	// nothing for a regular file, the only kind read here.
	fd, err := os.OpenFile(f.path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return 0, fmt.Errorf("session: %w", err)
	}
	defer fd.Close()
	info, err := fd.Stat()
	if err != nil {
		return 0, fmt.Errorf("session: %w", err)
	}
	if !info.Mode().IsRegular() {
		return 0, fmt.Errorf("session: %s %s: %w", f.path, "is "+regfile.Kind(info.Mode()), ErrNotRegular)
	}
	if f.info != nil && !os.SameFile(f.info, info) {
		return 0, fmt.Errorf("session: update %s: %w", f.path, ErrReplaced)
	}
	if info.Size() < f.r.Offset() {
		return 0, fmt.Errorf("session: update %s: %d bytes, %d already read: %w", f.path, info.Size(), f.r.Offset(), ErrTruncated)
	}
	if f.info != nil {
		if f.scratch == nil {
			f.scratch = make([]byte, printWindow)
		}
		why, err := f.printed.rewritten(fd, info, f.info, f.scratch)
		if err != nil {
			return 0, fmt.Errorf("session: update %s: %w", f.path, err)
		}
		if why != "" {
			return 0, fmt.Errorf("session: update %s: rewritten in place: %s: %w", f.path, why, ErrRewritten)
		}
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
		for _, d := range f.r.diags[seen:] {
			f.addDiagnostic(d)
		}
		f.Omitted = f.r.omitted + f.omitted
		if f.Header == nil {
			f.Header = f.r.Header()
		}
		if errors.Is(err, io.EOF) {
			f.end = f.endState()
			if f.r.fp.on {
				f.printed = f.r.snapshot()
			}
			return n, nil
		}
		if err != nil {
			return n, err
		}
		f.add(e)
		n++
	}
}

// endState describes the end of what was read: a last line without its
// newline that is not a whole object yet, or an empty file; nil when the
// file ends with a whole line.
func (f *File) endState() *Diagnostic {
	tail := f.r.buf[f.r.start:f.r.end]
	switch {
	case len(skipSpaceBytes(tail)) > 0:
		return &Diagnostic{File: f.name, Line: f.r.line + 1, Offset: f.r.off,
			Err: fmt.Errorf("the last line is incomplete: %d bytes without a newline that are no whole JSON object yet; pi is writing it, or a crash cut it short (pi skips it if it stays so): %w", len(tail), ErrIncomplete)}
	case f.r.off == 0 && f.r.line == 0:
		return &Diagnostic{File: f.name, Line: 1, Offset: 0,
			Err: fmt.Errorf("the file is empty: no session header yet (pi writes one the next time it saves this session): %w", ErrEmpty)}
	}
	return nil
}

// AllDiagnostics is Diagnostics followed by the state of the file's end
// (an incomplete last line, an empty file), which a later Update may clear.
func (f *File) AllDiagnostics() []Diagnostic {
	if f.end == nil {
		return f.Diagnostics
	}
	return append(f.Diagnostics[:len(f.Diagnostics):len(f.Diagnostics)], *f.end)
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
		f.problem(e, "id", "id %q already used on line %d; the later entry wins: %w", clip.Echo(e.ID), f.Entries[prev].Line, ErrDuplicateID)
	}
	if e.ParentID != "" {
		if p, ok := f.byID[e.ParentID]; ok {
			e.parent = p + 1
		} else if e.ParentID != e.ID {
			f.problem(e, "parentId", "parentId %q names no earlier entry: %w", clip.Echo(e.ParentID), ErrDanglingParent)
			if f.forward == nil {
				f.forward = make(map[string]bool)
			}
			f.forward[e.ParentID] = true
		}
	}
	if e.ref != "" && e.ref != e.ID {
		if _, ok := f.byID[e.ref]; !ok {
			switch e.Type {
			case "compaction":
				f.problem(e, "firstKeptEntryId", "firstKeptEntryId %q names no earlier entry: pi keeps nothing from before this compaction but its summary: %w", clip.Echo(e.ref), ErrUnknownTarget)
			case "context_edit":
				f.problem(e, "targetId", "targetId %q names no earlier entry: pi edits nothing with it: %w", clip.Echo(e.ref), ErrUnknownTarget)
			}
		}
	}
	f.byID[e.ID] = i
	// A loop through e needs a link to e's id made before e existed: a
	// forward reference, an earlier entry with the same id, or e itself.
	if dup || f.forward[e.ID] || e.ParentID == e.ID {
		if f.loops(i) {
			f.problem(e, "parentId", "entry %q is its own ancestor: %w", clip.Echo(e.ID), ErrCycle)
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

func (f *File) problem(e *Entry, field, format string, args ...any) {
	f.addDiagnostic(Diagnostic{
		File:   f.name,
		Line:   e.Line,
		Offset: e.Offset,
		Field:  field,
		Err:    fmt.Errorf(format, args...),
	})
}

// addDiagnostic keeps d, or counts it once MaxDiagnostics are kept.
func (f *File) addDiagnostic(d Diagnostic) {
	if len(f.Diagnostics) >= MaxDiagnostics {
		f.omitted++
	} else {
		f.Diagnostics = append(f.Diagnostics, d)
	}
	f.Omitted = f.r.omitted + f.omitted
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
			return nil, fmt.Errorf("session: branch from %q: %w", clip.Echo(leafID), ErrUnknownEntry)
		}
	}
	if leaf == nil {
		return nil, nil
	}
	var path []*Entry
	for cur := leaf; cur != nil; {
		path = append(path, cur)
		if len(path) > len(f.Entries) {
			return nil, fmt.Errorf("session: branch from %q: parent links loop: %w", clip.Echo(leaf.ID), ErrCycle)
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
