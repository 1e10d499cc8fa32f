package pins

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pi-session/pi-session/session"
)

type table struct {
	Check []struct {
		In        string `json:"in"`
		Repeat    int    `json:"repeat"`
		Out       string `json:"out"`
		OutRepeat int    `json:"outRepeat"`
		Err       Kind   `json:"err"`
		At        int    `json:"at"`
		Char      string `json:"char"`
		Chars     int    `json:"chars"`
	} `json:"check"`
	Listing []struct {
		Pins []string `json:"pins"`
		Out  string   `json:"out"`
	} `json:"listing"`
}

func readTable(t *testing.T) table {
	t.Helper()
	b, err := os.ReadFile("testdata/check.json")
	if err != nil {
		t.Fatal(err)
	}
	var tb table
	if err := json.Unmarshal(b, &tb); err != nil {
		t.Fatal(err)
	}
	if len(tb.Check) == 0 || len(tb.Listing) == 0 {
		t.Fatal("testdata/check.json has no cases")
	}
	return tb
}

func rep(s string, n int) string {
	if n == 0 {
		return s
	}
	return strings.Repeat(s, n)
}

// TestCheck: the table the extension's tests read too.
func TestCheck(t *testing.T) {
	for _, c := range readTable(t).Check {
		in := rep(c.In, c.Repeat)
		got, err := Check(in)
		var bad *BadText
		switch {
		case c.Err == "":
			if err != nil || got != rep(c.Out, c.OutRepeat) {
				t.Errorf("Check(%.40q) = %.40q, %v; want %.40q", in, got, err, rep(c.Out, c.OutRepeat))
			}
		case !errors.As(err, &bad):
			t.Errorf("Check(%.40q) = %.40q, %v; want a %s error", in, got, err, c.Err)
		default:
			want := BadText{Kind: c.Err, At: c.At, Char: c.Char, Chars: c.Chars}
			if d := cmp.Diff(want, *bad); d != "" {
				t.Errorf("Check(%.40q) error (-want +got):\n%s", in, d)
			}
		}
	}
}

func TestBadTextMessages(t *testing.T) {
	for _, tt := range []struct {
		in, want string
	}{
		{" ", "pins: the pin is empty"},
		{"a\x1bb", `pins: the pin holds a control character (\x1b at character 2)`},
		{strings.Repeat("x", 2001), "pins: the pin is 2001 characters, over the limit of 2000"},
	} {
		if _, err := Check(tt.in); err == nil || err.Error() != tt.want {
			t.Errorf("Check(%.20q) error = %v, want %q", tt.in, err, tt.want)
		}
	}
}

func TestListing(t *testing.T) {
	for _, c := range readTable(t).Listing {
		if got := Listing(c.Pins); got != c.Out {
			t.Errorf("Listing(%q):\n%s\nwant:\n%s", c.Pins, got, c.Out)
		}
	}
	// A control character that got past Check (it cannot) is written out.
	if got := Listing([]string{"a\x1b[2Jb"}); !strings.Contains(got, `1. a\x1b[2Jb`) {
		t.Errorf("Listing of an escape sequence = %q, want it written out", got)
	}
}

func TestBullets(t *testing.T) {
	got := Bullets([]string{"Never push to main.", "Two lines:\n- a dash inside"})
	want := "- Never push to main.\n- Two lines:\n  - a dash inside\n"
	if got != want {
		t.Errorf("Bullets = %q, want %q", got, want)
	}
}

