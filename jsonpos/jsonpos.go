// Package jsonpos places JSON errors for people: the line and column of a byte offset, what kind of value stands somewhere, and the members of an object in file order.
package jsonpos

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pi-session/pi-session/clip"
)

// Pos is a place in a text: 1-based line and column (in characters, a
// tab counting as one). The zero Pos means "nowhere in particular".
type Pos struct {
	Line, Column int
}

func (p Pos) String() string {
	if p.Line == 0 {
		return ""
	}
	return fmt.Sprintf("%d:%d", p.Line, p.Column)
}

// Message places what is wrong: "path:line:column: field "f": what",
// leaving out what is not known; without a path the place reads "line L,
// column C".
func Message(path string, p Pos, field, what string) string {
	var b strings.Builder
	switch {
	case path != "" && p.Line > 0:
		fmt.Fprintf(&b, "%s:%s: ", path, p)
	case path != "":
		fmt.Fprintf(&b, "%s: ", path)
	case p.Line > 0:
		fmt.Fprintf(&b, "line %d, column %d: ", p.Line, p.Column)
	}
	if field != "" {
		// A field is a key from the file: quoted (control characters
		// written out) and cut as an echo is (clip.To), so a 10,000-character
		// key makes no 10,000-character line.
		fmt.Fprintf(&b, "field %q: ", clip.To(field, clip.EchoChars))
	}
	b.WriteString(what)
	return b.String()
}

// At returns the position of byte offset off in data. An offset past the
// end is the position just after the last byte.
func At(data []byte, off int64) Pos {
	if off < 0 {
		off = 0
	}
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	before := data[:off]
	line := bytes.Count(before, []byte{'\n'}) + 1
	start := bytes.LastIndexByte(before, '\n') + 1
	return Pos{Line: line, Column: utf8.RuneCount(before[start:]) + 1}
}

// Type names the type of the JSON value raw begins with (after white
// space): "string", "number", "object", "array", "boolean", "null", or
// "nothing" when there is no value.
func Type(raw []byte) string {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// Kind is Type with an article, for messages: "a string", "a number", "an
// object", "an array", "a boolean", "null", or "nothing".
func Kind(raw []byte) string {
	switch t := Type(raw); t {
	case "object":
		return "an object"
	case "array":
		return "an array"
	case "string":
		return "a string"
	case "number":
		return "a number"
	case "boolean":
		return "a boolean"
	default:
		return t
	}
}

// SyntaxError explains why data is not one JSON value: where (the position
// encoding/json reports, or the end for a value cut short) and what. err is
// what json.Unmarshal into a json.RawMessage returned for data (a syntax
// error only; decoding into a Go value adds range errors without a place).
func SyntaxError(data []byte, err error) (Pos, string) {
	if len(bytes.TrimSpace(data)) == 0 {
		return Pos{}, "empty file"
	}
	if bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
		return Pos{Line: 1, Column: 1}, "the file starts with a UTF-8 byte order mark (EF BB BF), which JSON does not allow"
	}
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		msg := se.Error()
		if msg == "unexpected end of JSON input" {
			return end(data), "unexpected end of file: the JSON is cut short"
		}
		// The offset is just past the offending byte.
		return At(data, se.Offset-1), "invalid JSON: " + msg
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return end(data), "unexpected end of file: the JSON is cut short"
	}
	return Pos{Line: 1, Column: 1}, "invalid JSON: " + err.Error()
}

// end is the position just after the last byte that is not white space.
func end(data []byte) Pos {
	return At(data, int64(len(bytes.TrimRight(data, " \t\r\n"))))
}

// Member is one member of a JSON object: its key, its raw value, the
// offset of the value's first byte in the object's text, and the offset of
// the key's opening quote.
type Member struct {
	Key       string
	Value     json.RawMessage
	Offset    int64
	KeyOffset int64
}

// Repeat is a member whose key an earlier member of the same object had.
type Repeat struct {
	Member
	FirstKeyOffset int64 // the earlier member's KeyOffset
}

