package relay

import (
	"bytes"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/pi-session/pi-session/session"
)

// The second stage of a search: the best units of the index's ranking are
// read again, and where the query's words stand in them decides among
// them. Terms next to each other and in the query's order, and the query
// as typed, count more than the same terms apart.

// Rerank bounds: how many of the best units are read again, how much of
// each, and how much in all.
const (
	rerankMin    = 24
	rerankScan   = 16 << 10  // bytes of a unit's text the rerank reads
	snippetScan  = 64 << 10  // bytes of a shown unit's text read to place its snippet
	rerankBudget = 384 << 10 // bytes read by one search's rerank
)

// Weights of the second stage, against the index's score: the best
// window's terms, each pair of them adjacent and in the query's order,
// and the query found as typed.
const (
	windowShare   = 0.6
	adjacentBonus = 0.5
	typedBonus    = 0.5
	// maxPlace bounds a place's score over the weight of the terms it
	// holds: each term once, and each pair of them adjacent once, or the
	// query as typed.
	maxPlace = 1 + max(adjacentBonus, typedBonus)
)

// matcher finds a query's terms in text: the index's terms each query
// term matched (and how well), and the query's long tokens the index keeps
// in part, compared whole.
type matcher struct {
	q       Query
	weights []float64
	byTerm  map[string][]termLevel
	long    []int // terms the index keeps in part (compared with the whole word)
	span    int   // the positions a window covers
}

type termLevel struct {
	term  int
	level float32
}

func newMatcher(ix *Index, q Query, weights []float64, exps [][]expansion) *matcher {
	m := &matcher{q: q, weights: weights, byTerm: map[string][]termLevel{}}
	for qi, xs := range exps {
		for _, x := range xs {
			t := string(ix.dict.term(x.id))
			m.byTerm[t] = append(m.byTerm[t], termLevel{qi, x.level})
		}
		if !q.Terms[qi].Indexable {
			m.long = append(m.long, qi)
		}
	}
	m.span = min(max(4, 2*len(q.Terms)), 16)
	return m
}

// occurrence is a query term found in text: its position (words and CJK
// characters counted from the start), the term, how well it matches, and
// its bytes.
type occurrence struct {
	pos     int
	term    int
	level   float32
	at, end int
}

// maxOccurrences bounds the occurrences a text is searched for windows in.
const maxOccurrences = 4096

// find returns the occurrences of the query's terms in text, in order;
// with first, it stops at the first exact one.
func (m *matcher) find(text []byte, first bool) []occurrence {
	var out []occurrence
	var low []byte
	pos := 0
	lookup := func(t []byte, at, end int) {
		for _, tl := range m.byTerm[string(t)] {
			out = append(out, occurrence{pos, tl.term, tl.level, at, end})
		}
	}
	words(text, func(w []byte, at int) bool {
		if len(out) >= maxOccurrences || first && len(out) > 0 && out[len(out)-1].level == levelExact {
			return false
		}
		if !isASCIIWord(w) && hasCJK(w) {
			// Each character is a position; its character and the pair it
			// starts are looked up.
			for i := 0; i < len(w); {
				r, n := utf8.DecodeRune(w[i:])
				if !isCJK(r) {
					j := i
					for j < len(w) {
						r2, n2 := utf8.DecodeRune(w[j:])
						if isCJK(r2) {
							break
						}
						j += n2
					}
					start := len(out)
					splitWord(w[i:j], &low, func(t []byte) { lookup(t, at+i, at+j) })
					m.longs(w[i:j], at+i, at+j, pos, &out)
					dedupe(&out, start)
					pos++
					i = j
					continue
				}
				lookup(w[i:i+n], at+i, at+i+n)
				if i+n < len(w) {
					if r2, n2 := utf8.DecodeRune(w[i+n:]); isCJK(r2) {
						lookup(w[i:i+n+n2], at+i, at+i+n+n2)
					}
				}
				pos++
				i += n
			}
			return true
		}
		start := len(out)
		splitWord(w, &low, func(t []byte) { lookup(t, at, at+len(w)) })
		m.longs(w, at, at+len(w), pos, &out)
		dedupe(&out, start)
		pos++
		return true
	})
	return out
}

// longs adds the query's long tokens that word w is, whole, as exact.
func (m *matcher) longs(w []byte, at, end, pos int, out *[]occurrence) {
	if len(m.long) == 0 {
		return
	}
	lw := lowerInto(nil, w)
	for _, qi := range m.long {
		if string(lw) == m.q.Terms[qi].Text {
			*out = append(*out, occurrence{pos, qi, levelExact, at, end})
		}
	}
}

