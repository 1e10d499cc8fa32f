package offload

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"

	"github.com/pi-session/pi-session/clip"
)

// A lineMatcher finds matching lines in a payload. Lines end at '\n'; a
// trailing '\r' is not part of what a regex sees.
type lineMatcher interface {
	// next returns the first matching line starting at or after from (from
	// is a line start): its start, its end (before '\n') and the offset of
	// the first match in it. ok is false when no line matches.
	next(data []byte, from int) (start, end, at int, ok bool)
}

// lineBounds returns the line around pos.
func lineBounds(data []byte, pos int) (int, int) {
	start := bytes.LastIndexByte(data[:pos], '\n') + 1
	end := bytes.IndexByte(data[pos:], '\n')
	if end < 0 {
		return start, len(data)
	}
	return start, pos + end
}

// literalMatcher matches lines containing any of its terms.
type literalMatcher struct {
	terms  [][]byte
	fold   bool // ASCII case folding; terms are lowercased
	maxLen int

	// per term: the next occurrence at or after cachedFrom (-1: none; for
	// fold, none in the current window's safe region)
	nextAt     []int
	cachedFrom []int

	// fold window: lower holds data[winStart:winEnd] lowercased; matches
	// starting before safeEnd lie wholly inside it
	lower                     []byte
	winStart, winEnd, safeEnd int
	winValid                  bool
}

// foldWindow is the size of the lowercased window a case-folding search
// slides over the payload.
const foldWindow = 1 << 20

func newLiteralMatcher(terms []string, fold bool) *literalMatcher {
	m := &literalMatcher{fold: fold}
	for _, t := range terms {
		b := []byte(t)
		if fold {
			b = asciiLower(b)
		}
		m.terms = append(m.terms, b)
		m.maxLen = max(m.maxLen, len(b))
	}
	m.nextAt = make([]int, len(m.terms))
	m.cachedFrom = make([]int, len(m.terms))
	for i := range m.cachedFrom {
		m.cachedFrom[i] = -1
	}
	return m
}

func asciiLower(b []byte) []byte {
	out := make([]byte, len(b))
	lowerASCII(out, b)
	return out
}

