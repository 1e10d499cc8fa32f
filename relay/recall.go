package relay

import (
	"encoding/json"
	"fmt"
	"math/bits"
	"slices"
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
	snippetChars = 200   // on each side of the match (a snippet has about twice as many)
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
func (s Source) scope() *scope {
	if s.Index == nil {
		return branchScope(s.File, s.Branch, !s.Current)
	}
	return s.Index.scopeOf(s.File, s.Branch, !s.Current)
}

// item is one rendered search result.
type item struct {
	score float64
	order int // entry index: later is newer
	text  string
}

// ranked is a hit being shown: its document, and what was read of its
// text to place it.
type ranked struct {
	hit
	doc    doc
	place  place // where the query shows best, once read (placed)
	placed bool
	text   []byte // what was read of the unit's text
	call   int    // the length of its call's part, for a tool call with its result
}

// searchSource finds the query's matches in one source, reranks the best
// by where the words stand in them, and renders the first limit (the
// rest are counted). It also reports which query terms some unit holds
// (bit i for term i).
func searchSource(s Source, q Query, limit int) ([]item, uint32) {
	sc := s.scope()
	n := max(3*limit, rerankMin)
	res := s.Index.searchTop(q, sc, n)
	hits, weights, exps := res.hits, res.weights, res.exps
	top := make([]ranked, len(hits))
	for i := range top {
		top[i] = ranked{hit: hits[i], doc: s.Index.docs[hits[i].id]}
	}
	m := newMatcher(s.Index, q, weights, exps)
	rerank(s.File, s.Index, m, top, max(limit, 1))
	out := make([]item, 0, res.total)
	for i := range top {
		it := item{score: top[i].score, order: int(top[i].order)}
		if i < limit {
			it.text = renderHit(s, m, top[i])
		}
		out = append(out, it)
	}
	for range res.total - len(top) {
		out = append(out, item{}) // counted, not shown
	}
	return out, res.found
}

// rerank reads the text of the hits again (within rerankBudget bytes),
// adds to each hit's score what its best place is worth, and orders them
// again. A hit whose score could not reach the first limit whatever its
// place (its score plus the most a place adds for the terms it holds) is
// not read: the hits are read in the order of that bound, until it falls
// below the limit-th score.
func rerank(f *session.File, ix *Index, m *matcher, top []ranked, limit int) {
	bound := make([]float64, len(top))
	order := make([]int, len(top))
	for i := range top {
		held := 0.0
		for t, w := range m.weights {
			if top[i].terms&(1<<t) != 0 {
				held += w
			}
		}
		bound[i] = top[i].score + windowShare*maxPlace*held
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case bound[a] > bound[b]:
			return -1
		case bound[a] < bound[b]:
			return 1
		}
		return 0
	})
	budget := rerankBudget
	var best []float64 // the best limit scores so far, highest first
	for _, i := range order {
		if budget <= 0 || len(best) >= limit && bound[i] <= best[limit-1] {
			break
		}
		r := &top[i]
		if bits.OnesCount32(r.terms) < 2 {
			// One term: no place of it is worth more than another.
			continue
		}
		r.text, r.call = unitText(f, ix, r.doc, min(rerankScan, budget))
		budget -= len(r.text)
		if p, ok := m.best(r.text); ok {
			r.place, r.placed = p, true
			r.score += windowShare * p.score
		}
		k, _ := slices.BinarySearchFunc(best, r.score, func(a, b float64) int {
			switch {
			case a > b:
				return -1
			case a < b:
				return 1
			}
			return 0
		})
		best = slices.Insert(best, k, r.score)
		if len(best) > limit {
			best = best[:limit]
		}
	}
	slices.SortStableFunc(top, func(a, b ranked) int {
		switch {
		case better(a.hit, b.hit):
			return -1
		case better(b.hit, a.hit):
			return 1
		}
		return 0
	})
}

// renderHit is one result: the entry id (a tool call's and its result's),
// kind and time, and its snippet.
func renderHit(s Source, m *matcher, r ranked) string {
	f := s.File
	var b strings.Builder
	e, id := hitEntry(f, r.doc)
	if r.doc.mate >= 0 && r.doc.part >= 0 {
		mate := s.Index.docs[r.doc.mate]
		me, mid := hitEntry(f, mate)
		fmt.Fprintf(&b, "entryId %s + %s · %s with its call · %s", id, mid, kindOf(f, mate), minute(me.Timestamp))
	} else {
		fmt.Fprintf(&b, "entryId %s · %s · %s", id, kindOf(f, r.doc), minute(e.Timestamp))
	}
	if !s.Current {
		fmt.Fprintf(&b, " · session %s", s.Session)
	}
	b.WriteString("\n    ")
	b.WriteString(snippet(f, s.Index, m, r))
	return b.String()
}

