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

func TestCheck(t *testing.T) {
	schema := Object(map[string]*Schema{
		"enabled": nil,
		"main":    Leaves("soft", "handoff", "hard", "minProgress"),
		"models":  {Any: Object(map[string]*Schema{"main": Leaves("soft", "hard")})},
		"names":   {Any: &Schema{}},
		"free":    nil,
	})
	data := "{\n" +
		`  "enabeld": false,` + "\n" +
		`  "main": {"sfot": 1, "hard": 2, "hard": 3},` + "\n" +
		`  "models": {"p/m.1": {"main": {"sotf": 1}, "mian": {}}},` + "\n" +
		`  "names": {"anything": {"goes": 1}},` + "\n" +
		`  "free": {"x": [{"y": 1, "y": 2}]},` + "\n" +
		`  "zzzzzz": 1, "enabled": true, "enabled": false` + "\n}"
	type row struct {
		Kind, Path, Pos, First, Nearest string
	}
	var got []row
	for _, f := range Check([]byte(data), schema) {
		got = append(got, row{f.Kind, f.Path, f.Pos.String(), f.First.String(), f.Nearest})
	}
	want := []row{
		{UnknownKey, "enabeld", "2:3", "", "enabled"},
		{UnknownKey, "main.sfot", "3:12", "", "soft"},
		{RepeatedKey, "main.hard", "3:34", "3:23", ""},
		{UnknownKey, "models.p/m.1.main.sotf", "4:33", "", "soft"},
		{UnknownKey, "models.p/m.1.mian", "4:45", "", "main"},
		{RepeatedKey, "free.x.y", "6:27", "6:19", ""},
		{UnknownKey, "zzzzzz", "7:3", "", ""},
		{RepeatedKey, "enabled", "7:33", "7:16", ""},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Check mismatch (-want +got):\n%s", d)
	}
	for _, in := range []string{`[{"a":1,"a":2}]`, `"x"`, `{`, ``} {
		if f := Check([]byte(in), schema); f != nil {
			t.Errorf("Check(%q) = %v, want nothing", in, f)
		}
	}
}

func TestNearest(t *testing.T) {
	known := []string{"enabled", "provider", "model", "reasoning", "soft", "hard", "tailMaxChars"}
	for key, want := range map[string]string{
		"enabeld": "enabled", "Enabled": "enabled", "enable": "enabled", "enabledd": "enabled", "disabled": "",
		"sfot": "soft", "hrad": "hard", "modle": "model", "reasonning": "reasoning", "tailmaxchar": "tailMaxChars",
		"x": "", "colour": "", "providers": "provider", "": "",
	} {
		if got := Nearest(key, known); got != want {
			t.Errorf("Nearest(%q) = %q, want %q", key, got, want)
		}
	}
}
