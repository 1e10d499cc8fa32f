package recap

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/pi-session/pi-session/clip"
	"github.com/pi-session/pi-session/session"
)

// Caps of the transcript, in bytes of UTF-8.
const (
	ArgsCap       = 2000  // a tool call's arguments, an extension's data, a shell command
	ResultCap     = 5000  // a tool result's text, a shell command's output
	TranscriptCap = 48000 // the whole transcript
	HeadPercent   = 58    // of a cut transcript, the share kept from the start; the rest is the end
	// redactMargin is how much text beyond a cap or a cut is read and
	// redacted with what is kept, so that a secret crossing the cut is
	// seen whole: longer than any token format; a private key cut short is
	// still redacted from its BEGIN line on.
	redactMargin = 2048
	// FallbackTextCap caps the final answer quoted by a local recap.
	FallbackTextCap = 700
)

// RecapType is the customType of recap entries; they are never part of a
// transcript, so a recap does not recap recaps.
const RecapType = "summary-recap"

// Transcript is a run rendered for the recap model.
type Transcript struct {
	Text       string   // redacted, at most TranscriptCap bytes
	Bytes      int      // length before the whole-transcript cut
	Cut        bool     // the middle was left out
	Entries    int      // entries that gave text
	Redactions int      // secrets replaced
	Tools      []string // tool names called, first call first, each once
	ToolCalls  int
	FinalText  string // the last assistant text of the run, redacted, uncapped
}

// Serialize renders the run's entries: one block per message, separated
// by blank lines, with role prefixes (USER, ASSISTANT, TOOL CALL <name>,
// TOOL RESULT <name> (error), USER SHELL (exit N), EXTENSION <customType>).
// Text and tool calls are kept; thinking and images never are; recap
// entries and shell commands kept out of context (!!) are skipped. The
// latest context_edit of branch for an entry replaces its content (or
// drops it). Tool arguments are capped at ArgsCap, results at ResultCap,
// the whole at TranscriptCap (HeadPercent head, the rest tail, around a
// marker). Secrets are redacted in the parsed values first, and again
// after every cap and cut.
//
// Parts are rendered (their values redacted and capped) only when they
// can survive the whole-transcript cut: a 50 MB run's middle is never
// redacted, since it is never sent.
func Serialize(run, branch []*session.Entry) Transcript {
	return SerializeRuns(run, branch, nil)
}

// SerializeRuns is Serialize for a batch of runs: starts are the entries
// after which each later run began. When more than one run gives text,
// each run's blocks follow a line "--- run n of N ---", so the recap model
// can tell the request that started each run from the messages sent while
// it worked (a steered or follow-up message is part of its run).
func SerializeRuns(run, branch []*session.Entry, starts []string) Transcript {
	s := serializer{edits: contextEdits(branch), seen: map[string]bool{}}
	begins := map[string]bool{}
	for _, id := range starts {
		begins[id] = true
	}
	var runOf []int // the run of each part
	current := 0
	for i, e := range run {
		if i > 0 && begins[run[i-1].ID] {
			current++
		}
		before := len(s.parts)
		s.entry(e)
		for range len(s.parts) - before {
			runOf = append(runOf, current)
		}
	}
	s.markRuns(runOf)
	const sep = "\n\n"
	n := len(s.parts)
	est := 0
	for _, p := range s.parts {
		est += p.estimate() + len(sep)
	}
	// Render parts from the start and from the end until each side holds
	// more than it can keep, with room for the redaction margin and for
	// replacements shorter than what they replace.
	const slack = 4 * redactMargin
	headNeed := TranscriptCap*HeadPercent/100 + slack
	tailNeed := TranscriptCap - TranscriptCap*HeadPercent/100 + slack
	var head, tail []string
	headLen, tailLen := 0, 0
	i, j := 0, n-1
	for i <= j && (est <= TranscriptCap+slack || headLen < headNeed) {
		r := s.render(s.parts[i])
		head = append(head, r)
		headLen += len(r) + len(sep)
		i++
	}
	for i <= j && tailLen < tailNeed {
		r := s.render(s.parts[j])
		tail = append(tail, r)
		tailLen += len(r) + len(sep)
		j--
	}
	slices.Reverse(tail)
	t := s.t
	var m int
	if i > j { // every part rendered
		full := strings.Join(append(head, tail...), sep)
		t.Bytes = len(full)
		t.Text, t.Cut, m = cutTranscript(full, full, len(full))
	} else {
		headSrc := strings.Join(head, sep) + sep
		tailSrc := sep + strings.Join(tail, sep)
		middle := 0
		for _, p := range s.parts[i : j+1] {
			middle += p.estimate() + len(sep)
		}
		t.Bytes = len(headSrc) + middle + len(tailSrc) - len(sep)
		t.Text, t.Cut, m = cutTranscript(headSrc, tailSrc, t.Bytes)
	}
	t.Redactions += m
	return t
}

