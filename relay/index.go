package relay

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"sort"
	"unicode/utf8"

	"github.com/pi-session/pi-session/gcpace"
	"github.com/pi-session/pi-session/session"
)

// Index is the recall index of one session file: an inverted index from
// terms to the entries whose model-visible text holds them. It covers every
// entry of the file, whatever its branch; which entries a search may return
// (on the branch, out of the context, not omitted) is decided per search.
// A context_edit's replacement is indexed as its own document and stands
// in for its target on the branches where it applies. Build it once with
// [Index.Update] and call Update again after the file grew: only new
// entries are read. An Index is not safe for concurrent use.
type Index struct {
	file *session.File // the File indexed, to notice a reopened file
	n    int           // f.Entries[:n] are indexed

	docs     []doc
	calls    map[string]int32 // tool call id -> its document, until its result comes
	dict     termDict
	sorted   []int32 // term ids in term order, for prefix lookups
	totalLen int64
	local    docTerms // scratch of add: the terms of the document
	text     []byte   // scratch of add: unescaped text
	low      []byte   // scratch of add: lowercased words

	one  [1][]byte  // scratch of UpdateSome: an entry of one document
	part [1]docPart // (its JSON and its part)

	scoped scopeKey // the branch the last scope was made for, and the scope
	scope  *scope
}

// doc is one searchable text: an entry's message (an assistant message's
// text apart from its tool calls), one tool call of an assistant message,
// or a replacement. A tool call and its result are one unit: searched as
// one text and returned together.
type doc struct {
	entry  int32 // index in File.Entries
	target int32 // for a replacement: the entry it replaces; -1 otherwise
	part   int32 // -1: the entry's text; k >= 0: its k-th tool call
	length uint32
	unit   int32  // the unit's first document: a tool call for its result, else itself
	mate   int32  // the unit's other document (a call's result, a result's call), or -1
	ulen   uint32 // the unit's length (both documents), on its first document
	role   uint8  // roleUser, roleAssistant or 0 (anything else)
}

// Roles of a document, for its prior.
const (
	roleUser = 1 + iota
	roleAssistant
)

// NewIndex returns an empty index.
func NewIndex() *Index {
	return &Index{dict: newTermDict(), calls: map[string]int32{}}
}

// Update indexes the entries f has gained since the last call. It starts
// over when f is another File than the one indexed (the file was replaced
// or reopened).
func (ix *Index) Update(f *session.File) { ix.UpdateSome(f, -1) }

// UpdateSome is Update that stops once it has read about budget bytes of
// entries (all of them when budget < 0), and reports whether the index is
// up to date with f.
func (ix *Index) UpdateSome(f *session.File, budget int) bool {
	if ix.file != f || ix.n > len(f.Entries) {
		*ix = *NewIndex()
		ix.file = f
	}
	end, size := ix.n, 0
	for end < len(f.Entries) && (budget < 0 || size < budget) {
		size += len(f.Entries[end].Raw)
		end++
	}
	if size > 4<<20 {
		// A large build allocates a lot for what it keeps: collect
		// garbage sooner, so the peak stays near what is kept.
		defer gcpace.Sooner()()
	}
	for ; ix.n < end; ix.n++ {
		e := f.Entries[ix.n]
		var parts []docPart
		var target int32
		var resultOf string
		if e.Type == "message" && e.Role == "assistant" {
			parts, target, resultOf = docParts(f, e)
		} else if raw, t := docText(f, e); raw != nil {
			// One document: no parts to allocate.
			ix.one[0] = raw
			parts, target = ix.part[:1], t
			parts[0] = docPart{part: -1, raws: ix.one[:]}
			if e.Type == "message" && e.Role == "toolResult" {
				resultOf, _ = session.MemberString(session.Member(e.Raw, "message"), "toolCallId")
			}
		}
		role := uint8(0)
		if e.Type == "message" && target < 0 {
			switch e.Role {
			case "user":
				role = roleUser
			case "assistant":
				role = roleAssistant
			}
		}
		for _, p := range parts {
			d := ix.addDoc(int32(ix.n), target, p.part, p.raws)
			if d >= 0 {
				ix.docs[d].role = role
			}
			switch {
			case d < 0:
			case p.callID != "":
				ix.calls[p.callID] = d
			case resultOf != "":
				if c, ok := ix.calls[resultOf]; ok {
					delete(ix.calls, resultOf)
					ix.docs[d].unit, ix.docs[d].mate, ix.docs[c].mate = c, c, d
					ix.docs[c].ulen += ix.docs[d].length
				}
			}
		}
	}
	return ix.n == len(f.Entries)
}

