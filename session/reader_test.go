package session

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

const hdr = `{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}`

func ent(id, parent string) string {
	p := "null"
	if parent != "" {
		p = `"` + parent + `"`
	}
	return `{"type":"custom","id":"` + id + `","parentId":` + p + `,"timestamp":"2026-01-01T00:00:01.000Z","customType":"t"}`
}

func ids(entries []*Entry) []string {
	var out []string
	for _, e := range entries {
		out = append(out, e.ID)
	}
	return out
}

func diagStrings(ds []Diagnostic) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Error())
	}
	return out
}

func TestParseDiagnostics(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines []string
		ids   []string
		diags []string
	}{
		{
			name:  "clean",
			lines: []string{hdr, ent("a", ""), ent("b", "a")},
			ids:   []string{"a", "b"},
		},
		{
			name:  "blank and whitespace lines",
			lines: []string{"", hdr, "  \t", ent("a", ""), "\r"},
			ids:   []string{"a"},
		},
		{
			name:  "invalid JSON",
			lines: []string{hdr, `{"type":"custom","id":"x",`, ent("a", ""), `not json`, `{"a":1}}`},
			ids:   []string{"a"},
			diags: []string{
				`session: line 2, column 27: invalid JSON: want object key: malformed line`,
				`session: line 4, column 2: invalid JSON: invalid character 'o' in literal null: malformed line`,
				`session: line 5, column 8: invalid JSON: unexpected '}' after JSON object: malformed line`,
			},
		},
		{
			name:  "bad strings and numbers",
			lines: []string{hdr, "{\"type\":\"custom\",\"id\":\"a\tb\"}", `{"type":"custom","id":"\x"}`, `{"n":01}`, `{"n":1.}`},
			diags: []string{
				`session: line 2, column 25: invalid JSON: control character 0x09 in string: malformed line`,
				`session: line 3, column 24: invalid JSON: invalid escape "\\x" in string: malformed line`,
				`session: line 4, column 7: invalid JSON: want ',' or '}' after object value, got '1': malformed line`,
				`session: line 5, column 6: invalid JSON: invalid number: malformed line`,
			},
		},
		{
			name:  "not objects",
			lines: []string{hdr, `null`, `[1,2]`, `"text"`, `0`},
			diags: []string{
				`session: line 2: not a JSON object: malformed line`,
				`session: line 3: not a JSON object: malformed line`,
				`session: line 4: not a JSON object: malformed line`,
				`session: line 5: not a JSON object: malformed line`,
			},
		},
		{
			name: "wrong member types",
			lines: []string{
				hdr,
				`{"id":"a"}`,
				`{"type":7,"id":"a"}`,
				`{"type":"custom"}`,
				`{"type":"custom","id":""}`,
				`{"type":"custom","id":"a","parentId":5}`,
				`{"type":"custom","id":"a","timestamp":1}`,
				`{"type":"message","id":"a"}`,
				`{"type":"message","id":"a","message":{"content":"x"}}`,
				`{"type":"compaction","id":"a","summary":"s"}`,
				`{"type":"compaction","id":"a","firstKeptEntryId":"b"}`,
				`{"type":"context_edit","id":"a","targetId":"b"}`,
				`{"type":"context_edit","id":"a","targetId":"b","replacement":{"text":"x"}}`,
				`{"type":"context_edit","id":"a","targetId":"b","replacement":"x"}`,
				`{"type":"custom_message","id":"a","content":5}`,
				`{"type":"label","id":"a"}`,
				`{"type":"session","id":"again"}`,
			},
			diags: []string{
				`session: line 2: missing "type", want a string: malformed line`,
				`session: line 3: "type" is a number, want a string: malformed line`,
				`session: line 4: custom entry: missing "id", want a string: malformed line`,
				`session: line 5: custom entry: "id" is empty: malformed line`,
				`session: line 6: custom entry: "parentId" is a number, want a string or null: malformed line`,
				`session: line 7: custom entry: "timestamp" is a number, want a string: malformed line`,
				`session: line 8: message entry: missing "message", want an object: malformed line`,
				`session: line 9: message entry: missing "message.role", want a string: malformed line`,
				`session: line 10: compaction entry: missing "firstKeptEntryId", want a string: malformed line`,
				`session: line 11: compaction entry: missing "summary", want a string: malformed line`,
				`session: line 12: context_edit entry: missing "replacement", want null or an object: malformed line`,
				`session: line 13: context_edit entry: missing "replacement.content", want a string or an array: malformed line`,
				`session: line 14: context_edit entry: "replacement" is a string, want null or an object: malformed line`,
				`session: line 15: custom_message entry: "content" is a number, want a string or an array: malformed line`,
				`session: line 16: label entry: missing "targetId", want a string: malformed line`,
				`session: line 17: second session header ignored: malformed line`,
			},
		},
		{
			name:  "tree defects",
			lines: []string{hdr, ent("a", ""), ent("b", "zz"), ent("a", "b"), ent("c", "c"), ent("d", "e"), ent("e", "d")},
			ids:   []string{"a", "b", "a", "c", "d", "e"},
			diags: []string{
				`session: line 3: parentId "zz" names no earlier entry: dangling parent`,
				`session: line 4: id "a" already used on line 2; the later entry wins: duplicate entry id`,
				`session: line 5: entry "c" is its own ancestor: parent cycle`,
				`session: line 6: parentId "e" names no earlier entry: dangling parent`,
				`session: line 7: entry "e" is its own ancestor: parent cycle`,
			},
		},
		{
			name:  "duplicate id closing a loop",
			lines: []string{hdr, ent("a", ""), ent("b", "a"), ent("a", "b")},
			ids:   []string{"a", "b", "a"},
			diags: []string{
				`session: line 4: id "a" already used on line 2; the later entry wins: duplicate entry id`,
				`session: line 4: entry "a" is its own ancestor: parent cycle`,
			},
		},
		{
			name:  "escaped keys and values",
			lines: []string{hdr, `{"t\u0079pe":"custom","id":"\u0061","parentId":null}`},
			ids:   []string{"a"},
		},
		{
			name:  "incomplete last line",
			lines: []string{hdr, ent("a", ""), `{"type":"custom","id":"b","par`},
			ids:   []string{"a"},
			diags: []string{`session: line 3, column 27: the last line is cut short (no newline): invalid JSON: unterminated string: malformed line`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse(strings.NewReader(strings.Join(tc.lines, "\n")))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tc.ids, ids(f.Entries)); diff != "" {
				t.Errorf("entry ids mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.diags, diagStrings(f.Diagnostics)); diff != "" {
				t.Errorf("diagnostics mismatch (-want +got):\n%s", diff)
			}
			for _, d := range f.Diagnostics {
				if d.Line < 1 || d.Line > len(tc.lines) {
					t.Errorf("diagnostic %q: Line = %d, want 1..%d", d, d.Line, len(tc.lines))
				}
			}
		})
	}
}