// branchOf parses a session and returns the branch ending at leaf.
func branchOf(t *testing.T, jsonl, leaf string) []*session.Entry {
	t.Helper()
	f, err := session.Parse(strings.NewReader(jsonl))
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.Branch(leaf)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// tree: the main line pins A, B, C, unpins B, pins A again (a repeat);
// a side branch from after A pins D. Hand-written entries of every bad
// kind sit on the main line too.
const tree = `{"type":"session","version":3,"id":"s1","timestamp":"2026-12-01T10:00:00.000Z","cwd":"/w"}
{"type":"message","id":"m1","parentId":null,"timestamp":"2026-12-01T10:01:00.000Z","message":{"role":"user","content":"Never push to main.","timestamp":1}}
{"type":"custom","id":"p1","parentId":"m1","timestamp":"2026-12-01T10:02:00.000Z","customType":"pi-session:pin","data":{"text":"Never push to main."}}
{"type":"custom","id":"p2","parentId":"p1","timestamp":"2026-12-01T10:03:00.000Z","customType":"pi-session:pin","data":{"text":"B: keep it","from":"/old/session.jsonl"}}
{"type":"custom","id":"x1","parentId":"p2","timestamp":"2026-12-01T10:03:30.000Z","customType":"other-extension:pin","data":{"text":"not ours"}}
{"type":"custom","id":"p3","parentId":"x1","timestamp":"2026-12-01T10:04:00.000Z","customType":"pi-session:pin","data":{"text":"C:\r\nline two  "}}
{"type":"custom","id":"u1","parentId":"p3","timestamp":"2026-12-01T10:05:00.000Z","customType":"pi-session:unpin","data":{"pin":"p2","text":"B: keep it"}}
{"type":"custom","id":"p4","parentId":"u1","timestamp":"2026-12-01T10:06:00.000Z","customType":"pi-session:pin","data":{"text":"Never push to main."}}
{"type":"custom","id":"b1","parentId":"p4","timestamp":"2026-12-01T10:07:00.000Z","customType":"pi-session:pin","data":{"text":"esc \u001b[2J"}}
{"type":"custom","id":"b2","parentId":"b1","timestamp":"2026-12-01T10:07:01.000Z","customType":"pi-session:pin","data":{"text":42}}
{"type":"custom","id":"b3","parentId":"b2","timestamp":"2026-12-01T10:07:02.000Z","customType":"pi-session:pin","data":"Never"}
{"type":"custom","id":"b4","parentId":"b3","timestamp":"2026-12-01T10:07:03.000Z","customType":"pi-session:unpin","data":{"pin":"p9"}}
{"type":"custom","id":"b5","parentId":"b4","timestamp":"2026-12-01T10:07:04.000Z","customType":"pi-session:unpin","data":{}}
{"type":"custom","id":"b6","parentId":"b5","timestamp":"2026-12-01T10:07:05.000Z","customType":"pi-session:pin","data":{"text":"   "}}
{"type":"custom","id":"d1","parentId":"p1","timestamp":"2026-12-01T10:08:00.000Z","customType":"pi-session:pin","data":{"text":"D, on the side branch"}}
`

func TestReplay(t *testing.T) {
	main, problems := Replay(branchOf(t, tree, "b6"))
	want := []Pin{
		{EntryID: "p1", Text: "Never push to main.", Time: "2026-12-01T10:02:00.000Z"},
		{EntryID: "p3", Text: "C:\nline two", Time: "2026-12-01T10:04:00.000Z"},
	}
	if d := cmp.Diff(want, main); d != "" {
		t.Errorf("Replay of the main line (-want +got):\n%s", d)
	}
	var got []string
	for _, p := range problems {
		got = append(got, p.String())
	}
	wantProblems := []string{
		`line 9: entry b1: the pin holds a control character (\x1b at character 5), which /pin refuses; skipped`,
		`line 10: entry b2: pin without a "text" string; skipped`,
		`line 11: entry b3: pi-session:pin entry without a data object; skipped`,
		`line 12: entry b4: unpin of p9, which is no pin of this branch; skipped`,
		`line 13: entry b5: unpin without a "pin" entry id; skipped`,
		`line 14: entry b6: the pin is empty, which /pin refuses; skipped`,
	}
	if d := cmp.Diff(wantProblems, got); d != "" {
		t.Errorf("problems (-want +got):\n%s", d)
	}

	// The side branch has A and D, never B or C: a pin on another branch
	// is not a pin of this one.
	side, problems := Replay(branchOf(t, tree, "d1"))
	if d := cmp.Diff([]string{"Never push to main.", "D, on the side branch"}, Texts(side)); d != "" || len(problems) != 0 {
		t.Errorf("Replay of the side branch (-want +got):\n%s\nproblems %v", d, problems)
	}
	// Before the unpin, B is current and says where it came from.
	before, _ := Replay(branchOf(t, tree, "p3"))
	if len(before) != 3 || before[1].From != "/old/session.jsonl" || Find(before, "B: keep it") != 2 {
		t.Errorf("Replay up to p3 = %+v, want A, B (from /old/session.jsonl), C", before)
	}
	if Find(before, "missing") != 0 {
		t.Errorf("Find of a text no pin holds is not 0")
	}
	if list, problems := Replay(nil); list != nil || problems != nil {
		t.Errorf("Replay(nil) = %v, %v", list, problems)
	}
}
