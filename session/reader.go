package session

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pi-session/pi-session/jsonscan"

	"github.com/pi-session/pi-session/clip"
)

const (
	// arenaSize is the size of the buffers lines are read into. Entries keep
	// slices of them, so a buffer is never overwritten; a new one is started
	// when the current one has less than minRead bytes free.
	arenaSize = 1 << 20
	minRead   = 32 << 10
)

// Reader reads entries from a session stream one at a time, keeping no more
// than the line it is working on (memory stays bounded however long the
// file is). It consumes complete lines only: at the end of the input, a last
// line without a newline is taken only once it holds a whole JSON object;
// otherwise it is left unread, and a later call to Next, after the writer
// has finished the line, reads it. Entries of version 1 and 2 files are
// migrated to version 3 as pi migrates them, in memory.
type Reader struct {
	src        io.Reader
	buf        []byte // current arena; buf[start:end] is read but not consumed
	start, end int
	seen       int   // buf[start:start+seen] is known to hold no newline
	off        int64 // file offset of buf[start]
	line       int   // lines consumed
	eof        bool
	glued      bool  // the last line consumed had no newline
	err        error // sticky: a file without a header

	header  *Header
	version float64
	scratch []byte // for setStrings
	lastID  string // ID of the last entry
	diags   []Diagnostic
	omitted int    // diagnostics past MaxDiagnostics, counted only
	name    string // the file's path, for diagnostics
	bom     bool   // line 1 starts with a UTF-8 byte order mark
	legacy  *legacy
	fp      fingerprint // of the consumed bytes, when fp.on (File.Update's check)
}

// legacy is the state of pi's version 1 migration (migrateV1ToV2): every
// entry gets an id and the previous entry as its parent, and
// firstKeptEntryIndex (an index into the file's parsed lines) becomes
// firstKeptEntryId.
type legacy struct {
	ids    []string // id given to each parsed line so far; "" for non-entries
	prevID string
}

// NewReader returns a Reader that reads a session from r, starting at its
// first line.
func NewReader(r io.Reader) *Reader {
	return &Reader{src: r}
}

// Header returns the session header, or nil if it has not been read yet.
func (r *Reader) Header() *Header { return r.header }

// Diagnostics returns the problems found in the lines read so far, at
// most MaxDiagnostics of them (see Omitted).
func (r *Reader) Diagnostics() []Diagnostic { return r.diags }

// Omitted is the number of diagnostics found past MaxDiagnostics.
func (r *Reader) Omitted() int { return r.omitted }

// SetName names the file being read, for diagnostics.
func (r *Reader) SetName(name string) { r.name = name }

// Offset returns the number of bytes consumed: reading resumes there.
func (r *Reader) Offset() int64 { return r.off }

// Line returns the number of lines consumed.
func (r *Reader) Line() int { return r.line }

// resume makes the Reader continue from its offset on src, which must be
// positioned there; bytes buffered past the offset are dropped.
func (r *Reader) resume(src io.Reader) {
	r.src = src
	r.end, r.seen = r.start, 0
	r.eof = false
}

// Next returns the next entry. Lines that are not entries (the header,
// blank and malformed lines) are consumed without being returned; malformed
// ones are recorded as diagnostics. At the end of the input Next returns
// io.EOF; it may be called again after more has been written. If the first
// entry of the input is not a session header, Next returns an error
// wrapping ErrNoHeader and reads no further.
func (r *Reader) Next() (*Entry, error) {
	if r.err != nil {
		return nil, r.err
	}
	e, err := r.next()
	if err != nil && !errors.Is(err, io.EOF) {
		r.err = err
	}
	return e, err
}

