package jsonpos

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestNotObject(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want string // "" for an object
	}{
		{`{"a": 1}`, ""},
		{" \n{}\n", ""},
		{"", "1:1: empty file"},
		{"\n\n", "1:1: empty file"},
		{"{\"goal\": \"x\",\n \"facts\": 5,,}", "2:13: invalid JSON: invalid character ',' looking for beginning of object key string"},
		{`{"a":`, "1:6: unexpected end of file: the JSON is cut short"},
		{"{", "1:2: unexpected end of file: the JSON is cut short"},
		{`{} {}`, "1:4: invalid JSON: invalid character '{' after top-level value"},
		{"\n  [1, 2]", "2:3: an array, not an object"},
		{`"text"`, "1:1: a string, not an object"},
		{`null`, "1:1: null, not an object"},
		{"\xef\xbb\xbf{}", "1:1: the file starts with a UTF-8 byte order mark (EF BB BF), which JSON does not allow"},
	} {
		p, what, ok := NotObject([]byte(tt.in))
		got := ""
		if !ok {
			got = p.String() + ": " + what
		}
		if got != tt.want {
			t.Errorf("NotObject(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestFind(t *testing.T) {
	data := []byte("{\"goal\": \"g\",\n \"files\": [\"a\", {\"id\": 7}],\n \"o\": {\"k\": {\"deep\": true}}, \"goal\": \"last\"}")
	for _, tt := range []struct {
		path  string
		want  string // the text at the offset, up to its value's length
		found bool
	}{
		{"", "{", true},
		{"goal", `"last"`, true},
		{"files", `["a"`, true},
		{"files[0]", `"a"`, true},
		{"files[1].id", "7", true},
		{"o.k.deep", "true", true},
		{"o.k.nope", `{"deep"`, false},
		{"files[5]", `["a"`, false},
		{"files[x]", `["a"`, false},
		{"files[1", `["a"`, false},
		{"nope", "{", false},
		{"goal.sub", `"last"`, false},
		{"files[0][1]", `"a"`, false},
	} {
		off, found := Find(data, tt.path)
		if found != tt.found || !bytes.HasPrefix(data[off:], []byte(tt.want)) {
			t.Errorf("Find(%q) = %d (%.10q), %v; want %q, %v", tt.path, off, data[off:], found, tt.want, tt.found)
		}
	}
}

// FuzzNotObject: ok exactly for one JSON object; the place is always a
// real position in the text.
func FuzzNotObject(f *testing.F) {
	for _, s := range []string{`{"a":1}`, "", "[1]", `{"a":`, "\xef\xbb\xbf{}", "{}\n{}", "  \"x\"  "} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, what, ok := NotObject(data)
		var v any
		isObj := json.Valid(data) && !bytes.HasPrefix(data, BOM) && json.Unmarshal(data, &v) == nil
		if isObj {
			_, isObj = v.(map[string]any)
		}
		if ok != isObj {
			t.Fatalf("NotObject(%q) ok = %v, want %v (%s)", data, ok, isObj, what)
		}
		if !ok && (p.Line < 1 || p.Column < 1 || what == "") {
			t.Fatalf("NotObject(%q) = %v %q", data, p, what)
		}
	})
}

// FuzzFind: any path in any object gives an offset inside the text where
// a JSON value begins.
func FuzzFind(f *testing.F) {
	f.Add([]byte(`{"a":[1,{"b":2}]}`), "a[1].b")
	f.Add([]byte(`{"a":1}`), "a[")
	f.Add([]byte(` {"a.b":1}`), "a.b")
	f.Fuzz(func(t *testing.T, data []byte, path string) {
		if _, _, ok := NotObject(data); !ok {
			return
		}
		off, _ := Find(data, path)
		if off < 0 || off >= int64(len(data)) {
			t.Fatalf("Find(%q, %q) = %d, outside the text", data, path, off)
		}
		dec := json.NewDecoder(bytes.NewReader(data[off:]))
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			t.Fatalf("Find(%q, %q) = %d: no value there: %v", data, path, off, err)
		}
	})
}