// lowerASCII writes src with ASCII letters lowercased to dst (as long as
// src), eight bytes at a time: a byte gets 0x20 added when it lies in
// 'A'..'Z', found with carry-free additions on its low seven bits.
func lowerASCII(dst, src []byte) {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(src); i += 8 {
		x := binary.LittleEndian.Uint64(src[i:])
		low := x &^ highs
		geA := low + (0x80-'A')*ones     // high bit: byte >= 'A'
		gtZ := low + (0x80-'Z'-1)*ones   // high bit: byte > 'Z'
		upper := geA &^ gtZ &^ x & highs // and the byte itself below 0x80
		binary.LittleEndian.PutUint64(dst[i:], x|upper>>2)
	}
	for ; i < len(src); i++ {
		c := src[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst[i] = c
	}
}

// foldLineCounts counts, for each word (lowercase ASCII), the lines that
// contain it ignoring ASCII case, in one lowercase pass over windows.
func foldLineCounts(data []byte, words []string) []int {
	counts := make([]int, len(words))
	lastLine := make([]int, len(words)) // end of the last line counted, +1
	maxLen := 1
	for _, w := range words {
		maxLen = max(maxLen, len(w))
	}
	lower := make([]byte, min(len(data), foldWindow))
	for ws := 0; ws < len(data); {
		we := min(ws+foldWindow, len(data))
		safe := we
		if we < len(data) {
			safe = we - maxLen + 1
		}
		win := lower[:we-ws]
		lowerASCII(win, data[ws:we])
		for k, w := range words {
			for pos := max(lastLine[k]-ws, 0); pos < len(win); {
				i := bytes.Index(win[pos:], []byte(w))
				if i < 0 || ws+pos+i >= safe {
					break
				}
				_, e := lineBounds(data, ws+pos+i)
				counts[k]++
				lastLine[k] = e + 1
				pos = e + 1 - ws
			}
		}
		ws = safe
	}
	return counts
}

// first returns the first occurrence of any term at or after from, or -1.
func (m *literalMatcher) first(data []byte, from int) int {
	if m.fold {
		return m.firstFold(data, from)
	}
	best := -1
	for i, t := range m.terms {
		if !(m.cachedFrom[i] >= 0 && m.cachedFrom[i] <= from && (m.nextAt[i] < 0 || m.nextAt[i] >= from)) {
			at := bytes.Index(data[from:], t)
			if at >= 0 {
				at += from
			}
			m.cachedFrom[i], m.nextAt[i] = from, at
		}
		if at := m.nextAt[i]; at >= 0 && (best < 0 || at < best) {
			best = at
		}
	}
	return best
}

// firstFold searches lowercased windows. Each occurrence starts in exactly
// one window's safe region, where it lies wholly inside the window.
func (m *literalMatcher) firstFold(data []byte, from int) int {
	for from < len(data) {
		if !m.winValid || from < m.winStart || from >= m.safeEnd {
			m.fill(data, from)
		}
		best := -1
		for i, t := range m.terms {
			if !(m.cachedFrom[i] >= 0 && m.cachedFrom[i] <= from && (m.nextAt[i] < 0 || m.nextAt[i] >= from)) {
				at := bytes.Index(m.lower[from-m.winStart:], t)
				if at >= 0 {
					at += from
					if at >= m.safeEnd {
						at = -1 // found again, whole, in the next window
					}
				}
				m.cachedFrom[i], m.nextAt[i] = from, at
			}
			if at := m.nextAt[i]; at >= 0 && (best < 0 || at < best) {
				best = at
			}
		}
		if best >= 0 {
			return best
		}
		if m.winEnd >= len(data) {
			return -1
		}
		from = m.safeEnd
	}
	return -1
}

func (m *literalMatcher) fill(data []byte, from int) {
	end := min(from+max(foldWindow, 4*m.maxLen), len(data))
	if cap(m.lower) < end-from {
		m.lower = make([]byte, 0, end-from)
	}
	m.lower = m.lower[:end-from]
	lowerASCII(m.lower, data[from:end])
	m.winStart, m.winEnd, m.winValid = from, end, true
	m.safeEnd = end
	if end < len(data) {
		m.safeEnd = end - m.maxLen + 1
	}
	for i := range m.cachedFrom {
		m.cachedFrom[i] = -1
	}
}

func (m *literalMatcher) next(data []byte, from int) (int, int, int, bool) {
	if from >= len(data) {
		return 0, 0, 0, false
	}
	best := m.first(data, from)
	if best < 0 {
		return 0, 0, 0, false
	}
	s, e := lineBounds(data, best)
	return s, e, best, true
}

// regexMatcher matches lines with an RE2 regex, checking only the lines that
// hold its required literal when it has one.
type regexMatcher struct {
	re     *regexp.Regexp
	filter *literalMatcher // nil: every line is tried
}

func trimCR(line []byte) []byte {
	if n := len(line); n > 0 && line[n-1] == '\r' {
		return line[:n-1]
	}
	return line
}

func (m *regexMatcher) next(data []byte, from int) (int, int, int, bool) {
	for from <= len(data) {
		var s, e int
		if m.filter != nil {
			var ok bool
			s, e, _, ok = m.filter.next(data, from)
			if !ok {
				return 0, 0, 0, false
			}
		} else {
			if from >= len(data) {
				return 0, 0, 0, false
			}
			s = from
			if i := bytes.IndexByte(data[from:], '\n'); i >= 0 {
				e = from + i
			} else {
				e = len(data)
			}
		}
		if m.re.Match(trimCR(data[s:e])) {
			return s, e, s, true
		}
		if e >= len(data) {
			return 0, 0, 0, false
		}
		from = e + 1
	}
	return 0, 0, 0, false
}

// queryMatcher builds the matcher of a line query.
func queryMatcher(terms []string, regex, ignoreCase bool) (lineMatcher, error) {
	if !regex {
		if ignoreCase {
			ascii := true
			for _, t := range terms {
				for i := 0; i < len(t); i++ {
					if t[i] >= utf8.RuneSelf {
						ascii = false
					}
				}
			}
			if !ascii {
				quoted := make([]string, len(terms))
				for i, t := range terms {
					quoted[i] = regexp.QuoteMeta(t)
				}
				return compileRegexMatcher(quoted, true)
			}
		}
		return newLiteralMatcher(terms, ignoreCase), nil
	}
	return compileRegexMatcher(terms, ignoreCase)
}

func compileRegexMatcher(patterns []string, ignoreCase bool) (lineMatcher, error) {
	for _, p := range patterns {
		if err := checkRE2(p); err != nil {
			return nil, err
		}
	}
	var src string
	if len(patterns) == 1 {
		src = patterns[0]
	} else {
		parts := make([]string, len(patterns))
		for i, p := range patterns {
			parts[i] = "(?:" + p + ")"
		}
		src = strings.Join(parts, "|")
	}
	if ignoreCase {
		src = "(?i)" + src
	}
	re, err := regexp.Compile(src)
	if err != nil {
		return nil, regexError(err)
	}
	m := &regexMatcher{re: re}
	if tree, err := syntax.Parse(src, syntax.Perl); err == nil {
		if lit, fold := requiredLiteral(tree.Simplify()); len(lit) > 0 {
			if !fold || isASCII(lit) {
				m.filter = newLiteralMatcher([]string{lit}, fold)
			}
		}
	}
	return m, nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// requiredLiteral returns the longest literal every match must contain, and
// whether it folds case. Only plain sequences are considered.
func requiredLiteral(re *syntax.Regexp) (string, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if r == utf8.RuneError {
				return "", false // it matches any invalid byte, not its own encoding
			}
		}
		fold := re.Flags&syntax.FoldCase != 0
		if fold {
			// A folded literal is only safe when folding is ASCII-only for
			// every rune (k and s fold to non-ASCII runes too).
			for _, r := range re.Rune {
				if r >= utf8.RuneSelf || r == 'k' || r == 'K' || r == 's' || r == 'S' {
					return "", false
				}
			}
		}
		return string(re.Rune), fold
	case syntax.OpCapture:
		return requiredLiteral(re.Sub[0])
	case syntax.OpPlus:
		return requiredLiteral(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredLiteral(re.Sub[0])
		}
	case syntax.OpConcat:
		best, bestFold := "", false
		for _, sub := range re.Sub {
			if l, f := requiredLiteral(sub); len(l) > len(best) {
				best, bestFold = l, f
			}
		}
		return best, bestFold
	}
	return "", false
}

