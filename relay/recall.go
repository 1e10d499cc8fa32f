package relay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pi-session/pi-session/clip"
	"github.com/pi-session/pi-session/session"
)

// Output caps of recall, in characters.
const (
	SearchCap    = 8000  // a search's whole answer
	ChunkChars   = 12000 // one chunk of an entry's text
	snippetChars = 200   // on each side of the match
	DefaultLimit = 8
	MaxLimit     = 30
)

// RecallArgs are the recall tool's arguments. Arguments of the wrong type
// are ignored, as if absent.
type RecallArgs struct {
	Query   string
	EntryID string
	Limit   int
	Offset  int
	Lineage bool
}

// ParseRecallArgs reads the tool's arguments: query and entryId strings,
// limit (clamped to 1-30, default 8), offset (0 or more), scope
// ("lineage" adds ancestor sessions). Wrong types are ignored.
func ParseRecallArgs(raw json.RawMessage) RecallArgs {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(raw, &m)
	a := RecallArgs{Limit: DefaultLimit}
	str := func(k string) (string, bool) {
		var s string
		if v, ok := m[k]; ok && json.Unmarshal(v, &s) == nil {
			return s, true
		}
		return "", false
	}
	num := func(k string) (float64, bool) {
		var f float64
		if v, ok := m[k]; ok && json.Unmarshal(v, &f) == nil {
			return f, true
		}
		return 0, false
	}
	a.Query, _ = str("query")
	a.EntryID, _ = str("entryId")
	if f, ok := num("limit"); ok {
		a.Limit = int(max(min(f, MaxLimit), 1))
	}
	if f, ok := num("offset"); ok && f > 0 {
		a.Offset = int(min(f, 1<<40))
	}
	if s, ok := str("scope"); ok && s == "lineage" {
		a.Lineage = true
	}
	return a
}

// Source is one session file recall searches: the current session, or
// with scope lineage an ancestor (whose whole branch counts as left).
type Source struct {
	File    *session.File
	Index   *Index
	Branch  []*session.Entry
	Session string // its id, for ancestors' hits
	Current bool
}

// PayloadHit is a matching line of an offloaded tool result.
type PayloadHit struct {
	Handle string
	Source string // the tool that produced it
	Size   int64
	Line   int64
	Offset int64 // of the line's first byte
	Text   string
}

// scope says which documents of the source a search may return: for the
// current session, what left the context on its branch; for an ancestor,
// its whole branch.
func (s Source) scope() *scope { return branchScope(s.File, s.Branch, !s.Current) }

// item is one rendered search result.
type item struct {
	score float64
	order int // entry index: later is newer
	text  string
}

// searchSource finds the query's matches in one source and renders the
// first limit (the rest are counted).
func searchSource(s Source, terms []QueryTerm, limit int) []item {
	sc := s.scope()
	verify := func(d doc, q QueryTerm) bool { return docHas(s.File, d, q) }
	hits := s.Index.search(terms, sc, verify)
	out := make([]item, 0, len(hits))
	for i, h := range hits {
		e, id := hitEntry(s.File, h.doc)
		it := item{score: h.score, order: int(h.doc.entry)}
		if i < limit {
			var b strings.Builder
			fmt.Fprintf(&b, "entryId %s · %s · %s", id, kindOf(s.File, h.doc), minute(e.Timestamp))
			if !s.Current {
				fmt.Fprintf(&b, " · session %s", s.Session)
			}
			b.WriteString("\n    ")
			b.WriteString(snippet(s.File, h.doc, terms))
			it.text = b.String()
		}
		out = append(out, it)
	}
	return out
}

