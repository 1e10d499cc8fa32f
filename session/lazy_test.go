package session

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestMember(t *testing.T) {
	raw := []byte(`{"a":1,"b":{"c":[1,2]},"a":"last","e\u0073c":true}`)
	tests := []struct{ key, want string }{
		{"a", `"last"`},
		{"b", `{"c":[1,2]}`},
		{"esc", `true`},
		{"missing", ``},
	}
	for _, tt := range tests {
		if got := string(Member(raw, tt.key)); got != tt.want {
			t.Errorf("Member(%q) = %q, want %q", tt.key, got, tt.want)
		}
	}
	for _, bad := range []string{``, `[1]`, `{"a":`, `"s"`} {
		if got := Member([]byte(bad), "a"); got != nil {
			t.Errorf("Member(%q) = %q, want nil", bad, got)
		}
	}
}

func TestMembersElements(t *testing.T) {
	var keys []string
	ok := Members([]byte(`{"x":1, "y\n":[2], "z":{}}`), func(k string, v json.RawMessage) bool {
		keys = append(keys, k+"="+string(v))
		return k != "y\n"
	})
	if want := []string{"x=1", "y\n=[2]"}; !ok || !cmp.Equal(keys, want) {
		t.Errorf("Members = %v, %q; want true, %q", ok, keys, want)
	}
	if Members([]byte(`{"x":}`), func(string, json.RawMessage) bool { return true }) {
		t.Error("Members accepted invalid JSON")
	}
	var elems []string
	ok = Elements([]byte(` [ 1, "two" ,{"3":3}] `), func(e json.RawMessage) bool {
		elems = append(elems, string(e))
		return true
	})
	if want := []string{"1", `"two"`, `{"3":3}`}; !ok || !cmp.Equal(elems, want) {
		t.Errorf("Elements = %v, %q; want true, %q", ok, elems, want)
	}
	for _, bad := range []string{`[1,`, `[1 2]`, `{}`, ``} {
		if Elements([]byte(bad), func(json.RawMessage) bool { return true }) {
			t.Errorf("Elements(%q) = true, want false", bad)
		}
	}
	if !Elements([]byte(`[]`), func(json.RawMessage) bool { t.Error("element of []"); return true }) {
		t.Error("Elements([]) = false")
	}
}

func TestStringPrefix(t *testing.T) {
	tests := []struct {
		raw    string
		limit  int
		prefix string
		length int
	}{
		{`"hello"`, 10, "hello", 5},
		{`"hello"`, 3, "hel", 5},
		{`"a\nb\"c"`, 3, "a\nb", 5},
		{`"a\nb\"c"`, 100, "a\nb\"c", 5},
		{`"日本"`, 4, "日", 6},
		{`"\u65e5\u672c"`, 4, "日", 6},
		{`"\ud83d\ude00!"`, 4, "😀", 5},
		{`"\ud83d!"`, 10, "\uFFFD!", 4},
		{`""`, 5, "", 0},
		{`"abc"`, 0, "", 3},
		{`"abc"`, -1, "", 3},
	}
	for _, tt := range tests {
		p, n, ok := StringPrefix([]byte(tt.raw), tt.limit)
		if !ok || p != tt.prefix || n != tt.length {
			t.Errorf("StringPrefix(%s, %d) = %q, %d, %v; want %q, %d, true", tt.raw, tt.limit, p, n, ok, tt.prefix, tt.length)
		}
	}
	for _, bad := range []string{`abc`, `"abc`, `"a\x"`, `"a\`, `"\u12"`} {
		if _, _, ok := StringPrefix([]byte(bad), 10); ok {
			t.Errorf("StringPrefix(%s) ok, want not", bad)
		}
	}
}

// FuzzStringPrefix: the prefix is a prefix of what encoding/json decodes,
// at most limit bytes, and the length is the decoded length.
func FuzzStringPrefix(f *testing.F) {
	f.Add(`"a\nb\u00e9\ud83d\ude00"`, 3)
	f.Add(`"plain"`, 10)
	f.Fuzz(func(t *testing.T, raw string, limit int) {
		limit %= 64
		p, n, ok := StringPrefix([]byte(raw), limit)
		var want string
		if json.Unmarshal([]byte(raw), &want) != nil || !strings.HasPrefix(raw, `"`) || !strings.HasSuffix(raw, `"`) {
			return
		}
		if !ok {
			t.Fatalf("StringPrefix(%q) not ok, encoding/json decodes it", raw)
		}
		if !utf8.ValidString(raw) {
			return // encoding/json replaces invalid bytes, StringPrefix keeps them
		}
		if n != len(want) || len(p) > max(limit, 0) || !strings.HasPrefix(want, p) {
			t.Fatalf("StringPrefix(%q, %d) = %q, %d; decoded %q", raw, limit, p, n, want)
		}
	})
}

func TestTextBlocks(t *testing.T) {
	tests := []struct {
		content string
		limit   int
		prefix  string
		length  int
		ok      bool
	}{
		{`"plain \"text\""`, 100, `plain "text"`, 12, true},
		{`[{"type":"text","text":"one"},{"type":"image","data":"AAAA"},{"text":"two","type":"text"}]`, 100, "one\ntwo", 7, true},
		{`[{"type":"text","text":"one"},{"type":"text","text":"two"}]`, 4, "one\n", 7, true},
		{`[{"type":"text","text":"one"},{"type":"text","text":"two"}]`, 2, "on", 7, true},
		{`[{"type":"text","text":"日本"}]`, 4, "日", 6, true},
		{`[{"type":"thinking","thinking":"x"},{"type":"toolCall","name":"t","arguments":{"text":"no"}}]`, 10, "", 0, true},
		{`[]`, 10, "", 0, true},
		{`{"text":"x"}`, 10, "", 0, false},
		{`[{"type":"text","text":"cut`, 10, "", 0, false},
	}
	for _, tt := range tests {
		p, n, ok := TextBlocks([]byte(tt.content), "\n", tt.limit)
		if p != tt.prefix || n != tt.length || ok != tt.ok {
			t.Errorf("TextBlocks(%s, %d) = %q, %d, %v; want %q, %d, %v", tt.content, tt.limit, p, n, ok, tt.prefix, tt.length, tt.ok)
		}
	}
}