// ErrBadRegex wraps invalid and unsupported regexes.
var ErrBadRegex = errors.New("offload: query: invalid regex")

// unsupported maps syntax RE2 lacks to its name.
var unsupported = []struct{ token, name string }{
	{"(?<=", "lookbehind (?<=...)"},
	{"(?<!", "negative lookbehind (?<!...)"},
	{"(?=", "lookahead (?=...)"},
	{"(?!", "negative lookahead (?!...)"},
	{"(?>", "atomic group (?>...)"},
	{"(?(", "conditional (?(...)...)"},
	{`\k<`, `named backreference \k<name>`},
	{"*+", "possessive quantifier *+"},
	{"++", "possessive quantifier ++"},
	{"?+", "possessive quantifier ?+"},
}

// checkRE2 names constructs of other regex dialects that RE2 rejects.
func checkRE2(p string) error {
	for _, u := range unsupported {
		if strings.Contains(p, u.token) {
			return unsupportedErr(u.name)
		}
	}
	for i := 0; i+1 < len(p); i++ {
		if p[i] == '\\' {
			if c := p[i+1]; c >= '1' && c <= '9' {
				return unsupportedErr(fmt.Sprintf(`backreference \%c`, c))
			}
			i++
		}
	}
	return nil
}

func unsupportedErr(name string) error {
	return fmt.Errorf("%w: the pattern uses a %s, which Go's RE2 regexes do not support (they run in linear time); match several alternatives with a query array such as [\"first\", \"second\"] (any term matches), or use a literal query (regex: false)", ErrBadRegex, name)
}

func regexError(err error) error {
	var se *syntax.Error
	if errors.As(err, &se) {
		if se.Code == syntax.ErrInvalidPerlOp {
			return unsupportedErr(fmt.Sprintf("Perl construct %s", clip.Echo(se.Expr)))
		}
		if se.Code == syntax.ErrInvalidEscape && len(se.Expr) == 2 && se.Expr[1] >= '1' && se.Expr[1] <= '9' {
			return unsupportedErr("backreference " + se.Expr)
		}
		return fmt.Errorf("%w: %s at %q; the syntax is Go's RE2 (https://github.com/google/re2/wiki/Syntax), or set regex: false for a literal", ErrBadRegex, se.Code, clip.Echo(se.Expr))
	}
	return fmt.Errorf("%w: %v", ErrBadRegex, err)
}

// countMatches counts the matching lines at or after from.
func countMatches(m lineMatcher, data []byte, from int) int {
	n := 0
	for from <= len(data) {
		_, e, _, ok := m.next(data, from)
		if !ok {
			break
		}
		n++
		from = e + 1
	}
	return n
}

// looksLikeRegex reports whether a literal query reads like a regex.
func looksLikeRegex(q string) bool {
	for _, tok := range []string{".*", ".+", `\d`, `\w`, `\s`, `\b`, "[0-9]", "[a-z]", "(?i)", "^", "$", "|", `\.`, "{1,", "+?"} {
		if strings.Contains(q, tok) {
			if tok == "$" && !strings.HasSuffix(q, "$") {
				continue
			}
			if tok == "^" && !strings.HasPrefix(q, "^") {
				continue
			}
			return true
		}
	}
	return false
}