// markRuns puts a "--- run n of N ---" block before the first part of each
// run when more than one run gave parts; runOf is the run of each part.
func (s *serializer) markRuns(runOf []int) {
	var firsts []int // index of each run's first part
	for i, r := range runOf {
		if i == 0 || r != runOf[i-1] {
			firsts = append(firsts, i)
		}
	}
	if len(firsts) < 2 {
		return
	}
	parts := make([]part, 0, len(s.parts)+len(firsts))
	k := 0
	for i, p := range s.parts {
		if k < len(firsts) && firsts[k] == i {
			k++
			parts = append(parts, part{lit(fmt.Sprintf("%s %d of %d ---", RunMarker, k, len(firsts)))})
		}
		parts = append(parts, p)
	}
	s.parts = parts
}

// RunMarker starts the line that opens each run of a batch in a
// transcript: "--- run 2 of 3 ---".
const RunMarker = "--- run"

type serializer struct {
	t     Transcript
	parts []part
	edits map[string]*session.Entry
	seen  map[string]bool
}

// A part is one entry's block of the transcript: literal text and values
// still to be redacted and capped.
type part []segment

type segment struct {
	lit     string          // literal text (or, when pending, the value's first bytes)
	json    json.RawMessage // a JSON value's first bytes, for RedactJSON
	blocks  json.RawMessage // message content whose text blocks are the value, read when rendered
	str     json.RawMessage // a JSON string that is the value, read when rendered
	pending bool            // the segment is a value to redact and cap
	total   int             // the value's whole length (for blocks and str: their JSON's)
	cap     int
	what    string // names the value in the cut notice
}

func lit(s string) segment { return segment{lit: s} }

// estimate is the part's length once rendered, before redaction.
func (p part) estimate() int {
	n := 0
	for _, g := range p {
		switch {
		case !g.pending:
			n += len(g.lit)
		case g.total > g.cap:
			n += g.cap + len(notice(g.what, g.cap, g.total))
		default:
			n += g.total
		}
	}
	return n
}

// render redacts and caps the part's values and joins it.
func (s *serializer) render(p part) string {
	var b strings.Builder
	for _, g := range p {
		switch {
		case !g.pending:
			b.WriteString(g.lit)
		case g.json != nil:
			b.WriteString(s.finishJSON(g.json, g.total, g.cap, g.what))
		case g.blocks != nil:
			p, total, _ := session.TextBlocks(g.blocks, "\n", g.cap+redactMargin)
			b.WriteString(s.finish(p, total, g.cap, g.what))
		case g.str != nil:
			p, total, _ := session.StringPrefix(g.str, g.cap+redactMargin)
			b.WriteString(s.finish(p, total, g.cap, g.what))
		default:
			b.WriteString(s.finish(g.lit, g.total, g.cap, g.what))
		}
	}
	// The request is a document the model reads and `engine recap` prints:
	// written out visibly (clip.Visible) before any cut measures it.
	return clip.Visible(strings.TrimRight(b.String(), " \t\r\n"))
}