// render writes a search's answer: the items of the current session come
// before those of ancestors (their order in items), best first within each.
func render(a RecallArgs, terms []QueryTerm, items []item, payloads []PayloadHit, missing func() []string) string {
	echo := clip.Echo(a.Query)
	if len(terms) == 0 {
		return fmt.Sprintf("recall: the query %q has no words to search for; give words from what you remember (any order, prefixes work), or an entryId", echo)
	}
	var b strings.Builder
	where := "entries that left the context on this branch"
	if a.Lineage {
		where += " and ancestor sessions"
	}
	if len(items) == 0 && len(payloads) == 0 {
		fmt.Fprintf(&b, "recall %q: nothing matches among the %s.", echo, where)
		if missing != nil {
			if m := missing(); len(m) > 0 {
				fmt.Fprintf(&b, " No entry holds %s.", strings.Join(m, ", "))
			}
		}
		b.WriteString(" Try fewer or other words, or a prefix.")
		return b.String()
	}
	fmt.Fprintf(&b, "recall %q: %s (%s)", echo, plural(len(items), "entry matches", "entries match"), where)
	if len(payloads) > 0 {
		fmt.Fprintf(&b, ", and %s of offloaded tool results", plural(len(payloads), "line", "lines"))
	}
	b.WriteString(".\n")
	shown := 0
	for i, it := range items {
		if i >= a.Limit || it.text == "" {
			break
		}
		entry := fmt.Sprintf("\n[%d] %s\n", i+1, it.text)
		if runes(b.String())+runes(entry) > SearchCap-600 {
			break
		}
		b.WriteString(entry)
		shown++
	}
	if more := len(items) - shown; more > 0 {
		fmt.Fprintf(&b, "\n(%s; add words to narrow, or raise limit up to %d)\n", plural(more, "more entry matches", "more entries match"), MaxLimit)
	}
	if shown > 0 {
		b.WriteString("\nRead one whole: recall({\"entryId\": \"<id>\"})\n")
	}
	if len(payloads) > 0 {
		b.WriteString("\nIn offloaded tool results of this session (read more with ctx_read):\n")
		for _, p := range payloads {
			// The line and what stands around it: a range read is exact
			// where a query for one of the words could match every line.
			from := max(0, p.Offset-payloadBefore)
			call := fmt.Sprintf("{\"id\":%q,\"offset\":%d,\"length\":%d}", p.Handle, from, p.Offset-from+payloadAfter)
			line := fmt.Sprintf("- %s (%s, %s) line %d: %s\n  ctx_read(%s)\n",
				p.Handle, p.Source, size(p.Size), p.Line, clip.To(strings.TrimSpace(p.Text), 240), call)
			if runes(b.String())+runes(line) > SearchCap-40 {
				b.WriteString("- (more lines match)\n")
				break
			}
			b.WriteString(line)
		}
	}
	return clip.To(b.String(), SearchCap)
}

// payloadBefore and payloadAfter are the bytes a hint's range read takes
// before and from a matching line of an offloaded result.
const (
	payloadBefore = 1024
	payloadAfter  = 3072
)