func (r *Reader) next() (*Entry, error) {
	r.eof = false
	for {
		if j := bytes.IndexByte(r.buf[r.start+r.seen:r.end], '\n'); j >= 0 {
			j += r.seen
			line := r.buf[r.start : r.start+j]
			off := r.off
			r.start += j + 1
			r.off += int64(j + 1)
			r.seen = 0
			if r.glued {
				// The line before was consumed without its newline; this
				// newline (or CRLF) ends it.
				r.glued = false
				if len(skipSpaceBytes(line)) == 0 {
					continue
				}
			}
			r.line++
			e, err := r.handle(line, off)
			if e != nil || err != nil {
				return e, err
			}
			continue
		}
		r.seen = r.end - r.start
		if r.eof {
			if r.start == r.end {
				return nil, io.EOF
			}
			// A last line without a newline: take it if it is a whole object.
			line := r.buf[r.start:r.end]
			if kind, _, _ := scanLine(line); kind != lineObject {
				return nil, io.EOF
			}
			off := r.off
			r.off += int64(len(line))
			r.start, r.seen = r.end, 0
			r.glued = true
			r.line++
			e, err := r.handle(line, off)
			if e != nil || err != nil {
				return e, err
			}
			return nil, io.EOF
		}
		if err := r.fill(); err != nil {
			return nil, err
		}
	}
}

// fill reads more input, starting a new arena when the current one is
// nearly full (the unconsumed bytes move along; consumed ones stay, as
// entries point into them).
func (r *Reader) fill() error {
	if len(r.buf)-r.end < minRead {
		// A line longer than an arena gets one four times its length so
		// far: a line of n bytes is copied about n/3 times over in all.
		if r.fp.on {
			r.leaveArena()
		}
		pending := r.end - r.start
		size := max(arenaSize, 4*pending)
		buf := make([]byte, size)
		copy(buf, r.buf[r.start:r.end])
		r.buf, r.start, r.end = buf, 0, pending
	}
	n, err := r.src.Read(r.buf[r.end:])
	r.end += n
	if errors.Is(err, io.EOF) || n == 0 && err == nil {
		r.eof = true
		return nil
	}
	if err != nil {
		return fmt.Errorf("session: read: %w", err)
	}
	return nil
}

// diag records a malformed line: pi skips it, and so does the reader.
func (r *Reader) diag(off int64, field, format string, args ...any) {
	r.report(off, field, fmt.Errorf(format+": %w", append(args, ErrMalformed)...))
}

// report records a problem of the current line.
func (r *Reader) report(off int64, field string, err error) { r.reportAt(off, 0, field, err) }

// reportAt records a problem at column col (0: none) of the current line.
func (r *Reader) reportAt(off int64, col int, field string, err error) {
	if len(r.diags) >= MaxDiagnostics {
		r.omitted++
		return
	}
	r.diags = append(r.diags, Diagnostic{File: r.name, Line: r.line, Column: col, Offset: off, Field: field, Err: err})
}

// noHeader is the error that stops reading: the file's first entry is no
// session header, so pi refuses the file.
func (r *Reader) noHeader(off int64, field, format string, args ...any) error {
	d := Diagnostic{File: r.name, Line: r.line, Offset: off, Field: field, Err: fmt.Errorf(format+": %w", append(args, ErrNoHeader)...)}
	if r.bom {
		// The cause is on line 1: pi cannot parse a header after a BOM.
		d.Line, d.Offset, d.Field = 1, 0, ""
		d.Err = fmt.Errorf("the file starts with a UTF-8 byte order mark (bytes EF BB BF), which pi 1.6 cannot parse: it skips line 1, finds no session header first (line %d: %s) and refuses the whole file; remove those three bytes: %w", r.line, fmt.Sprintf(format, args...), ErrNoHeader)
	}
	return d
}