// docPart is the text of one document of an entry: the JSON values that
// hold it, and for a tool call its id.
type docPart struct {
	part   int32
	raws   [][]byte
	callID string
}

// docParts returns the documents of an entry: one for most, and for an
// assistant message its text (if any) and each tool call apart; for a
// context_edit the index of the entry it replaces (-1 otherwise), and for
// a tool result the id of its call.
func docParts(f *session.File, e *session.Entry) (parts []docPart, target int32, resultOf string) {
	raw, target := docText(f, e)
	if raw == nil {
		return nil, -1, ""
	}
	if e.Type == "message" && e.Role == "assistant" && len(raw) > 0 && raw[0] == '[' {
		text := docPart{part: -1}
		k := int32(0)
		session.Elements(raw, func(block json.RawMessage) bool {
			if t, _ := session.MemberString(block, "type"); t == "toolCall" {
				id, _ := session.MemberString(block, "id")
				parts = append(parts, docPart{part: k, raws: [][]byte{block}, callID: id})
				k++
			} else {
				text.raws = append(text.raws, block)
			}
			return true
		})
		if len(text.raws) > 0 {
			parts = append([]docPart{text}, parts...)
		}
		return parts, target, ""
	}
	if e.Type == "message" && e.Role == "toolResult" {
		resultOf, _ = session.MemberString(session.Member(e.Raw, "message"), "toolCallId")
	}
	return []docPart{{part: -1, raws: [][]byte{raw}}}, target, resultOf
}

// Entries is the number of file entries indexed.
func (ix *Index) Entries() int { return ix.n }

// docText returns the JSON holding an entry's model-visible text, and for
// a context_edit the index of the entry it replaces (-1 otherwise).
func docText(f *session.File, e *session.Entry) ([]byte, int32) {
	switch e.Type {
	case "message":
		m := session.Member(e.Raw, "message")
		switch e.Role {
		case "system":
			return nil, -1
		case "bashExecution":
			// Command and output; one run with !! never enters the
			// context (the only role pi excludes this way).
			if string(session.Member(m, "excludeFromContext")) == "true" {
				return nil, -1
			}
			return m, -1
		}
		return session.Member(m, "content"), -1
	case "custom_message":
		return session.Member(e.Raw, "content"), -1
	case "branch_summary":
		return session.Member(e.Raw, "summary"), -1
	case "context_edit":
		rep := session.Member(e.Raw, "replacement")
		c := session.Member(rep, "content")
		if c == nil {
			return nil, -1
		}
		id, _ := session.MemberString(e.Raw, "targetId")
		t := f.Entry(id)
		if t == nil {
			return nil, -1
		}
		return c, entryIndex(f, t)
	}
	return nil, -1
}

// entryIndex finds e in f.Entries (ordered by offset).
func entryIndex(f *session.File, e *session.Entry) int32 {
	i := sort.Search(len(f.Entries), func(i int) bool { return f.Entries[i].Offset >= e.Offset })
	if i < len(f.Entries) && f.Entries[i] == e {
		return int32(i)
	}
	return -1
}

// add indexes one document of the text in raw.
func (ix *Index) add(entry, target int32, raw []byte) {
	ix.addDoc(entry, target, -1, [][]byte{raw})
}

// addDoc indexes one document, the text of raws, and returns its id (-1
// when it holds no word).
func (ix *Index) addDoc(entry, target, part int32, raws [][]byte) int32 {
	id := int32(len(ix.docs))
	var n uint32
	lt := &ix.local
	lt.reset()
	for _, raw := range raws {
		walkTextBuf(raw, &ix.text, func(text []byte) bool {
			words(text, func(w []byte, _ int) bool {
				n += lt.word(w, &ix.low)
				return true
			})
			return true
		})
	}
	if n == 0 {
		return -1
	}
	ix.docs = append(ix.docs, doc{entry: entry, target: target, part: part, length: n, unit: id, mate: -1, ulen: n})
	ix.totalLen += int64(n)
	for _, e := range lt.ents {
		tid := ix.dict.intern(lt.arena[e.off:e.off+e.n], e.h)
		ix.dict.post.add(&ix.dict.terms[tid], id, e.tf)
	}
	return id
}

