package relay

import (
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/pi-session/pi-session/jsonscan"
	"golang.org/x/text/unicode/norm"
)

// Words are split the way a model half remembers them: at every character
// that is not a letter or digit (so ember-cache, ember_cache and
// ember.cache are the same two words), at camelCase humps (emberCache) and
// between letters and digits (utf8Len). A word that splits is also kept
// whole, lowercased (embercache), so a query typed without separators
// finds it too.

// maxTermLen bounds an indexed term; longer tokens are cut there.
const maxTermLen = 40

// maxNumberLen bounds an indexed number; longer ones are cut there.
const maxNumberLen = 6

// tokenize calls fn with each term of text, lowercased. The index counts
// the same terms through docTerms, which remembers how each word split.
func tokenize(text []byte, fn func(term []byte)) {
	var low []byte
	words(text, func(word []byte, _ int) bool {
		splitWord(word, &low, fn)
		return true
	})
}

// splitWord calls fn with the terms of one word (a run of letters and
// digits), lowercasing into the scratch buffer *low. A word in
// compatibility or width forms is read in its NFKC form (ＡＢＣ１２３ is
// abc123, half-width ｼｽﾃﾑ is システム), with the diacritics of Latin
// letters dropped and ß as ss (straße is strasse, été is ete).
func splitWord(word []byte, low *[]byte, fn func(term []byte)) {
	if isASCIIWord(word) {
		*low = emitASCII(word, *low, fn)
		return
	}
	if w, ok := foldWord(word); ok {
		// The folded form may hold separators (NFKC of a symbol).
		words(w, func(p []byte, _ int) bool {
			if isASCIIWord(p) {
				*low = emitASCII(p, *low, fn)
			} else {
				emitWord(p, low, true, fn)
			}
			return true
		})
		return
	}
	emitWord(word, low, true, fn)
}

// foldWord returns the NFKC form of a non-ASCII word, lowercased, with
// Latin diacritics dropped, and false when that is the word itself up to
// case (most words: nothing is allocated then).
func foldWord(word []byte) ([]byte, bool) {
	if norm.NFKC.QuickSpan(word) == len(word) && !hasFoldable(word) {
		return nil, false
	}
	return foldText(norm.NFKC.Bytes(word)), true
}

// foldText lowercases text and drops the diacritics of Latin letters.
func foldText(text []byte) []byte {
	out := make([]byte, 0, len(text))
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRune(text[i:])
		i += n
		r = unicode.ToLower(r)
		if f, ok := latinFold[r]; ok {
			out = append(out, f...)
			continue
		}
		out = utf8.AppendRune(out, r)
	}
	return out
}

func hasFoldable(w []byte) bool {
	for i := 0; i < len(w); {
		r, n := utf8.DecodeRune(w[i:])
		i += n
		if _, ok := latinFold[unicode.ToLower(r)]; ok {
			return true
		}
	}
	return false
}

// latinFold maps a lowercase Latin letter with a diacritic (or a ligature)
// to its plain form, and Cyrillic ё to е.
var latinFold = func() map[rune]string {
	m := map[rune]string{'ß': "ss", 'æ': "ae", 'œ': "oe", 'ø': "o", 'ł': "l", 'đ': "d", 'þ': "th", 'ð': "d", 'ı': "i", 'ё': "е"}
	add := func(lo, hi rune) {
		for r := lo; r <= hi; r++ {
			if !unicode.IsLower(r) {
				continue
			}
			d := []rune(norm.NFD.String(string(r)))
			if len(d) < 2 || d[0] >= utf8.RuneSelf || !unicode.IsLetter(d[0]) {
				continue
			}
			marks := true
			for _, c := range d[1:] {
				marks = marks && unicode.Is(unicode.Mn, c)
			}
			if marks {
				m[r] = string(unicode.ToLower(d[0]))
			}
		}
	}
	add(0xC0, 0x24F)
	add(0x1E00, 0x1EFF)
	return m
}()