// contextEdits maps each entry id to the latest context_edit naming it.
func contextEdits(branch []*session.Entry) map[string]*session.Entry {
	m := map[string]*session.Entry{}
	for _, e := range branch {
		if e.Type == "context_edit" {
			if id, ok := jsonStr(session.Member(e.Raw, "targetId")); ok {
				m[id] = e
			}
		}
	}
	return m
}

func (s *serializer) add(segs ...segment) {
	s.parts = append(s.parts, segs)
	s.t.Entries++
}

// fields are the members of a message or an entry the transcript uses,
// read in one pass (a tool result's text is skipped once, not per member).
type fields struct {
	content, toolName, isError, stopReason, errorMessage     json.RawMessage
	command, output, exitCode, cancelled, excludeFromContext json.RawMessage
	customType, details, data                                json.RawMessage
}

func readFields(raw json.RawMessage) fields {
	var f fields
	session.Members(raw, func(k string, v json.RawMessage) bool {
		switch k {
		case "content":
			f.content = v
		case "toolName":
			f.toolName = v
		case "isError":
			f.isError = v
		case "stopReason":
			f.stopReason = v
		case "errorMessage":
			f.errorMessage = v
		case "command":
			f.command = v
		case "output":
			f.output = v
		case "exitCode":
			f.exitCode = v
		case "cancelled":
			f.cancelled = v
		case "excludeFromContext":
			f.excludeFromContext = v
		case "customType":
			f.customType = v
		case "details":
			f.details = v
		case "data":
			f.data = v
		}
		return true
	})
	return f
}

func (s *serializer) entry(e *session.Entry) {
	var raw json.RawMessage
	switch e.Type {
	case "message":
		raw = e.Message()
	case "custom_message", "custom":
		raw = e.Raw
	default:
		return
	}
	f := readFields(raw)
	if edit := s.edits[e.ID]; edit != nil && e.Type != "custom" {
		rep := session.Member(edit.Raw, "replacement")
		if len(rep) == 0 || rep[0] != '{' {
			return // dropped from the context
		}
		f.content = session.Member(rep, "content")
	}
	switch e.Type {
	case "message":
		s.message(e.Role, f)
	case "custom_message":
		s.extension(f, f.details)
	case "custom":
		if t, _ := jsonStr(f.customType); t == RecapType {
			return
		}
		s.extension(fields{customType: f.customType}, f.data)
	}
}

func (s *serializer) message(role string, f fields) {
	switch role {
	case "user":
		if text := s.text(f.content); text != "" {
			s.add(lit("USER: " + s.jsonDoc(text)))
		}
	case "assistant":
		s.assistant(f)
	case "toolResult":
		name, _ := jsonStr(f.toolName)
		head := "TOOL RESULT " + oneLine(name)
		if isTrue(f.isError) {
			head += " (error)"
		}
		s.add(lit(head+": "), s.cappedText(f.content, ResultCap, "tool result"))
	case "bashExecution":
		if isTrue(f.excludeFromContext) {
			return // run with !!: the user kept it from models
		}
		s.shell(f)
	case "custom":
		s.extension(f, f.details)
	}
}

func (s *serializer) assistant(f fields) {
	content := f.content
	var text []string
	flush := func() {
		if t := strings.TrimSpace(strings.Join(text, "\n")); t != "" {
			s.add(lit("ASSISTANT: " + s.jsonDoc(t)))
			s.t.FinalText = t
		}
		text = text[:0]
	}
	if str, ok := jsonStr(content); ok {
		text = append(text, str)
	}
	session.Elements(content, func(b json.RawMessage) bool {
		blk := readBlock(b)
		switch blk.typ {
		case "text":
			if t, ok := jsonStr(blk.text); ok {
				text = append(text, t)
			}
		case "toolCall":
			flush()
			name, _ := jsonStr(blk.name)
			name = oneLine(name)
			s.t.ToolCalls++
			if !s.seen[name] {
				s.seen[name] = true
				s.t.Tools = append(s.t.Tools, name)
			}
			s.add(lit("TOOL CALL "+name+": "), s.cappedJSON(blk.arguments, ArgsCap, "tool arguments"))
		}
		return true
	})
	flush()
	if stop, _ := jsonStr(f.stopReason); stop == "error" {
		if m, ok := jsonStr(f.errorMessage); ok && m != "" {
			s.add(lit("ASSISTANT (error): "), segment{lit: m, pending: true, total: len(m), cap: ArgsCap, what: "error"})
		}
	}
}

