package rules

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

// FuzzSplit: any text splits without a panic into non-empty units whose
// text stands in the message (spaces collapsed), and classifying it and
// extracting its rules never fails.
func FuzzSplit(f *testing.F) {
	for _, s := range []string{
		"Never push to main. Fix the build!",
		"## Testing\n- Run go test -race.\n  - nested (and a parenthesis of words)\n```\ncode\n```\nDon't commit.",
		"テストを実行してください。mainには直接プッシュしないこと。",
		"- `pom.xml`: managed. Do not change this file.",
		"> quoted\n1) one\n(2) two\n（3）三\n① 丸",
		"((((", "- ", "**x**:", "a.\u00a0b", "\x1b[2J never push",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 1<<16 {
			return
		}
		flat := collapse(strings.NewReplacer("\r", " ").Replace(s))
		for _, u := range Split(s) {
			if strings.TrimSpace(u.Text) == "" {
				t.Fatalf("Split(%q): an empty unit", s)
			}
			if utf8.ValidString(s) && !strings.Contains(flat, collapse(u.Text)) {
				t.Fatalf("Split(%q): unit %q is not in the message", s, u.Text)
			}
		}
		for _, r := range Extract([]Message{{EntryID: "e", Text: s}}) {
			if utf8.ValidString(s) && !strings.Contains(flat, collapse(r.Sentence)) {
				t.Fatalf("Extract(%q): rule %q is not in the message", s, r.Sentence)
			}
		}
	})
}

// FuzzDecode: a damaged model file is an error, never a panic.
func FuzzDecode(f *testing.F) {
	f.Add(modelBin[:min(len(modelBin), 200)])
	f.Add([]byte("PIRULES1"))
	f.Add([]byte("PIRULES1\x00\x00\x00\x3f\x00\x00\x80\x3f\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Decode(data)
		if err == nil {
			m.Predict(Features("never push to main", ""))
		} else if !strings.HasPrefix(err.Error(), "rules: model: ") {
			t.Fatalf("Decode: error %q does not name the model", err)
		}
	})
}

// FuzzParseSet: a damaged line of the labelled set is an error naming the
// file and the line, never a panic.
func FuzzParseSet(f *testing.F) {
	f.Add([]byte(`{"id":"en-0001","lang":"en","group":"g","source":"chat","label":"rule","kind":"imperative","text":"Never push.","lead":""}`))
	f.Add([]byte("{\"id\":1}\n"))
	f.Add([]byte("\n\n{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ex, err := ParseSet("x.jsonl", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "rules: x.jsonl:") {
				t.Fatalf("ParseSet: error %q does not name the file and line", err)
			}
			return
		}
		for _, e := range ex {
			if e.Class() < 0 || e.Text == "" {
				t.Fatalf("ParseSet accepted %+v", e)
			}
		}
	})
}

// TestModelRoundTrip: the embedded model decodes and encodes to the same
// bytes.
func TestModelRoundTrip(t *testing.T) {
	m, err := Decode(modelBin)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Encode(); string(got) != string(modelBin) {
		t.Errorf("Encode(Decode(model.bin)) differs: %d bytes, want %d", len(got), len(modelBin))
	}
	if m.Len() < 1000 {
		t.Errorf("the model has %d features", m.Len())
	}
}
