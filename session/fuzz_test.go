package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// Seeds beyond testdata/fuzz/: a few lines of each fixture and edge cases.
func fuzzSeeds(f *testing.F, add func(string)) {
	for _, l := range []string{
		hdr,
		ent("a", ""),
		`{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"x"}}`,
		`{"type":"future","id":"f","parentId":"a","payload":{"deep":[[[{"x":1e400}]]],"s":"\ud800\u2028"}}`,
		`{"t\u0079pe":"custom","id":"\u0061","id":"b"}`,
		`{"type":"context_edit","id":"e","parentId":"a","targetId":"a","replacement":{"content":[{"type":"text","text":"y"}]}}`,
		`{"type":"compaction","id":"c","parentId":"a","summary":"S","firstKeptEntryId":"c","tokensBefore":1}`,
		"{\"type\":\"custom\",\"id\":\"a\tb\"}",
		`[1,{"a":[]},"x",true,null,-0.5e-3]`,
		`{"a":"\u00zz"}`,
		"  {}  \r",
		`{"type":"message","id":"m","message":{"role":"hookMessage","content":null}}`,
	} {
		add(l)
	}
}

// FuzzScanLine checks the line scanner against encoding/json: the same
// lines are valid, and the members it picks out decode to the same values.
func FuzzScanLine(f *testing.F) {
	fuzzSeeds(f, func(s string) { f.Add([]byte(s)) })
	f.Fuzz(func(t *testing.T, line []byte) {
		if bytes.IndexByte(line, '\n') >= 0 {
			return // lines never hold a newline
		}
		kind, fields, err := scanLine(line)
		blank := len(skipSpaceBytes(line)) == 0
		valid := json.Valid(line)
		switch {
		case blank:
			if kind != lineBlank {
				t.Fatalf("scanLine(%q) = %v, want blank", line, kind)
			}
			return
		case valid != (kind >= lineFalsy):
			t.Fatalf("scanLine(%q) = kind %v, err %v; json.Valid = %v", line, kind, err, valid)
		case kind == lineInvalid:
			var se *syntaxError
			if !errors.As(err, &se) || se.pos < 0 || se.pos > len(line) {
				t.Fatalf("scanLine(%q) error %v: want a syntax error inside the line", line, err)
			}
			return
		case kind != lineObject:
			return
		}
		var want map[string]json.RawMessage
		if err := json.Unmarshal(line, &want); err != nil {
			return // e.g. a duplicate key spelled differently; encoding/json folds case
		}
		for name, s := range map[string]span{"type": fields.typ, "id": fields.id, "parentId": fields.parentID, "timestamp": fields.timestamp} {
			raw, ok := want[name]
			if ok != s.ok() {
				// encoding/json matches keys case-insensitively; JSON.parse does not.
				if caseFolded(want, name) {
					continue
				}
				t.Fatalf("scanLine(%q): %s present = %v, want %v", line, name, s.ok(), ok)
			}
			if !ok {
				continue
			}
			if !bytes.Equal(line[s.start:s.end], raw) && !caseFolded(want, name) {
				t.Fatalf("scanLine(%q): %s = %s, want %s", line, name, line[s.start:s.end], raw)
			}
			var ws, gs string
			if json.Unmarshal(raw, &ws) == nil && s.isString(line) {
				if gs = s.str(line); gs != ws && utf8.ValidString(ws) && !strings.Contains(ws, "\uFFFD") {
					t.Fatalf("scanLine(%q): %s decodes to %q, want %q", line, name, gs, ws)
				}
			}
		}
	})
}

