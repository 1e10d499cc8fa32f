package relay

import (
	"bytes"
	"encoding/json"
	"fmt"
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
	Text   string
}

// Searchable describes a source for messages: how many entries have left
// the context.
func (s Source) scope() *scope { return branchScope(s.File, s.Branch, !s.Current) }

// item is one rendered search result.
type item struct {
	score float64
	order int // entry index: later is newer
	text  string
}

// searchSource finds the query's matches in one source and renders each.
func searchSource(s Source, terms []QueryTerm) []item {
	sc := s.scope()
	verify := func(d doc, q QueryTerm) bool { return docHas(s.File, d, q) }
	hits := s.Index.search(terms, sc, verify)
	out := make([]item, 0, min(len(hits), MaxLimit))
	for i, h := range hits {
		e, id := hitEntry(s.File, h.doc)
		it := item{score: h.score, order: int(h.doc.entry)}
		if i < MaxLimit {
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

// Search runs a query over the sources and the payload hits and writes the
// answer (at most SearchCap characters).
func Search(a RecallArgs, sources []Source, payloads []PayloadHit) string {
	terms := ParseQuery(a.Query)
	if len(terms) == 0 {
		return render(a, terms, nil, nil, nil)
	}
	var items []item
	for _, s := range sources {
		items = append(items, searchSource(s, terms)...)
	}
	return render(a, terms, items, payloads, func() []string { return missingTerms(terms, sources) })
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
	fmt.Fprintf(&b, "recall %q: %d entries match (%s)", echo, len(items), where)
	if len(payloads) > 0 {
		fmt.Fprintf(&b, ", and %d lines of offloaded tool results", len(payloads))
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
		fmt.Fprintf(&b, "\n(%d more entries match; add words to narrow, or raise limit up to %d)\n", more, MaxLimit)
	}
	if shown > 0 {
		b.WriteString("\nRead one whole: recall({\"entryId\": \"<id>\"})\n")
	}
	if len(payloads) > 0 {
		b.WriteString("\nIn offloaded tool results of this session (read more with ctx_read):\n")
		for _, p := range payloads {
			line := fmt.Sprintf("- %s (%s, %s) line %d: %s\n  ctx_read({\"id\":%q,\"query\":%q,\"ignoreCase\":true})\n",
				p.Handle, p.Source, size(p.Size), p.Line, clip.To(strings.TrimSpace(p.Text), 240), p.Handle, clip.To(firstTerm(terms), 60))
			if runes(b.String())+runes(line) > SearchCap-40 {
				b.WriteString("- (more lines match)\n")
				break
			}
			b.WriteString(line)
		}
	}
	return clip.To(b.String(), SearchCap)
}

func firstTerm(terms []QueryTerm) string {
	if len(terms) == 0 {
		return ""
	}
	best := terms[0].Text
	for _, t := range terms {
		if len(t.Text) > len(best) {
			best = t.Text
		}
	}
	return best
}

func size(n int64) string {
	switch {
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
	case n >= 1<<10:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 1, 64) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// missingTerms names the query words no document of any source holds.
func missingTerms(terms []QueryTerm, sources []Source) []string {
	var out []string
	for _, q := range terms {
		if !q.Indexable {
			continue
		}
		found := false
		for _, s := range sources {
			s.Index.sortTerms()
			if ids, _ := s.Index.expand(q); len(ids) > 0 {
				found = true
				break
			}
		}
		if !found {
			out = append(out, strconv.Quote(clip.To(q.Text, 40)))
		}
	}
	return out
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
// stop > 0 it may end once it holds that many bytes.
func text(raw []byte, stop int) []byte {
	var out []byte
	walkText(raw, func(t []byte) bool {
		if len(out) > 0 {
			out = append(out, '\n')
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

// snippet is the text around the first place a query term matches: the
// rarest-looking (longest) term first, about snippetChars on each side,
// whitespace collapsed.
func snippet(f *session.File, d doc, terms []QueryTerm) string {
	raw := docRaw(f, d)
	order := append([]QueryTerm(nil), terms...)
	for i := 1; i < len(order); i++ {
		for j := i; j > 0 && len(order[j].Text) > len(order[j-1].Text); j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
	var buf []byte
	at, end := -1, -1
	walkText(raw, func(t []byte) bool {
		base := len(buf)
		if base > 0 {
			buf = append(buf, '\n')
			base++
		}
		buf = append(buf, t...)
		if at < 0 {
			at, end = findTerm(buf, base, order)
		}
		// Stop once the match has its context after it.
		return at < 0 || len(buf) < end+4*snippetChars
	})
	if at < 0 {
		at, end = 0, 0
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

// findTerm finds in buf[from:] the first word matching one of the terms
// (tried in order) and returns its byte range, or -1.
func findTerm(buf []byte, from int, order []QueryTerm) (int, int) {
	for _, q := range order {
		at, end := -1, -1
		if !q.Indexable {
			if i := bytes.Index(bytes.ToLower(buf[from:]), []byte(q.Text)); i >= 0 {
				return from + i, from + i + len(q.Text)
			}
			continue
		}
		words(buf[from:], func(w []byte, i int) bool {
			var low []byte
			emitWord(w, &low, false, func(t []byte) {
				if at < 0 && q.matches(string(t)) > 0 {
					at, end = from+i, from+i+len(w)
				}
			})
			if at < 0 {
				low = lowerInto(low[:0], w)
				if q.matches(string(low)) > 0 {
					at, end = from+i, from+i+len(w)
				}
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