// sortTerms brings the prefix table up to date with new terms.
func (ix *Index) sortTerms() {
	count := ix.dict.count()
	if len(ix.sorted) == count {
		return
	}
	fresh := make([]int32, 0, count-len(ix.sorted))
	for t := int32(len(ix.sorted)); t < int32(count); t++ {
		fresh = append(fresh, t)
	}
	byTerm := func(a, b int32) int { return bytes.Compare(ix.dict.term(a), ix.dict.term(b)) }
	slices.SortFunc(fresh, byTerm)
	merged := make([]int32, 0, count)
	i, j := 0, 0
	for i < len(ix.sorted) && j < len(fresh) {
		if byTerm(ix.sorted[i], fresh[j]) <= 0 {
			merged = append(merged, ix.sorted[i])
			i++
		} else {
			merged = append(merged, fresh[j])
			j++
		}
	}
	merged = append(append(merged, ix.sorted[i:]...), fresh[j:]...)
	ix.sorted = merged
}

// maxExpansions bounds the terms a prefix stands for.
const maxExpansions = 2000

// expansion is one dictionary term a query term matches, and how well.
type expansion struct {
	id    int32
	level float32
}

// expand returns the dictionary terms a query term matches, with their
// levels (see QueryTerm.matches). A term that matches none of them as a
// word, a prefix or a stem is looked for inside longer words (a
// fragment), except CJK terms, which match only exactly.
func (ix *Index) expand(q QueryTerm) []expansion {
	var out []expansion
	add := func(tid int32, w float32) {
		if w <= 0 {
			return
		}
		for i := range out {
			if out[i].id == tid {
				return
			}
		}
		out = append(out, expansion{tid, w})
	}
	if tid := ix.dict.find([]byte(q.Text), hashTerm([]byte(q.Text))); tid >= 0 {
		add(tid, levelExact)
	}
	if q.CJK {
		return out
	}
	prefix := func(p string) {
		if p == "" {
			return
		}
		pb := []byte(p)
		i := sort.Search(len(ix.sorted), func(i int) bool { return bytes.Compare(ix.dict.term(ix.sorted[i]), pb) >= 0 })
		for n := 0; i < len(ix.sorted) && n < maxExpansions && bytes.HasPrefix(ix.dict.term(ix.sorted[i]), pb); i, n = i+1, n+1 {
			add(ix.sorted[i], q.matches(ix.dict.term(ix.sorted[i])))
		}
	}
	if len(q.Text) >= 3 {
		prefix(q.Text)
	}
	prefix(q.Stem)
	if !q.Indexable {
		if t, ok := termOf([]byte(q.Text)); ok && len(t) < len(q.Text) {
			prefix(string(t))
		}
	}
	if len(out) == 0 && utf8.RuneCountInString(q.Text) >= 3 {
		for _, tid := range ix.fragments([]byte(q.Text), maxExpansions) {
			add(tid, levelFragment)
		}
	}
	return out
}

// fragments returns up to max terms that hold frag inside them.
func (ix *Index) fragments(frag []byte, max int) []int32 {
	arena, terms := ix.dict.arena, ix.dict.terms
	var out []int32
	for i := 0; len(out) < max && i < len(arena); {
		k := bytes.Index(arena[i:], frag)
		if k < 0 {
			break
		}
		at := i + k
		// The term whose bytes start at or before at: terms lie in the
		// arena in id order.
		id := sort.Search(len(terms), func(j int) bool { return terms[j].off > uint32(at) }) - 1
		if id >= 0 && at+len(frag) <= int(terms[id].off)+int(terms[id].n) {
			out = append(out, int32(id))
			i = int(terms[id].off) + int(terms[id].n)
			continue
		}
		i = at + 1
	}
	return out
}

// scope says which documents a search may return.
type scope struct {
	onBranch  []bool          // by entry index
	inContext []bool          // by entry index
	edit      map[int32]int32 // target -> latest edit on the branch (its index), -1 when omitted
	ok        func(d doc) bool
}

// scopeKey names the branch a scope is made for: the file, its number of
// entries, the branch's last entry and its length, and whether it is an
// ancestor's.
type scopeKey struct {
	file    *session.File
	entries int
	leaf    *session.Entry
	n       int
	all     bool
}

