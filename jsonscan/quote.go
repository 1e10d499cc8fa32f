package jsonscan

import (
	"io"
	"unicode/utf8"
)

// AppendString appends s to dst as a JSON string, escaped as JavaScript's
// JSON.stringify escapes it: '"', '\\' and the control characters (as \b,
// \f, \n, \r, \t or \u00XX), nothing else. Invalid UTF-8 becomes U+FFFD,
// as Node decodes it.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for s != "" {
		plain, esc, rest := nextEscape(s)
		dst = append(dst, plain...)
		dst = append(dst, esc...)
		s = rest
	}
	return append(dst, '"')
}

// Quote returns s as a JSON string, escaped as AppendString escapes it.
func Quote(s string) string { return string(AppendString(nil, s)) }

// WriteString writes s to w as AppendString appends it, through a buffer
// of at most 64 KiB: long runs that need no escape are written straight
// from s, so a string of 100 MB is not copied whole.
func WriteString(w io.Writer, s string) error {
	buf := make([]byte, 0, min(len(s)+2, 64<<10))
	buf = append(buf, '"')
	for s != "" {
		plain, esc, rest := nextEscape(s)
		if len(plain) > 16<<10 {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
			if _, err := io.WriteString(w, plain); err != nil {
				return err
			}
		} else {
			buf = append(buf, plain...)
		}
		buf = append(buf, esc...)
		if len(buf) >= 48<<10 {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
		s = rest
	}
	buf = append(buf, '"')
	_, err := w.Write(buf)
	return err
}

// nextEscape splits s at the first byte that needs an escape: the text
// before it, the escape, and the text after it (plain is s whole, and esc
// and rest are empty, when nothing needs one).
func nextEscape(s string) (plain, esc, rest string) {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			return s[:i], escapes[c], s[i+1:]
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			return s[:i], "\uFFFD", s[i+1:]
		}
		i += n
	}
	return s, "", ""
}

// escapes holds the escape of each ASCII byte that needs one.
var escapes = func() (t [utf8.RuneSelf]string) {
	const hex = "0123456789abcdef"
	for c := range 0x20 {
		t[c] = `\u00` + string(hex[c>>4]) + string(hex[c&0xf])
	}
	t['\b'], t['\f'], t['\n'], t['\r'], t['\t'] = `\b`, `\f`, `\n`, `\r`, `\t`
	t['"'], t['\\'] = `\"`, `\\`
	return t
}()
