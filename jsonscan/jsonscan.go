// Package jsonscan finds JSON values in a byte slice by their offsets, checking their syntax as it steps over them, and decodes and escapes strings, so a large document is read without decoding the rest.
package jsonscan

import (
	"bytes"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// The scanner works over a byte slice (a mapped payload, say): values are
// located by byte ranges and decoded only when needed, so a path like
// $.items[5000].name touches a few values and steps over the rest.

// maxDepth is how deep arrays and objects may nest.
const maxDepth = 10000

// Error is a syntax error at a byte offset.
type Error struct {
	Off int
	Msg string
}

func (e *Error) Error() string { return fmt.Sprintf("%s at byte %d", e.Msg, e.Off) }

func isWS(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// SkipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func SkipSpace(d []byte, i int) int {
	for i < len(d) && isWS(d[i]) {
		i++
	}
	return i
}

// SkipValue returns the end of the value starting at i (after white
// space). depth is how deep the value nests already (0 for a document);
// arrays and objects may nest 10,000 deep in all.
func SkipValue(d []byte, i int, depth int) (int, error) {
	i = SkipSpace(d, i)
	if i >= len(d) {
		return i, &Error{i, "unexpected end of JSON"}
	}
	switch c := d[i]; {
	case c == '"':
		return SkipString(d, i)
	case c == '{':
		if depth >= maxDepth {
			return i, &Error{i, "JSON nested too deeply"}
		}
		return objectBody(d, i+1, depth, nil)
	case c == '[':
		if depth >= maxDepth {
			return i, &Error{i, "JSON nested too deeply"}
		}
		return arrayBody(d, i+1, depth, nil)
	case c == 't':
		return skipLit(d, i, "true")
	case c == 'f':
		return skipLit(d, i, "false")
	case c == 'n':
		return skipLit(d, i, "null")
	case c == '-' || '0' <= c && c <= '9':
		return skipNumber(d, i)
	default:
		return i, &Error{i, fmt.Sprintf("invalid character %q", c)}
	}
}

func skipLit(d []byte, i int, lit string) (int, error) {
	if !bytes.HasPrefix(d[i:], []byte(lit)) {
		return i, &Error{i, "invalid literal"}
	}
	return i + len(lit), nil
}

func skipNumber(d []byte, i int) (int, error) {
	start := i
	if d[i] == '-' {
		i++
	}
	if i >= len(d) {
		return i, &Error{start, "invalid number"}
	}
	if d[i] == '0' {
		i++
	} else if '1' <= d[i] && d[i] <= '9' {
		for i < len(d) && '0' <= d[i] && d[i] <= '9' {
			i++
		}
	} else {
		return i, &Error{start, "invalid number"}
	}
	if i < len(d) && d[i] == '.' {
		i++
		j := i
		for i < len(d) && '0' <= d[i] && d[i] <= '9' {
			i++
		}
		if i == j {
			return i, &Error{start, "invalid number"}
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		j := i
		for i < len(d) && '0' <= d[i] && d[i] <= '9' {
			i++
		}
		if i == j {
			return i, &Error{start, "invalid number"}
		}
	}
	return i, nil
}

// SkipString returns the end of the string starting at d[i] == '"'. It
// looks for the closing quote only: escapes and control characters inside
// are not checked (Unquote rejects a bad escape).
func SkipString(d []byte, i int) (int, error) {
	start := i
	i++
	for {
		j := bytes.IndexByte(d[i:], '"')
		if j < 0 {
			return len(d), &Error{start, "unterminated string"}
		}
		i += j
		// Count the backslashes before the quote: an odd number escapes it.
		k := i - 1
		for k > start && d[k] == '\\' {
			k--
		}
		if (i-1-k)%2 == 0 {
			return i + 1, nil
		}
		i++
	}
}

// Valid checks that d is one JSON value surrounded by white space. It
// accepts every document encoding/json accepts, and strings with control
// characters or bad escapes too (see SkipString).
func Valid(d []byte) error {
	end, err := SkipValue(d, 0, 0)
	if err != nil {
		return err
	}
	if e := SkipSpace(d, end); e != len(d) {
		return &Error{e, "text after the JSON value"}
	}
	return nil
}

// EachMember calls f with each member of the object at d[i]: the raw key
// (with quotes) and the value's range. f returns false to stop.
func EachMember(d []byte, i int, f func(key []byte, vs, ve int) bool) error {
	_, err := WalkObject(d, i, f)
	return err
}

// WalkObject is EachMember returning the end of the object (-1 when f
// stopped early).
func WalkObject(d []byte, i int, f func(key []byte, vs, ve int) bool) (int, error) {
	return ScanObject(d, i, 0, func(key []byte, vs int) (int, error) {
		ve, err := SkipValue(d, vs, 1)
		if err != nil || f(key, vs, ve) {
			return ve, err
		}
		return -1, nil
	})
}

// ScanObject steps over the object at d[i] (after white space), checking
// its syntax, member by member. depth is how deep the object nests already
// (see SkipValue). value gets the raw key (with quotes) and the start of
// the value, and returns the value's end: from SkipValue(d, vs, depth+1),
// or from reading the value itself; a negative end stops the walk. A nil
// value steps over every value. It returns the end of the object, or -1
// when value stopped it.
func ScanObject(d []byte, i, depth int, value func(key []byte, vs int) (ve int, err error)) (int, error) {
	i = SkipSpace(d, i)
	if i >= len(d) || d[i] != '{' {
		return i, &Error{i, "not an object"}
	}
	if depth >= maxDepth {
		return i, &Error{i, "JSON nested too deeply"}
	}
	return objectBody(d, i+1, depth, value)
}

// objectBody is ScanObject after the '{' at d[i-1].
func objectBody(d []byte, i, depth int, value func(key []byte, vs int) (int, error)) (int, error) {
	i = SkipSpace(d, i)
	if i < len(d) && d[i] == '}' {
		return i + 1, nil
	}
	for {
		i = SkipSpace(d, i)
		if i >= len(d) || d[i] != '"' {
			return i, &Error{i, "expected a member name"}
		}
		ks := i
		ke, err := SkipString(d, i)
		if err != nil {
			return ke, err
		}
		i = SkipSpace(d, ke)
		if i >= len(d) || d[i] != ':' {
			return i, &Error{i, "expected ':'"}
		}
		var ve int
		if value == nil {
			ve, err = SkipValue(d, i+1, depth+1)
		} else {
			ve, err = value(d[ks:ke], SkipSpace(d, i+1))
		}
		if err != nil {
			return ve, err
		}
		if ve < 0 {
			return -1, nil
		}
		i = SkipSpace(d, ve)
		if i < len(d) && d[i] == ',' {
			i++
			continue
		}
		if i < len(d) && d[i] == '}' {
			return i + 1, nil
		}
		return i, &Error{i, "expected ',' or '}'"}
	}
}

// EachElement calls f with each element of the array at d[i].
func EachElement(d []byte, i int, f func(idx, vs, ve int) bool) error {
	_, err := WalkArray(d, i, f)
	return err
}

// WalkArray is EachElement returning the end of the array (-1 when f
// stopped early).
func WalkArray(d []byte, i int, f func(idx, vs, ve int) bool) (int, error) {
	return scanArray(d, i, 0, func(n, vs int) (int, error) {
		ve, err := SkipValue(d, vs, 1)
		if err != nil || f(n, vs, ve) {
			return ve, err
		}
		return -1, nil
	})
}

// scanArray is ScanObject for the array at d[i]: value gets each
// element's index and start.
func scanArray(d []byte, i, depth int, value func(idx, vs int) (int, error)) (int, error) {
	i = SkipSpace(d, i)
	if i >= len(d) || d[i] != '[' {
		return i, &Error{i, "not an array"}
	}
	if depth >= maxDepth {
		return i, &Error{i, "JSON nested too deeply"}
	}
	return arrayBody(d, i+1, depth, value)
}

// arrayBody is scanArray after the '[' at d[i-1]; a nil value steps over
// every element.
func arrayBody(d []byte, i, depth int, value func(idx, vs int) (int, error)) (int, error) {
	i = SkipSpace(d, i)
	if i < len(d) && d[i] == ']' {
		return i + 1, nil
	}
	for n := 0; ; n++ {
		var ve int
		var err error
		if value == nil {
			ve, err = SkipValue(d, i, depth+1)
		} else {
			ve, err = value(n, SkipSpace(d, i))
		}
		if err != nil {
			return ve, err
		}
		if ve < 0 {
			return -1, nil
		}
		i = SkipSpace(d, ve)
		if i < len(d) && d[i] == ',' {
			i++
			continue
		}
		if i < len(d) && d[i] == ']' {
			return i + 1, nil
		}
		return i, &Error{i, "expected ',' or ']'"}
	}
}

// KeyEquals compares a raw JSON key (quotes included) with a name.
func KeyEquals(raw []byte, name string) bool {
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner) == name
	}
	s, ok := Unquote(raw)
	return ok && s == name
}