// snippet shows why a unit matched: the lines where the query stands
// best (see matcher.best), whole, in about 2*snippetChars characters;
// for a tool call with its result, the call in one line, then the
// result's lines, or the call's place and the start of the result.
func snippet(f *session.File, ix *Index, m *matcher, r ranked) string {
	switch {
	case r.text == nil:
		r.text, r.call = unitText(f, ix, r.doc, snippetScan)
		r.place, _ = m.bestOf(r.text, bits.OnesCount32(r.terms) == 1)
	case len(r.text) >= rerankScan:
		// Read in part: the query as typed, or a better place, may come
		// later; the text is tokenized again only when the place found
		// is not the best one its terms could have.
		text, call := unitText(f, ix, r.doc, snippetScan)
		if p, ok := m.typedPlace(text); ok {
			r.place = p
		} else if !r.placed || call != r.call || !m.perfect(r.place, r.terms) {
			r.place, _ = m.best(text)
		}
		r.text, r.call = text, call
	case !r.placed:
		r.place, _ = m.best(r.text)
	}
	buf, p := r.text, r.place
	if r.call == 0 {
		return lineSnippet(buf, p.at, p.end)
	}
	call, result := buf[:r.call], buf[r.call+1:]
	if p.at > r.call {
		return clip.To(oneLine(strings.ReplaceAll(string(call), "\n", " ")), 160) + " → " + lineSnippet(result, p.at-r.call-1, p.end-r.call-1)
	}
	head := result[:fwdRunes(result, 0, 160)]
	tail := ""
	if len(head) < len(result) {
		tail = "…"
	}
	return lineSnippet(call, p.at, min(p.end, r.call)) + " → " + oneLine(strings.ReplaceAll(string(head), "\n", " ⏎ ")) + tail
}

// render writes a search's answer: the items of the current session come
// before those of ancestors (their order in items), best first within
// each. found has bit i set when some entry holds query term i.
func render(a RecallArgs, q Query, items []item, payloads []PayloadHit, found uint32) string {
	echo := clip.Echo(a.Query)
	if len(q.Terms) == 0 {
		return fmt.Sprintf("recall: the query %q has no words to search for; give words from what you remember (any order, prefixes work), or an entryId", echo)
	}
	var b strings.Builder
	where := "entries that left the context on this branch"
	if a.Lineage {
		where += " and ancestor sessions"
	}
	matched, missing, ignored := queryWords(q, found)
	if len(items) == 0 && len(payloads) == 0 {
		fmt.Fprintf(&b, "recall %q: nothing matches among the %s.", echo, where)
		if len(missing) > 0 {
			fmt.Fprintf(&b, " No entry holds %s.", strings.Join(missing, ", "))
		}
		b.WriteString(" Try other words, a prefix or part of a name.")
		return b.String()
	}
	fmt.Fprintf(&b, "recall %q: %s (%s)", echo, plural(len(items), "entry matches", "entries match"), where)
	if len(payloads) > 0 {
		fmt.Fprintf(&b, ", and %s of offloaded tool results", plural(len(payloads), "line", "lines"))
	}
	b.WriteString(".\n")
	if len(matched) > 0 {
		fmt.Fprintf(&b, "matched: %s", strings.Join(matched, ", "))
		if len(missing) > 0 {
			fmt.Fprintf(&b, "; not found: %s", strings.Join(missing, ", "))
		}
		if len(ignored) > 0 {
			fmt.Fprintf(&b, "; not searched (common words): %s", strings.Join(ignored, ", "))
		}
		b.WriteString(".\n")
	}
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

// queryWords sorts the query's words, quoted for the answer: those some
// entry holds (one of their terms), those none holds, and the stop words
// left out.
func queryWords(q Query, found uint32) (matched, missing, ignored []string) {
	for _, w := range q.Words {
		name := strconv.Quote(clip.Echo(w.Text))
		if w.Stop {
			ignored = append(ignored, name)
			continue
		}
		if len(w.Terms) == 0 {
			continue
		}
		hit := false
		for _, t := range w.Terms {
			hit = hit || found&(1<<t) != 0
		}
		if hit {
			matched = append(matched, name)
		} else {
			missing = append(missing, name)
		}
	}
	return matched, missing, ignored
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
