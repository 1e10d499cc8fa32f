package relay

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"unicode/utf8"

	"github.com/pi-session/pi-session/session"
)

// Reading enormous values. A user message, a tool result, an answer or a
// command of megabytes (a paste, generated output, all on one line of the
// session file) is read by its ends and never decoded whole: a note shows
// at most its total of any one of them, the rules are read from the first
// and the last bytes of a message (rules.ReadHead, rules.ReadTail), and a
// command's status from the end of its output. What is counted (the
// characters left over) is counted on the raw JSON, without decoding.

// ends is what textEnds reads of a text.
type ends struct {
	Head  string // the first bytes, cut at a character boundary
	Tail  string // the last bytes, starting at a character boundary
	Bytes int    // the whole text's length, in bytes
	Runes int    // and in characters (see chars)
}

// Whole reports whether Head is the whole text.
func (e ends) Whole() bool { return len(e.Head) == e.Bytes }

// textEnds reads the text of a message's content as text(content, 0)
// would give it (its strings outside skipped keys, "\n" between them once
// the text holds anything, "[image]" for an image block) by its ends: its
// first head bytes and its last tail bytes, and its whole length, in a
// time linear in content and memory linear in head and tail.
func textEnds(content []byte, head, tail int) ends {
	return readLong(content).ends(head, tail)
}

// longText is a text too long to decode whole, its string literals found
// and its length counted once, to be read by its ends as often as needed
// (a user message is shown by its start and read for rules by its ends).
type longText struct {
	lits         [][]byte // the literals of its strings, in content
	bytes, runes int      // its length (see ends)
}

// readLong finds the literals of content's text and counts its length.
func readLong(content []byte) *longText {
	t := &longText{}
	walkLiterals(content, func(lit []byte) bool {
		t.lits = append(t.lits, lit)
		return true
	})
	e := literalEnds(t.lits, false, 0, 0)
	t.bytes, t.runes = e.Bytes, e.Runes
	return t
}

// ends is textEnds of the text.
func (t *longText) ends(head, tail int) ends {
	e := literalSpan(t.lits, false, head, tail)
	e.Bytes, e.Runes = t.bytes, t.runes
	return e
}

// literalEnds reads the text of string literals joined by newlines (before
// each but the first when always, else once the text holds anything) by
// its ends.
func literalEnds(lits [][]byte, always bool, head, tail int) ends {
	e := literalSpan(lits, always, head, tail)
	seen := false
	for i, lit := range lits {
		b, r := literalLen(lit)
		if i > 0 && (always || seen) {
			e.Bytes++
			e.Runes++
		}
		seen = seen || b > 0
		e.Bytes += b
		e.Runes += r
	}
	return e
}

// literalSpan is literalEnds without the whole length (Bytes and Runes
// zero), which takes a pass over the literals: the end of a build's output
// needs no more than its last bytes.
func literalSpan(lits [][]byte, always bool, head, tail int) ends {
	var e ends
	sep := make([]bool, len(lits))
	seen := false // a literal before holds text: valid JSON's escapes all do
	for i, lit := range lits {
		sep[i] = i > 0 && (always || seen)
		seen = seen || len(lit) > 2
	}
	// The head, one byte more to see whether its end splits a character.
	var h []byte
	for i, lit := range lits {
		if len(h) > head {
			break
		}
		if sep[i] {
			h = append(h, '\n')
		}
		h = appendDecoded(h, inner(lit), head+1-len(h))
	}
	if len(h) > head {
		k := head
		for k > 0 && !utf8.RuneStart(h[k]) {
			k--
		}
		h = h[:k]
	}
	e.Head = string(h)
	// The tail, from the last string back.
	var parts [][]byte
	need := tail
	for i := len(lits) - 1; i >= 0 && need > 0; i-- {
		p := literalSuffix(lits[i], need)
		parts = append(parts, p)
		need -= len(p)
		if sep[i] && need > 0 {
			parts = append(parts, []byte{'\n'})
			need--
		}
	}
	t := make([]byte, 0, tail-need)
	for i := len(parts) - 1; i >= 0; i-- {
		t = append(t, parts[i]...)
	}
	for len(t) > 0 && !utf8.RuneStart(t[0]) {
		t = t[1:]
	}
	e.Tail = string(t)
	return e
}

