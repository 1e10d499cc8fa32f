package rules

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Normalize is the form the classifier reads: NFKC (full-width letters and
// half-width kana folded), lower case, spaces collapsed, curly quotes
// made straight.
func Normalize(s string) string {
	if !isASCII(s) {
		s = norm.NFKC.String(s)
		s = quotes.Replace(s)
	}
	s = strings.ToLower(s)
	return collapseSpaces(s)
}

// collapseSpaces trims s and makes each run of white space one space.
func collapseSpaces(s string) string {
	clean := true
	prevSpace := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		sp := c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
		if sp && (prevSpace || c != ' ') || c >= 0x80 {
			clean = false
			break
		}
		prevSpace = sp
	}
	if clean && !prevSpace {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

var quotes = strings.NewReplacer("’", "'", "‘", "'", "“", `"`, "”", `"`, "«", `"`, "»", `"`, "„", `"`)

// token is one word of a normalized sentence: a run of letters, digits,
// apostrophes and underscores; CJK text is one token per run.
type token struct {
	text string
	cjk  bool
}

func tokens(s string) []token {
	var out []token
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !wordRune(r) {
			i += n
			continue
		}
		start := i
		cjk := isCJKLetter(r)
		for i < len(s) {
			r, n = utf8.DecodeRuneInString(s[i:])
			if !wordRune(r) || isCJKLetter(r) != cjk {
				break
			}
			i += n
		}
		out = append(out, token{text: s[start:i], cjk: cjk})
	}
	return out
}

func wordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return asciiWord[r]
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)
}

// asciiWord marks the ASCII bytes that are part of a word.
var asciiWord = func() (t [utf8.RuneSelf]bool) {
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	t['\''], t['_'] = true, true
	return t
}()

// isCJKLetter: scripts without spaces between words (Hangul has them and
// is read as words).
func isCJKLetter(r rune) bool {
	if r < 0x2E80 {
		return false
	}
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r) || r == 'ー'
}

// Features are the hashed feature ids of a sentence, a feature as often
// as it occurs (a bag). The same sentence always gives the same ids.
func Features(sentence string, lead string) []uint32 {
	ids, _ := analyze(sentence, lead)
	return ids
}

// reading is what reading a sentence for its features found, kept for
// comparing it with other rules.
type reading struct {
	norm string
	toks []token
	cues []cue
}

// analyze is Features and the reading behind them.
func analyze(sentence, lead string) ([]uint32, reading) {
	var f featureSet
	f.ids = make([]uint32, 0, 4*min(len(sentence), 4*featureRunes)+64)
	ids := features(&f, sentence, lead)
	return ids, f.read
}

// idPool recycles the feature buffers of Classify: a long session has
// thousands of sentences, and each buffer is garbage once scored.
var idPool = sync.Pool{New: func() any { return new(featureSet) }}

// score reads one sentence and scores it, with a pooled buffer; the
// reading is returned too.
func (m *Model) score(sentence, lead string) (Scores, reading) {
	f := idPool.Get().(*featureSet)
	ids := features(f, sentence, lead)
	sc := m.Predict(ids)
	r := f.read
	f.read = reading{}
	idPool.Put(f)
	return sc, r
}

// clip is the part of a long sentence its features are read from: its
// first and last runes.
func clip(sentence string) string {
	if len(sentence) > featureRunes {
		if n := utf8.RuneCountInString(sentence); n > featureRunes {
			head := runeOffset(sentence, featureRunes-featureTail)
			tail := runeOffset(sentence, n-featureTail)
			return sentence[:head] + " … " + sentence[tail:]
		}
	}
	return sentence
}

// Explain is Features with each feature's name.
func Explain(sentence, lead string) map[uint32]string {
	f := featureSet{names: map[uint32]string{}}
	features(&f, sentence, lead)
	return f.names
}

// featureRunes bounds the text a sentence's features are read from: a
// longer one is read as its first and its last runes (the verb of a
// Japanese or Korean sentence is at its end), as a long run of prose or
// pasted output otherwise costs in proportion to its length.
const featureRunes, featureTail = 120, 40