// scopeOf is branchScope, kept for the next search of the same branch of
// the same file (a second recall does not walk the branch again).
func (ix *Index) scopeOf(f *session.File, branch []*session.Entry, all bool) *scope {
	k := scopeKey{file: f, entries: len(f.Entries), n: len(branch), all: all}
	if len(branch) > 0 {
		k.leaf = branch[len(branch)-1]
	}
	if ix.scope == nil || ix.scoped != k {
		ix.scope, ix.scoped = branchScope(f, branch, all), k
	}
	return ix.scope
}

// branchScope: entries of the branch that left the context and were not
// omitted. all (for ancestor sessions) takes every entry of the branch.
func branchScope(f *session.File, branch []*session.Entry, all bool) *scope {
	s := &scope{onBranch: make([]bool, len(f.Entries)), inContext: make([]bool, len(f.Entries)), edit: map[int32]int32{}}
	for _, e := range branch {
		i := entryIndex(f, e)
		if i < 0 {
			continue
		}
		s.onBranch[i] = true
		if e.Type == "context_edit" {
			id, _ := session.MemberString(e.Raw, "targetId")
			if t := f.Entry(id); t != nil {
				if ti := entryIndex(f, t); ti >= 0 {
					if c := session.Member(session.Member(e.Raw, "replacement"), "content"); c != nil {
						s.edit[ti] = i
					} else {
						s.edit[ti] = -1
					}
				}
			}
		}
	}
	if !all {
		for _, e := range session.ContextEntries(branch) {
			if i := entryIndex(f, e); i >= 0 {
				s.inContext[i] = true
			}
		}
	}
	edited := make([]bool, len(f.Entries))
	for i := range s.edit {
		edited[i] = true
	}
	s.ok = func(d doc) bool {
		if d.target < 0 {
			return s.onBranch[d.entry] && !s.inContext[d.entry] && !edited[d.entry]
		}
		return s.onBranch[d.entry] && s.onBranch[d.target] && !s.inContext[d.target] && s.edit[d.target] == d.entry
	}
	return s
}

// omitted reports whether the branch omits entry i with a context_edit.
func (s *scope) omitted(i int32) bool {
	e, ok := s.edit[i]
	return ok && e < 0
}

// hit is one unit found: its first document, its score and which query
// terms it holds (bit i for term i).
type hit struct {
	doc    doc
	id     int32 // the document's id
	score  float64
	terms  uint32
	order  int32 // the unit's latest entry: ties go to the newest
	place  place // where the query shows best, once read (placed)
	placed bool
	text   []byte // what was read of the unit's text, and the length of its call part
	call   int
}

// BM25's parameters, and the share of a term's weight that its count in
// an entry decides: one match of a word counts 0.6 of the word, many
// count up to 1.
const (
	bm25K1  = 1.2
	bm25B   = 0.75
	tfShare = 0.4
)

// search scores the units (a document, or a tool call with its result)
// in scope that hold any query term and returns them best first, ties
// newest first, with each term's weight (its rarity times its own
// weight). A unit's score is the sum, over the query terms it holds, of
// the term's weight times the level of its best match (exact above any
// approximate match) times 0.6 to 1 by BM25's saturation of the count of
// that match in the unit's length.
func (ix *Index) search(q Query, sc *scope) ([]hit, []float64, [][]expansion) {
	r := ix.searchTop(q, sc, len(ix.docs))
	return r.hits, r.weights, r.exps
}

// searchResult is what searchTop finds.
type searchResult struct {
	hits    []hit  // the best k, best first
	total   int    // how many units hold a term
	found   uint32 // the terms some unit holds
	weights []float64
	exps    [][]expansion
}

