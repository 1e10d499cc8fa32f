package jsonpos

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/pi-session/pi-session/clip"
)

// Schema says which keys a JSON object may hold, for Check. Keys maps each
// known key to the schema of its value (nil: a value Check does not look
// into for unknown keys); Any, when set, is an object whose keys are free
// (names, ids), each value following Any. A Schema with neither says
// nothing about the object's keys.
type Schema struct {
	Keys map[string]*Schema
	Any  *Schema
}

// Object is a Schema of known keys, for building schemas tersely.
func Object(keys map[string]*Schema) *Schema { return &Schema{Keys: keys} }

// Leaves is an object of known keys whose values are not looked into.
func Leaves(keys ...string) *Schema {
	s := &Schema{Keys: make(map[string]*Schema, len(keys))}
	for _, k := range keys {
		s.Keys[k] = nil
	}
	return s
}

// Finding kinds.
const (
	UnknownKey  = "unknown"  // a key the schema does not know
	RepeatedKey = "repeated" // a key an earlier member of the same object had
)

// Finding is one key Check reports.
type Finding struct {
	Kind   string // UnknownKey or RepeatedKey
	Path   string // the key with the keys above it, dot-joined: "main.sfot"
	Key    string
	Offset int64 // of the key's opening quote
	Pos    Pos   // of the key
	First  Pos   // Repeated: where the key stood first
	// Unknown: the keys the object may hold, sorted, and the one nearest
	// to Key ("" when none is near, see Nearest).
	Known   []string
	Nearest string
}

// What says what is wrong, for a message placed at the key: `unknown key,
// ignored (did you mean "soft"?)`, or `given twice (first at line 2,
// column 3): the last one is used`.
func (f Finding) What() string {
	if f.Kind == RepeatedKey {
		return fmt.Sprintf("given twice (first at line %d, column %d): the last one is used", f.First.Line, f.First.Column)
	}
	return "unknown key, ignored (" + f.Hint() + ")"
}

// Message is the finding placed in the file name (jsonpos.Message:
// "name:line:column: field "main.sfot": unknown key, ignored (...)"), the
// key's path echoed through clip.Echo; an empty key reads `key ""`.
func (f Finding) Message(name string) string {
	if f.Path == "" {
		return Message(name, f.Pos, "", `key "": `+f.What())
	}
	return Message(name, f.Pos, clip.Echo(f.Path), f.What())
}

// Hint is "did you mean "soft"?", or the keys the object may hold when
// none is near.
func (f Finding) Hint() string {
	if f.Nearest != "" {
		return fmt.Sprintf("did you mean %q?", f.Nearest)
	}
	if len(f.Known) == 0 {
		return "no keys are known here"
	}
	shown := f.Known
	more := ""
	if len(shown) > 16 {
		shown, more = shown[:16], fmt.Sprintf(", and %d more", len(f.Known)-16)
	}
	quoted := make([]string, len(shown))
	for i, k := range shown {
		quoted[i] = fmt.Sprintf("%q", k)
	}
	return "the keys here are " + strings.Join(quoted, ", ") + more
}

// Check reads data, one JSON object, in one pass and returns, in file
// order, the keys the schema s does not know, at any depth it describes,
// and the keys repeated within one object, at any depth whatever s says.
// It reports nothing for data that is not a JSON object (see Members and
// SyntaxError for that), and nothing past the point where data stops
// being JSON.
func Check(data []byte, s *Schema) []Finding {
	type frame struct {
		obj     bool
		schema  *Schema // of this object; nil: keys not checked
		root    bool    // the top object: its keys' paths have no prefix
		path    string
		first   map[string]int64 // key -> offset of its first occurrence
		wantKey bool
		key     string // the member whose value comes next
	}
	var out []Finding
	var stack []*frame
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	// child is the schema of the value of the current member of f.
	child := func(f *frame) *Schema {
		switch {
		case f == nil:
			return s
		case !f.obj || f.schema == nil:
			return nil
		case f.schema.Any != nil:
			return f.schema.Any
		}
		return f.schema.Keys[f.key]
	}
	for {
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		at := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		if top != nil && top.obj && top.wantKey {
			key, isKey := tok.(string)
			if !isKey { // the object's closing brace
				stack = stack[:len(stack)-1]
				if len(stack) > 0 {
					stack[len(stack)-1].wantKey = true
				}
				continue
			}
			at += int64(len(data[at:]) - len(bytes.TrimLeft(data[at:], " \t\r\n,")))
			top.key, top.wantKey = key, false
			path := key
			if !top.root {
				path = top.path + "." + key
			}
			if first, seen := top.first[key]; seen {
				out = append(out, Finding{Kind: RepeatedKey, Path: path, Key: key, Offset: at, Pos: At(data, at), First: At(data, first)})
			} else {
				top.first[key] = at
			}
			if sc := top.schema; sc != nil && sc.Any == nil && sc.Keys != nil {
				if _, known := sc.Keys[key]; !known {
					names := make([]string, 0, len(sc.Keys))
					for k := range sc.Keys {
						names = append(names, k)
					}
					slices.Sort(names)
					out = append(out, Finding{Kind: UnknownKey, Path: path, Key: key, Offset: at, Pos: At(data, at), Known: names, Nearest: Nearest(key, names)})
				}
			}
			continue
		}
		path := ""
		if top != nil {
			path = top.path
			if top.obj && top.root {
				path = top.key
			} else if top.obj {
				path = top.path + "." + top.key
			}
		}
		if top == nil && tok != json.Delim('{') {
			return nil
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{obj: true, schema: child(top), root: top == nil, path: path, first: map[string]int64{}, wantKey: true})
		case json.Delim('['):
			stack = append(stack, &frame{path: path})
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
			if len(stack) > 0 && stack[len(stack)-1].obj {
				stack[len(stack)-1].wantKey = true
			}
		default: // a scalar value
			if top != nil && top.obj {
				top.wantKey = true
			}
		}
		if len(stack) == 0 {
			return out
		}
	}
}

// Nearest returns the known key a mistyped key most likely meant: the
// nearest by edits (insertions, deletions, substitutions and swaps of
// neighbours, letter case ignored) within a third of the key's length
// (at least 1), the earliest in known on a tie; "" when none is so near.
func Nearest(key string, known []string) string {
	best, bestD := "", 0
	k := []rune(strings.ToLower(key))
	limit := max(1, utf8.RuneCountInString(key)/3)
	for _, c := range known {
		if d := distance(k, []rune(strings.ToLower(c))); d <= limit && (best == "" || d < bestD) {
			best, bestD = c, d
		}
	}
	return best
}

// distance is the optimal string alignment distance of a and b.
func distance(a, b []rune) int {
	if len(a) > 64 || len(b) > 64 {
		if string(a) == string(b) {
			return 0
		}
		return max(len(a), len(b)) // too long to be a typo worth the work
	}
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// BOM is the UTF-8 byte order mark, which JSON does not allow.
var BOM = []byte("\xef\xbb\xbf")

// TrimBOM returns data without a leading byte order mark, and whether it
// had one. Positions in what it returns count from after the mark, as
// editors show them.
func TrimBOM(data []byte) ([]byte, bool) {
	if bytes.HasPrefix(data, BOM) {
		return data[len(BOM):], true
	}
	return data, false
}

// BOMWarning is the message for a file read without its byte order mark.
const BOMWarning = "the file starts with a UTF-8 byte order mark (EF BB BF), which JSON does not allow: read without it"
