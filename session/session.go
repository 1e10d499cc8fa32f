// Package session reads pi's session JSONL files into entries, branches and the model context pi builds from them.
package session

import (
	"encoding/json"
	"errors"
	"strconv"
)

// Sentinel errors, wrapped by diagnostics and by the errors functions return
// (which may wrap an os error instead).
var (
	// ErrMalformed marks a line that is not a usable entry: invalid JSON,
	// not an object, or a member pi relies on has the wrong type.
	ErrMalformed = errors.New("malformed line")
	// ErrDuplicateID marks an entry whose id an earlier entry already has.
	// Like pi, lookups by id then find the later entry.
	ErrDuplicateID = errors.New("duplicate entry id")
	// ErrDanglingParent marks an entry whose parentId names no earlier entry.
	// Like pi, a branch through it starts there.
	ErrDanglingParent = errors.New("dangling parent")
	// ErrCycle marks parentId links that loop. pi 1.6 hangs on such a file;
	// here the branch through the loop is refused.
	ErrCycle = errors.New("parent cycle")
	// ErrNoHeader means the first entry of the file is not a session header,
	// so pi refuses the whole file.
	ErrNoHeader = errors.New("no session header")
	// ErrUnknownEntry means an entry id was not found.
	ErrUnknownEntry = errors.New("unknown entry")
	// ErrReplaced means the path now names another file than the one read.
	ErrReplaced = errors.New("session file replaced")
	// ErrTruncated means the file is shorter than what was already read.
	ErrTruncated = errors.New("session file truncated")
	// ErrRewritten means the file, the same inode, no longer holds what
	// was already read: it was rewritten in place.
	ErrRewritten = errors.New("session file rewritten")
	// ErrNoPath means the File was not read from a path, so it cannot be updated.
	ErrNoPath = errors.New("no file to update from")
	// ErrInvalidField marks a member that is not what pi writes there
	// (message content of the wrong type, a timestamp that is no time).
	// pi keeps such an entry, and so does the reader.
	ErrInvalidField = errors.New("invalid field")
	// ErrUnknownTarget marks a compaction's firstKeptEntryId or a
	// context_edit's targetId that names no earlier entry: pi keeps
	// nothing from before that compaction, or edits nothing.
	ErrUnknownTarget = errors.New("names no entry")
	// ErrTooDeep marks a line nested more than MaxDepth levels: pi reads
	// it, but its JSON.stringify fails past about 4,000 levels.
	ErrTooDeep = errors.New("nested too deep")
	// ErrIncomplete marks a last line without its newline that is not a
	// whole JSON object yet: pi is writing it, or a crash cut it short.
	ErrIncomplete = errors.New("incomplete last line")
	// ErrEmpty marks an empty file: pi writes a header into it the next
	// time it saves the session.
	ErrEmpty = errors.New("empty file")
	// ErrNotRegular means a session path names a directory, a named pipe,
	// a device or a socket: reading it could block forever or never end.
	ErrNotRegular = errors.New("not a regular file")
)

// MaxDepth is the nesting beyond which a line is reported (ErrTooDeep).
const MaxDepth = 1000

// MaxDiagnostics bounds the diagnostics a File or Reader keeps; later ones
// are only counted (File.Omitted).
const MaxDiagnostics = 1000

// CurrentVersion is the session format version pi 1.6 writes. Older files
// are migrated in memory when read.
const CurrentVersion = 3

// Header is the first line of a session file.
type Header struct {
	// Version is the format version as written (1 when absent). Entries
	// are always presented migrated to CurrentVersion.
	Version       int
	ID            string
	Timestamp     string
	Cwd           string
	ParentSession string
	Line          int             // 1-based line number
	Raw           json.RawMessage // the header object as written
}

// Entry is one line of the session tree. Only the members needed to build
// the tree and the model context are decoded; the rest stays in Raw until
// [Entry.Decode] is called.
type Entry struct {
	Type      string // "message", "compaction", "context_edit", ... or an unknown type
	ID        string
	ParentID  string // "" for a root entry (parentId null or absent)
	Timestamp string // ISO 8601, as written
	// Role is message.role for "message" entries ("custom" for the
	// "hookMessage" role of version 2 files), else "".
	Role   string
	Line   int   // 1-based line number in the file
	Offset int64 // byte offset of the line in the file
	// Raw is the entry's JSON object as pi holds it in memory: the line as
	// written, except that entries of version 1 and 2 files carry the
	// members pi's migration adds or renames (ids, firstKeptEntryId, role).
	Raw json.RawMessage

	msg         span   // the message member of a "message" entry, in Raw
	nullContent bool   // message.content is null or absent
	tokens      int64  // Message.Tokens of the stored message plus one; 0 until known (atomic)
	parent      int    // index+1 in File.Entries of the parent when e was read; 0 if unknown
	ref         string // a compaction's firstKeptEntryId, a context_edit's targetId
}

// Diagnostic is a problem found while reading: a line pi would skip, a
// tree defect (duplicate id, dangling parent, cycle), a member pi keeps but
// cannot use as meant, or the state of the file's end. Reading goes on. An
// error that stops reading (ErrNoHeader) is a Diagnostic too.
type Diagnostic struct {
	File   string // the file's path; "" when read from a stream without a name
	Line   int    // 1-based line number
	Column int    // 1-based column (characters) of invalid JSON in the line; 0 for a line or member at fault
	Offset int64  // byte offset of the line
	// Field is the member at fault, as a path ("message.content", "id");
	// "" when the problem is the whole line.
	Field string
	// Err says what is wrong; it wraps ErrMalformed, ErrDuplicateID,
	// ErrDanglingParent, ErrCycle, ErrInvalidField, ErrUnknownTarget,
	// ErrTooDeep, ErrIncomplete, ErrEmpty or ErrNoHeader.
	Err error
}

// Error is "session: <file>:<line>: <what>" (or "session: line <n>: ..."
// without a file name); what names the field.
func (d Diagnostic) Error() string { return "session: " + d.Where() + ": " + d.Err.Error() }
func (d Diagnostic) Unwrap() error { return d.Err }

// Where is "<file>:<line>" ("<file>:<line>:<column>" for invalid JSON),
// or "line <line>" ("line <line>, column <column>") without a file name.
func (d Diagnostic) Where() string {
	if d.File == "" {
		if d.Column > 0 {
			return "line " + strconv.Itoa(d.Line) + ", column " + strconv.Itoa(d.Column)
		}
		return "line " + strconv.Itoa(d.Line)
	}
	if d.Column > 0 {
		return d.File + ":" + strconv.Itoa(d.Line) + ":" + strconv.Itoa(d.Column)
	}
	return d.File + ":" + strconv.Itoa(d.Line)
}
