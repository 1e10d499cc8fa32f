package relay

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// wantEnds is what textEnds must give: text(content, 0) cut by its ends.
func wantEnds(content []byte, head, tail int) ends {
	full := text(content, 0)
	h := min(head, len(full))
	for h > 0 && h < len(full) && !utf8.RuneStart(full[h]) {
		h--
	}
	t := full[max(len(full)-tail, 0):]
	for len(t) > 0 && !utf8.RuneStart(t[0]) {
		t = t[1:]
	}
	n := 0
	for _, c := range full {
		if !utf8.RuneStart(c) {
			continue
		}
		n++
	}
	return ends{Head: string(full[:h]), Tail: string(t), Bytes: len(full), Runes: n}
}

func TestChars(t *testing.T) {
	for _, s := range []string{"", "abc", "日本語のテキストです、長い文章", "€uro and 😀 emoji mixed with ascii text", strings.Repeat("é", 33)} {
		if got, want := chars([]byte(s)), utf8.RuneCountInString(s); got != want {
			t.Errorf("chars(%q) = %d, want %d", s, got, want)
		}
	}
}

func TestTextEnds(t *testing.T) {
	long := strings.Repeat("line of text\n", 1000)
	quote := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	cases := []struct {
		name       string
		content    string
		head, tail int
	}{
		{"a plain string", `"hello world"`, 5, 5},
		{"whole", `"hello"`, 100, 100},
		{"nothing asked", `"hello"`, 0, 0},
		{"escapes at both cuts", `"a\nb\tc\"d\\e\/f\u00e9g"`, 3, 4},
		{"\\b and \\f read as spaces", `"x\by\fz"`, 10, 10},
		{"a surrogate pair cut in the middle", `"ab\ud83d\ude00cd"`, 4, 5},
		{"a lone surrogate", `"ab\ud83dcd"`, 10, 4},
		{"a high surrogate before another escape", `"ab\ud83d\u0041cd"`, 10, 5},
		{"backslashes before the cut", `"` + strings.Repeat(`\\`, 40) + `x"`, 7, 9},
		{"a \\u escape of a backslash", `"a\u005c\\u0041b"`, 3, 7},
		{"multibyte characters cut", `"日本語のテキストです"`, 7, 8},
		{"invalid UTF-8 kept", "\"ab\xff\xfecd\xe3\x80\"", 3, 3},
		{"blocks joined by newlines", `[{"type":"text","text":"first"},{"type":"image","data":"AAAA","mimeType":"image/png"},{"type":"text","text":"last"}]`, 8, 9},
		{"the tail spans blocks", `[{"type":"text","text":"one"},{"type":"text","text":"two"}]`, 2, 6},
		{"skipped keys", `[{"type":"text","text":"shown","id":"hidden"}]`, 10, 10},
		{"a long escaped text", quote(long), 100, 200},
		{"a long text with JSON escapes of unicode", quote(strings.Repeat("€\"\\\n", 3000)), 1001, 1003},
		{"empty", `""`, 4, 4},
		{"no text", `[{"type":"toolCall","id":"x"}]`, 4, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := textEnds([]byte(c.content), c.head, c.tail)
			if diff := cmp.Diff(wantEnds([]byte(c.content), c.head, c.tail), got); diff != "" {
				t.Errorf("textEnds(%.80s, %d, %d) (-want +got):\n%s", c.content, c.head, c.tail, diff)
			}
		})
	}
}

// FuzzTextEnds: for any valid JSON content and any bounds, textEnds gives
// what decoding the whole text and cutting it gives.
func FuzzTextEnds(f *testing.F) {
	for _, s := range []string{`"hello world"`, `"a\nb\u00e9\ud83d\ude00c"`, `[{"type":"text","text":"x\\y"},{"type":"text","text":"z"}]`, `"\\\\\\"`, `"\ud800\udbff\udc00"`} {
		f.Add(s, uint16(3), uint16(4))
	}
	f.Fuzz(func(t *testing.T, content string, head, tail uint16) {
		if !json.Valid([]byte(content)) {
			return
		}
		got := textEnds([]byte(content), int(head), int(tail))
		if diff := cmp.Diff(wantEnds([]byte(content), int(head), int(tail)), got); diff != "" {
			t.Errorf("textEnds(%q, %d, %d) (-want +got):\n%s", content, head, tail, diff)
		}
	})
}

func TestBoundedText(t *testing.T) {
	big, _ := json.Marshal(strings.Repeat("a", 500) + strings.Repeat("b", 1000) + strings.Repeat("c", 500))
	if got, want := boundedText(big, 1000), strings.Repeat("a", 500)+"\n[…]\n"+strings.Repeat("c", 500); got != want {
		t.Errorf("boundedText of 2,000 characters at 1,000 = %.60q…, want %.60q…", got, want)
	}
	small := []byte(`"` + strings.Repeat(`\n`, 600) + `"`) // long only by its escapes
	if got := boundedText(small, 1000); got != strings.Repeat("\n", 600) {
		t.Errorf("boundedText of 600 escaped newlines = %q", got)
	}
	if got := boundedString([]byte(`"go test ./...`+strings.Repeat(" x", 100)+`"`), 13); got != "go test ./..." {
		t.Errorf("boundedString = %q", got)
	}
}
