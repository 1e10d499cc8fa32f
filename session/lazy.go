package session

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/pi-session/pi-session/jsonscan"
)

// Lazy access to parts of an entry without decoding the rest: an engine
// that needs the first kilobytes of a 20 MB tool result takes them without
// unmarshalling 20 MB. These functions do not validate: they are meant for
// Entry.Raw and its parts, which the Reader validated when it read the
// line, and they skip strings with a byte search instead. On other input
// they never panic; what they return for invalid JSON is unspecified.

// Member returns the value of the last top-level member named key of the
// JSON object raw, or nil if raw is no object or has no such member.
func Member(raw []byte, key string) json.RawMessage {
	var v json.RawMessage
	Members(raw, func(k string, value json.RawMessage) bool {
		if k == key {
			v = value
		}
		return true
	})
	return v
}

// Members calls fn with each member of the JSON object raw, in order, its
// key decoded; fn returns false to stop. It returns false if raw is not an
// object (or ends early).
func Members(raw []byte, fn func(key string, value json.RawMessage) bool) bool {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return false
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return true
	}
	for {
		if i >= len(raw) || raw[i] != '"' {
			return false
		}
		ke := skipStringFast(raw, i)
		if ke < 0 {
			return false
		}
		k := raw[i:ke]
		key := string(k[1 : len(k)-1])
		if hasEscape(k) {
			key, _ = jsonscan.Unquote(k)
		}
		i = skipSpace(raw, ke)
		if i >= len(raw) || raw[i] != ':' {
			return false
		}
		vs := skipSpace(raw, i+1)
		ve := skipFast(raw, vs)
		if ve < 0 {
			return false
		}
		if !fn(key, json.RawMessage(raw[vs:ve:ve])) {
			return true
		}
		i = skipSpace(raw, ve)
		if i >= len(raw) {
			return false
		}
		switch raw[i] {
		case ',':
			i = skipSpace(raw, i+1)
		case '}':
			return true
		default:
			return false
		}
	}
}

// Elements calls fn with each element of the JSON array raw, in order; fn
// returns false to stop. It returns false if raw is not an array (or ends
// early).
func Elements(raw []byte, fn func(elem json.RawMessage) bool) bool {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return false
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == ']' {
		return true
	}
	for {
		end := skipFast(raw, i)
		if end < 0 {
			return false
		}
		if !fn(json.RawMessage(raw[i:end:end])) {
			return true
		}
		i = skipSpace(raw, end)
		if i >= len(raw) {
			return false
		}
		switch raw[i] {
		case ',':
			i = skipSpace(raw, i+1)
		case ']':
			return true
		default:
			return false
		}
	}
}

// skipFast returns the index after the value that starts at b[i], or -1
// when there is none or it is cut short. Strings are skipped with a byte
// search for their closing quote; nothing is validated.
func skipFast(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipStringFast(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				if i = skipStringFast(b, i); i < 0 {
					return -1
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	case ',', ':', '}', ']':
		return -1
	}
	j := i
	for j < len(b) && !isSpace(b[j]) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ':' {
		j++
	}
	return j
}

// skipStringFast returns the index after the string that starts at
// b[i] == '"', or -1 if it is not closed.
func skipStringFast(b []byte, i int) int {
	end, err := jsonscan.SkipString(b, i)
	if err != nil {
		return -1
	}
	return end
}

// StringPrefix decodes the JSON string raw (with its quotes) as far as its
// first limit bytes, cut at a character boundary, and returns them with the
// length of the whole decoded string in bytes. Lone surrogates decode to
// U+FFFD, as in Node. ok is false if raw is not a string.
func StringPrefix(raw []byte, limit int) (prefix string, length int, ok bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", 0, false
	}
	var out []byte
	length, end := scanString(raw, 0, &out, max(limit, 0))
	if end != len(raw) {
		return "", 0, false
	}
	return string(out), length, true
}