// handle turns one line into an entry, or nil if it is none.
func (r *Reader) handle(line []byte, off int64) (*Entry, error) {
	if r.line == 1 && bytes.HasPrefix(line, utf8BOM) {
		r.bom = true
		r.diag(off, "", "the line starts with a UTF-8 byte order mark (bytes EF BB BF), which pi 1.6 cannot parse: it skips the line")
		return nil, nil
	}
	kind, f, err := scanLine(line)
	switch kind {
	case lineBlank:
		return nil, nil
	case lineInvalid:
		var se *syntaxError
		if errors.As(err, &se) {
			// The place goes into the diagnostic's position
			// (file:line:column), in characters as editors count them.
			col := utf8.RuneCount(line[:min(max(se.pos, 0), len(line))]) + 1
			r.reportAt(off, col, "", fmt.Errorf("invalid JSON: %s: %w", se.msg, ErrMalformed))
			return nil, nil
		}
		r.diag(off, "", "invalid JSON: %v", err)
		return nil, nil
	case lineFalsy:
		r.diag(off, "", "not a JSON object")
		return nil, nil
	case lineValue:
		if r.header == nil {
			return nil, r.noHeader(off, "", "first entry is not a JSON object")
		}
		if r.legacy != nil {
			r.legacy.ids = append(r.legacy.ids, "")
		}
		r.diag(off, "", "not a JSON object")
		return nil, nil
	}
	// Trim the line to the object itself.
	lo, hi := skipSpace(line, 0), len(line)
	for hi > lo && isSpace(line[hi-1]) {
		hi--
	}
	raw := line[lo:hi:hi]
	shift := func(s span) span {
		if s.ok() {
			s.start -= lo
			s.end -= lo
		}
		return s
	}

	typ := f.typ
	if !typ.isString(line) {
		if r.header == nil {
			return nil, r.noHeader(off, "type", "first entry has no session header type (%v)", fieldError(line, "type", typ, "a string"))
		}
		if r.legacy != nil {
			r.legacy.ids = append(r.legacy.ids, "")
		}
		r.diag(off, "type", "%v", fieldError(line, "type", typ, "a string"))
		return nil, nil
	}
	typeName := internType(line[typ.start:typ.end])

	if r.header == nil {
		if typeName != "session" {
			return nil, r.noHeader(off, "type", "first entry is %q, not a session header", clip.Echo(typeName))
		}
		if !f.id.isString(line) {
			return nil, r.noHeader(off, "id", "the session header has no string \"id\" (%v), so pi refuses the file", fieldError(line, "id", f.id, "a string"))
		}
		r.version = headerVersion(line, f.version)
		r.header = &Header{
			Version:       int(r.version),
			ID:            f.id.str(line),
			Timestamp:     f.timestamp.str(line),
			Cwd:           memberSpan(raw, "cwd").str(raw),
			ParentSession: memberSpan(raw, "parentSession").str(raw),
			Line:          r.line,
			Raw:           raw,
		}
		if r.version < 2 {
			r.legacy = &legacy{ids: []string{""}}
		}
		r.checkTimestamp(off, line, f.timestamp)
		return nil, nil
	}
	if typeName == "session" {
		if r.legacy != nil {
			r.legacy.ids = append(r.legacy.ids, "")
		}
		r.diag(off, "type", "second session header ignored")
		return nil, nil
	}
	if field, err := checkEntry(line, &f, typeName, r.legacy != nil); err != nil {
		if r.legacy != nil {
			r.legacy.ids = append(r.legacy.ids, "")
		}
		r.diag(off, field, "%s entry: %v", clip.Echo(typeName), err)
		return nil, nil
	}

	e := &Entry{Type: typeName, Line: r.line, Offset: off, Raw: raw}
	r.setStrings(e, line, &f)
	if typeName == "message" {
		e.Role = internRole(line[f.role.start:f.role.end])
		e.msg = shift(f.message)
		e.nullContent = !f.msgContent.ok() || f.msgContent.isNull(line)
		r.checkContent(off, line, e.Role, f.msgContent)
	}
	r.checkTimestamp(off, line, f.timestamp)
	if f.depth > MaxDepth {
		r.report(off, f.deepField, fmt.Errorf("the line nests %d levels deep at %q, more than %d: pi reads it, but its JSON.stringify fails past about 4,000 levels, so a request that carries it can fail: %w", f.depth, clip.Echo(f.deepField), MaxDepth, ErrTooDeep))
	}
	if r.version < 3 && e.Role == "hookMessage" {
		// migrateV2ToV3: the hookMessage role became custom.
		e.Role = "custom"
		role := shift(f.role)
		e.Raw = append(append(append(make([]byte, 0, len(raw)+2), raw[:role.start]...), `"custom"`...), raw[role.end:]...)
		e.msg = memberSpan(e.Raw, "message")
	}
	if r.legacy != nil {
		r.migrateV1(e, shift(f.firstKeptEntryIndex))
		if e.Type == "message" {
			e.msg = memberSpan(e.Raw, "message")
		}
	}
	switch e.Type {
	case "compaction":
		if r.legacy != nil {
			e.ref = memberSpan(e.Raw, "firstKeptEntryId").str(e.Raw)
		} else {
			e.ref = f.firstKeptEntryID.str(line)
		}
	case "context_edit":
		e.ref = f.targetID.str(line)
	}
	return e, nil
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// checkTimestamp reports a timestamp that is no ISO 8601 time (pi writes
// Date.toISOString()).
func (r *Reader) checkTimestamp(off int64, line []byte, ts span) {
	if !ts.isString(line) {
		return
	}
	raw := line[ts.start+1 : ts.end-1]
	if hasEscape(raw) {
		raw = []byte(ts.str(line))
	}
	if isISOTime(raw) {
		return
	}
	r.report(off, "timestamp", fmt.Errorf("\"timestamp\" is %q, not an ISO 8601 time such as 2026-11-30T09:18:59.639Z: %w", clip.Echo(ts.str(line)), ErrInvalidField))
}

// checkContent reports message content of a type pi never writes for the
// role: pi keeps the entry, and the provider request built from it fails
// or drops it.
func (r *Reader) checkContent(off int64, line []byte, role string, c span) {
	if !c.ok() || c.isNull(line) {
		return
	}
	var want string
	switch role {
	case "user", "custom", "system":
		if c.isString(line) || c.isArray(line) {
			return
		}
		want = "a string or an array of content blocks"
	case "assistant", "toolResult":
		if c.isArray(line) {
			return
		}
		want = "an array of content blocks"
	default:
		return
	}
	r.report(off, "message.content", fmt.Errorf("%v (role %q); pi keeps the entry as written: %w", fieldError(line, "message.content", c, want), clip.Echo(role), ErrInvalidField))
}

// isISOTime reports whether s reads as an ISO 8601 date and time:
// YYYY-MM-DDTHH:MM:SS, optional fraction, then Z or an offset.
func isISOTime(s []byte) bool {
	d := func(i, n int) bool {
		if i+n > len(s) {
			return false
		}
		for _, c := range s[i : i+n] {
			if c < '0' || c > '9' {
				return false
			}
		}
		return true
	}
	if !d(0, 4) || len(s) < 20 || s[4] != '-' || !d(5, 2) || s[7] != '-' || !d(8, 2) || s[10] != 'T' && s[10] != 't' ||
		!d(11, 2) || s[13] != ':' || !d(14, 2) || s[16] != ':' || !d(17, 2) {
		return false
	}
	i := 19
	if s[i] == '.' {
		j := i + 1
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if j == i+1 {
			return false
		}
		i = j
	}
	switch rest := s[i:]; {
	case len(rest) == 1 && (rest[0] == 'Z' || rest[0] == 'z'):
		return true
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && d(i+1, 2) && rest[3] == ':' && d(i+4, 2):
		return true
	}
	return false
}

// setStrings sets e's ID, ParentID and Timestamp with one allocation in the
// common case: id and timestamp share one string, and a parent that is the
// previous entry shares its id.
func (r *Reader) setStrings(e *Entry, line []byte, f *fields) {
	id, ts, parent := f.id, f.timestamp, f.parentID
	raw := func(s span) []byte {
		if !s.isString(line) {
			return nil
		}
		return line[s.start+1 : s.end-1]
	}
	if i, t := raw(id), raw(ts); !hasEscape(i) && !hasEscape(t) {
		r.scratch = append(append(r.scratch[:0], i...), t...)
		both := string(r.scratch)
		e.ID, e.Timestamp = both[:len(i)], both[len(i):]
	} else {
		e.ID, e.Timestamp = id.str(line), ts.str(line)
	}
	if p := raw(parent); p != nil && r.lastID != "" && string(p) == r.lastID {
		e.ParentID = r.lastID
	} else {
		e.ParentID = parent.str(line)
	}
	r.lastID = e.ID
}

// headerVersion mirrors `header.version ?? 1` as pi compares it with 2 and
// 3; a version that is no number (NaN in JavaScript) migrates nothing.
func headerVersion(line []byte, v span) float64 {
	switch {
	case !v.ok() || v.isNull(line):
		return 1
	case v.isNumber(line):
		n, _ := strconv.ParseFloat(string(line[v.start:v.end]), 64)
		return max(min(n, math.MaxInt32), math.MinInt32)
	case v.isString(line):
		if n, err := strconv.ParseFloat(strings.TrimSpace(v.str(line)), 64); err == nil && !math.IsNaN(n) {
			return max(min(n, math.MaxInt32), math.MinInt32)
		}
	}
	return CurrentVersion
}

// migrateV1 gives e an id and a parent the way pi's migrateV1ToV2 does, with
// deterministic ids (pi draws random ones): eight hex digits of the line
// number, which no other entry of a version 1 file can have.
func (r *Reader) migrateV1(e *Entry, keptIndex span) {
	l := r.legacy
	e.ID = fmt.Sprintf("%08x", e.Line)
	e.ParentID = l.prevID
	l.prevID = e.ID
	l.ids = append(l.ids, e.ID)
	raw := withMember(e.Raw, "id", jsonscan.AppendString(nil, e.ID))
	if e.ParentID == "" {
		raw = withMember(raw, "parentId", []byte("null"))
	} else {
		raw = withMember(raw, "parentId", jsonscan.AppendString(nil, e.ParentID))
	}
	if e.Type == "compaction" && keptIndex.isNumber(e.Raw) {
		raw = withoutMember(raw, "firstKeptEntryIndex")
		n, err := strconv.ParseFloat(string(e.Raw[keptIndex.start:keptIndex.end]), 64)
		// Only entries already migrated have their new id; pi would read
		// the (absent) id of a later one.
		if err == nil && n >= 0 && n < float64(len(l.ids)) && n == float64(int(n)) && l.ids[int(n)] != "" {
			raw = withMember(raw, "firstKeptEntryId", jsonscan.AppendString(nil, l.ids[int(n)]))
		}
	}
	e.Raw = raw
}

func internType(b []byte) string {
	switch string(b) {
	case `"message"`:
		return "message"
	case `"session"`:
		return "session"
	case `"compaction"`:
		return "compaction"
	case `"context_edit"`:
		return "context_edit"
	case `"branch_summary"`:
		return "branch_summary"
	case `"custom"`:
		return "custom"
	case `"custom_message"`:
		return "custom_message"
	case `"label"`:
		return "label"
	case `"session_info"`:
		return "session_info"
	case `"model_change"`:
		return "model_change"
	case `"thinking_level_change"`:
		return "thinking_level_change"
	case `"usage"`:
		return "usage"
	}
	s, _ := jsonscan.Unquote(b)
	return s
}

func internRole(b []byte) string {
	switch string(b) {
	case `"user"`:
		return "user"
	case `"assistant"`:
		return "assistant"
	case `"toolResult"`:
		return "toolResult"
	case `"system"`:
		return "system"
	case `"custom"`:
		return "custom"
	case `"bashExecution"`:
		return "bashExecution"
	case `"hookMessage"`:
		return "hookMessage"
	}
	s, _ := jsonscan.Unquote(b)
	return s
}