func TestDiagnosticSentinels(t *testing.T) {
	in := strings.Join([]string{hdr, "x", ent("a", "q"), ent("a", ""), ent("c", "c")}, "\n")
	f, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []error{ErrMalformed, ErrDanglingParent, ErrDuplicateID, ErrCycle}
	if len(f.Diagnostics) != len(want) {
		t.Fatalf("Diagnostics = %v, want %d", f.Diagnostics, len(want))
	}
	for i, d := range f.Diagnostics {
		if !errors.Is(d, want[i]) {
			t.Errorf("Diagnostics[%d] = %v, want it to wrap %v", i, d, want[i])
		}
	}
}

func TestNoHeader(t *testing.T) {
	for _, in := range []string{
		ent("a", ""),
		"[1]\n" + hdr,
		`{"type":"session"}`,
		`{"version":3}`,
	} {
		if _, err := Parse(strings.NewReader(in)); !errors.Is(err, ErrNoHeader) {
			t.Errorf("Parse(%q) error = %v, want ErrNoHeader", in, err)
		}
	}
	// Lines pi drops before the header do not matter.
	f, err := Parse(strings.NewReader("\nnot json\nnull\n" + hdr + "\n" + ent("a", "")))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if f.Header == nil || f.Header.ID != "s1" || f.Header.Line != 4 || len(f.Entries) != 1 {
		t.Errorf("Parse = header %+v, %d entries; want header s1 on line 4 and 1 entry", f.Header, len(f.Entries))
	}
}

func TestHeader(t *testing.T) {
	in := `{"type":"session","version":3,"id":"u1","timestamp":"2026-11-30T08:27:57.102Z","cwd":"/tmp/w","parentSession":"/p.jsonl"}`
	f, err := Parse(strings.NewReader(in + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := &Header{Version: 3, ID: "u1", Timestamp: "2026-11-30T08:27:57.102Z", Cwd: "/tmp/w", ParentSession: "/p.jsonl", Line: 1, Raw: []byte(in)}
	if diff := cmp.Diff(want, f.Header); diff != "" {
		t.Errorf("Header mismatch (-want +got):\n%s", diff)
	}
}

// TestChunking checks that how the input arrives does not change the result.
func TestChunking(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("testdata", "damaged.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	whole, err := Parse(strings.NewReader(string(in)))
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]io.Reader{
		"one byte": iotest.OneByteReader(strings.NewReader(string(in))),
		"half":     iotest.HalfReader(strings.NewReader(string(in))),
		"data+EOF": iotest.DataErrReader(strings.NewReader(string(in))),
	} {
		f, err := Parse(r)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if diff := cmp.Diff(whole.Entries, f.Entries, cmp.AllowUnexported(Entry{}, span{})); diff != "" {
			t.Errorf("%s: entries mismatch (-whole +chunked):\n%s", name, diff)
		}
		if diff := cmp.Diff(diagStrings(whole.Diagnostics), diagStrings(f.Diagnostics)); diff != "" {
			t.Errorf("%s: diagnostics mismatch (-whole +chunked):\n%s", name, diff)
		}
	}
}

// TestLongLine reads a line far longer than the read buffer.
func TestLongLine(t *testing.T) {
	big := strings.Repeat("x", 5*arenaSize+123)
	in := hdr + "\n" + ent("a", "") + "\n" +
		`{"type":"message","id":"b","parentId":"a","message":{"role":"toolResult","content":[{"type":"text","text":"` + big + `"}]}}` + "\n" +
		ent("c", "b") + "\n"
	f, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, ids(f.Entries)); diff != "" {
		t.Fatalf("ids mismatch (-want +got):\n%s", diff)
	}
	b := f.Entries[1]
	if b.Role != "toolResult" || len(b.Raw) < len(big) || b.Line != 3 {
		t.Errorf("long entry: role %q, %d bytes, line %d", b.Role, len(b.Raw), b.Line)
	}
	if got := f.Entries[2].Offset; got != int64(len(in)-len(ent("c", "b"))-1) {
		t.Errorf("Offset of line 4 = %d, want %d", got, len(in)-len(ent("c", "b"))-1)
	}
	msgs := Project(must(f.Branch("")))
	if len(msgs) != 1 || msgs[0].Tokens() != (len(big)+3)/4 {
		t.Errorf("Project = %d messages, tokens %d; want 1 with %d", len(msgs), msgs[0].Tokens(), (len(big)+3)/4)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