// caseFolded reports whether m has a key other than name that equals it
// under case folding (encoding/json would mix them up).
func caseFolded(m map[string]json.RawMessage, name string) bool {
	for k := range m {
		if k != name && strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}

// FuzzParse reads arbitrary session files and checks the reader's
// promises: no panic, diagnostics inside the file in line order, entries
// that are JSON objects kept byte for byte (unknown types round-trip
// through Decode), the same result however the input is split, and
// branches, projections and estimates that never fail but on cycles.
func FuzzParse(f *testing.F) {
	fuzzSeeds(f, func(s string) { f.Add([]byte(hdr + "\n" + s + "\n")) })
	f.Add([]byte(hdr + "\n" + ent("a", "") + "\n" + ent("b", "a") + "\n" + ent("a", "b") + "\n"))
	f.Add([]byte(`{"type":"session","id":"v1"}` + "\n" + `{"type":"message","message":{"role":"user","content":"x"}}` + "\n" + `{"type":"compaction","summary":"s","firstKeptEntryIndex":1}`))
	// The cases of the diagnostics fixtures, in small.
	f.Add([]byte("\xef\xbb\xbf" + hdr + "\n" + ent("a", "") + "\n"))
	f.Add([]byte(`{"type":"session","version":3}` + "\n"))
	f.Add([]byte(hdr + "\n" + `{"type":"message","id":"a","parentId":null,"timestamp":"yesterday-ish","message":{"role":"user","content":42}}` + "\n"))
	f.Add([]byte(hdr + "\n" + `{"type":"compaction","id":"c","parentId":null,"summary":"s","firstKeptEntryId":"x"}` + "\n" + `{"type":"context_edit","id":"e","parentId":"c","targetId":"y","replacement":null}`))
	f.Add([]byte(hdr + "\n" + `{"type":"custom","id":"d","data":` + strings.Repeat("[", 3000) + strings.Repeat("]", 3000) + "}\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		lines := bytes.Count(data, []byte("\n")) + 1
		file, err := Parse(bytes.NewReader(data))
		if err != nil {
			var d Diagnostic
			if !errors.Is(err, ErrNoHeader) || !errors.As(err, &d) || d.Line < 1 || d.Line > lines || len(err.Error()) > maxDiagnosticText {
				t.Fatalf("Parse error %.300q, want a bounded Diagnostic wrapping ErrNoHeader with a line", err)
			}
			return
		}
		prev := 0
		if n := len(file.Diagnostics); n > MaxDiagnostics {
			t.Fatalf("%d diagnostics kept, want at most %d", n, MaxDiagnostics)
		}
		for _, d := range file.AllDiagnostics() {
			if d.Line < 1 || d.Line > lines || d.Line < prev || d.Offset < 0 || d.Offset > int64(len(data)) {
				t.Fatalf("diagnostic %q at line %d offset %d: outside the file (%d lines) or out of order", d, d.Line, d.Offset, lines)
			}
			where := fmt.Sprintf("session: line %d: ", d.Line)
			if d.Column > 0 {
				where = fmt.Sprintf("session: line %d, column %d: ", d.Line, d.Column)
				if !errors.Is(d, ErrMalformed) || d.Column > utf8.RuneCount(data)+1 {
					t.Fatalf("diagnostic %q: a column for what is not invalid JSON, or past the file", d)
				}
			}
			if !strings.HasPrefix(d.Error(), where) {
				t.Fatalf("diagnostic %q lacks its line", d)
			}
			if len(d.Error()) > maxDiagnosticText {
				t.Fatalf("diagnostic of %d bytes: %.300q", len(d.Error()), d.Error())
			}
			prev = d.Line
		}
		migrated := file.Header != nil && file.Header.Version < CurrentVersion
		for _, e := range file.Entries {
			if !json.Valid(e.Raw) || e.Raw[0] != '{' || e.Line < 1 || e.Line > lines {
				t.Fatalf("entry %+v: Raw is no JSON object or line out of range", e)
			}
			if !migrated && e.Role != "hookMessage" {
				original := bytes.TrimSpace(data[e.Offset:])
				if !bytes.HasPrefix(original, e.Raw) {
					t.Fatalf("entry on line %d: Raw %s is not the line as written", e.Line, e.Raw)
				}
			}
			p, err := e.Decode()
			if u, ok := p.(*UnknownEntry); ok && !bytes.Equal(u.Raw, e.Raw) {
				t.Fatalf("Decode of unknown %q: Raw %s, want %s", e.Type, u.Raw, e.Raw)
			}
			_ = err // typed decoding may reject members the reader does not check
		}

		// Reading byte by byte gives the same.
		again, err := Parse(iotest.OneByteReader(bytes.NewReader(data)))
		if err != nil {
			t.Fatalf("Parse byte by byte: %v", err)
		}
		if want, got := entryKeys(file.Entries), entryKeys(again.Entries); !slices.Equal(want, got) {
			t.Fatalf("entries differ when read byte by byte:\n%s", cmp.Diff(want, got))
		}

		// Following a file written in two steps gives the same, unless the
		// first step ends in a whole object that the second continues on
		// the same line (pi never writes that).
		cut := len(data) / 2
		tail := data[bytes.LastIndexByte(data[:cut], '\n')+1 : cut]
		if k, _, _ := scanLine(tail); k != lineObject {
			src := &growing{data: data, n: cut}
			r := NewReader(src)
			var got []*Entry
			for pass := 0; pass < 2; pass++ {
				for {
					e, err := r.Next()
					if err == io.EOF {
						break
					}
					if err != nil {
						return // no header in the first half
					}
					got = append(got, e)
				}
				src.n = len(data)
			}
			if want, got := entryKeys(file.Entries), entryKeys(got); !slices.Equal(want, got) {
				t.Fatalf("entries differ when followed in two steps:\n%s", cmp.Diff(want, got))
			}
		}

		cycles := false
		for _, d := range file.Diagnostics {
			cycles = cycles || errors.Is(d, ErrCycle)
		}
		for _, e := range file.Entries {
			branch, err := file.Branch(e.ID)
			if err != nil {
				if errors.Is(err, ErrCycle) && cycles {
					continue
				}
				t.Fatalf("Branch(%q): %v", e.ID, err)
			}
			msgs := Project(branch)
			for _, m := range msgs {
				if !json.Valid(m.Raw) {
					t.Fatalf("projected message not JSON: %s", m.Raw)
				}
			}
			for _, raw := range LLMMessages(msgs) {
				if !json.Valid(raw) {
					t.Fatalf("LLM message not JSON: %s", raw)
				}
			}
			if n := EstimateTokens(msgs); n < 0 {
				t.Fatalf("EstimateTokens = %d", n)
			}
			_ = EstimateContextTokens(branch, msgs)
			_ = CurrentSettings(branch)
		}
	})
}

// maxDiagnosticText bounds a diagnostic's text: every value it repeats is
// cut by clip.Echo.
const maxDiagnosticText = 2000

// entryKeys renders entries for a cheap comparison.
func entryKeys(entries []*Entry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = fmt.Sprintf("%s|%s|%s|%s|%s|%d|%d|%v|%v|%s", e.Type, e.ID, e.ParentID, e.Timestamp, e.Role, e.Line, e.Offset, e.msg, e.nullContent, e.Raw)
	}
	return out
}

// growing is a reader over data[:n]; n can grow between reads, like a file
// being written.
type growing struct {
	data   []byte
	n, pos int
}

func (g *growing) Read(p []byte) (int, error) {
	if g.pos >= g.n {
		return 0, io.EOF
	}
	k := copy(p, g.data[g.pos:g.n])
	g.pos += k
	return k, nil
}
