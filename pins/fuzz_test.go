package pins

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pi-session/pi-session/clip"
	"github.com/pi-session/pi-session/session"
)

// FuzzCheck: what Check accepts is trimmed, free of control characters,
// at most MaxChars long, and accepted again unchanged.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{"Never push to main.", " a\r\nb ", "", "\x1b[2J", "\u009b", strings.Repeat("é", 2001), "\xff\xfe", "x\n\n\ty"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := Check(s)
		if err != nil {
			return
		}
		if got == "" || strings.ContainsFunc(got, clip.IsControl) || strings.ContainsRune(got, '\r') || utf8.RuneCountInString(got) > MaxChars {
			t.Fatalf("Check(%q) = %q", s, got)
		}
		if again, err := Check(got); err != nil || again != got {
			t.Fatalf("Check(Check(%q)) = %q, %v; want %q", s, again, err, got)
		}
	})
}

// FuzzReplay: any data of pin and unpin entries replays without a panic
// into pins that Check accepts, never more than there are pin entries,
// each text at most once.
func FuzzReplay(f *testing.F) {
	for _, s := range [][2]string{
		{`{"text":"Never push to main."}`, `{"pin":"p1"}`},
		{`{"text":"a"}`, `{"pin":"p2"}`},
		{`{"text":42}`, `[]`},
		{`"x"`, `{"pin":7}`},
		{`{"text":"\u001b"}`, `{}`},
		{`{"text":"a","from":"/s.jsonl","text":"b"}`, `{"pin":"p1","pin":"p2"}`},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pin, unpin string) {
		lines := []string{`{"type":"session","version":3,"id":"s","timestamp":"2026-12-01T10:00:00.000Z","cwd":"/w"}`}
		parent := "null"
		for i, e := range []struct{ id, typ, data string }{
			{"p1", PinType, pin}, {"p2", PinType, pin}, {"u1", UnpinType, unpin}, {"p3", PinType, `{"text":"fixed"}`}, {"u2", UnpinType, unpin},
		} {
			lines = append(lines, `{"type":"custom","id":"`+e.id+`","parentId":`+parent+`,"timestamp":"2026-12-01T10:0`+string(rune('1'+i))+`:00.000Z","customType":"`+e.typ+`","data":`+e.data+`}`)
			parent = `"` + e.id + `"`
		}
		file, err := session.Parse(strings.NewReader(strings.Join(lines, "\n") + "\n"))
		if err != nil {
			t.Fatal(err)
		}
		branch, err := file.Branch("")
		if err != nil {
			return
		}
		list, _ := Replay(branch)
		if len(list) > 3 {
			t.Fatalf("%d pins from 3 pin entries", len(list))
		}
		seen := map[string]bool{}
		for _, p := range list {
			if got, err := Check(p.Text); err != nil || got != p.Text || seen[p.Text] {
				t.Fatalf("pin %q: Check %q, %v; repeated %v", p.Text, got, err, seen[p.Text])
			}
			seen[p.Text] = true
		}
	})
}