// isCJK reports whether r is written without spaces between words: Han,
// kana and Hangul. Their text is indexed as single characters and pairs
// of adjacent characters (bigrams), so any word of it is found.
func isCJK(r rune) bool {
	switch {
	case r < 0x1100:
		return false
	case r <= 0x11FF, 0x3040 <= r && r <= 0x30FF, 0x3130 <= r && r <= 0x318F, 0x31F0 <= r && r <= 0x31FF,
		0x3400 <= r && r <= 0x4DBF, 0x4E00 <= r && r <= 0x9FFF, 0xAC00 <= r && r <= 0xD7AF,
		0xF900 <= r && r <= 0xFAFF, 0x20000 <= r && r <= 0x2FFFF:
		return true
	}
	return false
}

// byteClass classifies ASCII bytes: 0 a separator, 1 lower, 2 upper, 3
// digit; bytes from 0x80 on are 4 (a multi-byte rune, looked at whole).
var byteClass = func() (t [256]uint8) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = 1
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = 2
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = 3
	}
	for c := 0x80; c < 0x100; c++ {
		t[c] = 4
	}
	return t
}()

func isASCIIWord(w []byte) bool {
	for _, c := range w {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// words calls fn with each run of letters and digits of text and its byte
// offset, until fn returns false. Combining marks belong to the run they
// follow (a decomposed é stays one word); a terminal's escape sequence
// (ESC [ ... letter, as in coloured output) separates words and is never
// part of one.
func words(text []byte, fn func(word []byte, at int) bool) {
	i := 0
	for i < len(text) {
		// Skip separators.
		for i < len(text) {
			c := byteClass[text[i]]
			if c == 0 {
				if text[i] == 0x1b {
					i = skipEscape(text, i)
				} else {
					i++
				}
				continue
			}
			if c == 4 {
				r, n := utf8.DecodeRune(text[i:])
				if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
					i += n
					continue
				}
			}
			break
		}
		start := i
		for i < len(text) {
			c := byteClass[text[i]]
			if c == 0 {
				break
			}
			if c == 4 {
				r, n := utf8.DecodeRune(text[i:])
				if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.Is(unicode.M, r) {
					break
				}
				i += n
				continue
			}
			i++
		}
		if i > start && !fn(text[start:i], start) {
			return
		}
	}
}

// skipEscape returns the index after the separator at text[i]: past a
// whole CSI escape sequence (ESC [ parameters final-byte) when one starts
// there, else past the byte.
func skipEscape(text []byte, i int) int {
	if text[i] != 0x1b || i+1 >= len(text) || text[i+1] != '[' {
		return i + 1
	}
	for j := i + 2; j < len(text) && j < i+32; j++ {
		if c := text[j]; c >= 0x40 && c <= 0x7e {
			return j + 1
		} else if c < 0x20 || c > 0x3f {
			break
		}
	}
	return i + 1
}

// emitASCII is emitWord for a word of ASCII letters and digits, without
// decoding runes; it returns the scratch buffer. Its parts are all digits
// or all letters, so termOf's rules come down to: a number of more than 6
// digits is left out, a longer part is cut at maxTermLen.
func emitASCII(word []byte, low []byte, fn func([]byte)) []byte {
	low = low[:0]
	for _, c := range word {
		if byteClass[c] == 2 {
			c += 'a' - 'A'
		}
		low = append(low, c)
	}
	if isHash(word) {
		if t, ok := termOf(low); ok {
			fn(t)
		}
		return low
	}
	part := func(p []byte, digits bool) {
		switch {
		case digits:
			fn(p[:min(len(p), maxNumberLen)])
		case len(p) > maxTermLen:
			fn(p[:maxTermLen])
		default:
			fn(p)
		}
	}
	parts, start := 0, 0
	prev := byteClass[word[0]]
	for i := 1; i < len(word); i++ {
		cl := byteClass[word[i]]
		cut := -1
		switch {
		case cl == 3 && prev != 3, cl != 3 && prev == 3, cl == 2 && prev == 1:
			cut = i
		case cl == 1 && prev == 2 && i-start > 1:
			cut = i - 1 // HTTPServer: the last upper starts the next word
		}
		if cut > start {
			parts++
			part(low[start:cut], byteClass[word[start]] == 3)
			start = cut
		}
		prev = cl
	}
	parts++
	part(low[start:], byteClass[word[start]] == 3)
	if parts > 1 {
		// Letters and digits, or camelCase humps: never all digits.
		part(low, false)
	}
	return low
}

// emitWord emits the parts of one run of letters and digits, and the whole
// run when it has several parts. A run of CJK characters is a part of its
// own (Config設定 is config and 設定); in the index it gives each of its
// characters and each pair of adjacent ones.
// With index false (a query) every part is emitted as typed, lowercased,
// without the index's cuts, and the whole word is not.
func emitWord(word []byte, low *[]byte, index bool, fn func([]byte)) {
	keep := termOf
	if !index {
		keep = func(t []byte) ([]byte, bool) { return t, true }
	}
	if isHash(word) {
		*low = lowerInto((*low)[:0], word)
		if t, ok := keep(*low); ok {
			fn(t)
		}
		return
	}
	parts := 0
	cjk := false
	k := 0 // runes since start
	start := 0
	prev := 0 // class of the previous rune: 1 lower, 2 upper, 3 digit, 4 other letter, 5 CJK
	emit := func(p []byte) {
		parts++
		if r, _ := utf8.DecodeRune(p); isCJK(r) {
			cjk = true
			if index {
				ngrams(p, fn)
			} else {
				fn(p)
			}
			return
		}
		*low = lowerInto((*low)[:0], p)
		if t, ok := keep(*low); ok {
			fn(t)
		}
	}
	for i := 0; i < len(word); {
		r, n := utf8.DecodeRune(word[i:])
		cl := class(r)
		if k > 0 {
			split := false
			switch {
			case cl == 5 || prev == 5:
				split = cl != prev
			case cl == 3 && prev != 3, cl != 3 && prev == 3:
				split = true
			case cl == 2 && prev == 1:
				split = true // camelCase
			case cl == 1 && prev == 2 && k > 1:
				// HTTPServer: the last upper starts the next word.
				_, pn := utf8.DecodeLastRune(word[:i])
				emit(word[start : i-pn])
				start, k = i-pn, 1
			}
			if split {
				emit(word[start:i])
				start, k = i, 0
			}
		}
		prev = cl
		k++
		i += n
	}
	emit(word[start:])
	if parts > 1 && index && !cjk {
		*low = lowerInto((*low)[:0], word)
		if t, ok := termOf(*low); ok {
			fn(t)
		}
	}
}

// ngrams emits each character of a CJK run and each pair of adjacent
// characters.
func ngrams(p []byte, fn func([]byte)) {
	for i := 0; i < len(p); {
		_, n := utf8.DecodeRune(p[i:])
		fn(p[i : i+n])
		if i+n < len(p) {
			_, m := utf8.DecodeRune(p[i+n:])
			fn(p[i : i+n+m])
		}
		i += n
	}
}

// isHash: a long run of hexadecimal digits with letters and digits both
// (a commit, a content hash) is one token, not split at each digit.
func isHash(w []byte) bool {
	if len(w) < 12 {
		return false
	}
	digits, letters := 0, 0
	for _, c := range w {
		switch {
		case '0' <= c && c <= '9':
			digits++
		case 'a' <= c && c <= 'f', 'A' <= c && c <= 'F':
			letters++
		default:
			return false
		}
	}
	return digits > 0 && letters > 0
}

func class(r rune) int {
	switch {
	case r >= 0x1100 && isCJK(r):
		return 5
	case 'a' <= r && r <= 'z':
		return 1
	case 'A' <= r && r <= 'Z':
		return 2
	case '0' <= r && r <= '9':
		return 3
	case unicode.IsUpper(r):
		return 2
	case unicode.IsLower(r):
		return 1
	case unicode.IsDigit(r):
		return 3
	}
	return 4
}

func lowerInto(dst, src []byte) []byte {
	for i := 0; i < len(src); {
		c := src[i]
		if c < utf8.RuneSelf {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			dst = append(dst, c)
			i++
			continue
		}
		r, n := utf8.DecodeRune(src[i:])
		dst = utf8.AppendRune(dst, unicode.ToLower(r))
		i += n
	}
	return dst
}

// termOf is the indexed form of a lowercased token, and false for the
// empty token. High-cardinality tokens would swell the dictionary: a long
// number (a timestamp, a counter) keeps its first maxNumberLen digits and
// a long hexadecimal token (a hash) its first 8, so their start finds
// them; a query for the whole token is checked against the text.
func termOf(t []byte) ([]byte, bool) {
	if len(t) == 0 {
		return nil, false
	}
	digits, hex := 0, true
	for _, c := range t {
		switch {
		case '0' <= c && c <= '9':
			digits++
		case 'a' <= c && c <= 'f':
		default:
			hex = false
		}
	}
	switch {
	case digits == len(t):
		return t[:min(len(t), maxNumberLen)], true
	case hex && digits > 0 && len(t) >= 12:
		return t[:8], true
	case len(t) > maxTermLen:
		return t[:maxTermLen], true
	}
	return t, true
}

// indexable reports whether a query term can be looked up in the index.
func indexable(t string) bool {
	got, ok := termOf([]byte(t))
	return ok && len(got) == len(t)
}

// JSON text: what of a stored message is searchable text.

// skipKeys are members whose values are not text the model reads as such
// (identifiers, metadata) or not model-visible at all (details, image data).
var skipKeys = map[string]bool{
	"type": true, "id": true, "mimeType": true, "data": true, "toolCallId": true, "role": true,
	"api": true, "provider": true, "model": true, "stopReason": true, "responseId": true,
	"timestamp": true, "thoughtSignature": true, "signature": true, "textSignature": true,
	"details": true, "usage": true, "customType": true, "display": true, "errorMessage": true,
	"excludeFromContext": true, "fullOutputPath": true, "redacted": true, "toolName": true,
}

// walkText calls fn with the text of every string value of the JSON value
// raw that is not under a skipped key, unescaped, in order. A value that is
// a bare JSON string is text too. fn returning false stops the walk. Image
// blocks become the text "[image]".
func walkText(raw []byte, fn func(text []byte) bool) {
	var buf []byte
	walkTextBuf(raw, &buf, fn)
}

// walkTextBuf is walkText unescaping into *buf, which it may grow: a
// caller walking many values reuses one buffer.
func walkTextBuf(raw []byte, buf *[]byte, fn func(text []byte) bool) {
	w := textWalker{raw: raw, fn: fn, buf: *buf}
	w.value(0, false)
	*buf = w.buf
}

type textWalker struct {
	raw  []byte
	fn   func([]byte) bool
	buf  []byte
	stop bool
	// literals: fn gets each string as it stands in raw, quotes and
	// escapes included, decoding nothing (see walkLiterals).
	literals bool
}

// walkLiterals is walkText calling fn with the string literals themselves
// (quotes and escapes as in raw, `"[image]"` for an image block): for a
// caller that decodes only part of a string of megabytes.
func walkLiterals(raw []byte, fn func(literal []byte) bool) {
	w := textWalker{raw: raw, fn: fn, literals: true}
	w.value(0, false)
}

// value walks the value at i and returns the index after it.
func (w *textWalker) value(i int, skip bool) int {
	raw := w.raw
	i = skipWS(raw, i)
	if i >= len(raw) || w.stop {
		return len(raw)
	}
	switch raw[i] {
	case '"':
		if w.literals {
			end, err := jsonscan.SkipString(raw, i)
			if err != nil {
				return len(raw) // not a literal: nothing to decode
			}
			if !skip && !w.fn(raw[i:end]) {
				w.stop = true
			}
			return end
		}
		end, s := w.str(i, !skip)
		if !skip && s != nil && !w.stop {
			if !w.fn(s) {
				w.stop = true
			}
		}
		return end
	case '{':
		i++
		image := false
		for {
			i = skipWS(raw, i)
			if i >= len(raw) || w.stop {
				return len(raw)
			}
			if raw[i] == '}' {
				if image && !skip && !w.fn(w.image()) {
					w.stop = true
				}
				return i + 1
			}
			if raw[i] == ',' {
				i++
				continue
			}
			kEnd, key := w.str(i, true)
			k := string(key)
			i = skipWS(raw, kEnd)
			if i < len(raw) && raw[i] == ':' {
				i++
			}
			if k == "type" {
				vs := skipWS(raw, i)
				if vs+7 <= len(raw) && string(raw[vs:vs+7]) == `"image"` {
					image = true
				}
			}
			i = w.value(i, skip || skipKeys[k])
		}
	case '[':
		i++
		for {
			i = skipWS(raw, i)
			if i >= len(raw) || w.stop {
				return len(raw)
			}
			if raw[i] == ']' {
				return i + 1
			}
			if raw[i] == ',' {
				i++
				continue
			}
			i = w.value(i, skip)
		}
	default:
		// A number or a literal: not text. A stray '}' in an array (JSON
		// the session reader would refuse) is skipped, so the walk always
		// moves on.
		start := i
		for i < len(raw) && raw[i] != ',' && raw[i] != '}' && raw[i] != ']' {
			i++
		}
		if i == start {
			i++
		}
		return i
	}
}

// image is what an image block gives fn.
func (w *textWalker) image() []byte {
	if w.literals {
		return []byte(`"[image]"`)
	}
	return []byte("[image]")
}

// str reads the JSON string at raw[i] == '"' and returns the index after
// it and, when want, its unescaped bytes (valid until the next call).
func (w *textWalker) str(i int, want bool) (int, []byte) {
	raw := w.raw
	i++
	start := i
	w.buf = w.buf[:0]
	for i < len(raw) {
		c := raw[i]
		if c == '"' {
			if !want {
				return i + 1, nil
			}
			if len(w.buf) == 0 {
				return i + 1, raw[start:i]
			}
			w.buf = append(w.buf, raw[start:i]...)
			return i + 1, w.buf
		}
		if c != '\\' {
			i++
			continue
		}
		if want {
			w.buf = append(w.buf, raw[start:i]...)
		}
		if i+1 >= len(raw) {
			return len(raw), w.buf
		}
		e := raw[i+1]
		i += 2
		if want {
			switch e {
			case 'n':
				w.buf = append(w.buf, '\n')
			case 't':
				w.buf = append(w.buf, '\t')
			case 'r':
				w.buf = append(w.buf, '\r')
			case 'b', 'f':
				w.buf = append(w.buf, ' ')
			case 'u':
				if i+4 <= len(raw) {
					if v, err := strconv.ParseUint(string(raw[i:i+4]), 16, 32); err == nil {
						r := rune(v)
						if 0xD800 <= r && r < 0xDC00 && i+10 <= len(raw) && raw[i+4] == '\\' && raw[i+5] == 'u' {
							if lo, err := strconv.ParseUint(string(raw[i+6:i+10]), 16, 32); err == nil {
								r = utf16Pair(r, rune(lo))
								i += 6
							}
						}
						w.buf = utf8.AppendRune(w.buf, r)
					}
					i += 4
				}
			default:
				w.buf = append(w.buf, e)
			}
		} else if e == 'u' {
			i += 4
		}
		start = i
	}
	return len(raw), w.buf
}

func utf16Pair(hi, lo rune) rune {
	if 0xDC00 <= lo && lo < 0xE000 {
		return (hi-0xD800)<<10 + (lo - 0xDC00) + 0x10000
	}
	return utf8.RuneError
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	return i
}
