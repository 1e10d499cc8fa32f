// Package clip shortens text that echoes a user's or a model's argument
// back into a message, so that no answer grows with its input.
package clip

import (
	"strconv"
	"unicode/utf8"
)

// EchoChars is how much of an argument a message repeats.
const EchoChars = 200

// Echo is s cut to EchoChars characters, as To does.
func Echo(s string) string { return To(s, EchoChars) }

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
