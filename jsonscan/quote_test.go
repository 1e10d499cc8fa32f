package jsonscan

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestAppendString(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"", `""`},
		{"plain text", `"plain text"`},
		{`quote " back \ slash /`, `"quote \" back \\ slash /"`},
		{"\b\f\n\r\t", `"\b\f\n\r\t"`},
		{"\x00\x01\x1f\x7f", `"\u0000\u0001\u001f` + "\x7f" + `"`},
		{"ünï \U0001F600 \u2028", "\"ünï \U0001F600 \u2028\""},
		{"a\xffb\xe2\x82", "\"a\uFFFDb\uFFFD\uFFFD\""},
		{"<&>", `"<&>"`},
	} {
		if got := string(AppendString([]byte("x"), tt.in)); got != "x"+tt.want || Quote(tt.in) != tt.want {
			t.Errorf("AppendString(%q) = %s, want %s", tt.in, got[1:], tt.want)
		}
	}
}

// chunks records what each Write got.
type chunks struct {
	bytes.Buffer
	max int
}

func (c *chunks) Write(p []byte) (int, error) {
	c.max = max(c.max, len(p))
	return c.Buffer.Write(p)
}

func TestWriteStringLong(t *testing.T) {
	for _, s := range []string{
		strings.Repeat("a", 100_000),
		strings.Repeat("line\n\ttab \"q\" \xff é ", 20_000),
		strings.Repeat("x", 20_000) + "\n" + strings.Repeat("y", 30_000),
	} {
		var w chunks
		if err := WriteString(&w, s); err != nil {
			t.Fatal(err)
		}
		if want := AppendString(nil, s); !bytes.Equal(w.Bytes(), want) {
			t.Errorf("WriteString of %d bytes differs from AppendString", len(s))
		}
		if w.max > len(s)/2 && w.max > 64<<10 {
			t.Errorf("WriteString of %d bytes wrote %d at once", len(s), w.max)
		}
	}
}

// FuzzAppendString checks the escapes against encoding/json, which must
// read back the string with each invalid UTF-8 byte as U+FFFD, and
// WriteString against AppendString.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "a\"b\\c", "\x00\b\f\n\r\t\x1f\x7f", "é\U0001F600\u2028", "\xff\xe2\x82a", "\xed\xa0\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := AppendString(nil, s)
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("AppendString(%q) = %s, not JSON: %v", s, got, err)
		}
		var want strings.Builder
		for i := 0; i < len(s); {
			r, n := utf8.DecodeRuneInString(s[i:])
			want.WriteRune(r)
			i += n
		}
		if back != want.String() {
			t.Fatalf("AppendString(%q) = %s, reads back as %q, want %q", s, got, back, want.String())
		}
		var w bytes.Buffer
		if err := WriteString(&w, s); err != nil || !bytes.Equal(w.Bytes(), got) {
			t.Fatalf("WriteString(%q) = %s, %v; AppendString gives %s", s, w.Bytes(), err, got)
		}
	})
}
