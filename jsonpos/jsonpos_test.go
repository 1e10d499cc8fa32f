package jsonpos

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAt(t *testing.T) {
	data := []byte("{\n  \"é\": 1,\n\t\"b\"")
	for _, tt := range []struct {
		off  int64
		want Pos
	}{
		{0, Pos{1, 1}}, {1, Pos{1, 2}}, {2, Pos{2, 1}}, {8, Pos{2, 6}}, {13, Pos{3, 1}}, {14, Pos{3, 2}},
		{99, Pos{3, 5}}, {-1, Pos{1, 1}},
	} {
		if got := At(data, tt.off); got != tt.want {
			t.Errorf("At(%d) = %v, want %v", tt.off, got, tt.want)
		}
	}
}

func TestSyntaxError(t *testing.T) {
	for _, tt := range []struct {
		in, want string
	}{
		{"", "empty file"},
		{"  \n", "empty file"},
		{`{"a":`, "1:6: unexpected end of file: the JSON is cut short"},
		{"{\n\"a\": tru}", "2:9: invalid JSON: invalid character '}' in literal true (expecting 'e')"},
		{`{"a":1}x`, "1:8: invalid JSON: invalid character 'x' after top-level value"},
	} {
		var v any
		err := json.Unmarshal([]byte(tt.in), &v)
		pos, msg := SyntaxError([]byte(tt.in), err)
		got := msg
		if pos.Line > 0 {
			got = pos.String() + ": " + msg
		}
		if got != tt.want {
			t.Errorf("SyntaxError(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestMembers(t *testing.T) {
	data := []byte("{\"a\": 1,\n \"b\" :{\"x\":[1]}, \"a\":\"two\"}")
	got, ok := Members(data)
	want := []Member{
		{Key: "a", Value: json.RawMessage("1"), Offset: 6, KeyOffset: 1},
		{Key: "b", Value: json.RawMessage(`{"x":[1]}`), Offset: 15, KeyOffset: 10},
		{Key: "a", Value: json.RawMessage(`"two"`), Offset: 30, KeyOffset: 26},
	}
	if !ok {
		t.Fatal("Members: not an object")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Members (-want +got):\n%s", diff)
	}
	for _, m := range got {
		if string(data[m.Offset:m.Offset+int64(len(m.Value))]) != string(m.Value) {
			t.Errorf("member %s: offset %d does not point at its value", m.Key, m.Offset)
		}
	}
	for _, bad := range []string{`[]`, `{"a":1} {}`, `{"a":}`, `null`, `{"a" 1}`, ``} {
		if _, ok := Members([]byte(bad)); ok {
			t.Errorf("Members(%q) ok, want not an object", bad)
		}
	}
}

func TestKind(t *testing.T) {
	for in, want := range map[string]string{`"x"`: "a string", ` 12`: "a number", `-1`: "a number", `{}`: "an object", `[`: "an array",
		`true`: "a boolean", `false`: "a boolean", `null`: "null", ``: "nothing", "\n\t ": "nothing", "\r\n\"": "a string"} {
		if got := Kind([]byte(in)); got != want {
			t.Errorf("Kind(%q) = %q, want %q", in, got, want)
		}
		if got, want := Type([]byte(in)), want[strings.IndexByte(want, ' ')+1:]; got != want {
			t.Errorf("Type(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMessage(t *testing.T) {
	for _, tt := range []struct {
		path  string
		pos   Pos
		field string
		want  string
	}{
		{"/m/x.json", Pos{3, 9}, "cwd", `/m/x.json:3:9: field "cwd": bad`},
		{"/m/x.json", Pos{}, "", `/m/x.json: bad`},
		{"", Pos{1, 2}, "pid", `line 1, column 2: field "pid": bad`},
		{"", Pos{}, "", `bad`},
	} {
		if got := Message(tt.path, tt.pos, tt.field, "bad"); got != tt.want {
			t.Errorf("Message(%q, %v, %q) = %q, want %q", tt.path, tt.pos, tt.field, got, tt.want)
		}
	}
}

func TestRepeated(t *testing.T) {
	members, ok := Members([]byte(`{"a": 1, "b": 2, "a": 3, "a": 4}`))
	if !ok {
		t.Fatal("not an object")
	}
	r := Repeated(members)
	if len(r) != 2 || r[0].Key != "a" || r[0].FirstKeyOffset != 1 || r[1].FirstKeyOffset != 1 || string(r[1].Value) != "4" {
		t.Errorf("Repeated = %+v", r)
	}
}