// searchTop is search keeping only the best k hits (in order), with the
// number of all and the terms they hold.
func (ix *Index) searchTop(q Query, sc *scope, k int) searchResult {
	ix.sortTerms()
	n := len(ix.docs)
	weights := make([]float64, len(q.Terms))
	exps := make([][]expansion, len(q.Terms))
	if n == 0 || len(q.Terms) == 0 {
		return searchResult{weights: weights, exps: exps}
	}
	ok := make([]bool, n)
	for d := range ix.docs {
		ok[d] = sc.ok(ix.docs[d])
	}
	score := make([]float64, n)
	terms := make([]uint32, n)
	best := make([]float32, n)
	tf := make([]float32, n)
	avg := float64(ix.totalLen) / float64(n)
	touched := make([]int32, 0, 1024)
	for qi, t := range q.Terms {
		touched = touched[:0]
		exps[qi] = ix.expand(t)
		for _, x := range exps[qi] {
			ix.dict.post.each(&ix.dict.terms[x.id], func(d int32, c uint32) {
				if !ok[d] {
					return
				}
				u := ix.docs[d].unit
				switch {
				case best[u] == 0:
					touched = append(touched, u)
					best[u], tf[u] = x.level, float32(c)
				case x.level > best[u]:
					best[u], tf[u] = x.level, float32(c)
				case x.level == best[u]:
					tf[u] += float32(c)
				}
			})
		}
		if len(touched) == 0 {
			continue
		}
		df := float64(len(touched))
		weights[qi] = t.Weight * math.Log(1+(float64(n)-df+0.5)/(df+0.5))
		for _, u := range touched {
			c := float64(tf[u])
			sat := c / (c + bm25K1*(1-bm25B+bm25B*float64(ix.docs[u].ulen)/avg))
			score[u] += weights[qi] * float64(best[u]) * (1 - tfShare + tfShare*sat)
			terms[u] |= 1 << qi
			best[u], tf[u] = 0, 0
		}
	}
	r := searchResult{weights: weights, exps: exps}
	k = max(k, 1)
	heap := make([]hit, 0, min(k, 1024))
	for u := range ix.docs {
		if terms[u] == 0 {
			continue
		}
		r.total++
		r.found |= terms[u]
		h := hit{id: int32(u), score: score[u] * ix.prior(int32(u)), terms: terms[u], order: ix.docs[u].entry}
		if m := ix.docs[u].mate; m >= 0 && ix.docs[m].entry > h.order {
			h.order = ix.docs[m].entry
		}
		switch {
		case len(heap) < k:
			heap = append(heap, h)
			if len(heap) == k {
				heapify(heap)
			}
		case better(h, heap[0]):
			heap[0] = h
			siftDown(heap, 0)
		}
	}
	sortHits(heap)
	r.hits = heap
	return r
}

// better reports whether hit a ranks before hit b: a higher score, or
// on a tie a newer entry.
func better(a, b hit) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	return a.order > b.order
}

// topHits moves the best k hits, in order, to the front of hs (the order
// of the rest is unspecified) and returns hs.
func topHits(hs []hit, k int) []hit {
	k = min(k, len(hs))
	if k == 0 {
		return hs
	}
	heapify(hs[:k])
	for i := k; i < len(hs); i++ {
		if better(hs[i], hs[0]) {
			hs[0], hs[i] = hs[i], hs[0]
			siftDown(hs[:k], 0)
		}
	}
	sortHits(hs[:k])
	return hs
}

// heapify makes hs a heap with the worst hit first.
func heapify(hs []hit) {
	for i := len(hs)/2 - 1; i >= 0; i-- {
		siftDown(hs, i)
	}
}

func siftDown(hs []hit, i int) {
	for {
		c := 2*i + 1
		if c >= len(hs) {
			return
		}
		if c+1 < len(hs) && better(hs[c], hs[c+1]) {
			c++
		}
		if !better(hs[i], hs[c]) {
			return
		}
		hs[i], hs[c] = hs[c], hs[i]
		i = c
	}
}

// Priors of a unit by what it is: tool output holds the facts a model
// comes back for; the model's own text and the user's questions mostly
// restate them, and rank after output that holds the same words.
const (
	priorOutput    = 1.0
	priorAssistant = 0.85
	priorUser      = 0.75
)

// prior is the prior of unit u (see the prior constants).
func (ix *Index) prior(u int32) float64 {
	d := ix.docs[u]
	switch {
	case d.mate >= 0:
		return priorOutput
	case d.role == roleUser:
		return priorUser
	case d.role == roleAssistant:
		return priorAssistant
	}
	return priorOutput
}

// sortHits orders hits best first, ties newest first.
func sortHits(hs []hit) {
	slices.SortFunc(hs, func(a, b hit) int {
		switch {
		case better(a, b):
			return -1
		case better(b, a):
			return 1
		}
		return 0
	})
}
