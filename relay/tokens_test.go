package relay

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func terms(s string) []string {
	var out []string
	tokenize([]byte(s), func(t []byte) { out = append(out, string(t)) })
	return out
}

func TestTokenize(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"ember-cache ember_cache", []string{"ember", "cache", "ember", "cache"}},
		{"emberCache", []string{"ember", "cache", "embercache"}},
		{"HTTPServer", []string{"http", "server", "httpserver"}},
		{"utf8Len", []string{"utf", "8", "len", "utf8len"}},
		{"src/relay/note.go:42", []string{"src", "relay", "note", "go", "42"}},
		{"Übergröße straße", []string{"ubergrosse", "strasse"}}, // diacritics and ß folded
		{"e\u0301te\u0301 naïve", []string{"ete", "naive"}},     // decomposed or not
		{"ts 1796030340880 sha 3f2a9c1b7e4d5a6b8c9d0e1f", []string{"ts", "179603", "sha", "3f2a9c1b"}},
		{"ＡＢＣ１２３ ｼｽﾃﾑ", []string{"abc", "123", "abc123", "シ", "シス", "ス", "ステ", "テ", "テム", "ム"}}, // NFKC
		{"設定ファイル", []string{"設", "設定", "定", "定フ", "フ", "ファ", "ァ", "ァイ", "イ", "イル", "ル"}},
		{"Config設定", []string{"config", "設", "設定", "定"}},
		{"결제 실패", []string{"결", "결제", "제", "실", "실패", "패"}},
		{"\x1b[31merror\x1b[0m: no", []string{"error", "no"}}, // a terminal's colours
		{"файлы Ёлка", []string{"файлы", "елка"}},
	}
	for _, tt := range tests {
		if d := cmp.Diff(tt.want, terms(tt.in)); d != "" {
			t.Errorf("tokenize(%q) mismatch (-want +got):\n%s", tt.in, d)
		}
	}
}

func TestWalkText(t *testing.T) {
	raw := `{"role":"assistant","content":[{"type":"text","text":"line one\nsaid \"hi\" \u00e9\ud83d\ude00"},{"type":"toolCall","id":"call_1","name":"edit","arguments":{"path":"src/a.go","oldText":"x"}},{"type":"image","data":"AAAA","mimeType":"image/png"}],"usage":{"input":3},"details":{"secret":"no"}}`
	var got []string
	walkText([]byte(raw), func(b []byte) bool { got = append(got, string(b)); return true })
	want := []string{"line one\nsaid \"hi\" é😀", "edit", "src/a.go", "x", "[image]"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("walkText mismatch (-want +got):\n%s", d)
	}
	// A bare string is text; stopping early stops.
	n := 0
	walkText([]byte(`["a","b","c"]`), func([]byte) bool { n++; return n < 2 })
	if n != 2 {
		t.Errorf("walkText called fn %d times after it returned false at 2", n)
	}
	var s []string
	walkText([]byte(`"just text"`), func(b []byte) bool { s = append(s, strings.Clone(string(b))); return true })
	if len(s) != 1 || s[0] != "just text" {
		t.Errorf("walkText of a string = %q", s)
	}
}

// TestEmitASCIISameAsGeneral: the ASCII fast path splits every word as the
// general one (runes, termOf on every part) does.
func TestEmitASCIISameAsGeneral(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const alphabet = "aZ09fFbx"
	for i := 0; i < 50000; i++ {
		w := make([]byte, 1+r.IntN(50))
		for k := range w {
			w[k] = alphabet[r.IntN(len(alphabet))]
		}
		var fast, general []string
		emitASCII(w, nil, func(b []byte) { fast = append(fast, string(b)) })
		var low []byte
		emitWord(w, &low, true, func(b []byte) { general = append(general, string(b)) })
		if d := cmp.Diff(general, fast); d != "" {
			t.Fatalf("emitASCII(%q) differs from emitWord (-general +fast):\n%s", w, d)
		}
	}
}
