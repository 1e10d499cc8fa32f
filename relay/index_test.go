package relay

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
)

// oracle is a search done the slow way: every document's terms counted in
// a map, every dictionary term compared with every query term. The index
// must find the same documents with the same scores.
type oracle struct {
	docs  []map[string]int
	lens  []int
	terms map[string]bool
}

func newOracle(raws [][]byte) *oracle {
	o := &oracle{terms: map[string]bool{}}
	for _, raw := range raws {
		tf := map[string]int{}
		n := 0
		walkText(raw, func(text []byte) bool {
			tokenize(text, func(t []byte) {
				tf[string(t)]++
				o.terms[string(t)] = true
				n++
			})
			return true
		})
		o.docs = append(o.docs, tf)
		o.lens = append(o.lens, n)
	}
	return o
}

// candidate: the dictionary terms expand looks at for q (the exact word,
// the word and its stem as prefixes, a long token's indexed start).
func candidate(q QueryTerm, t string) bool {
	if t == q.Text || len(q.Text) >= 3 && strings.HasPrefix(t, q.Text) || q.Stem != "" && strings.HasPrefix(t, q.Stem) {
		return true
	}
	if !q.Indexable {
		if cut, ok := termOf([]byte(q.Text)); ok && len(cut) < len(q.Text) && strings.HasPrefix(t, string(cut)) {
			return true
		}
	}
	return false
}

// search returns doc -> score for the documents that hold every term
// (terms the index leaves out count as held, as verify says).
func (o *oracle) search(terms []QueryTerm) map[int]float64 {
	docs := 0
	total := 0
	for i := range o.docs {
		if o.lens[i] > 0 {
			docs++
			total += o.lens[i]
		}
	}
	out := map[int]float64{}
	if docs == 0 || len(terms) == 0 {
		return out
	}
	avg := float64(total) / float64(docs)
	score := map[int]float64{}
	count := map[int]int{}
	looked, textOnly := 0, 0
	for _, q := range terms {
		tfw := map[int]float32{}
		for i, tf := range o.docs {
			if o.lens[i] == 0 {
				continue
			}
			keys := make([]string, 0, len(tf))
			for t := range tf {
				keys = append(keys, t)
			}
			sort.Strings(keys)
			for _, t := range keys {
				if w := q.matches([]byte(t)); w > 0 && candidate(q, t) {
					tfw[i] += w * float32(tf[t])
				}
			}
		}
		any := false
		for t := range o.terms {
			if q.matches([]byte(t)) > 0 && candidate(q, t) {
				any = true
			}
		}
		if !any {
			if q.Indexable {
				return out
			}
			textOnly++ // verify (here: always true) decides
			continue
		}
		looked++
		df := float64(len(tfw))
		idf := math.Log(1 + (float64(docs)-df+0.5)/(df+0.5))
		const k1, b = 1.2, 0.75
		for d, w := range tfw {
			t := float64(w)
			score[d] += idf * t * (k1 + 1) / (t + k1*(1-b+b*float64(o.lens[d])/avg))
			count[d]++
		}
	}
	if looked == 0 && textOnly > 0 {
		for i := range o.docs {
			if o.lens[i] > 0 {
				out[i] = 0
			}
		}
	}
	for d, n := range count {
		if n == looked && looked > 0 {
			out[d] = score[d]
		}
	}
	return out
}

// randomDocs makes documents of words a session holds: plain words,
// camelCase and snake_case names, numbers, hashes, paths, long tokens,
// non-ASCII words and JSON escapes.
func randomDocs(r *rand.Rand, n int) [][]byte {
	vocab := []string{"ember", "cache", "emberCache", "ember_cache", "HTTPServer", "utf8Len", "export", "exported", "exporting", "function",
		"quokka", "habitat", "migration", "migrations", "shard", "17", "123456", "1234567", "deadbeef1234abcd", "src/relay/note.go", "straße",
		"Über", "naïve", "日本語", strings.Repeat("long", 15), "a", "io", "x1", "tab\\there", "line\\nbreak", "\\u00e9t\\u00e9", "go", "gopher"}
	var out [][]byte
	for i := 0; i < n; i++ {
		var words []string
		for k := r.IntN(60); k >= 0; k-- {
			words = append(words, vocab[r.IntN(len(vocab))])
		}
		text := strings.Join(words, " ")
		switch r.IntN(3) {
		case 0:
			out = append(out, []byte(`"`+text+`"`))
		case 1:
			out = append(out, []byte(`[{"type":"text","text":"`+text+`"},{"type":"image","data":"ZW1iZXI=","mimeType":"image/png"}]`))
		default:
			out = append(out, []byte(`{"role":"bashExecution","command":"grep `+words[0]+`","output":"`+text+`","exitCode":0}`))
		}
	}
	return out
}

// TestIndexAgainstOracle: for random documents added in several batches
// and random queries, the index finds exactly the documents the oracle
// finds, with the same scores, best first.
func TestIndexAgainstOracle(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	queries := []string{"ember", "ember cache", "embercache", "export functi", "exporting", "migrat quok", "shard 17", "123456", "1234567",
		"deadbeef1234abcd", "deadbeef", "note.go relay", "STRASSE straße", "über", "日本語", "long", strings.Repeat("long", 15), "http server",
		"utf8", "len", "tab", "break", "été", "image", "go", "gop", "xyz", "a io"}
	for round := 0; round < 20; round++ {
		raws := randomDocs(r, 5+r.IntN(200))
		ix := NewIndex()
		for i, raw := range raws {
			ix.add(int32(i), -1, raw)
		}
		o := newOracle(raws)
		sc := &scope{ok: func(doc) bool { return true }}
		for _, q := range queries {
			terms := ParseQuery(q)
			want := o.search(terms)
			hits := ix.search(terms, sc, func(d doc, q QueryTerm) bool { return true })
			got := map[int]float64{}
			for k, h := range hits {
				got[int(h.doc.entry)] = h.score
				if k > 0 && hits[k-1].score < h.score {
					t.Errorf("round %d, %q: hit %d scores %v after %v", round, q, k, h.score, hits[k-1].score)
				}
			}
			if len(got) != len(want) {
				t.Fatalf("round %d, %q: %d hits, oracle %d\ngot %v\nwant %v", round, q, len(got), len(want), got, want)
			}
			for d, s := range want {
				if g, ok := got[d]; !ok || math.Abs(g-s) > 1e-6*math.Max(1, s) {
					t.Fatalf("round %d, %q: doc %d scores %v, oracle %v", round, q, d, g, s)
				}
			}
		}
	}
}

// TestIndexIncrementalSame: an index built in several updates answers as
// one built at once.
func TestIndexIncrementalSame(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	raws := randomDocs(r, 300)
	whole := NewIndex()
	for i, raw := range raws {
		whole.add(int32(i), -1, raw)
	}
	parts := NewIndex()
	sc := &scope{ok: func(doc) bool { return true }}
	for i, raw := range raws {
		parts.add(int32(i), -1, raw)
		if i%37 == 0 {
			parts.search(ParseQuery("ember"), sc, nil) // sorts the terms seen so far
		}
	}
	for _, q := range []string{"ember", "cache export", "mig", "straße", "123456"} {
		a := whole.search(ParseQuery(q), sc, func(doc, QueryTerm) bool { return true })
		b := parts.search(ParseQuery(q), sc, func(doc, QueryTerm) bool { return true })
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("%q: built at once %v, in parts %v", q, a, b)
		}
	}
}
