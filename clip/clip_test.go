package clip

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTo(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"", 5, ""},
		{"short", 5, "short"},
		{"longer", 5, "longe…(6 chars)"},
		{"日本語のテキスト", 3, "日本語…(8 chars)"},
		{"ab\xffcd", 10, "ab\uFFFDcd"},
		{"ab\xffcd", 2, "ab…(5 chars)"},
		{"abc", 0, "a…(3 chars)"},
	}
	for _, tt := range tests {
		if got := To(tt.s, tt.n); got != tt.want {
			t.Errorf("To(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
	for in, want := range map[string]string{
		"a\x1b]52;c;SGk=\x07b":   `a\x1b]52;c;SGk=\x07b`,
		"\x1b[2J\x1b[H":          `\x1b[2J\x1b[H`,
		"csi \u009b31m nul \x00": `csi \u009b31m nul \x00`,
		"tab\tand\nnewline":      "tab\tand\nnewline",
		"del \x7f cr \r":         `del \x7f cr \x0d`,
	} {
		if got := Echo(in); got != want {
			t.Errorf("Echo(%q) = %q, want %q", in, got, want)
		}
	}
	big := strings.Repeat("x", 1<<20)
	if got := Echo(big); utf8.RuneCountInString(got) > EchoChars+20 || !strings.HasSuffix(got, "…(1048576 chars)") {
		t.Errorf("Echo(1 MiB) = %d chars ending %q", utf8.RuneCountInString(got), got[len(got)-20:])
	}
}

func FuzzTo(f *testing.F) {
	f.Add("hello", 3)
	f.Add("日本\xff語", 2)
	f.Fuzz(func(t *testing.T, s string, n int) {
		n = n % 1000
		got := To(s, n)
		if !utf8.ValidString(got) {
			t.Fatalf("To(%q, %d) = %q is not valid UTF-8", s, n, got)
		}
		if utf8.RuneCountInString(got) > max(n, 1)+len("…(chars)")+20 {
			t.Fatalf("To(%q, %d) = %q is too long", s, n, got)
		}
	})
}
