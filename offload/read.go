package offload

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pi-session/pi-session/jsonpath"
	"github.com/pi-session/pi-session/jsonscan"

	"github.com/pi-session/pi-session/jsonpos"

	"github.com/pi-session/pi-session/clip"
)

// ReadResult is what ctx_read returns: the text the caller sees and the
// metadata a program reads from details.result.
type ReadResult struct {
	Text    string      `json:"text"`
	Details ReadDetails `json:"details"`
}

// ReadDetails identify the payload and the read.
type ReadDetails struct {
	ID     string   `json:"id"`
	Mode   string   `json:"mode"`
	Result ReadMeta `json:"result"`
}

// ReadMeta is the metadata of a read. Offsets are bytes; for section and
// jsonPath reads Offset, Length and NextOffset are relative to the section
// or the rendered value.
type ReadMeta struct {
	TotalBytes int64  `json:"totalBytes"`
	Offset     int64  `json:"offset"`
	Length     int64  `json:"length"`
	NextOffset *int64 `json:"nextOffset"` // null when the read reached the end
	Capped     bool   `json:"capped,omitempty"`

	FirstLine int64 `json:"firstLine,omitempty"`
	LastLine  int64 `json:"lastLine,omitempty"`

	TotalMatches    *int     `json:"totalMatches,omitempty"`
	ReturnedMatches int      `json:"returnedMatches,omitempty"`
	MatchesBefore   int      `json:"matchesBefore,omitempty"`
	TotalLines      int64    `json:"totalLines,omitempty"`
	NextCursor      string   `json:"nextCursor,omitempty"`
	ScanTruncated   bool     `json:"scanTruncated"`
	Hints           []string `json:"hints,omitempty"`

	Section      string `json:"section,omitempty"`
	SectionStart int64  `json:"sectionStart,omitempty"`
	SectionBytes int64  `json:"sectionBytes,omitempty"`

	JSONPath   string `json:"jsonPath,omitempty"`
	Results    int    `json:"results,omitempty"`
	ValueType  string `json:"valueType,omitempty"`
	ValueBytes int64  `json:"valueBytes,omitempty"`
}

// Budgets of one read.
const (
	programReadBytes = 512 << 10
	headerReserve    = 400
	ctxLineCap       = 300
)

// pageBudget is how many bytes of payload text one read may return: below
// the offload threshold at the model boundary (so a read never becomes a
// handle itself), 512 KB inside a program.
func pageBudget(threshold int64, inProgram bool) int {
	if inProgram {
		return programReadBytes
	}
	b := min(threshold-1, programReadBytes) - headerReserve
	return int(max(b, 256))
}

func ptr[T any](v T) *T { return &v }

func lineAt(data []byte, off int) int64 { return int64(bytes.Count(data[:off], nl)) + 1 }

var nl = []byte{'\n'}

// totalLines counts lines; a last line without '\n' counts.
func totalLines(data []byte) int64 {
	n := int64(bytes.Count(data, nl))
	if len(data) > 0 && data[len(data)-1] != '\n' {
		n++
	}
	return n
}

// runeCut moves a cut at n back to the start of the rune it splits, by at
// most 3 bytes and not below floor: in invalid UTF-8 the cut stays where it
// is, so paging always moves forward.
func runeCut(b []byte, n, floor int) int {
	if n >= len(b) {
		return n
	}
	for i := 0; i < 3 && n-i > floor; i++ {
		if utf8.RuneStart(b[n-i]) {
			return n - i
		}
	}
	return n
}

// window picks bytes [start, end) of data for a page of at most budget
// bytes starting at off: whole runes, and, when the caller gave no length,
// ending at a line end near the budget.
func window(data []byte, off int64, length int64, budget int) (start, end int, capped bool) {
	start = int(off)
	for i := 0; i < 3 && start < len(data) && !utf8.RuneStart(data[start]); i++ {
		start++
	}
	n := int64(budget)
	if length > 0 {
		if length > n {
			capped = true
		} else {
			n = length
		}
	}
	end = len(data)
	if int64(end-start) > n {
		end = start + int(n)
		for i := 0; i < 3 && end > start && !utf8.RuneStart(data[end]); i++ {
			end--
		}
		if length == 0 || capped {
			if i := bytes.LastIndexByte(data[start:end], '\n'); i >= 0 && i+1 >= (end-start)*3/4 {
				end = start + i + 1
			}
		}
	}
	return start, end, capped
}