// shell renders a command the user ran with ! and its output.
func (s *serializer) shell(f fields) {
	head := "USER SHELL"
	switch code := f.exitCode; {
	case isTrue(f.cancelled):
		head += " (cancelled)"
	case len(code) > 0 && string(code) != "null":
		head += " (exit " + oneLine(string(code)) + ")"
	}
	segs := part{lit(head + ": $ "), s.cappedString(f.command, ArgsCap, "command")}
	if out := s.cappedString(f.output, ResultCap, "output"); out.total > 0 {
		segs = append(segs, lit("\n"), out)
	}
	s.add(segs...)
}

// extension renders an extension's message or entry: its text, else its
// data as JSON.
func (s *serializer) extension(f fields, data json.RawMessage) {
	typ, _ := jsonStr(f.customType)
	head := "EXTENSION " + oneLine(typ)
	if text := s.text(f.content); text != "" {
		s.add(lit(head + ": " + s.jsonDoc(text)))
		return
	}
	if len(data) == 0 || string(data) == "null" {
		return
	}
	s.add(lit(head+": "), s.cappedJSON(data, ArgsCap, "data"))
}

// block is a content block's members.
type block struct {
	typ                   string
	text, name, arguments json.RawMessage
}

func readBlock(raw json.RawMessage) block {
	var b block
	session.Members(raw, func(k string, v json.RawMessage) bool {
		switch k {
		case "type":
			b.typ, _ = jsonStr(v)
		case "text":
			b.text = v
		case "name":
			b.name = v
		case "arguments":
			b.arguments = v
		}
		return true
	})
	return b
}

// text joins the text blocks of content (a string or blocks), unredacted:
// the whole-transcript pass redacts it with its context.
func (s *serializer) text(content json.RawMessage) string {
	if str, ok := jsonStr(content); ok {
		return str
	}
	var parts []string
	session.Elements(content, func(b json.RawMessage) bool {
		if blk := readBlock(b); blk.typ == "text" {
			if t, ok := jsonStr(blk.text); ok {
				parts = append(parts, t)
			}
		}
		return true
	})
	return strings.Join(parts, "\n")
}

// jsonDoc redacts text that is one JSON document by its keys now, since
// the whole-transcript pass sees it after a role prefix, as text; other
// text is left to that pass, which redacts it with its context.
func (s *serializer) jsonDoc(text string) string {
	if t := strings.TrimSpace(text); len(t) < 2 || t[0] != '{' && t[0] != '[' {
		return text
	}
	r, n := Redact(text)
	s.t.Redactions += n
	return r
}

// cappedText is the text of content's text blocks, to be read (no
// further than the cap plus the redaction margin), redacted and capped
// when the part is rendered. Its size is estimated from its JSON.
func (s *serializer) cappedText(content json.RawMessage, cap int, what string) segment {
	return segment{blocks: content, pending: true, total: len(content), cap: cap, what: what}
}

// cappedString is a string member, to be read, redacted and capped when
// the part is rendered.
func (s *serializer) cappedString(raw json.RawMessage, cap int, what string) segment {
	return segment{str: raw, pending: true, total: max(len(raw)-2, 0), cap: cap, what: what}
}

// cappedJSON is a JSON value, to be redacted by key name and shape and
// capped.
func (s *serializer) cappedJSON(raw json.RawMessage, cap int, what string) segment {
	return segment{json: raw[:min(len(raw), cap+redactMargin)], pending: true, total: len(raw), cap: cap, what: what}
}

// finishJSON redacts a JSON value's first bytes, of total, and caps them.
func (s *serializer) finishJSON(window json.RawMessage, total, cap int, what string) string {
	r, n := RedactJSON(window)
	s.t.Redactions += n
	if total <= cap && len(r) <= cap {
		return r
	}
	c, m := capText(r, cap)
	s.t.Redactions += m
	return c + notice(what, cap, total)
}