// dedupe keeps, among the occurrences of one word from start on, the best
// match of each term.
func dedupe(out *[]occurrence, start int) {
	o := *out
	if len(o)-start < 2 {
		return
	}
	k := start
	for i := start; i < len(o); i++ {
		dup := false
		for j := start; j < k; j++ {
			if o[j].term == o[i].term {
				dup = true
				o[j].level = max(o[j].level, o[i].level)
			}
		}
		if !dup {
			o[k] = o[i]
			k++
		}
	}
	*out = o[:k]
}

func hasCJK(w []byte) bool {
	for i := 0; i < len(w); {
		r, n := utf8.DecodeRune(w[i:])
		if isCJK(r) {
			return true
		}
		i += n
	}
	return false
}

// place is where a text shows the query best: a byte range and its score.
type place struct {
	at, end int
	score   float64
	typed   bool   // the query stands there as typed
	terms   uint32 // the query terms it holds (bit i for term i)
}

// perfect reports whether place p is the best a unit holding terms can
// have short of the query as typed: every term of it exactly, each pair
// of them adjacent and in order.
func (m *matcher) perfect(p place, terms uint32) bool {
	if p.typed {
		return true
	}
	most := 0.0
	for t, w := range m.weights {
		if terms&(1<<t) == 0 {
			continue
		}
		most += w
		if t+1 < len(m.weights) && terms&(1<<(t+1)) != 0 {
			most += adjacentBonus * (w + m.weights[t+1]) / 2
		}
	}
	return p.score >= most*(1-1e-9)
}

// typedPlace finds the query as typed in text (see indexTyped), for a
// query of more than one word.
func (m *matcher) typedPlace(text []byte) (place, bool) {
	if len(m.q.Words) < 2 {
		return place{}, false
	}
	at := indexTyped(text, m.q.Typed)
	if at < 0 {
		return place{}, false
	}
	total := 0.0
	for _, w := range m.weights {
		total += w
	}
	return place{at: at, end: at + len(m.q.Typed), score: total * (1 + typedBonus), typed: true, terms: 1<<len(m.weights) - 1}, true
}

// best returns the best place of the query in text: the query as typed
// (case aside) if it stands there; else the window of a few positions
// whose terms weigh most, terms adjacent and in the query's order counting
// more, the first of equal ones. ok is false when no term occurs.
func (m *matcher) best(text []byte) (place, bool) { return m.bestOf(text, false) }

// bestOf is best; with one, for a unit holding a single term (whose best
// place is its first exact match, else its first best one), the text is
// read only up to its first exact match.
func (m *matcher) bestOf(text []byte, one bool) (place, bool) {
	occ := m.find(text, one)
	if len(occ) == 0 {
		return place{}, false
	}
	var bp place
	found := false
	level := make([]float32, len(m.q.Terms))
	pairs := make([]bool, len(m.q.Terms))
	for i := range occ {
		clear(level)
		clear(pairs)
		score := 0.0
		end := occ[i].end
		for j := i; j < len(occ) && occ[j].pos-occ[i].pos < m.span; j++ {
			o := occ[j]
			if o.level > level[o.term] {
				score += m.weights[o.term] * float64(o.level-level[o.term])
				level[o.term] = o.level
			}
			end = max(end, o.end)
			// The next term of the query right after this one.
			for k := j + 1; k < len(occ) && occ[k].pos-o.pos <= 1 && occ[k].pos-occ[i].pos < m.span; k++ {
				if occ[k].term == o.term+1 {
					if !pairs[o.term] {
						pairs[o.term] = true
						score += adjacentBonus * (m.weights[o.term] + m.weights[o.term+1]) / 2
					}
					break
				}
			}
		}
		if !found || score > bp.score {
			var held uint32
			for t, l := range level {
				if l > 0 {
					held |= 1 << t
				}
			}
			bp, found = place{at: occ[i].at, end: end, score: score, terms: held}, true
		}
	}
	if p, ok := m.typedPlace(text); ok && p.score > bp.score {
		bp = p
	}
	return bp, true
}

// indexTyped finds the typed query in text, case aside and with any run
// of spaces standing for one; -1 when it is not there.
func indexTyped(text []byte, typed string) int {
	if len(typed) < 3 {
		return -1
	}
	low := lowerSameLen(text)
	first, rest, _ := strings.Cut(typed, " ")
	for from := 0; ; {
		i := bytes.Index(low[from:], []byte(first))
		if i < 0 {
			return -1
		}
		at := from + i
		j := at + len(first)
		ok := true
		for r := rest; r != "" && ok; {
			var w string
			w, r, _ = strings.Cut(r, " ")
			k := j
			for k < len(low) && (low[k] == ' ' || low[k] == '\t') {
				k++
			}
			if k == j || !bytes.HasPrefix(low[k:], []byte(w)) {
				ok = false
			}
			j = k + len(w)
		}
		if ok {
			return at
		}
		from = at + 1
	}
}