func features(f *featureSet, sentence, lead string) []uint32 {
	f.reset()
	sentence = clip(sentence)
	s := Normalize(sentence)
	f.add("bias")
	toks := tokens(s)
	words := make([]string, 0, len(toks))
	for _, t := range toks {
		if !t.cjk {
			words = append(words, t.text)
		}
	}
	// Character n-grams over the whole sentence, 2 to 4 runes, with its
	// ends marked.
	padded := "\x02" + s + "\x03"
	offs := make([]int, 0, len(padded)+1)
	for i := range padded {
		offs = append(offs, i)
	}
	offs = append(offs, len(padded))
	for n := ngramMin; n <= ngramMax; n++ {
		for i := 0; i+n < len(offs); i++ {
			g := padded[offs[i]:offs[i+n]]
			if n == 1 && g[0] < 0x80 {
				continue // a Latin letter alone says little; a CJK character does
			}
			f.add("c", g)
		}
	}
	// Words, word pairs, and the first and last ones.
	for i, w := range words {
		f.add("w", w)
		if i+1 < len(words) {
			f.add("b", w, words[i+1])
		}
	}
	if len(words) > 0 {
		f.add("f", words[0])
		f.add("fs", suffix(words[0], 2))
		f.add("fs", suffix(words[0], 3))
		if len(words) > 1 {
			f.add("f2", words[0], words[1])
			f.add("f1s", suffix(words[1], 3))
		}
		last := words[len(words)-1]
		f.add("l", last)
		f.add("ls", suffix(last, 3))
	}
	// The end of the sentence before its final marks: the verb ending of
	// Japanese, Korean and Chinese sentences (ください, こと, 하세요, 吗).
	end := strings.TrimRightFunc(s, func(r rune) bool { return !wordRune(r) })
	for n := 1; n <= 4; n++ {
		e := suffix(end, n)
		f.add("e", e)
		if len(e) == len(end) {
			break
		}
	}
	begin := strings.TrimLeftFunc(s, func(r rune) bool { return !wordRune(r) })
	for n := 1; n <= 3; n++ {
		b := prefix(begin, n)
		f.add("s", b)
		if len(b) == len(begin) {
			break
		}
	}
	// Shape.
	trimmed := strings.TrimSpace(sentence)
	last, _ := utf8.DecodeLastRuneInString(strings.TrimRight(trimmed, `"'”’」』)）*_`))
	var shape []string
	switch last {
	case '?', '？':
		shape = append(shape, "q")
	case '!', '！':
		shape = append(shape, "x")
	case '.', '。', '．':
		shape = append(shape, "dot")
	case ':', '：':
		shape = append(shape, "colon")
	default:
		shape = append(shape, "nopunct")
	}
	if strings.Contains(sentence, "`") {
		shape = append(shape, "code")
	}
	for _, sh := range shape {
		f.add(sh)
	}
	if strings.ContainsAny(sentence, `"“”«»„「」『』`) {
		f.add("quote")
	}
	if strings.Contains(sentence, "**") || hasUpperWord(sentence) {
		f.add("emph")
	}
	if first, _ := utf8.DecodeRuneInString(trimmed); unicode.IsUpper(first) {
		f.add("cap")
	}
	n := utf8.RuneCountInString(s)
	f.add("len", lenBucket(n))
	if lead != "" {
		f.add("lead")
	}
	// The sentence's template: function words kept, content words as
	// their shape (a word, a code span, a number), CJK content characters
	// as K (kana, the grammar of Japanese, kept): how the sentence is
	// built, whatever it is about.
	tpl := template(s, toks)
	for i := range tpl {
		f.add("t1", tpl[i])
		if i+1 < len(tpl) {
			f.add("t2", tpl[i], tpl[i+1])
		}
		if i+2 < len(tpl) {
			f.add("t3", tpl[i], tpl[i+1], tpl[i+2])
		}
	}
	if len(tpl) > 0 {
		f.add("t^", tpl[0])
		f.add("t$", tpl[len(tpl)-1])
		if len(tpl) > 1 {
			f.add("t^^", tpl[0], tpl[1])
			f.add("t$$", tpl[len(tpl)-2], tpl[len(tpl)-1])
		}
	}
	// Cue classes: where they stand and which occur together.
	cues := cueClasses(s, toks)
	f.read = reading{norm: s, toks: toks, cues: cues}
	for i, c := range cues {
		if c.cls == "" {
			continue
		}
		f.add("k", c.cls)
		if c.tok <= 1 {
			f.add("k@0", c.cls)
		} else if c.tok <= 3 {
			f.add("k@3", c.cls)
		}
		if c.fromEnd <= 1 {
			f.add("k@end", c.cls)
		}
		for _, d := range cues[i+1:] {
			if d.cls != c.cls {
				f.add("kk", pairKey(c.cls, d.cls))
			}
		}
		for _, sh := range shape {
			f.add("ks", c.cls, sh)
		}
	}
	if len(cues) == 0 {
		for _, sh := range shape {
			f.add("ks", "none", sh)
		}
	}
	return f.ids
}