// Unquote decodes a JSON string literal (quotes included). ok is false
// for a bad escape or a raw without its quotes; a lone surrogate becomes
// U+FFFD, and invalid UTF-8 is kept as it is.
func Unquote(raw []byte) (s string, ok bool) {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' && bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), true
	}
	b, ok := AppendUnquoted(make([]byte, 0, max(len(raw)-2, 0)), raw, 0, -1)
	return string(b), ok
}

// AppendUnquoted decodes the string literal raw, skipping the first skip
// decoded bytes and appending at most limit bytes (-1: all) to out.
func AppendUnquoted(out []byte, raw []byte, skip int64, limit int64) ([]byte, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return out, false
	}
	s := raw[1 : len(raw)-1]
	var pos int64
	emit := func(p []byte) bool {
		n := int64(len(p))
		if pos+n <= skip {
			pos += n
			return true
		}
		if pos < skip {
			p = p[skip-pos:]
			pos = skip
		}
		if limit >= 0 {
			room := skip + limit - pos
			if room <= 0 {
				return false
			}
			if int64(len(p)) > room {
				p = p[:room]
			}
		}
		out = append(out, p...)
		pos += int64(len(p))
		return true
	}
	var tmp [8]byte
	for len(s) > 0 {
		i := bytes.IndexByte(s, '\\')
		if i < 0 {
			emit(s)
			break
		}
		if !emit(s[:i]) {
			break
		}
		s = s[i:]
		if len(s) < 2 {
			return out, false
		}
		var r rune
		n := 2
		switch s[1] {
		case '"', '\\', '/':
			r = rune(s[1])
		case 'b':
			r = '\b'
		case 'f':
			r = '\f'
		case 'n':
			r = '\n'
		case 'r':
			r = '\r'
		case 't':
			r = '\t'
		case 'u':
			if len(s) < 6 {
				return out, false
			}
			v, err := strconv.ParseUint(string(s[2:6]), 16, 16)
			if err != nil {
				return out, false
			}
			r, n = rune(v), 6
			if utf16.IsSurrogate(r) {
				if len(s) >= 12 && s[6] == '\\' && s[7] == 'u' {
					if v2, err := strconv.ParseUint(string(s[8:12]), 16, 16); err == nil {
						if d := utf16.DecodeRune(r, rune(v2)); d != utf8.RuneError {
							r, n = d, 12
						} else {
							r = utf8.RuneError
						}
					}
				} else {
					r = utf8.RuneError
				}
			}
		default:
			return out, false
		}
		w := utf8.EncodeRune(tmp[:], r)
		if !emit(tmp[:w]) {
			break
		}
		s = s[n:]
	}
	return out, true
}

// DecodedLen is the length of a string literal once decoded.
func DecodedLen(raw []byte) int64 {
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return int64(len(inner))
	}
	var n int64
	for len(inner) > 0 {
		i := bytes.IndexByte(inner, '\\')
		if i < 0 {
			n += int64(len(inner))
			break
		}
		n += int64(i)
		inner = inner[i:]
		if len(inner) < 2 {
			break
		}
		if inner[1] != 'u' || len(inner) < 6 {
			n++
			inner = inner[2:]
			continue
		}
		v, _ := strconv.ParseUint(string(inner[2:6]), 16, 16)
		r, adv := rune(v), 6
		if utf16.IsSurrogate(r) && len(inner) >= 12 && inner[6] == '\\' && inner[7] == 'u' {
			v2, _ := strconv.ParseUint(string(inner[8:12]), 16, 16)
			if d := utf16.DecodeRune(r, rune(v2)); d != utf8.RuneError {
				r, adv = d, 12
			}
		}
		if utf16.IsSurrogate(r) {
			r = utf8.RuneError
		}
		n += int64(utf8.RuneLen(r))
		inner = inner[adv:]
	}
	return n
}
