// Package clip shortens text that echoes a user's or a model's argument
// back into a message, so that no answer grows with its input.
package clip

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// EchoChars is how much of an argument a message repeats.
const EchoChars = 200

// Echo is s cut to EchoChars characters, as To does, with its control
// characters (but tab and newline) written out as \x1b, \u007f or \u009b: an
// argument echoed in a message that reaches a terminal can then not clear
// the screen, move the cursor or set the clipboard (OSC 52).
func Echo(s string) string { return Visible(To(s, EchoChars)) }

// Visible is the one way pi-session writes untrusted text out, to a
// terminal or into a document: s with its control characters but tab and
// newline written out, as Echo does, and each byte that is not UTF-8
// replaced by U+FFFD, without shortening s. A C0 control is written \x1b;
// DEL and the C1 controls, which JSON allows raw, as the JSON escapes
// \u007f and \u009b, so that Visible keeps a JSON text JSON, of the same
// value (C0 controls and invalid bytes cannot be in the JSON Go writes). Each character is
// written out on its own, so VisibleLen can count the result in advance
// and a text made of parts can be measured part by part.
func Visible(s string) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, IsControl) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for _, r := range s {
		switch {
		case !IsControl(r):
			b.WriteRune(r) // an invalid byte comes as utf8.RuneError: U+FFFD
		case r < 0x7f:
			fmt.Fprintf(&b, "\\x%02x", r)
		default:
			fmt.Fprintf(&b, "\\u%04x", r)
		}
	}
	return b.String()
}

// VisibleLen is the length of Visible(s) in characters.
func VisibleLen(s string) int {
	n := 0
	for _, r := range s {
		switch {
		case !IsControl(r):
			n++
		case r < 0x7f:
			n += len(`\x1b`)
		default:
			n += len(`\u009b`)
		}
	}
	return n
}

// IsControl reports the characters Echo writes out: C0 controls but tab
// and newline, DEL, and C1 controls. ESC and CSI begin the escape
// sequences a terminal obeys.
func IsControl(r rune) bool {
	return (r < 0x20 && r != '\t' && r != '\n') || (r >= 0x7f && r <= 0x9f)
}

// To returns s when it has at most n characters; otherwise its first n
// characters followed by "…(N chars)", N being the length of s in
// characters. It never cuts a UTF-8 sequence; invalid bytes count as one
// character each and come out as U+FFFD. n < 1 counts as 1.
func To(s string, n int) string {
	n = max(n, 1)
	if len(s) <= n && utf8.ValidString(s) {
		return s
	}
	total := utf8.RuneCountInString(s)
	if total <= n && utf8.ValidString(s) {
		return s
	}
	out := make([]rune, 0, min(n, total))
	for _, r := range s {
		if len(out) == n {
			break
		}
		out = append(out, r)
	}
	if total <= n {
		return string(out) // only invalid bytes were replaced
	}
	return string(out) + "…(" + strconv.Itoa(total) + " chars)"
}

// Writer is Visible for a stream: what a command prints through it reaches
// w with its control characters written out and its invalid bytes
// replaced, whoever formatted it; JSON stays the same JSON. A character split across two writes is
// held until the next one completes it; Flush writes one left incomplete
// at the end as U+FFFD.
type Writer struct {
	w    io.Writer
	held []byte // the incomplete character that ended the last write
}

// NewWriter returns a Writer that writes to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write writes Visible(p) to w, but a character p leaves incomplete at its
// end, and reports len(p) written when w took it all.
func (v *Writer) Write(p []byte) (int, error) {
	buf := p
	if len(v.held) > 0 {
		buf = append(v.held, p...)
		v.held = nil
	}
	keep := incomplete(buf)
	if keep > 0 {
		v.held = append([]byte(nil), buf[len(buf)-keep:]...)
		buf = buf[:len(buf)-keep]
	}
	if len(buf) == 0 {
		return len(p), nil
	}
	if _, err := io.WriteString(v.w, Visible(string(buf))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes a held incomplete character out as Visible does: U+FFFD
// for each of its bytes.
func (v *Writer) Flush() error {
	if len(v.held) == 0 {
		return nil
	}
	s := Visible(string(v.held))
	v.held = nil
	_, err := io.WriteString(v.w, s)
	return err
}

// incomplete is the length of the start of a UTF-8 sequence that ends b
// and that more bytes could complete; 0 when b ends on a whole character
// or on bytes no continuation can make valid.
func incomplete(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(b[i]) {
			if utf8.FullRune(b[i:]) {
				return 0
			}
			return len(b) - i
		}
	}
	return 0
}
