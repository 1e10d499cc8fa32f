package offload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// A small JSON scanner over a byte slice (usually a mapped payload): values
// are located by byte ranges and decoded only when needed, so a path like
// $.items[5000].name touches a few values and skips the rest.

const maxJSONDepth = 10000

// jsonError is a syntax error at a byte offset.
type jsonError struct {
	Off int
	Msg string
}

func (e *jsonError) Error() string { return fmt.Sprintf("%s at byte %d", e.Msg, e.Off) }

func isWS(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipWS(d []byte, i int) int {
	for i < len(d) && isWS(d[i]) {
		i++
	}
	return i
}

// skipValue returns the end of the value starting at i (after whitespace).
func skipValue(d []byte, i int, depth int) (int, error) {
	i = skipWS(d, i)
	if i >= len(d) {
		return i, &jsonError{i, "unexpected end of JSON"}
	}
	switch c := d[i]; {
	case c == '"':
		return skipString(d, i)
	case c == '{':
		if depth >= maxJSONDepth {
			return i, &jsonError{i, "JSON nested too deeply"}
		}
		i = skipWS(d, i+1)
		if i < len(d) && d[i] == '}' {
			return i + 1, nil
		}
		for {
			i = skipWS(d, i)
			if i >= len(d) || d[i] != '"' {
				return i, &jsonError{i, "expected a member name"}
			}
			var err error
			if i, err = skipString(d, i); err != nil {
				return i, err
			}
			i = skipWS(d, i)
			if i >= len(d) || d[i] != ':' {
				return i, &jsonError{i, "expected ':'"}
			}
			if i, err = skipValue(d, i+1, depth+1); err != nil {
				return i, err
			}
			i = skipWS(d, i)
			if i < len(d) && d[i] == ',' {
				i++
				continue
			}
			if i < len(d) && d[i] == '}' {
				return i + 1, nil
			}
			return i, &jsonError{i, "expected ',' or '}'"}
		}
	case c == '[':
		if depth >= maxJSONDepth {
			return i, &jsonError{i, "JSON nested too deeply"}
		}
		i = skipWS(d, i+1)
		if i < len(d) && d[i] == ']' {
			return i + 1, nil
		}
		for {
			var err error
			if i, err = skipValue(d, i, depth+1); err != nil {
				return i, err
			}
			i = skipWS(d, i)
			if i < len(d) && d[i] == ',' {
				i++
				continue
			}
			if i < len(d) && d[i] == ']' {
				return i + 1, nil
			}
			return i, &jsonError{i, "expected ',' or ']'"}
		}
	case c == 't':
		return skipLit(d, i, "true")
	case c == 'f':
		return skipLit(d, i, "false")
	case c == 'n':
		return skipLit(d, i, "null")
	case c == '-' || '0' <= c && c <= '9':
		return skipNumber(d, i)
	default:
		return i, &jsonError{i, fmt.Sprintf("invalid character %q", c)}
	}
}

func skipLit(d []byte, i int, lit string) (int, error) {
	if !bytes.HasPrefix(d[i:], []byte(lit)) {
		return i, &jsonError{i, "invalid literal"}
	}
	return i + len(lit), nil
}

func skipNumber(d []byte, i int) (int, error) {
	start := i
	if d[i] == '-' {
		i++
	}
	if i >= len(d) {
		return i, &jsonError{start, "invalid number"}
	}
	if d[i] == '0' {
		i++
	} else if '1' <= d[i] && d[i] <= '9' {
		for i < len(d) && '0' <= d[i] && d[i] <= '9' {
			i++
		}
	} else {
		return i, &jsonError{start, "invalid number"}
	}
	if i < len(d) && d[i] == '.' {
		i++
		j := i
		for i < len(d) && '0' <= d[i] && d[i] <= '9' {
			i++
		}
		if i == j {
			return i, &jsonError{start, "invalid number"}
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
			return i, &jsonError{start, "invalid number"}
		}
	}
	return i, nil
}

// skipString returns the end of the string starting at d[i] == '"'.
func skipString(d []byte, i int) (int, error) {
	start := i
	i++
	for {
		j := bytes.IndexByte(d[i:], '"')
		if j < 0 {
			return len(d), &jsonError{start, "unterminated string"}
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

// validJSON checks that d is one JSON value surrounded by whitespace.
func validJSON(d []byte) error {
	end, err := skipValue(d, 0, 0)
	if err != nil {
		return err
	}
	if e := skipWS(d, end); e != len(d) {
		return &jsonError{e, "text after the JSON value"}
	}
	return nil
}

// eachMember calls f with each member of the object at d[i]: the raw key
// (with quotes) and the value's range. f returns false to stop.
func eachMember(d []byte, i int, f func(key []byte, vs, ve int) bool) error {
	_, err := walkObject(d, i, f)
	return err
}

// walkObject is eachMember returning the end of the object (-1 when f
// stopped early).
func walkObject(d []byte, i int, f func(key []byte, vs, ve int) bool) (int, error) {
	i = skipWS(d, i)
	if i >= len(d) || d[i] != '{' {
		return i, &jsonError{i, "not an object"}
	}
	i = skipWS(d, i+1)
	if i < len(d) && d[i] == '}' {
		return i + 1, nil
	}
	for {
		i = skipWS(d, i)
		if i >= len(d) || d[i] != '"' {
			return i, &jsonError{i, "expected a member name"}
		}
		ks := i
		ke, err := skipString(d, i)
		if err != nil {
			return ke, err
		}
		i = skipWS(d, ke)
		if i >= len(d) || d[i] != ':' {
			return i, &jsonError{i, "expected ':'"}
		}
		vs := skipWS(d, i+1)
		ve, err := skipValue(d, vs, 1)
		if err != nil {
			return ve, err
		}
		if !f(d[ks:ke], vs, ve) {
			return -1, nil
		}
		i = skipWS(d, ve)
		if i < len(d) && d[i] == ',' {
			i++
			continue
		}
		if i < len(d) && d[i] == '}' {
			return i + 1, nil
		}
		return i, &jsonError{i, "expected ',' or '}'"}
	}
}

// eachElement calls f with each element of the array at d[i].
func eachElement(d []byte, i int, f func(idx, vs, ve int) bool) error {
	_, err := walkArray(d, i, f)
	return err
}

// walkArray is eachElement returning the end of the array (-1 when f
// stopped early).
func walkArray(d []byte, i int, f func(idx, vs, ve int) bool) (int, error) {
	i = skipWS(d, i)
	if i >= len(d) || d[i] != '[' {
		return i, &jsonError{i, "not an array"}
	}
	i = skipWS(d, i+1)
	if i < len(d) && d[i] == ']' {
		return i + 1, nil
	}
	for n := 0; ; n++ {
		vs := skipWS(d, i)
		ve, err := skipValue(d, vs, 1)
		if err != nil {
			return ve, err
		}
		if !f(n, vs, ve) {
			return -1, nil
		}
		i = skipWS(d, ve)
		if i < len(d) && d[i] == ',' {
			i++
			continue
		}
		if i < len(d) && d[i] == ']' {
			return i + 1, nil
		}
		return i, &jsonError{i, "expected ',' or ']'"}
	}
}

// keyEquals compares a raw JSON key (quotes included) with a name.
func keyEquals(raw []byte, name string) bool {
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner) == name
	}
	s, ok := unquote(raw)
	return ok && s == name
}

// unquote decodes a JSON string literal.
func unquote(raw []byte) (string, bool) {
	var b []byte
	b, ok := appendUnquoted(nil, raw, 0, -1)
	return string(b), ok
}

// appendUnquoted decodes the string literal raw, skipping the first skip
// decoded bytes and appending at most limit bytes (-1: all) to out.
func appendUnquoted(out []byte, raw []byte, skip int64, limit int64) ([]byte, bool) {
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

// decodedLen is the length of a string literal once decoded.
func decodedLen(raw []byte) int64 {
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

// decodeValue decodes the value in d[s:e] with encoding/json (numbers as
// float64).
func decodeValue(d []byte, s, e int) (any, error) {
	var v any
	if err := json.Unmarshal(d[s:e], &v); err != nil {
		return nil, err
	}
	return v, nil
}
