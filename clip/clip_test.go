package clip

import (
	"bytes"
	"encoding/json"
	"os"
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
		"del \x7f cr \r":         `del \u007f cr \x0d`,
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

func TestVisible(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain, 日本語, tab\tand\nnewline", "plain, 日本語, tab\tand\nnewline"},
		{"osc \x1b]0;title\x07 end", `osc \x1b]0;title\x07 end`},
		{"invalid \xff\xfe bytes", "invalid \uFFFD\uFFFD bytes"},
		{"only invalid, no control: \xc3", "only invalid, no control: \uFFFD"},
		{"8-bit csi as a raw byte \x9b31m", "8-bit csi as a raw byte \uFFFD31m"},
		{"csi as a character \u009b31m", `csi as a character \u009b31m`},
		{"cr \r del \x7f nul \x00", `cr \x0d del \u007f nul \x00`},
	}
	for _, tt := range tests {
		if got := Visible(tt.in); got != tt.want {
			t.Errorf("Visible(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got, want := VisibleLen(tt.in), utf8.RuneCountInString(Visible(tt.in)); got != want {
			t.Errorf("VisibleLen(%q) = %d, want %d", tt.in, got, want)
		}
	}
}

// TestShared runs the table the extension's sink.test.ts runs too: Go and
// TypeScript write untrusted text out alike.
func TestShared(t *testing.T) {
	b, err := os.ReadFile("testdata/visible.json")
	if err != nil {
		t.Fatal(err)
	}
	var table struct {
		Visible []struct{ In, Out string }
		Echo    []struct {
			In, Out, Tail     string
			Repeat, OutRepeat int
		}
	}
	if err := json.Unmarshal(b, &table); err != nil {
		t.Fatal(err)
	}
	if len(table.Visible) < 5 || len(table.Echo) < 3 {
		t.Fatalf("testdata/visible.json: %d visible and %d echo cases", len(table.Visible), len(table.Echo))
	}
	for _, c := range table.Visible {
		if got := Visible(c.In); got != c.Out {
			t.Errorf("Visible(%q) = %q, want %q", c.In, got, c.Out)
		}
	}
	for _, c := range table.Echo {
		in, want := strings.Repeat(c.In, max(c.Repeat, 1)), strings.Repeat(c.Out, max(c.OutRepeat, 1))+c.Tail
		if got := Echo(in); got != want {
			t.Errorf("Echo(%.40q…) = %.60q…, want %.60q…", in, got, want)
		}
	}
}

// TestWriter: a stream written in any pieces comes out as Visible of the
// whole, a character split between two writes included.
func TestWriter(t *testing.T) {
	in := "ok 日本語 \x1b[2J\x1b]52;c;SGk=\x07 \xff end \u009b é"
	for size := 1; size <= len(in); size++ {
		var out bytes.Buffer
		w := NewWriter(&out)
		for i := 0; i < len(in); i += size {
			p := []byte(in[i:min(i+size, len(in))])
			if n, err := w.Write(p); n != len(p) || err != nil {
				t.Fatalf("Write(%q) = %d, %v", p, n, err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if got, want := out.String(), Visible(in); got != want {
			t.Errorf("written %d bytes at a time: %q, want %q", size, got, want)
		}
	}
	var out bytes.Buffer
	w := NewWriter(&out)
	w.Write([]byte("cut \xe6\x97"))
	if got := out.String(); got != "cut " {
		t.Errorf("before Flush: %q, want the incomplete character held", got)
	}
	w.Flush()
	if got := out.String(); got != "cut \uFFFD\uFFFD" {
		t.Errorf("after Flush: %q, want %q", got, "cut \uFFFD\uFFFD")
	}
}

func FuzzVisible(f *testing.F) {
	f.Add("a\x1b]0;t\x07\xff\u009b", 3)
	f.Fuzz(func(t *testing.T, s string, size int) {
		got := Visible(s)
		if !utf8.ValidString(got) || strings.ContainsFunc(got, IsControl) {
			t.Fatalf("Visible(%q) = %q holds a control character or an invalid byte", s, got)
		}
		if n := utf8.RuneCountInString(got); n != VisibleLen(s) {
			t.Fatalf("VisibleLen(%q) = %d, Visible has %d characters", s, VisibleLen(s), n)
		}
		size = 1 + max(size, -size)%16
		var out bytes.Buffer
		w := NewWriter(&out)
		for i := 0; i < len(s); i += size {
			w.Write([]byte(s[i:min(i+size, len(s))]))
		}
		w.Flush()
		if out.String() != got {
			t.Fatalf("Writer(%q, %d at a time) = %q, want %q", s, size, out.String(), got)
		}
		// JSON stays the same JSON: what --json prints passes the Writer.
		j, _ := json.Marshal(map[string]string{"s": s})
		var before, after map[string]string
		json.Unmarshal(j, &before)
		if err := json.Unmarshal([]byte(Visible(string(j))), &after); err != nil || after["s"] != before["s"] {
			t.Fatalf("Visible(%s) = %s, not the same JSON (%v)", j, Visible(string(j)), err)
		}
	})
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