// literalLen is the length of a JSON string literal once decoded, in
// bytes and in characters, without decoding it. Characters are counted by
// their first bytes (see chars).
func literalLen(lit []byte) (nbytes, nrunes int) {
	s := inner(lit)
	for len(s) > 0 {
		i := bytes.IndexByte(s, '\\')
		if i < 0 {
			return nbytes + len(s), nrunes + chars(s)
		}
		nbytes += i
		nrunes += chars(s[:i])
		s = s[i:]
		n := escapeLen(s)
		var tmp [utf8.UTFMax]byte
		if d := appendDecoded(tmp[:0], s[:n], -1); len(d) > 0 {
			nbytes += len(d)
			nrunes++
		}
		s = s[n:]
	}
	return nbytes, nrunes
}

// chars counts the characters of UTF-8 text by their first bytes (every
// byte that is not a continuation byte), eight bytes at a time: the count
// of utf8.RuneCount for valid UTF-8, which is what pi writes; of invalid
// UTF-8 it is close.
func chars(s []byte) int {
	n := 0
	for ; len(s) >= 8; s = s[8:] {
		w := binary.LittleEndian.Uint64(s)
		n += 8 - bits.OnesCount64(w&^(w<<1)&0x8080808080808080) // 10xxxxxx: continuation
	}
	for _, c := range s {
		if c&0xC0 != 0x80 {
			n++
		}
	}
	return n
}

// inner is the inside of a string literal, without its quotes.
func inner(lit []byte) []byte {
	if len(lit) < 2 {
		return nil
	}
	return lit[1 : len(lit)-1]
}

// appendDecoded appends the inside of a string literal, decoded as text
// decodes it (\b and \f as spaces, a lone surrogate as U+FFFD), at most
// limit bytes of it (-1: all), to dst.
func appendDecoded(dst, s []byte, limit int) []byte {
	room := func() int {
		if limit < 0 {
			return len(s) + utf8.UTFMax
		}
		return limit
	}
	for len(s) > 0 && room() > 0 {
		i := bytes.IndexByte(s, '\\')
		if i < 0 {
			i = len(s)
		}
		take := min(i, room())
		dst = append(dst, s[:take]...)
		if limit >= 0 {
			limit -= take
		}
		if take < i || i == len(s) {
			break
		}
		s = s[i:]
		n := escapeLen(s)
		var enc [utf8.UTFMax]byte
		var d []byte
		if n >= 2 {
			switch e := s[1]; e {
			case 'n':
				d = []byte{'\n'}
			case 't':
				d = []byte{'\t'}
			case 'r':
				d = []byte{'\r'}
			case 'b', 'f':
				d = []byte{' '}
			case 'u':
				if v := hex4(s[2:]); v >= 0 && n >= 6 {
					r := rune(v)
					if n == 12 {
						r = utf16Pair(r, rune(hex4(s[8:])))
					}
					d = enc[:utf8.EncodeRune(enc[:], r)]
				}
			default:
				d = []byte{e}
			}
		}
		take = min(len(d), room())
		dst = append(dst, d[:take]...)
		if limit >= 0 {
			limit -= take
		}
		s = s[n:]
	}
	return dst
}

// escapeLen is the length of the escape at the start of s (s[0] == '\\'),
// as text reads it: 2, 6 for \uXXXX, 12 for a high surrogate followed by
// another \uXXXX; at most len(s).
func escapeLen(s []byte) int {
	if len(s) < 2 || s[1] != 'u' {
		return min(2, len(s))
	}
	if len(s) < 6 {
		return len(s)
	}
	if hi := hex4(s[2:]); 0xD800 <= hi && hi < 0xDC00 && len(s) >= 12 && s[6] == '\\' && s[7] == 'u' && hex4(s[8:]) >= 0 {
		return 12
	}
	return 6
}

// hex4 is the value of the four hex digits b starts with, or -1.
func hex4(b []byte) int {
	if len(b) < 4 {
		return -1
	}
	v := 0
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			v = v<<4 | int(c-'0')
		case 'a' <= c && c <= 'f':
			v = v<<4 | int(c-'a'+10)
		case 'A' <= c && c <= 'F':
			v = v<<4 | int(c-'A'+10)
		default:
			return -1
		}
	}
	return v
}