func offsetPastEnd(arg string, off, size int64, what string) error {
	if size == 0 {
		return argErr(arg, "%d is past the end: %s is empty", off, what)
	}
	return argErr(arg, "%d is past the end of %s (%d bytes); valid offsets are 0 to %d", off, what, size, size-1)
}

// readRange is a byte range read of data (a payload, or a section of it at
// base).
func readRange(id string, data []byte, a ReadArgs, budget int, inProgram bool) (ReadResult, error) {
	size := int64(len(data))
	if a.Offset >= size && !(size == 0 && a.Offset == 0) {
		return ReadResult{}, offsetPastEnd("offset", a.Offset, size, id)
	}
	start, end, capped := window(data, a.Offset, a.Length, budget)
	meta := ReadMeta{TotalBytes: size, Offset: int64(start), Length: int64(end - start), Capped: capped}
	if end < len(data) {
		meta.NextOffset = ptr(int64(end))
	}
	if end > start {
		meta.FirstLine = lineAt(data, start)
		meta.LastLine = meta.FirstLine + int64(bytes.Count(data[start:end-1], nl))
	}
	res := ReadResult{Details: ReadDetails{ID: id, Mode: "range", Result: meta}}
	if inProgram {
		res.Text = string(data[start:end])
		return res, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[%s bytes %d-%d of %d", id, start, end, size)
	if end > start {
		fmt.Fprintf(&b, ", lines %d-%d", meta.FirstLine, meta.LastLine)
	}
	if capped {
		fmt.Fprintf(&b, ", length capped at %d per read", budget)
	}
	if meta.NextOffset != nil {
		fmt.Fprintf(&b, "; nextOffset %d]\n", end)
	} else {
		b.WriteString("; end of payload]\n")
	}
	b.Write(data[start:end])
	res.Text = b.String()
	return res, nil
}

// queryCursor is where the next page of a query starts.
type queryCursor struct {
	Scan  int64  `json:"s"`           // line start where the search resumes
	Line  int64  `json:"l"`           // its line number
	Trail int    `json:"t,omitempty"` // trailing context lines owed after Scan
	Cont  int64  `json:"c,omitempty"` // >0: continue the matching line at Scan from here
	Seen  int    `json:"m,omitempty"` // matching lines returned by earlier pages
	Total int    `json:"n"`           // matching lines in the payload
	Lines int64  `json:"L"`           // lines in the payload
	FP    string `json:"f"`
}

func queryFingerprint(id string, a ReadArgs) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%v\x00%v\x00%d", id, a.Regex, a.IgnoreCase, a.ContextLines)
	for _, t := range a.Query {
		fmt.Fprintf(h, "\x00%s", t)
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

func encodeCursor(c queryCursor) string {
	b, _ := json.Marshal(c)
	return "q1." + base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string, size int64, fp string) (queryCursor, error) {
	var c queryCursor
	bad := argErr("cursor", "is not a cursor of this read; pass the nextCursor of the previous page unchanged, with the same id, query, regex, ignoreCase and contextLines")
	rest, ok := strings.CutPrefix(s, "q1.")
	if !ok {
		return c, bad
	}
	b, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil || json.Unmarshal(b, &c) != nil {
		return c, bad
	}
	if c.FP != fp {
		return c, bad
	}
	if c.Scan < 0 || c.Scan > size || c.Line < 1 || c.Trail < 0 || c.Trail > maxContextLines || c.Cont < 0 || c.Cont > size ||
		(c.Cont > 0 && c.Cont <= c.Scan) || c.Seen < 0 || c.Total < c.Seen || c.Lines < 0 {
		return c, bad
	}
	return c, nil
}

// readQuery returns one page of the lines matching a query, with merged
// context windows: each line appears once, matching lines marked "N:",
// context lines "N-", and "--" between windows that do not touch.
func readQuery(id string, data []byte, a ReadArgs, budget int, inProgram bool) (ReadResult, error) {
	m, err := queryMatcher(a.Query, a.Regex, a.IgnoreCase)
	if err != nil {
		return ReadResult{}, err
	}
	fp := queryFingerprint(id, a)
	cur := queryCursor{Line: 1, Total: -1, FP: fp}
	if a.Cursor != "" {
		if cur, err = decodeCursor(a.Cursor, int64(len(data)), fp); err != nil {
			return ReadResult{}, err
		}
	}
	if !inProgram {
		// The header repeats the query (cut by clip.Echo) and may end with
		// a call to continue: what it takes past the reserve comes off the
		// page, so the answer stays under its cap.
		over := len(describeQuery(a)) + min(len(fullNextCall(id, a, "")), maxNextCall) - 200
		budget = max(budget-max(over, 0), 256)
	}
	pg := page(data, m, a.ContextLines, a.MaxMatches, budget, cur)
	if cur.Total < 0 {
		cur.Total = pg.seen + countMatches(m, data, pg.countFrom)
		cur.Lines = totalLines(data)
	}
	meta := ReadMeta{
		TotalBytes:      int64(len(data)),
		TotalMatches:    ptr(cur.Total),
		ReturnedMatches: pg.seen,
		MatchesBefore:   cur.Seen,
		TotalLines:      cur.Lines,
		FirstLine:       pg.firstLine,
		LastLine:        pg.lastLine,
	}
	if pg.more {
		next := pg.next
		next.Seen, next.Total, next.Lines, next.FP = cur.Seen+pg.seen, cur.Total, cur.Lines, fp
		meta.NextCursor = encodeCursor(next)
	}
	res := ReadResult{Details: ReadDetails{ID: id, Mode: "query", Result: meta}}
	if cur.Total == 0 {
		meta.Hints = noMatchHints(data, a)
		res.Details.Result = meta
		var b strings.Builder
		fmt.Fprintf(&b, "No line of %s matches %s (%s, %d lines scanned).", id, describeQuery(a), queryKind(a), cur.Lines)
		for _, h := range meta.Hints {
			b.WriteString("\n- ")
			b.WriteString(h)
		}
		res.Text = b.String()
		return res, nil
	}
	if inProgram {
		res.Text = string(pg.text)
		return res, nil
	}
	var b strings.Builder
	if pg.seen > 0 {
		fmt.Fprintf(&b, "[%s query %s (%s): matching lines %d-%d of %d", id, describeQuery(a), queryKind(a), cur.Seen+1, cur.Seen+pg.seen, cur.Total)
	} else {
		fmt.Fprintf(&b, "[%s query %s (%s): continuing matching line %d of %d", id, describeQuery(a), queryKind(a), cur.Seen, cur.Total)
	}
	fmt.Fprintf(&b, " in %d lines; \"N:\" matches, \"N-\" context", cur.Lines)
	if pg.partial {
		b.WriteString(", \"N+\" a long line continued")
	}
	b.WriteString("]\n")
	b.Write(pg.text)
	if pg.more {
		fmt.Fprintf(&b, "\n[more: ctx_read(%s)]", nextCall(id, a, meta.NextCursor))
	}
	res.Text = b.String()
	return res, nil
}

// maxNextCall is the longest "[more: ...]" call a query page ends with; a
// call repeating a longer query says to repeat it instead.
const maxNextCall = 1000

// nextCall is the ctx_read call of the next page of a query.
func nextCall(id string, a ReadArgs, cursor string) string {
	if c := fullNextCall(id, a, cursor); len(c) <= maxNextCall {
		return c
	}
	return fmt.Sprintf(`{"id":%q, the same query, regex, ignoreCase and contextLines, "cursor":%q}`, id, cursor)
}

func fullNextCall(id string, a ReadArgs, cursor string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"id":%q,"query":`, id)
	if a.QueryArray {
		q, _ := json.Marshal(a.Query)
		b.Write(q)
	} else {
		q, _ := json.Marshal(a.Query[0])
		b.Write(q)
	}
	if a.Regex {
		b.WriteString(`,"regex":true`)
	}
	if a.IgnoreCase {
		b.WriteString(`,"ignoreCase":true`)
	}
	if a.ContextLines != defaultContextLines {
		fmt.Fprintf(&b, `,"contextLines":%d`, a.ContextLines)
	}
	fmt.Fprintf(&b, `,"cursor":%q}`, cursor)
	return b.String()
}

func describeQuery(a ReadArgs) string {
	if !a.QueryArray {
		return strconv.Quote(clip.Echo(a.Query[0]))
	}
	parts := make([]string, 0, len(a.Query))
	for i, t := range a.Query {
		if i == 4 {
			parts = append(parts, fmt.Sprintf("... %d more", len(a.Query)-4))
			break
		}
		parts = append(parts, strconv.Quote(clip.Echo(t)))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func queryKind(a ReadArgs) string {
	k := "literal"
	if a.Regex {
		k = "regex"
	}
	if a.IgnoreCase {
		return k + ", ignoring case"
	}
	return k + ", case-sensitive"
}

type pageOut struct {
	text                []byte
	seen                int
	more                bool
	next                queryCursor
	countFrom           int
	firstLine, lastLine int64
	partial             bool
}

// nextLineStart returns the start of the line after the one containing pos.
func nextLineStart(data []byte, pos int) int {
	if i := bytes.IndexByte(data[pos:], '\n'); i >= 0 {
		return pos + i + 1
	}
	return len(data)
}

func lineEnd(data []byte, pos int) int {
	if i := bytes.IndexByte(data[pos:], '\n'); i >= 0 {
		return pos + i
	}
	return len(data)
}

// appendLine renders one line: "N:" or "N-", capped at max bytes of text.
func appendLine(out []byte, data []byte, start, end int, n int64, mark byte, max int) []byte {
	out = strconv.AppendInt(out, n, 10)
	out = append(out, mark)
	text := trimCR(data[start:end])
	if len(text) > max {
		cut := max
		cut = runeCut(text, cut, 0)
		out = append(out, text[:cut]...)
		out = fmt.Appendf(out, " ...[+%d bytes; line at bytes %d-%d]", len(text)-cut, start, end)
	} else {
		out = append(out, text...)
	}
	return append(out, '\n')
}

// appendPart appends line n of a page: the number, sep, and the line's
// text data[from:e] up to room bytes, cut at a character boundary, with a
// newline. to is where the text stops (e when the rest fits).
func appendPart(out, data []byte, n int64, sep byte, from, e, room int) (_ []byte, to int) {
	to = min(e, from+room)
	if to < e {
		to = runeCut(data, to, from)
	}
	out = strconv.AppendInt(out, n, 10)
	out = append(out, sep)
	out = append(out, data[from:to]...)
	return append(out, '\n'), to
}

// page fills one page of a query from cur.
func page(data []byte, m lineMatcher, ctxLines, maxMatches, budget int, cur queryCursor) pageOut {
	var p pageOut
	scan, line, trail := int(cur.Scan), cur.Line, cur.Trail
	p.countFrom = scan
	note := func(n int64) {
		if p.firstLine == 0 {
			p.firstLine = n
		}
		p.lastLine = n
	}
	// A long matching line cut by the previous page goes on first.
	if cur.Cont > 0 {
		e := lineEnd(data, scan)
		var to int
		p.text, to = appendPart(p.text, data, line, '+', int(cur.Cont), e, budget-24)
		p.partial = true
		note(line)
		p.countFrom = min(e+1, len(data))
		if to < e {
			p.more = true
			p.next = queryCursor{Scan: int64(scan), Line: line, Cont: int64(to)}
			return p
		}
		scan, line, trail = min(e+1, len(data)), line+1, ctxLines
	}
	var win []byte
	for {
		s, e, _, ok := m.next(data, scan)
		if ok && p.seen >= maxMatches {
			// Page full: owe the trailing context of the last match up to the next one.
			win = trailing(win[:0], data, scan, s, line, trail)
			if len(p.text)+len(win) <= budget {
				p.text = append(p.text, win...)
				n := int64(bytes.Count(win, nl))
				if n > 0 {
					note(line + n - 1)
				}
				scan, line = advanceLines(data, scan, int(n)), line+n
				trail = 0
			}
			p.more = true
			p.next = queryCursor{Scan: int64(scan), Line: line, Trail: trail}
			return p
		}
		if !ok {
			win = trailing(win[:0], data, scan, len(data), line, trail)
			if len(p.text)+len(win) <= budget {
				p.text = append(p.text, win...)
				if n := int64(bytes.Count(win, nl)); n > 0 {
					note(line + n - 1)
				}
			}
			return p
		}
		ln := line + int64(bytes.Count(data[scan:s], nl))
		// Front: owed trailing lines after the previous match.
		frontEnd, nFront := scan, 0
		for nFront < trail && frontEnd < s {
			frontEnd = nextLineStart(data, frontEnd)
			nFront++
		}
		// Back: leading context before this match, not before frontEnd.
		backStart, nBack := s, 0
		for nBack < ctxLines && backStart > frontEnd {
			backStart = bytes.LastIndexByte(data[:backStart-1], '\n') + 1
			nBack++
		}
		win = win[:0]
		pos, n := scan, line
		for pos < frontEnd {
			le := lineEnd(data, pos)
			win = appendLine(win, data, pos, le, n, '-', ctxLineCap)
			pos, n = le+1, n+1
		}
		if backStart > frontEnd && (len(p.text) > 0 || len(win) > 0) {
			win = append(win, "--\n"...)
		}
		pos, n = backStart, ln-int64(nBack)
		for pos < s {
			le := lineEnd(data, pos)
			win = appendLine(win, data, pos, le, n, '-', ctxLineCap)
			pos, n = le+1, n+1
		}
		firstOfWin := ln - int64(nBack)
		if nFront > 0 {
			firstOfWin = line
		}
		matchLen := len(strconv.FormatInt(ln, 10)) + 2 + (e - s)
		if len(p.text)+len(win)+matchLen > budget {
			if p.seen > 0 || cur.Cont > 0 {
				p.more = true
				p.next = queryCursor{Scan: int64(scan), Line: line, Trail: trail}
				return p
			}
			// Alone on the page and too long: show its first part and
			// continue the line on the next page. Context that leaves too
			// little room for the line is dropped.
			for len(win) > 0 && len(p.text)+len(win)+min(matchLen, budget/2) > budget {
				i := bytes.IndexByte(win, '\n')
				win = win[i+1:] // the farthest context line goes first
			}
			p.text = append(p.text, win...)
			var to int
			p.text, to = appendPart(p.text, data, ln, ':', s, e, max(budget-len(p.text)-24, 64))
			note(firstOfWin)
			note(ln)
			p.seen++
			p.partial = true
			p.countFrom = min(e+1, len(data))
			if to < e {
				p.more = true
				p.next = queryCursor{Scan: int64(s), Line: ln, Cont: int64(to)}
				return p
			}
			scan, line, trail = min(e+1, len(data)), ln+1, ctxLines
			continue
		}
		win = appendLine(win, data, s, e, ln, ':', len(data))
		p.text = append(p.text, win...)
		note(firstOfWin)
		note(ln)
		p.seen++
		p.countFrom = min(e+1, len(data))
		if e >= len(data) {
			return p
		}
		scan, line, trail = e+1, ln+1, ctxLines
	}
}

// trailing renders up to n context lines from pos, stopping before limit.
func trailing(out []byte, data []byte, pos, limit int, line int64, n int) []byte {
	for i := 0; i < n && pos < limit && pos < len(data); i++ {
		le := lineEnd(data, pos)
		out = appendLine(out, data, pos, le, line, '-', ctxLineCap)
		pos, line = le+1, line+1
	}
	return out
}

func advanceLines(data []byte, pos, n int) int {
	for i := 0; i < n && pos < len(data); i++ {
		pos = nextLineStart(data, pos)
	}
	return pos
}

// noMatchHints explain a query that matched nothing: whether lines match
// ignoring case, whether the query looks like a regex, and how many lines
// each word of a phrase matches.
func noMatchHints(data []byte, a ReadArgs) []string {
	var hints []string
	if !a.IgnoreCase {
		if m, err := queryMatcher(a.Query, a.Regex, true); err == nil {
			if n := countMatches(m, data, 0); n > 0 {
				hints = append(hints, fmt.Sprintf("%d lines match ignoring case: add \"ignoreCase\": true.", n))
			}
		}
	}
	if !a.Regex {
		for _, t := range a.Query {
			if looksLikeRegex(t) {
				hints = append(hints, fmt.Sprintf("%s looks like a regex but was matched as literal text: add \"regex\": true.", strconv.Quote(clip.Echo(t))))
				break
			}
		}
	}
	if !a.Regex && !a.QueryArray && len(a.Query) == 1 {
		words := uniqueWords(a.Query[0])
		if len(words) >= 2 {
			var counts []string
			var found []string
			for _, w := range words {
				m, _ := queryMatcher([]string{w}, false, a.IgnoreCase)
				n := countMatches(m, data, 0)
				counts = append(counts, fmt.Sprintf("%q %d", clip.Echo(w), n))
				if n > 0 {
					found = append(found, w)
				}
			}
			h := "Lines matching each word of the phrase: " + strings.Join(counts, ", ") + "."
			q, _ := json.Marshal(found)
			switch {
			case len(found) == 1:
				h += fmt.Sprintf(" The query %s alone finds them.", clip.Echo(string(q)))
			case len(found) > 1:
				h += fmt.Sprintf(" The array query %s finds lines with any of them.", clip.Echo(string(q)))
			}
			hints = append(hints, h)
		}
	}
	if len(hints) == 0 {
		hints = append(hints, "Try a shorter term, or read the outline of the notice and a byte range.")
	}
	return hints
}

func uniqueWords(s string) []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range strings.Fields(s) {
		w = strings.Trim(w, `"'.,;:()[]{}`)
		if w == "" || seen[w] || len(out) == 8 {
			continue
		}
		seen[w] = true
		out = append(out, w)
	}
	return out
}

// readSection reads one named part, paged with offset and length relative
// to the section.
func readSection(id string, data []byte, a ReadArgs, budget int, inProgram bool) (ReadResult, error) {
	p, err := findSection(buildOutline(data), a.Section)
	if err != nil {
		return ReadResult{}, err
	}
	sec := data[p.Start:p.End]
	if a.Offset >= int64(len(sec)) && len(sec) > 0 {
		return ReadResult{}, offsetPastEnd("offset", a.Offset, int64(len(sec)), fmt.Sprintf("section %q", cutText(p.Name, 80)))
	}
	res, err := readRange(id, sec, a, budget, true)
	if err != nil {
		return res, err
	}
	m := &res.Details.Result
	m.Section, m.SectionStart, m.SectionBytes = p.Name, p.Start, p.End-p.Start
	res.Details.Mode = "section"
	if inProgram {
		return res, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[%s section %q: bytes %d-%d of the section's %d (payload bytes %d-%d)", id, cutText(p.Name, 80), m.Offset, m.Offset+m.Length, m.SectionBytes, p.Start, p.End)
	if m.NextOffset != nil {
		fmt.Fprintf(&b, "; nextOffset %d with the same section]\n", *m.NextOffset)
	} else {
		b.WriteString("; end of section]\n")
	}
	b.WriteString(res.Text)
	res.Text = b.String()
	return res, nil
}

// ErrBadJSONPath wraps every JSONPath syntax error.
var ErrBadJSONPath = errors.New("offload: jsonPath: invalid")

// jsonPathError words an error of package jsonpath for the model, as one
// of offload's: a syntax error wraps ErrBadJSONPath.
func jsonPathError(err error) error {
	var je *jsonpath.Error
	switch {
	case !errors.As(err, &je):
		return err
	case errors.Is(err, jsonpath.ErrSyntax):
		return fmt.Errorf("%w: %s", ErrBadJSONPath, je.Msg)
	}
	return errors.New("offload: jsonPath: " + je.Msg)
}

// readJSONPath reads the values a JSONPath selects: one string is shown
// decoded, anything else as JSON; a large rendering is paged with offset.
func readJSONPath(id string, data []byte, a ReadArgs, budget int, inProgram bool) (ReadResult, error) {
	q, err := jsonpath.Parse(a.JSONPath)
	if err != nil {
		return ReadResult{}, jsonPathError(err)
	}
	nodes, err := q.Select(data)
	if err != nil {
		var je *jsonscan.Error
		if errors.As(err, &je) {
			return ReadResult{}, argErr("jsonPath", "the payload is not JSON (%v); use query or a byte range (offset, length)", je)
		}
		return ReadResult{}, jsonPathError(err)
	}
	meta := ReadMeta{TotalBytes: int64(len(data)), JSONPath: a.JSONPath, Results: len(nodes)}
	res := ReadResult{Details: ReadDetails{ID: id, Mode: "jsonPath"}}
	if len(nodes) == 0 {
		meta.NextOffset = nil
		res.Details.Result = meta
		res.Text = fmt.Sprintf("No value of %s matches %s. Check the keys in the notice's preview; names are case-sensitive and indices start at 0.", id, clip.Echo(a.JSONPath))
		return res, nil
	}
	// The rendering is a virtual concatenation of segments.
	var segs [][]byte
	decoded := false
	var total int64
	if len(nodes) == 1 && data[nodes[0].Start] == '"' {
		decoded = true
		total = jsonscan.DecodedLen(data[nodes[0].Start:nodes[0].End])
		meta.ValueType = "string"
	} else if len(nodes) == 1 {
		segs = [][]byte{data[nodes[0].Start:nodes[0].End]}
		meta.ValueType = jsonpos.Type(data[nodes[0].Start:])
	} else {
		meta.ValueType = "list"
		segs = append(segs, []byte("[\n"))
		for i, n := range nodes {
			if i > 0 {
				segs = append(segs, []byte(",\n"))
			}
			segs = append(segs, data[n.Start:n.End])
		}
		segs = append(segs, []byte("\n]"))
	}
	for _, s := range segs {
		total += int64(len(s))
	}
	meta.ValueBytes = total
	if a.Offset > 0 && a.Offset >= total {
		return ReadResult{}, offsetPastEnd("offset", a.Offset, total, "the selected value")
	}
	n := int64(budget)
	if a.Length > 0 {
		if a.Length > n {
			meta.Capped = true
		} else {
			n = a.Length
		}
	}
	var out []byte
	if decoded {
		out, _ = jsonscan.AppendUnquoted(nil, data[nodes[0].Start:nodes[0].End], a.Offset, n)
	} else {
		out = virtualSlice(segs, a.Offset, n)
	}
	// Whole runes only.
	cut := len(out)
	if a.Offset+int64(cut) < total {
		cut = cutRune(out)
	}
	out = out[:cut]
	meta.Offset, meta.Length = a.Offset, int64(len(out))
	if a.Offset+int64(len(out)) < total {
		meta.NextOffset = ptr(a.Offset + int64(len(out)))
	}
	res.Details.Result = meta
	if inProgram {
		res.Text = string(out)
		return res, nil
	}
	var b strings.Builder
	if len(nodes) == 1 {
		fmt.Fprintf(&b, "[%s jsonPath %s: %s of %d bytes at payload bytes %d-%d", id, clip.Echo(a.JSONPath), meta.ValueType, total, nodes[0].Start, nodes[0].End)
	} else {
		fmt.Fprintf(&b, "[%s jsonPath %s: %d values, shown as a JSON list of %d bytes", id, clip.Echo(a.JSONPath), len(nodes), total)
	}
	if meta.NextOffset != nil || a.Offset > 0 {
		fmt.Fprintf(&b, "; showing bytes %d-%d", a.Offset, a.Offset+int64(len(out)))
	}
	if meta.NextOffset != nil {
		fmt.Fprintf(&b, "; nextOffset %d with the same jsonPath]\n", *meta.NextOffset)
	} else {
		b.WriteString("]\n")
	}
	b.Write(out)
	res.Text = b.String()
	return res, nil
}

// cutRune drops a trailing partial UTF-8 sequence.
func cutRune(b []byte) int {
	n := len(b)
	for i := 1; i <= 3 && i <= n; i++ {
		c := b[n-i]
		if c < 0x80 {
			return n
		}
		if c >= 0xC0 { // a start byte: is its sequence complete?
			need := 2
			if c >= 0xE0 {
				need = 3
			}
			if c >= 0xF0 {
				need = 4
			}
			if i < need {
				return n - i
			}
			return n
		}
	}
	return n
}

func virtualSlice(segs [][]byte, off, n int64) []byte {
	out := make([]byte, 0, min(n, 1<<20))
	var pos int64
	for _, s := range segs {
		l := int64(len(s))
		if pos+l <= off {
			pos += l
			continue
		}
		from := max(off-pos, 0)
		to := min(l, from+n-int64(len(out)))
		out = append(out, s[from:to]...)
		pos += l
		if int64(len(out)) >= n {
			break
		}
	}
	return out
}
