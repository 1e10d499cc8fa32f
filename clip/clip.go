// Package clip shortens text that echoes a user's or a model's argument
// back into a message, so that no answer grows with its input.
package clip

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// EchoChars is how much of an argument a message repeats.
const EchoChars = 200

// Echo is s cut to EchoChars characters, as To does, with its control
// characters (but tab and newline) written out as \x1b or \u009b: an
// argument echoed in a message that reaches a terminal can then not clear
// the screen, move the cursor or set the clipboard (OSC 52).
func Echo(s string) string { return Visible(To(s, EchoChars)) }

// Visible writes out the control characters of s but tab and newline, as
// Echo does, without shortening s.
func Visible(s string) string {
	if !strings.ContainsFunc(s, IsControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case !IsControl(r):
			b.WriteRune(r)
		case r < 0x80:
			fmt.Fprintf(&b, "\\x%02x", r)
		default:
			fmt.Fprintf(&b, "\\u%04x", r)
		}
	}
	return b.String()
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