// literalSuffix is the last n bytes of the JSON string literal lit once
// decoded (all of it when shorter), decoding only a little more than them:
// from a point near the end that is not inside an escape.
func literalSuffix(lit []byte, n int) []byte {
	s := inner(lit)
	if n <= 0 {
		return nil
	}
	for r := n + 16; ; r *= 2 {
		q := escapeBoundary(s, max(len(s)-r, 0))
		d := appendDecoded(make([]byte, 0, len(s)-q), s[q:], -1)
		if len(d) >= n || q == 0 {
			return d[max(len(d)-n, 0):]
		}
	}
}

// escapeBoundary is the first offset at or after q in s (a literal's
// inside) where decoding can start: not inside an escape (a surrogate
// pair is one).
func escapeBoundary(s []byte, q int) int {
	for q > 0 && q < len(s) {
		if at := escapeAt(s, q); at >= 0 {
			q = at + escapeLen(s[at:])
			continue
		}
		break
	}
	return min(q, len(s))
}

// escapeAt is the start of the escape that offset q of s is inside (after
// its backslash), or -1 when q is not inside one.
func escapeAt(s []byte, q int) int {
	for b := q - 1; b >= 0 && b >= q-11; b-- {
		if s[b] != '\\' || !escapeStart(s, b) {
			continue
		}
		if b+escapeLen(s[b:]) > q {
			return b
		}
		return -1 // the escape nearest before q ends at or before it
	}
	return -1
}

// escapeStart reports whether the backslash at s[b] starts an escape: the
// run of backslashes ending there is odd.
func escapeStart(s []byte, b int) bool {
	k := 0
	for i := b; i >= 0 && s[i] == '\\'; i-- {
		k++
	}
	return k%2 == 1
}

// Bounds of what is read of one value.
const (
	// maxCommandBytes: of a command line, its start, where the programs
	// it runs stand (a note shows 200 characters of it).
	maxCommandBytes = 64 << 10
	// maxAgentBytes: of a subagent's result or notification, its start
	// and its end, where its id, worktree and summary stand.
	maxAgentBytes = 128 << 10
)

// boundedText is text(content, 0) for content of at most limit bytes;
// for a longer one, the start and the end of its text, limit/2 bytes each,
// with a line between them saying how much was left out.
func boundedText(content json.RawMessage, limit int) string {
	if len(content) <= limit {
		return string(text(content, 0))
	}
	e := textEnds(content, limit/2, limit/2)
	if e.Bytes <= limit {
		return string(text(content, 0)) // escapes made it long, not its text
	}
	return e.Head + "\n[…]\n" + e.Tail
}

// boundedString is the JSON string raw decoded, at most its first limit
// bytes (cut at a character boundary); "" when raw is not a string.
func boundedString(raw json.RawMessage, limit int) string {
	s, _, _ := session.StringPrefix(raw, limit)
	return s
}

// answerText is the text of an answer's content, its text blocks joined by
// newlines (session.TextBlocks); of one longer than twice show bytes, its
// first and last show bytes, with a line between them.
func answerText(content json.RawMessage, show int) string {
	if len(content) <= 2*show {
		t, _, _ := session.TextBlocks(content, "\n", len(content))
		return t
	}
	head, n, _ := session.TextBlocks(content, "\n", show)
	if n <= 2*show {
		t, _, _ := session.TextBlocks(content, "\n", n)
		return t
	}
	var lits [][]byte
	if c := bytes.TrimLeft(content, " \t\r\n"); len(c) > 0 && c[0] == '"' {
		lits = append(lits, content)
	} else {
		session.Elements(content, func(block json.RawMessage) bool {
			var typ, txt json.RawMessage
			session.Members(block, func(k string, v json.RawMessage) bool {
				switch k {
				case "type":
					typ = v
				case "text":
					txt = v
				}
				return true
			})
			if string(typ) == `"text"` && len(txt) > 0 && txt[0] == '"' {
				lits = append(lits, txt)
			}
			return true
		})
	}
	return head + "\n[…]\n" + literalEnds(lits, true, 0, show).Tail
}