func size(n int64) string {
	switch {
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
	case n >= 1<<10:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 1, 64) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// missingTerms reports, by position in terms, the query words no
// document of the index holds (words the index leaves out are never
// missing: they are checked against the text).
func missingTerms(terms []QueryTerm, ix *Index) []bool {
	ix.sortTerms()
	out := make([]bool, len(terms))
	for i, q := range terms {
		if ids, _ := ix.expand(q); q.Indexable && len(ids) == 0 {
			out[i] = true
		}
	}
	return out
}

// plural is "1 <one>" or "<n> <many>".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// hitEntry is the entry a document stands for and its id.
func hitEntry(f *session.File, d doc) (*session.Entry, string) {
	if d.target >= 0 {
		return f.Entries[d.target], f.Entries[d.target].ID
	}
	return f.Entries[d.entry], f.Entries[d.entry].ID
}

// kindOf names what an entry is: user, assistant, toolResult(bash), bash,
// custom(type), branchSummary; "(edited)" for a replacement.
func kindOf(f *session.File, d doc) string {
	e, _ := hitEntry(f, d)
	k := entryKind(e)
	if d.target >= 0 {
		k += " (edited)"
	}
	return k
}

func entryKind(e *session.Entry) string {
	switch e.Type {
	case "message":
		m := session.Member(e.Raw, "message")
		switch e.Role {
		case "toolResult":
			name, _ := session.MemberString(m, "toolName")
			return "toolResult(" + name + ")"
		case "bashExecution":
			return "bash"
		}
		return e.Role
	case "custom_message":
		ct, _ := session.MemberString(e.Raw, "customType")
		return "custom(" + ct + ")"
	case "branch_summary":
		return "branchSummary"
	}
	return e.Type
}

// docRaw is the JSON of a document's text.
func docRaw(f *session.File, d doc) []byte {
	raw, _ := docText(f, f.Entries[d.entry])
	return raw
}

// text returns the document's text, pieces joined by newlines; with
// stop > 0, only its first stop bytes (the last character may be cut).
func text(raw []byte, stop int) []byte {
	var out []byte
	walkText(raw, func(t []byte) bool {
		if len(out) > 0 {
			out = append(out, '\n')
		}
		if stop > 0 {
			t = t[:max(min(len(t), stop-len(out)), 0)]
		}
		out = append(out, t...)
		return stop <= 0 || len(out) < stop
	})
	return out
}

// docHas checks a query term the index leaves out against the text.
func docHas(f *session.File, d doc, q QueryTerm) bool {
	found := false
	walkText(docRaw(f, d), func(t []byte) bool {
		if bytes.Contains(bytes.ToLower(t), []byte(q.Text)) {
			found = true
		}
		return !found
	})
	return found
}

// snippetScan bounds the text of an entry a snippet looks at to choose
// its place.
const snippetScan = 64 << 10

// snippet is the text around the place of the entry that best shows why it
// matched: the first match of the query term the entry holds least often
// (the rarest, so "line 400" finds the line with 400, not the first
// "line"), ties to the longer term; about snippetChars on each side,
// whitespace collapsed. The place is chosen in the first snippetScan bytes
// of the text; past them, the first match of the longest term is shown.
func snippet(f *session.File, d doc, terms []QueryTerm) string {
	raw := docRaw(f, d)
	// The scanned part with the context after it, and one byte more: a
	// snippet that does not reach the end of buf does not reach the end of
	// the text.
	buf := text(raw, snippetScan+4*snippetChars+1)
	scan := buf[:min(len(buf), snippetScan)]
	count := make([]int, len(terms))
	first := make([][2]int, len(terms))
	for k, q := range terms {
		if q.Indexable {
			continue
		}
		low := bytes.ToLower(scan)
		if at := bytes.Index(low, []byte(q.Text)); at >= 0 {
			count[k] = bytes.Count(low, []byte(q.Text))
			first[k] = [2]int{at, at + len(q.Text)}
		}
	}
	var low []byte
	words(scan, func(w []byte, at int) bool {
		for k, q := range terms {
			if q.Indexable && wordMatches(w, q, &low) {
				if count[k] == 0 {
					first[k] = [2]int{at, at + len(w)}
				}
				count[k]++
			}
		}
		return true
	})
	best := -1
	for k := range terms {
		if count[k] > 0 && (best < 0 || count[k] < count[best] || count[k] == count[best] && len(terms[k].Text) > len(terms[best].Text)) {
			best = k
		}
	}
	var at, end int
	if best >= 0 {
		at, end = first[best][0], first[best][1]
	} else {
		at, end = matchPlace(raw, terms)
		buf = text(raw, end+4*snippetChars+1)
		at, end = min(at, len(buf)), min(end, len(buf))
	}
	lo := backRunes(buf, at, snippetChars)
	hi := fwdRunes(buf, end, snippetChars)
	s := oneLine(string(buf[lo:hi]))
	if lo > 0 {
		s = "…" + s
	}
	if hi < len(buf) {
		s += "…"
	}
	return s
}

// wordMatches reports whether word w, or one of its parts, answers q.
func wordMatches(w []byte, q QueryTerm, low *[]byte) bool {
	found := false
	emitWord(w, low, false, func(t []byte) {
		if !found && q.matches(t) > 0 {
			found = true
		}
	})
	if !found {
		*low = lowerInto((*low)[:0], w)
		found = q.matches(*low) > 0
	}
	return found
}

// matchPlace is the byte range, in the text of raw (pieces joined by
// newlines), of the first place a query term matches: the longest term
// first; 0, 0 when none does.
func matchPlace(raw []byte, terms []QueryTerm) (int, int) {
	order := append([]QueryTerm(nil), terms...)
	sort.SliceStable(order, func(i, j int) bool { return len(order[i].Text) > len(order[j].Text) })
	var buf []byte
	at, end := -1, -1
	walkText(raw, func(t []byte) bool {
		base := len(buf)
		if base > 0 {
			buf = append(buf, '\n')
			base++
		}
		buf = append(buf, t...)
		at, end = findTerm(buf, base, order)
		return at < 0
	})
	if at < 0 {
		return 0, 0
	}
	return at, end
}

// findTerm finds in buf[from:] the first word matching one of the terms
// (tried in order) and returns its byte range, or -1.
func findTerm(buf []byte, from int, order []QueryTerm) (int, int) {
	var low []byte
	for _, q := range order {
		at, end := -1, -1
		if !q.Indexable {
			if i := bytes.Index(bytes.ToLower(buf[from:]), []byte(q.Text)); i >= 0 {
				return from + i, from + i + len(q.Text)
			}
			continue
		}
		words(buf[from:], func(w []byte, i int) bool {
			if wordMatches(w, q, &low) {
				at, end = from+i, from+i+len(w)
			}
			return at < 0
		})
		if at >= 0 {
			return at, end
		}
	}
	return -1, -1
}

func backRunes(b []byte, i, n int) int {
	for ; n > 0 && i > 0; n-- {
		_, s := utf8.DecodeLastRune(b[:i])
		i -= s
	}
	return i
}

func fwdRunes(b []byte, i, n int) int {
	for ; n > 0 && i < len(b); n-- {
		_, s := utf8.DecodeRune(b[i:])
		i += s
	}
	return i
}

// ReadEntry answers recall({entryId, offset}) for an entry of the
// sources: its whole text in chunks of ChunkChars characters.
func ReadEntry(a RecallArgs, sources []Source) string {
	id := a.EntryID
	echo := clip.Echo(id)
	for _, s := range sources {
		e := s.File.Entry(id)
		if e == nil {
			continue
		}
		i := entryIndex(s.File, e)
		sc := s.scope()
		if i < 0 || !sc.onBranch[i] {
			return fmt.Sprintf("recall: entry %q is not on the current branch; recall returns only entries of the current branch (and, with scope \"lineage\", of ancestor sessions).", echo)
		}
		if sc.omitted(i) {
			return fmt.Sprintf("recall: entry %q was omitted from the context by a context_edit; recall returns nothing of it.", echo)
		}
		d := doc{entry: i, target: -1}
		if ei, ok := sc.edit[i]; ok && ei >= 0 {
			d = doc{entry: ei, target: i}
		}
		raw, _ := docText(s.File, s.File.Entries[d.entry])
		if d.target >= 0 {
			raw = session.Member(session.Member(s.File.Entries[d.entry].Raw, "replacement"), "content")
		}
		if raw == nil {
			return fmt.Sprintf("recall: entry %q (%s) holds no text the model sees.", echo, entryKind(e))
		}
		return chunk(fmt.Sprintf("entry %s · %s · %s", e.ID, kindOf(s.File, d), minute(e.Timestamp)), text(raw, 0), a.Offset, fmt.Sprintf("{\"entryId\":%q", e.ID))
	}
	return fmt.Sprintf("recall: no entry %q in this session%s. Ids come from recall's search results and from handoff notes (note:<n> reads note n).", echo, map[bool]string{true: " or its ancestors", false: ""}[a.Lineage])
}

// chunk returns ChunkChars characters of text from offset (in characters)
// under a header, with the call that continues.
func chunk(header string, text []byte, offset int, call string) string {
	total := utf8.RuneCount(text)
	if offset > total {
		return fmt.Sprintf("%s: offset %d is past the end (%d characters).", header, offset, total)
	}
	lo := fwdRunes(text, 0, offset)
	hi := fwdRunes(text, lo, ChunkChars)
	var b strings.Builder
	fmt.Fprintf(&b, "%s · characters %d-%d of %d\n", header, offset, offset+utf8.RuneCount(text[lo:hi]), total)
	b.Write(text[lo:hi])
	if next := offset + utf8.RuneCount(text[lo:hi]); next < total {
		fmt.Fprintf(&b, "\n[more: recall(%s,\"offset\":%d})]", call, next)
	}
	return b.String()
}

// ReadNote answers recall({entryId: "note:<n>"}).
func ReadNote(n int, note []byte, err error, offset int) string {
	if err != nil {
		return fmt.Sprintf("recall: note %d of this session cannot be read: %v", n, err)
	}
	return chunk(fmt.Sprintf("handoff note %d", n), note, offset, fmt.Sprintf("{\"entryId\":\"note:%d\"", n))
}