// lowerSameLen lowercases text where that keeps each character's length
// in bytes, so offsets in it are offsets in text.
func lowerSameLen(text []byte) []byte {
	out := make([]byte, len(text))
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			out[i] = c
			i++
			continue
		}
		r, n := utf8.DecodeRune(text[i:])
		if l := unicode.ToLower(r); utf8.RuneLen(l) == n {
			utf8.EncodeRune(out[i:], l)
		} else {
			copy(out[i:i+n], text[i:i+n])
		}
		i += n
	}
	return out
}

// unitText is what of a unit the rerank and the snippet read: the text
// of its first document and, for a tool call, its result's after it
// (joined by a newline); callLen is the length of the call's part (0 for
// other units). Each document is read up to stop bytes.
func unitText(f *session.File, ix *Index, d doc, stop int) (buf []byte, callLen int) {
	buf = docTextOf(f, d, stop)
	if d.mate >= 0 && d.part >= 0 {
		callLen = len(buf)
		buf = append(append(buf, '\n'), docTextOf(f, ix.docs[d.mate], stop)...)
	}
	return buf, callLen
}

// docRaws returns the JSON values holding a document's text.
func docRaws(f *session.File, d doc) [][]byte {
	parts, _, _ := docParts(f, f.Entries[d.entry])
	for _, p := range parts {
		if p.part == d.part {
			return p.raws
		}
	}
	return nil
}

// docTextOf is a document's text (pieces joined by newlines), up to stop
// bytes when stop > 0; a tool call reads "name: arguments".
func docTextOf(f *session.File, d doc, stop int) []byte {
	raws := docRaws(f, d)
	if d.part >= 0 && len(raws) == 1 {
		name, _ := session.MemberString(raws[0], "name")
		return append([]byte(name+": "), text(session.Member(raws[0], "arguments"), stop)...)
	}
	var out []byte
	for _, raw := range raws {
		if len(out) > 0 {
			out = append(out, '\n')
		}
		t := text(raw, max(0, stop-len(out)))
		out = append(out, t...)
		if stop > 0 && len(out) >= stop {
			break
		}
	}
	return out
}

// lineSnippet is the text around buf[at:end]: the lines that hold it,
// whole, and the lines around them while they fit in 2*snippetChars
// characters; a line longer than that is cut around the place. Lines are
// joined by " ⏎ ", other whitespace collapsed.
func lineSnippet(buf []byte, at, end int) string {
	at, end = min(at, len(buf)), min(max(end, at), len(buf))
	budget := 2 * snippetChars
	ls := bytes.LastIndexByte(buf[:at], '\n') + 1
	le := len(buf)
	if k := bytes.IndexByte(buf[end:], '\n'); k >= 0 {
		le = end + k
	}
	var lo, hi int
	if utf8.RuneCount(buf[ls:le]) > budget {
		lo = backRunes(buf, at, snippetChars)
		hi = fwdRunes(buf, end, snippetChars)
		lo, hi = max(lo, ls), min(hi, le)
		if hi-lo < budget && utf8.RuneCount(buf[lo:hi]) < budget {
			// At the line's start or end: take the rest from the other side.
			lo = max(ls, backRunes(buf, at, budget-utf8.RuneCount(buf[at:hi])))
			hi = min(le, fwdRunes(buf, end, budget-utf8.RuneCount(buf[lo:end])))
		}
	} else {
		lo, hi = ls, le
		n := utf8.RuneCount(buf[lo:hi])
		for grew := true; grew; {
			grew = false
			if lo > 0 {
				p := bytes.LastIndexByte(buf[:lo-1], '\n') + 1
				if k := utf8.RuneCount(buf[p : lo-1]); n+k+3 <= budget {
					lo, n, grew = p, n+k+3, true
				}
			}
			if hi < len(buf) {
				q := len(buf)
				if k := bytes.IndexByte(buf[hi+1:], '\n'); k >= 0 {
					q = hi + 1 + k
				}
				if k := utf8.RuneCount(buf[hi+1 : q]); n+k+3 <= budget {
					hi, n, grew = q, n+k+3, true
				}
			}
		}
	}
	var lines []string
	for _, l := range strings.Split(string(buf[lo:hi]), "\n") {
		if l = oneLine(l); l != "" {
			lines = append(lines, l)
		}
	}
	s := strings.Join(lines, " ⏎ ")
	if lo > 0 {
		s = "…" + s
	}
	if hi < len(buf) {
		s += "…"
	}
	return s
}
