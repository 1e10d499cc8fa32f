package relay

import (
	"bytes"
	"math"
	"runtime/debug"
	"slices"
	"sort"

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
	dict     termDict
	sorted   []int32 // term ids in term order, for prefix lookups
	totalLen int64
	local    docTerms // scratch of add: the terms of the document
	text     []byte   // scratch of add: unescaped text
	low      []byte   // scratch of add: lowercased words
}

// doc is one searchable text: an entry's message, or a replacement.
type doc struct {
	entry  int32 // index in File.Entries
	target int32 // for a replacement: the entry it replaces; -1 otherwise
	length uint32
}

// NewIndex returns an empty index.
func NewIndex() *Index {
	return &Index{dict: newTermDict()}
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
		defer debug.SetGCPercent(debug.SetGCPercent(10))
	}
	for ; ix.n < end; ix.n++ {
		if raw, target := docText(f, f.Entries[ix.n]); raw != nil {
			ix.add(int32(ix.n), target, raw)
		}
	}
	return ix.n == len(f.Entries)
}

// Entries is the number of file entries indexed.
func (ix *Index) Entries() int { return ix.n }

// docText returns the JSON holding an entry's model-visible text, and for
// a context_edit the index of the entry it replaces (-1 otherwise).
func docText(f *session.File, e *session.Entry) ([]byte, int32) {
	switch e.Type {
	case "message":
		m := session.Member(e.Raw, "message")
		if string(session.Member(m, "excludeFromContext")) == "true" {
			return nil, -1
		}
		switch role, _ := session.MemberString(m, "role"); role {
		case "system":
			return nil, -1
		case "bashExecution":
			return m, -1 // command and output
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

func (ix *Index) add(entry, target int32, raw []byte) {
	id := int32(len(ix.docs))
	var n uint32
	lt := &ix.local
	lt.reset()
	walkTextBuf(raw, &ix.text, func(text []byte) bool {
		words(text, func(w []byte, _ int) bool {
			n += lt.word(w, &ix.low)
			return true
		})
		return true
	})
	if n > 0 {
		ix.docs = append(ix.docs, doc{entry: entry, target: target, length: n})
		ix.totalLen += int64(n)
		for _, e := range lt.ents {
			tid := ix.dict.intern(lt.arena[e.off:e.off+e.n], e.h)
			ix.dict.post.add(&ix.dict.terms[tid], id, e.tf)
		}
	}
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

// expand returns the term ids a query term matches, with their weights.
func (ix *Index) expand(q QueryTerm) (ids []int32, weights []float32) {
	add := func(tid int32) {
		if w := q.matches(ix.dict.term(tid)); w > 0 && !slices.Contains(ids, tid) {
			ids = append(ids, tid)
			weights = append(weights, w)
		}
	}
	if tid := ix.dict.find([]byte(q.Text), hashTerm([]byte(q.Text))); tid >= 0 {
		add(tid)
	}
	prefix := func(p string) {
		if p == "" {
			return
		}
		pb := []byte(p)
		i := sort.Search(len(ix.sorted), func(i int) bool { return bytes.Compare(ix.dict.term(ix.sorted[i]), pb) >= 0 })
		for n := 0; i < len(ix.sorted) && n < maxExpansions && bytes.HasPrefix(ix.dict.term(ix.sorted[i]), pb); i, n = i+1, n+1 {
			add(ix.sorted[i])
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
	return ids, weights
}

// scope says which documents a search may return.
type scope struct {
	onBranch  []bool          // by entry index
	inContext []bool          // by entry index
	edit      map[int32]int32 // target -> latest edit on the branch (its index), -1 when omitted
	ok        func(d doc) bool
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
	s.ok = func(d doc) bool {
		if d.target < 0 {
			if !s.onBranch[d.entry] || s.inContext[d.entry] {
				return false
			}
			_, edited := s.edit[d.entry]
			return !edited
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

// hit is one document found.
type hit struct {
	doc   doc
	score float64
}

// search returns the documents in scope that match every query term,
// best first (BM25 over the terms, a query term counting its exact,
// prefix and stem matches with decreasing weight), ties newest first.
// Terms the index leaves out (long numbers) are checked against the text
// by verify.
func (ix *Index) search(terms []QueryTerm, sc *scope, verify func(d doc, t QueryTerm) bool) []hit {
	ix.sortTerms()
	n := len(ix.docs)
	if n == 0 || len(terms) == 0 {
		return nil
	}
	score := make([]float64, n)
	mask := make([]uint32, n)
	tfw := make([]float32, n)
	var want uint32
	var textOnly []QueryTerm
	avg := float64(ix.totalLen) / float64(n)
	const k1, b = 1.2, 0.75
	looked := 0
	for qi, q := range terms {
		ids, ws := ix.expand(q)
		if len(ids) == 0 {
			if q.Indexable {
				return nil // a term nothing holds: no document has them all
			}
			textOnly = append(textOnly, q)
			continue
		}
		looked++
		bit := uint32(1) << qi
		want |= bit
		var touched []int32
		for k, tid := range ids {
			w := ws[k]
			ix.dict.post.each(&ix.dict.terms[tid], func(d int32, tf uint32) {
				if tfw[d] == 0 {
					touched = append(touched, d)
				}
				tfw[d] += w * float32(tf)
			})
		}
		df := float64(len(touched))
		idf := math.Log(1 + (float64(n)-df+0.5)/(df+0.5))
		for _, d := range touched {
			t := float64(tfw[d])
			score[d] += idf * t * (k1 + 1) / (t + k1*(1-b+b*float64(ix.docs[d].length)/avg))
			mask[d] |= bit
			tfw[d] = 0
		}
	}
	var out []hit
	for d := range ix.docs {
		if mask[d] != want || !sc.ok(ix.docs[d]) {
			continue
		}
		if looked == 0 && len(textOnly) == 0 {
			continue
		}
		ok := true
		for _, q := range textOnly {
			if !verify(ix.docs[d], q) {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, hit{doc: ix.docs[d], score: score[d]})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].score != out[j].score {
			return out[i].score > out[j].score
		}
		return out[i].doc.entry > out[j].doc.entry
	})
	return out
}