// suffix is the last n runes of w.
func suffix(w string, n int) string {
	i := len(w)
	for ; n > 0 && i > 0; n-- {
		_, size := utf8.DecodeLastRuneInString(w[:i])
		i -= size
	}
	return w[i:]
}

// prefix is the first n runes of w.
func prefix(w string, n int) string {
	return w[:runeOffset(w, n)]
}

func pairKey(a, b string) string {
	if a > b {
		a, b = b, a
	}
	return a + "+" + b
}

func lenBucket(n int) string {
	switch {
	case n < 8:
		return "xs"
	case n < 20:
		return "s"
	case n < 45:
		return "m"
	case n < 90:
		return "l"
	case n < 180:
		return "xl"
	}
	return "xxl"
}

// hasUpperWord: a word of three or more capitals (NEVER, MUST), not an
// acronym among lower-case words alone.
func hasUpperWord(s string) bool {
	run, upper := 0, true
	for _, r := range s {
		switch {
		case unicode.IsUpper(r):
			run++
		case unicode.IsLetter(r):
			upper = false
			run++
		default:
			if upper && run >= 4 {
				return true
			}
			run, upper = 0, true
		}
	}
	return upper && run >= 4
}

// featureSet hashes features into ids (FNV-1a over the parts, a zero
// byte between them), each once.
type featureSet struct {
	read  reading
	ids   []uint32
	names map[uint32]string // when explaining: each id's parts
}

func (f *featureSet) reset() { f.ids = f.ids[:0] }

// The character n-grams of a sentence: one to three runes (single Latin
// letters left out).
const ngramMin, ngramMax = 1, 3

func (f *featureSet) add(parts ...string) {
	const offset, prime = 2166136261, 16777619
	h := uint32(offset)
	for i, p := range parts {
		if i > 0 {
			h *= prime // the zero byte: h ^= 0
		}
		for j := 0; j < len(p); j++ {
			h ^= uint32(p[j])
			h *= prime
		}
	}
	f.ids = append(f.ids, h)
	if f.names != nil {
		f.names[h] = strings.Join(parts, "|")
	}
}

// template maps a sentence's tokens to its structure: function and cue
// words as themselves, other words as "w" (or "#" for numbers and "id" for
// identifiers), and in CJK runs each character that is not kana or a
// function character as "K" (runs of K merged).
func template(s string, toks []token) []string {
	stop := stopSet()
	out := make([]string, 0, len(toks))
	for _, t := range toks {
		if t.cjk {
			var b strings.Builder
			lastK := false
			for _, r := range t.text {
				if kana(r) || cjkFunction[r] {
					b.WriteRune(r)
					lastK = false
					continue
				}
				if !lastK {
					b.WriteByte('K')
				}
				lastK = true
			}
			for _, piece := range splitTemplate(b.String()) {
				out = append(out, piece)
			}
			continue
		}
		w := t.text
		switch {
		case stop[w] || cueWord(w):
			out = append(out, w)
		case isNumber(w):
			out = append(out, "#")
		case strings.ContainsAny(w, "_0123456789"):
			out = append(out, "id")
		case isHangulWord(w):
			// The ending of a Korean word is its grammar.
			r := []rune(w)
			if len(r) > 2 {
				out = append(out, "H"+string(r[len(r)-2:]))
			} else {
				out = append(out, "H"+string(r[len(r)-1:]))
			}
		default:
			out = append(out, "w")
		}
	}
	return out
}

// splitTemplate cuts a CJK template at its K runs, so each piece is a
// run of grammar between content.
func splitTemplate(s string) []string {
	var out []string
	start := 0
	for i, r := range s {
		if r == 'K' && i > start {
			out = append(out, s[start:i])
			start = i
		}
	}
	return append(out, s[start:])
}

func isNumber(w string) bool {
	for _, r := range w {
		if r < '0' || r > '9' {
			return false
		}
	}
	return w != ""
}

// cjkFunction are Han characters that carry grammar rather than content
// in Chinese and Japanese rule sentences: negation, modality, requests,
// aspect, questions, conditions.
var cjkFunction = func() map[rune]bool {
	m := map[rune]bool{}
	for _, r := range "不没别勿未非无要需须必得应该能可会请让把被给将在了过着的地吗呢吧啊么都也就才只每所有任何若如果时前后再总始终永禁止务一律统是为以用和与或及" {
		m[r] = true
	}
	return m
}()

func cueWord(w string) bool {
	_, ok := cuePatterns().byFirst[w]
	return ok
}
