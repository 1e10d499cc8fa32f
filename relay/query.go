package relay

import (
	"math"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// maxQueryTerms bounds the terms of one query; the rest are ignored.
const maxQueryTerms = 24

// maxQueryBytes bounds the query text read.
const maxQueryBytes = 2000

// Query is a parsed recall query: the words as typed, the terms searched
// for, and the query as typed (lowercased and normalised) for the places
// where it stands whole.
type Query struct {
	Terms  []QueryTerm
	Words  []QueryWord
	Typed  string // the words, lowercased, folded, one space apart
	AllCJK bool   // every word is CJK text
}

// QueryWord is one word of the query as typed, between spaces: a word
// ("failing"), an identifier ("rotor_417", "note.go"), or a run of CJK
// text. Its terms are what it is searched by.
type QueryWord struct {
	Text  string // lowercased, folded
	Stop  bool   // a stop word: not searched for while the query has others
	Terms []int  // indices in Query.Terms
}

// QueryTerm is one term of a query. None is required: an entry holding
// more of them, and rarer ones, ranks higher.
type QueryTerm struct {
	Text      string  // lowercased, folded
	Indexable bool    // false: checked against the text, not looked up (a long number)
	Stem      string  // a shorter form to match as a prefix ("exporting" -> "export"), or ""
	CJK       bool    // a CJK character or bigram: matched exactly
	Word      int     // the query word it comes from
	Weight    float64 // how much it counts (a word's whole camelCase form counts half: its parts count too)
}

// ParseQuery splits a query into words at spaces and each word into terms
// the way text is split (see tokenize): case, width, diacritics,
// separators and camelCase do not matter, repeated terms count once, and
// a word that splits (emberCache) asks for its parts and for itself
// whole. Control characters are dropped. Stop words are left out unless
// the query has nothing else.
func ParseQuery(q string) Query {
	if len(q) > maxQueryBytes {
		q = q[:maxQueryBytes]
	}
	q = norm.NFKC.String(cleanQuery(q))
	var out Query
	seen := map[string]bool{}
	var typed []string
	add := func(w int, t QueryTerm) {
		if seen[t.Text] || len(out.Terms) >= maxQueryTerms {
			return
		}
		seen[t.Text] = true
		t.Word = w
		out.Words[w].Terms = append(out.Words[w].Terms, len(out.Terms))
		out.Terms = append(out.Terms, t)
	}
	cjkWords := 0
	for _, field := range strings.FieldsFunc(q, unicode.IsSpace) {
		field = strings.TrimFunc(field, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
		if field == "" {
			continue
		}
		text := string(foldText([]byte(field)))
		typed = append(typed, text)
		w := len(out.Words)
		out.Words = append(out.Words, QueryWord{Text: text})
		cjk := false
		words([]byte(text), func(word []byte, _ int) bool {
			for _, seg := range scriptSegments(word) {
				if r, _ := utf8.DecodeRuneInString(seg); isCJK(r) {
					cjk = true
					// A run's bigrams share its weight, so a long run
					// counts more than one word but not once per bigram.
					grams := cjkTerms(seg)
					for _, g := range grams {
						add(w, QueryTerm{Text: g, Indexable: true, CJK: true, Weight: 1 / math.Sqrt(float64(len(grams)))})
					}
					continue
				}
				if isShortHash(seg) {
					// An abbreviated commit (4d6d038): one term, found
					// as itself and as the start of the whole hash.
					add(w, QueryTerm{Text: seg, Indexable: indexable(seg), Weight: 1})
					continue
				}
				var low []byte
				var parts []string
				emitWord([]byte(seg), &low, false, func(t []byte) { parts = append(parts, string(t)) })
				for _, t := range parts {
					add(w, QueryTerm{Text: t, Indexable: indexable(t), Stem: stem(t), Weight: 1})
				}
				if len(parts) > 1 {
					whole := string(lowerInto(nil, []byte(seg)))
					if got, ok := termOf([]byte(whole)); ok && len(got) == len(whole) {
						add(w, QueryTerm{Text: whole, Indexable: true, Weight: 0.5})
					}
				}
			}
			return true
		})
		if cjk {
			cjkWords++
		}
		out.Words[w].Stop = !cjk && stopWords[text]
		if len(out.Words[w].Terms) == 0 && !out.Words[w].Stop {
			// A CJK word of nothing but function words ("どこ").
			out.Words[w].Stop = true
		}
	}
	out.Typed = strings.Join(typed, " ")
	out.AllCJK = cjkWords > 0 && cjkWords == len(out.Words)
	// Stop words count only when nothing else does; a CJK word of
	// nothing but function words then counts whole.
	content := false
	for _, w := range out.Words {
		content = content || !w.Stop && len(w.Terms) > 0
	}
	if !content {
		for i := range out.Words {
			if len(out.Words[i].Terms) == 0 {
				for _, g := range cjkGrams(out.Words[i].Text) {
					add(i, QueryTerm{Text: g, Indexable: true, CJK: true, Weight: 1})
				}
			}
			out.Words[i].Stop = false
		}
		return out
	}
	var kept []QueryTerm
	remap := make([]int, len(out.Terms))
	for i, t := range out.Terms {
		remap[i] = -1
		if !out.Words[t.Word].Stop {
			remap[i] = len(kept)
			kept = append(kept, t)
		}
	}
	for i := range out.Words {
		var ts []int
		for _, k := range out.Words[i].Terms {
			if remap[k] >= 0 {
				ts = append(ts, remap[k])
			}
		}
		out.Words[i].Terms = ts
	}
	out.Terms = kept
	return out
}

// isShortHash reports whether a lowercased query word looks like an
// abbreviated hash: 7 or more hexadecimal digits, letters and digits both.
func isShortHash(w string) bool {
	if len(w) < 7 {
		return false
	}
	digits, letters := 0, 0
	for i := 0; i < len(w); i++ {
		switch c := w[i]; {
		case '0' <= c && c <= '9':
			digits++
		case 'a' <= c && c <= 'f':
			letters++
		default:
			return false
		}
	}
	return digits > 0 && letters > 0
}

// cleanQuery drops control and format characters (and terminal escape
// sequences) from a query; tabs and line ends become spaces.
func cleanQuery(q string) string {
	var b strings.Builder
	for i := 0; i < len(q); {
		c := q[i]
		if c == 0x1b {
			i = skipEscape([]byte(q[i:min(len(q), i+40)]), 0) + i
			b.WriteByte(' ')
			continue
		}
		r, n := utf8.DecodeRuneInString(q[i:])
		i += n
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			b.WriteByte(' ')
		case r == utf8.RuneError && n == 1, unicode.Is(unicode.Cc, r), unicode.Is(unicode.Cf, r):
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// scriptSegments cuts a word where CJK text meets other letters.
func scriptSegments(word []byte) []string {
	var out []string
	start, prev := 0, false
	for i := 0; i < len(word); {
		r, n := utf8.DecodeRune(word[i:])
		c := isCJK(r)
		if i > 0 && c != prev {
			out = append(out, string(word[start:i]))
			start = i
		}
		prev = c
		i += n
	}
	return append(out, string(word[start:]))
}

// cjkTerms are the terms of a CJK run of a query: its bigrams (its one
// character when it has one), after its function words are cut out
// (Korean: the particles at its end, and whole function words).
func cjkTerms(run string) []string {
	if r, _ := utf8.DecodeRuneInString(run); r >= 0xAC00 && r <= 0xD7AF || r >= 0x1100 && r <= 0x11FF || r >= 0x3130 && r <= 0x318F {
		w := run
		for k := 0; k < 2; k++ {
			for _, p := range koParticles {
				if strings.HasSuffix(w, p) && utf8.RuneCountInString(w) > utf8.RuneCountInString(p)+1 {
					w = strings.TrimSuffix(w, p)
					break
				}
			}
		}
		if koStop[w] || koStop[run] {
			return nil
		}
		return cjkGrams(w)
	}
	var out []string
	for _, piece := range cutStop(run) {
		out = append(out, cjkGrams(piece)...)
	}
	return out
}

// cutStop cuts the Japanese and Chinese function words out of a run,
// longest first, and returns the pieces left.
func cutStop(run string) []string {
	pieces := []string{run}
	for _, s := range cjkStop {
		var next []string
		for _, p := range pieces {
			for _, q := range strings.Split(p, s) {
				if q != "" {
					next = append(next, q)
				}
			}
		}
		pieces = next
	}
	return pieces
}

// cjkGrams are the bigrams of a CJK run, or its one character.
func cjkGrams(run string) []string {
	rs := []rune(run)
	if len(rs) == 1 {
		return []string{run}
	}
	var out []string
	for i := 0; i+1 < len(rs); i++ {
		out = append(out, string(rs[i:i+2]))
	}
	return out
}

// suffixes a stem may lose, longest first: English, German, French,
// Spanish and Portuguese endings, written without diacritics (queries
// are folded).
var suffixes = []string{"aciones", "ational", "ations", "ciones", "ungen", "ation", "acion", "mente", "ments", "ement",
	"ings", "ions", "ness", "heit", "keit", "cion", "ment", "ing", "ion", "ers", "ies", "ied", "ung", "ais", "ait",
	"ent", "ant", "ed", "es", "er", "ly", "en", "em", "ez", "ar", "ir", "os", "as", "s", "e"}

// ruSuffixes are Russian endings a stem may lose, longest first.
var ruSuffixes = []string{"иями", "ями", "ами", "ого", "его", "ому", "ему", "ыми", "ими", "ая", "яя", "ое", "ее", "ые",
	"ие", "ый", "ий", "ой", "ом", "ем", "ах", "ях", "ов", "ев", "ей", "ую", "юю", "ам", "ям", "ть", "ла", "ло", "ли",
	"а", "я", "ы", "и", "у", "ю", "е", "о", "ь"}

// stem strips one common ending, keeping at least 4 letters (3 in
// Russian), or returns "".
func stem(t string) string {
	if r, _ := utf8.DecodeRuneInString(t); r >= 0x400 && r <= 0x4FF {
		n := utf8.RuneCountInString(t)
		for _, s := range ruSuffixes {
			if strings.HasSuffix(t, s) && n-utf8.RuneCountInString(s) >= 3 {
				return t[:len(t)-len(s)]
			}
		}
		return ""
	}
	for _, s := range suffixes {
		if strings.HasSuffix(t, s) && len(t)-len(s) >= 4 {
			return t[:len(t)-len(s)]
		}
	}
	return ""
}

// Match levels: how well a text term answers a query term. An exact
// match counts whole; every other kind counts less than any exact one, so
// an entry holding the word as written ranks above one holding only
// another form of it.
const (
	levelExact    = 1.0
	levelCut      = 0.7 // the start of a long token the index keeps in part
	levelPrefix   = 0.45
	levelStem     = 0.4
	levelFragment = 0.2 // the query word inside a longer word
)

// matches reports how a text term answers a query term: levelExact for
// the same term, levelPrefix when the query is a prefix of it (3 letters
// at least), levelStem when the query's stem is, levelCut when the term
// is the indexed start of a long query token, 0 otherwise. CJK terms
// match only exactly.
func (q QueryTerm) matches(term []byte) float32 {
	switch {
	case string(term) == q.Text:
		return levelExact
	case q.CJK:
		return 0
	case !q.Indexable && len(term) < len(q.Text) && q.Text[:len(term)] == string(term):
		// The index keeps only the start of a long hash or number.
		return levelCut
	case len(q.Text) >= 3 && len(term) >= len(q.Text) && string(term[:len(q.Text)]) == q.Text:
		return levelPrefix
	case q.Stem != "" && len(term) >= len(q.Stem) && string(term[:len(q.Stem)]) == q.Stem:
		return levelStem
	}
	return 0
}