// TextBlocks reads the text of a message's content (a string, or an array
// of blocks whose "text" blocks count) in one pass over it: the first
// limit bytes of the texts joined with sep, cut at a character boundary,
// and the length of the whole joined text. Other blocks (images, tool
// calls) are skipped. ok is false if content is neither.
func TextBlocks(content json.RawMessage, sep string, limit int) (prefix string, length int, ok bool) {
	b := content
	i := skipSpace(b, 0)
	if i >= len(b) {
		return "", 0, false
	}
	limit = max(limit, 0)
	var out []byte
	if b[i] == '"' {
		n, end := scanString(b, i, &out, limit)
		return string(out), n, end >= 0
	}
	if b[i] != '[' {
		return "", 0, false
	}
	texts := 0
	// The blocks, each scanned once: a text block's text is decoded as far
	// as needed and counted in the same pass.
	i = skipSpace(b, i+1)
	for i < len(b) && b[i] != ']' {
		if b[i] != '{' {
			end := skipFast(b, i)
			if end < 0 {
				return string(out), length, false
			}
			i = skipSpace(b, end)
		} else {
			isText := false
			var text []byte
			textLen := -1
			j := skipSpace(b, i+1)
			for j < len(b) && b[j] == '"' {
				ke := skipStringFast(b, j)
				if ke < 0 {
					return string(out), length, false
				}
				key := b[j+1 : ke-1]
				j = skipSpace(b, ke)
				if j >= len(b) || b[j] != ':' {
					return string(out), length, false
				}
				j = skipSpace(b, j+1)
				var ve int
				switch {
				case string(key) == "text" && j < len(b) && b[j] == '"':
					text = text[:0]
					room := limit - len(out)
					if texts > 0 {
						room -= len(sep)
					}
					textLen, ve = scanString(b, j, &text, max(room, 0))
				case string(key) == "type":
					ve = skipFast(b, j)
					isText = ve > 0 && string(b[j:ve]) == `"text"`
				default:
					ve = skipFast(b, j)
				}
				if ve < 0 {
					return string(out), length, false
				}
				j = skipSpace(b, ve)
				if j < len(b) && b[j] == ',' {
					j = skipSpace(b, j+1)
				}
			}
			if j >= len(b) || b[j] != '}' {
				return string(out), length, false
			}
			i = skipSpace(b, j+1)
			if isText && textLen >= 0 {
				if texts > 0 {
					length += len(sep)
					if len(out)+len(sep) <= limit {
						out = append(out, sep...)
					}
				}
				texts++
				length += textLen
				out = append(out, text...)
			}
		}
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
	return string(out), length, i < len(b)
}

// scanString decodes the string at b[i] == '"', appending to *out until it
// holds limit bytes (never a partial character), and returns the decoded
// length and the index after the closing quote (-1 if none or invalid).
// One pass: a byte search for the next backslash, and for a quote before it.
func scanString(b []byte, i int, out *[]byte, limit int) (length, end int) {
	full := len(*out) >= limit
	put := func(p []byte) {
		if full {
			return
		}
		room := limit - len(*out)
		if len(p) <= room {
			*out = append(*out, p...)
			return
		}
		cut := room
		for cut > 0 && !utf8.RuneStart(p[cut]) {
			cut--
		}
		*out = append(*out, p[:cut]...)
		full = true
	}
	j := i + 1
	for {
		seg := b[j:]
		k := bytes.IndexByte(seg, '\\')
		if k >= 0 {
			seg = seg[:k]
		}
		if q := bytes.IndexByte(seg, '"'); q >= 0 {
			put(seg[:q])
			return length + q, j + q + 1
		}
		if k < 0 {
			return 0, -1 // not closed
		}
		put(seg)
		length += len(seg)
		j += k
		if j+1 >= len(b) {
			return 0, -1
		}
		var enc [utf8.UTFMax]byte
		var dec []byte
		n := 2
		switch b[j+1] {
		case '"', '\\', '/':
			dec = b[j+1 : j+2]
		case 'b':
			dec = []byte{'\b'}
		case 'f':
			dec = []byte{'\f'}
		case 'n':
			dec = []byte{'\n'}
		case 'r':
			dec = []byte{'\r'}
		case 't':
			dec = []byte{'\t'}
		case 'u':
			r, used := decodeU(b[j:])
			if used == 0 {
				return 0, -1
			}
			dec = enc[:utf8.EncodeRune(enc[:], r)]
			n = used
		default:
			return 0, -1
		}
		length += len(dec)
		if !full {
			if len(*out)+len(dec) <= limit {
				*out = append(*out, dec...)
			} else {
				full = true
			}
		}
		j += n
	}
}

// Message returns the message member of a "message" entry as stored,
// without scanning the entry again, or nil for other entries.
func (e *Entry) Message() json.RawMessage {
	if e.Type != "message" || !e.msg.ok() {
		return nil
	}
	return e.Raw[e.msg.start:e.msg.end:e.msg.end]
}

// decodeU decodes a \uXXXX escape (or a surrogate pair of two) at the start
// of b, returning the rune and the bytes used (0 if invalid).
func decodeU(b []byte) (rune, int) {
	if len(b) < 6 || !isHex4(b[2:6]) {
		return 0, 0
	}
	v, _ := strconv.ParseUint(string(b[2:6]), 16, 16)
	r := rune(v)
	if utf16.IsSurrogate(r) {
		if len(b) >= 12 && b[6] == '\\' && b[7] == 'u' && isHex4(b[8:12]) {
			v2, _ := strconv.ParseUint(string(b[8:12]), 16, 16)
			if p := utf16.DecodeRune(r, rune(v2)); p != utf8.RuneError {
				return p, 12
			}
		}
		return utf8.RuneError, 6
	}
	return r, 6
}
