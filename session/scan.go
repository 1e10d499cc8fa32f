package session

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// This file is a small JSON scanner that validates a value while skipping it
// and reports where values start and end, so a line can be checked and its
// few interesting fields picked out without decoding the rest. It accepts
// exactly what JavaScript's JSON.parse accepts (RFC 8259 JSON; invalid UTF-8
// is not an error, because Node decodes the file with replacement characters
// before parsing).

// syntaxError describes invalid JSON at a byte position of the line.
type syntaxError struct {
	pos int
	msg string
}

func (e *syntaxError) Error() string { return fmt.Sprintf("%s at column %d", e.msg, e.pos+1) }

func errAt(pos int, format string, args ...any) *syntaxError {
	return &syntaxError{pos: pos, msg: fmt.Sprintf(format, args...)}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// specialMask has the high bit set in the byte lanes of w that hold '"', '\\'
// or a control character; the lowest set bit marks the first such byte.
func specialMask(w uint64) uint64 {
	quote := w ^ (lsb * '"')
	slash := w ^ (lsb * '\\')
	return (((quote - lsb) &^ quote) | ((slash - lsb) &^ slash) | ((w - lsb*0x20) &^ w)) & msb
}

// skipString returns the index after the string starting at b[i] == '"'.
// It is the reader's hot loop: text is checked eight bytes at a time, and
// the common two-byte escapes are stepped over without leaving it.
func skipString(b []byte, i int) (int, error) {
	start := i
	i++
	for {
		for i+16 <= len(b) {
			if m := specialMask(binary.LittleEndian.Uint64(b[i:])); m != 0 {
				i += bits.TrailingZeros64(m) / 8
				goto special
			}
			if m := specialMask(binary.LittleEndian.Uint64(b[i+8:])); m != 0 {
				i += 8 + bits.TrailingZeros64(m)/8
				goto special
			}
			i += 16
		}
		for i < len(b) && b[i] >= 0x20 && b[i] != '"' && b[i] != '\\' {
			i++
		}
		if i >= len(b) {
			return i, errAt(start, "unterminated string")
		}
	special:
		switch c := b[i]; {
		case c == '"':
			return i + 1, nil
		case c == '\\':
			if i+1 >= len(b) {
				return i, errAt(start, "unterminated string")
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex4(b[i+2:i+6]) {
					return i, errAt(i, `invalid \u escape in string`)
				}
				i += 6
			default:
				return i, errAt(i, "invalid escape %q in string", b[i:i+2])
			}
		default: // c < 0x20
			return i, errAt(i, "control character 0x%02x in string", c)
		}
	}
}

func isHex4(b []byte) bool {
	for _, c := range b[:4] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

func skipNumber(b []byte, i int) (int, error) {
	start := i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	default:
		return i, errAt(start, "invalid number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		d := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		if i == d {
			return i, errAt(start, "invalid number")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		if i == d {
			return i, errAt(start, "invalid number")
		}
	}
	return i, nil
}

func skipLiteral(b []byte, i int, lit string) (int, error) {
	for j := 0; j < len(lit); j++ {
		if i+j >= len(b) {
			return i + j, errAt(i+j, "unexpected end of line in literal %s", lit)
		}
		if b[i+j] != lit[j] {
			return i + j, errAt(i+j, "invalid character %q in literal %s", b[i+j], lit)
		}
	}
	return i + len(lit), nil
}

// skipValue validates the JSON value at b[i:] (after optional whitespace) and
// returns the index just after it. Nesting is handled with an explicit stack,
// so deep input cannot exhaust the goroutine stack.
func skipValue(b []byte, i int) (int, error) {
	end, _, err := skipValueDepth(b, i)
	return end, err
}

// skipValueDepth is skipValue that also returns how deep the value nests:
// 0 for a scalar or an empty container, 1 for a container of scalars, ...
func skipValueDepth(b []byte, i int) (int, int, error) {
	var stackBuf [32]byte
	stack := stackBuf[:0]
	depth := 0
	var err error
	for {
		// A value is expected at b[i].
		i = skipSpace(b, i)
		if i >= len(b) {
			return i, depth, errAt(i, "unexpected end of line")
		}
		switch c := b[i]; c {
		case '{':
			i = skipSpace(b, i+1)
			if i < len(b) && b[i] == '}' {
				i++
				break
			}
			stack = append(stack, '{')
			depth = max(depth, len(stack))
			if i, err = skipKey(b, i); err != nil {
				return i, depth, err
			}
			continue
		case '[':
			i = skipSpace(b, i+1)
			if i < len(b) && b[i] == ']' {
				i++
				break
			}
			stack = append(stack, '[')
			depth = max(depth, len(stack))
			continue
		case '"':
			i, err = skipString(b, i)
		case 't':
			i, err = skipLiteral(b, i, "true")
		case 'f':
			i, err = skipLiteral(b, i, "false")
		case 'n':
			i, err = skipLiteral(b, i, "null")
		default:
			if c == '-' || '0' <= c && c <= '9' {
				i, err = skipNumber(b, i)
			} else {
				err = errAt(i, "invalid character %q", c)
			}
		}
		if err != nil {
			return i, depth, err
		}
		// A value ended: close containers until one continues with a comma.
		for {
			if len(stack) == 0 {
				return i, depth, nil
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return i, depth, errAt(i, "unexpected end of line")
			}
			top := stack[len(stack)-1]
			if b[i] == ',' {
				i++
				if top == '{' {
					if i, err = skipKey(b, skipSpace(b, i)); err != nil {
						return i, depth, err
					}
				}
				break
			}
			if top == '{' && b[i] == '}' || top == '[' && b[i] == ']' {
				i++
				stack = stack[:len(stack)-1]
				continue
			}
			if top == '{' {
				return i, depth, errAt(i, "want ',' or '}' after object value, got %q", b[i])
			}
			return i, depth, errAt(i, "want ',' or ']' after array element, got %q", b[i])
		}
	}
}

// skipKey validates `"key" :` at b[i:] and returns the index after the colon.
func skipKey(b []byte, i int) (int, error) {
	if i >= len(b) || b[i] != '"' {
		return i, errAt(i, "want object key")
	}
	i, err := skipString(b, i)
	if err != nil {
		return i, err
	}
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return i, errAt(i, "want ':' after object key")
	}
	return i + 1, nil
}

// forEachMember validates the object at b[i] == '{' and calls fn for each
// member in order. If fn returns a positive index, that is taken as the end
// of the value (fn scanned it itself); otherwise the value is skipped.
// It returns the index after the closing brace.
func forEachMember(b []byte, i int, fn func(key []byte, start int) (end int, err error)) (int, error) {
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, errAt(i, "want object key")
		}
		ks := i
		var err error
		if i, err = skipString(b, i); err != nil {
			return i, err
		}
		key := b[ks:i]
		i = skipSpace(b, i)
		if i >= len(b) || b[i] != ':' {
			return i, errAt(i, "want ':' after object key")
		}
		i = skipSpace(b, i+1)
		if i >= len(b) {
			return i, errAt(i, "unexpected end of line")
		}
		end := 0
		if fn != nil {
			if end, err = fn(key, i); err != nil {
				return end, err
			}
		}
		if end > 0 {
			i = end
		} else if i, err = skipValue(b, i); err != nil {
			return i, err
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return i, errAt(i, "unexpected end of line")
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return i + 1, nil
		default:
			return i, errAt(i, "want ',' or '}' after object value, got %q", b[i])
		}
	}
}

func hasEscape(b []byte) bool {
	for _, c := range b {
		if c == '\\' {
			return true
		}
	}
	return false
}
