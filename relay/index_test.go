package relay

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"
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
// the word and its stem as prefixes, a long token's indexed start; CJK
// terms only exactly).
func candidate(q QueryTerm, t string) bool {
	if t == q.Text {
		return true
	}
	if q.CJK {
		return false
	}
	if len(q.Text) >= 3 && strings.HasPrefix(t, q.Text) || q.Stem != "" && strings.HasPrefix(t, q.Stem) {
		return true
	}
	if !q.Indexable {
		if cut, ok := termOf([]byte(q.Text)); ok && len(cut) < len(q.Text) && strings.HasPrefix(t, string(cut)) {
			return true
		}
	}
	return false
}

// search returns doc -> score for the documents that hold any term: per
// term, its weight (rarity) times the level of the document's best match
// times 0.6 to 1 by BM25's saturation of that match's count; a term no
// document holds as a word, prefix or stem is looked for inside words.
func (o *oracle) search(q Query) map[int]float64 {
	docs := 0
	total := 0
	for i := range o.docs {
		if o.lens[i] > 0 {
			docs++
			total += o.lens[i]
		}
	}
	out := map[int]float64{}
	if docs == 0 || len(q.Terms) == 0 {
		return out
	}
	avg := float64(total) / float64(docs)
	for _, qt := range q.Terms {
		level := func(t string) float32 {
			if w := qt.matches([]byte(t)); w > 0 && candidate(qt, t) {
				return w
			}
			return 0
		}
		any := false
		for t := range o.terms {
			any = any || level(t) > 0
		}
		if !any && !qt.CJK && utf8.RuneCountInString(qt.Text) >= 3 {
			level = func(t string) float32 {
				if strings.Contains(t, qt.Text) {
					return levelFragment
				}
				return 0
			}
		}
		best, tf := map[int]float32{}, map[int]float32{}
		for i, terms := range o.docs {
			if o.lens[i] == 0 {
				continue
			}
			keys := make([]string, 0, len(terms))
			for t := range terms {
				keys = append(keys, t)
			}
			sort.Strings(keys)
			for _, t := range keys {
				w := level(t)
				switch {
				case w == 0:
				case w > best[i]:
					best[i], tf[i] = w, float32(terms[t])
				case w == best[i]:
					tf[i] += float32(terms[t])
				}
			}
		}
		df := float64(len(best))
		weight := qt.Weight * math.Log(1+(float64(docs)-df+0.5)/(df+0.5))
		for d, w := range best {
			c := float64(tf[d])
			sat := c / (c + bm25K1*(1-bm25B+bm25B*float64(o.lens[d])/avg))
			out[d] += weight * float64(w) * (1 - tfShare + tfShare*sat)
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
		"Über", "naïve", "日本語", "ｼｽﾃﾑ", "ＡＢＣ１２３", "e\u0301te\u0301", "\u001b[31merror\u001b[0m", strings.Repeat("long", 15), "a", "io", "x1", "tab\\there", "line\\nbreak", "\\u00e9t\\u00e9", "go", "gopher"}
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
		"utf8", "len", "tab", "break", "été", "ete", "image", "go", "gop", "xyz", "a io", "mber", "igrat", "日本", "本語 日", "ＥＭＢＥＲ", "how many shards", "deadbeef1234"}
	for round := 0; round < 20; round++ {
		raws := randomDocs(r, 5+r.IntN(200))
		ix := NewIndex()
		for i, raw := range raws {
			ix.add(int32(i), -1, raw)
		}
		o := newOracle(raws)
		sc := &scope{ok: func(doc) bool { return true }}
		for _, q := range queries {
			want := o.search(ParseQuery(q))
			hits, _, _ := ix.search(ParseQuery(q), sc)
			hits = topHits(hits, len(hits))
			got := map[int]float64{}
			for k, h := range hits {
				got[int(ix.docs[h.id].entry)] = h.score
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
			parts.search(ParseQuery("ember"), sc) // sorts the terms seen so far
		}
	}
	for _, q := range []string{"ember", "cache export", "mig", "straße", "123456"} {
		a, _, _ := whole.search(ParseQuery(q), sc)
		b, _, _ := parts.search(ParseQuery(q), sc)
		a, b = topHits(a, len(a)), topHits(b, len(b))
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("%q: built at once %v, in parts %v", q, a, b)
		}
	}
}
