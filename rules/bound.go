package rules

import (
	"strings"
	"unicode/utf8"
)

// ReadHead and ReadTail bound what of one message is read for rules. A
// message longer than the two together (a pasted log or file, generated
// text) is read in its first ReadHead and its last ReadTail bytes, each cut
// at a line end, else a sentence end, else a space, near the bound: what
// the user wrote before and after a paste is read, what stands between is
// not. Reading costs about 10 µs a sentence, so a message of 60 MB would
// otherwise take seconds; no message a user types comes near the bounds.
const (
	ReadHead = 128 << 10
	ReadTail = 32 << 10
)

// Partial reports whether a message is read only in part: longer than
// ReadHead and ReadTail together, or given by its ends (Tail set).
func (m Message) Partial() bool { return m.Tail != "" || len(m.Text) > ReadHead+ReadTail }

// ends is what of the message is read: the whole text, or its start and
// its end when it is read in part.
func (m Message) ends() (head, tail string) {
	if !m.Partial() {
		return m.Text, ""
	}
	if m.Tail != "" {
		return cutHead(m.Text), cutTail(m.Tail)
	}
	return cutHead(m.Text), cutTail(m.Text)
}

// cutHead is the start of s, the start of a longer message, that is read:
// at most ReadHead bytes, ending at the last line end in its second half,
// else the last sentence end there, else the last space, else where s
// ends or a character starts.
func cutHead(s string) string {
	h := s[:min(len(s), ReadHead)]
	half := len(h) / 2
	if i := strings.LastIndexByte(h, '\n'); i >= half {
		return h[:i]
	}
	if i := lastSentenceEnd(h); i >= half {
		return h[:i]
	}
	if i := strings.LastIndexByte(h, ' '); i >= half {
		return h[:i]
	}
	i := len(h)
	for i > 0 && i < len(s) && !utf8.RuneStart(s[i]) {
		i--
	}
	return h[:i]
}

// cutTail is the end of s that is read: at most ReadTail bytes, starting
// after the first line end in its first half, else after the first
// sentence end there, else after the first space, else at a character.
func cutTail(s string) string {
	if len(s) > ReadTail {
		s = s[len(s)-ReadTail:]
	}
	half := len(s) / 2
	if i := strings.IndexByte(s[:half], '\n'); i >= 0 {
		return s[i+1:]
	}
	if i := firstSentenceEnd(s[:half]); i >= 0 {
		return s[i:]
	}
	if i := strings.IndexByte(s[:half], ' '); i >= 0 {
		return s[i+1:]
	}
	i := 0
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}

// fullStops end a sentence wherever they stand; the ASCII marks only before
// a space (see sentences).
var fullStops = []string{"。", "！", "？"}

// lastSentenceEnd is the offset just after the last sentence end of s, or
// -1.
func lastSentenceEnd(s string) int {
	end := -1
	for i := len(s) - 2; i >= 0; i-- {
		if s[i+1] == ' ' && (s[i] == '.' || s[i] == '!' || s[i] == '?') {
			end = i + 1
			break
		}
	}
	for _, m := range fullStops {
		if i := strings.LastIndex(s, m); i >= 0 && i+len(m) > end {
			end = i + len(m)
		}
	}
	return end
}

// firstSentenceEnd is the offset where the sentence after the first
// sentence end of s starts, or -1.
func firstSentenceEnd(s string) int {
	end := -1
	for i := 0; i+1 < len(s); i++ {
		if s[i+1] == ' ' && (s[i] == '.' || s[i] == '!' || s[i] == '?') {
			end = i + 2 // after the space
			break
		}
	}
	for _, m := range fullStops {
		if i := strings.Index(s, m); i >= 0 && (end < 0 || i+len(m) < end) {
			end = i + len(m)
		}
	}
	return end
}