// finish redacts text read from a value of total bytes, then caps it.
func (s *serializer) finish(text string, total, cap int, what string) string {
	r, n := Redact(text)
	s.t.Redactions += n
	if total <= cap && len(r) <= cap {
		return r
	}
	c, m := capText(r, cap)
	s.t.Redactions += m
	return c + notice(what, cap, total)
}

func notice(what string, cap, total int) string {
	return fmt.Sprintf("\n[%s cut at %d bytes; %d bytes in all]", what, cap, total)
}

// capText cuts redacted text to at most cap bytes and redacts the cut
// text again (a cut can make a new match; the replacement can be longer
// than what it replaces, so the cut is repeated with less room).
func capText(text string, cap int) (string, int) {
	room := cap
	for {
		c := cutUTF8(text, room)
		r, n := Redact(c)
		if len(r) <= cap {
			return r, n
		}
		room -= len(r) - cap
		if room <= 0 {
			return "", 0
		}
	}
}

// cutUTF8 is the longest prefix of s of at most n bytes that does not end
// inside a character.
func cutUTF8(s string, n int) string {
	if n >= len(s) {
		return s
	}
	if n <= 0 {
		return ""
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// tailUTF8 is the longest suffix of s of at most n bytes that does not
// start inside a character.
func tailUTF8(s string, n int) string {
	if n >= len(s) {
		return s
	}
	if n <= 0 {
		return ""
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}

// cutTranscript redacts the transcript and, when it is over TranscriptCap,
// keeps its head and tail around a marker. headSrc starts the transcript
// and tailSrc ends it (each the whole of it when it is short); size is its
// length. Each side is redacted with redactMargin bytes beyond it, then
// cut, then the whole is redacted once more; the result is never over
// TranscriptCap.
func cutTranscript(headSrc, tailSrc string, size int) (string, bool, int) {
	if size <= TranscriptCap && headSrc == tailSrc {
		r, n := Redact(headSrc)
		if len(r) <= TranscriptCap {
			return r, false, n
		}
	}
	budget := TranscriptCap
	for {
		omitted := max(size-budget, 0)
		marker := fmt.Sprintf("\n\n[… %d bytes of the run left out here …]\n\n", omitted)
		room := budget - len(marker)
		if room <= 0 {
			return "", true, 0
		}
		headN := room * HeadPercent / 100
		tailN := room - headN
		head, n1 := Redact(cutUTF8(headSrc, headN+redactMargin))
		tail, n2 := Redact(tailUTF8(tailSrc, tailN+redactMargin))
		head = lineCut(cutUTF8(head, headN), true)
		tail = lineCut(tailUTF8(tail, tailN), false)
		out, n3 := Redact(head + marker + tail)
		if len(out) <= TranscriptCap {
			return out, true, n1 + n2 + n3
		}
		budget -= len(out) - TranscriptCap
	}
}

// lineCut moves a cut to a line break when one is near (within 200 bytes),
// so the kept text starts and ends with whole lines.
func lineCut(s string, head bool) string {
	const near = 200
	if head {
		if i := strings.LastIndexByte(s, '\n'); i >= 0 && len(s)-i <= near {
			return s[:i]
		}
		return s
	}
	if i := strings.IndexByte(s, '\n'); i >= 0 && i < near {
		return s[i+1:]
	}
	return s
}

// jsonStr decodes a JSON string value.
func jsonStr(raw json.RawMessage) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	if s := raw[1 : len(raw)-1]; !strings.ContainsRune(string(s), '\\') {
		return string(s), true
	}
	var v string
	if json.Unmarshal(raw, &v) != nil {
		return "", false
	}
	return v, true
}

func isTrue(raw json.RawMessage) bool { return string(raw) == "true" }

// oneLine keeps a name (a tool's, an extension's) on its line and short.
func oneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) > 100 {
		s = cutUTF8(s, 100) + "…"
	}
	return s
}