// Repeated returns the members of one object (as Members gives them) that
// repeat an earlier member's key, each with where that key first stood.
// JSON readers keep the last; a person's edit may have gone to the other.
func Repeated(members []Member) []Repeat {
	var out []Repeat
	first := map[string]int64{}
	for _, m := range members {
		if off, ok := first[m.Key]; ok {
			out = append(out, Repeat{Member: m, FirstKeyOffset: off})
			continue
		}
		first[m.Key] = m.KeyOffset
	}
	return out
}

// Members returns the members of the JSON object data in file order,
// duplicates included. ok is false when data is not exactly one JSON
// object (then use SyntaxError, or Kind to say what it is instead).
func Members(data []byte) (members []Member, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	for dec.More() {
		// The key starts after the white space and comma that follow the
		// '{' or the previous value.
		keyAt := dec.InputOffset()
		keyAt += int64(len(data[keyAt:]) - len(bytes.TrimLeft(data[keyAt:], " \t\r\n,")))
		t, err := dec.Token()
		if err != nil {
			return nil, false
		}
		key, isKey := t.(string)
		if !isKey {
			return nil, false
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, false
		}
		members = append(members, Member{Key: key, Value: raw, Offset: dec.InputOffset() - int64(len(raw)), KeyOffset: keyAt})
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false
	}
	return members, true
}

// NotObject explains why data is not exactly one JSON object: the place
// (never the zero Pos) and what is wrong ("empty file", "invalid JSON:
// ...", "an array, not an object"); ok is true when data is one object.
func NotObject(data []byte) (p Pos, what string, ok bool) {
	var raw json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil || bytes.HasPrefix(data, BOM) {
		p, what = SyntaxError(data, err)
		if p.Line == 0 {
			p = Pos{Line: 1, Column: 1}
		}
		return p, what, false
	}
	if Type(raw) != "object" {
		start := int64(len(data) - len(bytes.TrimLeft(data, " \t\r\n")))
		return At(data, start), Kind(raw) + ", not an object", false
	}
	return Pos{}, "", true
}

// Find returns the offset in data (one JSON object) of the value at path:
// keys joined by dots, array elements as [i] ("watch_actions[0].id"). When
// the path leads nowhere, found is false and offset is the value of the
// deepest part that exists (the whole object at worst), where a missing
// member would go. A key holding a dot or a bracket cannot be named; a
// repeated key is found at its last occurrence, the one JSON readers keep.
func Find(data []byte, path string) (offset int64, found bool) {
	start := int64(len(data) - len(bytes.TrimLeft(data, " \t\r\n")))
	cur, base := data[start:], start
	for path != "" {
		var step string
		var index = -1
		switch {
		case path[0] == '[':
			end := strings.IndexByte(path, ']')
			if end < 0 {
				return base, false
			}
			n, err := strconv.Atoi(path[1:end])
			if err != nil || n < 0 {
				return base, false
			}
			index, path = n, path[end+1:]
		default:
			end := strings.IndexAny(path, ".[")
			if end < 0 {
				end = len(path)
			}
			step, path = path[:end], path[end:]
		}
		path = strings.TrimPrefix(path, ".")
		var next []byte
		var at int64 = -1
		if index >= 0 {
			for i, e := range elements(cur) {
				if i == index {
					next, at = e.Value, e.Offset
				}
			}
		} else if ms, ok := Members(cur); ok {
			for _, m := range ms {
				if m.Key == step {
					next, at = m.Value, m.Offset
				}
			}
		}
		if at < 0 {
			return base, false
		}
		cur, base = next, base+at
	}
	return base, true
}

// elements returns the elements of the JSON array data with their
// offsets, or nil when data is not an array.
func elements(data []byte) []Member {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return nil
	}
	var out []Member
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil
		}
		out = append(out, Member{Value: raw, Offset: dec.InputOffset() - int64(len(raw))})
	}
	return out
}
