package recap

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-session/pi-session/golden"
	"github.com/pi-session/pi-session/session"
)

func open(t testing.TB, name string) *session.File {
	t.Helper()
	f, err := session.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestGoldenRequests renders the request for the whole branch of each
// fixture: kinds.jsonl has every entry kind the transcript treats (images,
// thinking, tool errors, context edits that replace and drop, extension
// messages and data, recap entries, ! and !! shell commands, a cancelled
// command, an error stop); tools.jsonl was recorded from real pi 1.6.
func TestGoldenRequests(t *testing.T) {
	for _, name := range []string{"kinds", "tools"} {
		t.Run(name, func(t *testing.T) {
			p, err := Prepare(open(t, name+".jsonl"), Run{})
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.MarshalIndent(p.Fallback, "", "  ")
			got := fmt.Sprintf("=== system prompt\n%s\n=== user message\n%s\n=== fallback\n%s\n=== entries %d, bytes %d, cut %v, redactions %d\n",
				p.SystemPrompt, p.UserMessage, b, p.Entries, p.TranscriptBytes, p.Cut, p.Redactions)
			golden.Check(t, filepath.Join("testdata", name+".golden"), got)
		})
	}
}

func TestSerializeRules(t *testing.T) {
	p, err := Prepare(open(t, "kinds.jsonl"), Run{})
	if err != nil {
		t.Fatal(err)
	}
	msg := p.UserMessage
	for _, want := range []string{
		"USER: Fix the failing test in parser_test.go.",
		"TOOL CALL bash: {",
		`"NPM_TOKEN":"[REDACTED]"`,
		"TOOL RESULT bash (error): --- FAIL: TestParse",
		"TOOL RESULT read: [read output trimmed by an extension]",
		"EXTENSION lint-hint: gofmt would change parser.go",
		`EXTENSION deploy-state: {"target":"staging","apiKey":"[REDACTED]","attempt":2}`,
		"USER SHELL (exit 0): $ git diff --stat",
		"USER SHELL (cancelled): $ sleep 100",
		"EXTENSION note: remember: staging only",
		"ASSISTANT (error): 429 Too Many Requests",
		"ASSISTANT: Fixed: Parse now splits on every comma.",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("transcript lacks %q:\n%s", want, msg)
		}
	}
	for _, never := range []string{
		"secret plan",                    // thinking
		"iVBORw0KGgo",                    // image data
		"Temporary note",                 // dropped by a context edit
		"package parser",                 // replaced by a context edit
		"An earlier recap",               // recap entries
		"kept from models",               // !! output
		"secret-stuff",                   // !! command
		"npm_hDavJA76rNicHTp8hkqdlm7tOt", // a token in tool arguments
		"Zq7Wm3Xp9Lk2Vn8Bc4Rt",           // an apiKey in extension data
		"You are a coding assistant",     // the system message
	} {
		if strings.Contains(msg, never) {
			t.Errorf("transcript holds %q:\n%s", never, msg)
		}
	}
}

func TestSelect(t *testing.T) {
	f := open(t, "kinds.jsonl")
	ids := func(es []*session.Entry) string {
		var out []string
		for _, e := range es {
			out = append(out, e.ID)
		}
		return strings.Join(out, " ")
	}
	str := func(s string) *string { return &s }
	tests := []struct {
		name string
		run  Run
		want string
		err  error
	}{
		{"after a baseline, exclusive", Run{After: str("e0000017")}, "e0000018 e0000019 e0000020", nil},
		{"after the leaf: nothing", Run{After: str("e0000020")}, "", nil},
		{"no baseline: the whole branch", Run{LeafID: "e0000003"}, "e0000001 e0000002 e0000003", nil},
		{"last run: from the last user message", Run{Last: true}, "e0000004 e0000005 e0000006 e0000007 e0000008 e0000009 e0000010 e0000011 e0000012 e0000013 e0000014 e0000015 e0000016 e0000017 e0000018 e0000019 e0000020", nil},
		{"baseline off the branch", Run{LeafID: "e0000005", After: str("e0000010")}, "", ErrBaselineGone},
		{"baseline unknown", Run{After: str("nope")}, "", ErrBaselineGone},
		{"leaf unknown", Run{LeafID: "nope"}, "", session.ErrUnknownEntry},
	}
	for _, tt := range tests {
		run, _, err := Select(f, tt.run)
		if !errors.Is(err, tt.err) || ids(run) != tt.want {
			t.Errorf("%s: Select = %q, %v; want %q, %v", tt.name, ids(run), err, tt.want, tt.err)
		}
	}
	p, err := Prepare(f, Run{After: str("nope")})
	if err != nil || !p.Gone {
		t.Errorf("Prepare with a vanished baseline = %+v, %v; want Gone", p, err)
	}
	p, err = Prepare(f, Run{After: str("e0000020")})
	if err != nil || !p.Empty || p.UserMessage != "" {
		t.Errorf("Prepare after the leaf = %+v, %v; want Empty", p, err)
	}
	// A run of only a recap entry and a label has nothing to recap.
	p, err = Prepare(f, Run{LeafID: "e0000013", After: str("e0000012")})
	if err != nil || !p.Empty {
		t.Errorf("Prepare of a recap entry alone = %+v, %v; want Empty", p, err)
	}
}

// bigRun is a session whose one run has results of the given texts.
func bigRun(t testing.TB, user string, args []string, results []string, final string) *session.File {
	t.Helper()
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	var lines []string
	lines = append(lines, `{"type":"session","version":3,"id":"s","timestamp":"2026-12-01T10:00:00.000Z","cwd":"/w"}`)
	n := 0
	add := func(body string) {
		n++
		parent := "null"
		if n > 1 {
			parent = fmt.Sprintf(`"%08x"`, n-1)
		}
		lines = append(lines, fmt.Sprintf(`{"type":"message","id":"%08x","parentId":%s,"timestamp":"2026-12-01T10:00:01.000Z","message":%s}`, n, parent, body))
	}
	add(`{"role":"user","content":` + q(user) + `,"timestamp":1}`)
	for i, r := range results {
		a := `{"command":"step"}`
		if i < len(args) {
			a = args[i]
		}
		add(fmt.Sprintf(`{"role":"assistant","content":[{"type":"toolCall","id":"c%d","name":"bash","arguments":%s}],"stopReason":"toolUse","timestamp":2}`, i, a))
		add(fmt.Sprintf(`{"role":"toolResult","toolCallId":"c%d","toolName":"bash","content":[{"type":"text","text":%s}],"isError":false,"timestamp":3}`, i, q(r)))
	}
	add(`{"role":"assistant","content":[{"type":"text","text":` + q(final) + `}],"stopReason":"stop","timestamp":4}`)
	f, err := session.Parse(strings.NewReader(strings.Join(lines, "\n") + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func transcriptOf(t testing.TB, f *session.File) string {
	t.Helper()
	run, branch, err := Select(f, Run{})
	if err != nil {
		t.Fatal(err)
	}
	return Serialize(run, branch).Text
}

func TestCaps(t *testing.T) {
	// A result over ResultCap is cut, with a notice naming its size.
	long := strings.Repeat("0123456789abcdef ", 6000) // 102000 bytes
	text := transcriptOf(t, bigRun(t, "go", nil, []string{long}, "ok"))
	if !strings.Contains(text, "[tool result cut at 5000 bytes; 102000 bytes in all]") {
		t.Errorf("no notice for a 102000-byte result:\n%.300s", text)
	}
	part := text[strings.Index(text, "TOOL RESULT bash: ")+len("TOOL RESULT bash: "):]
	part = part[:strings.Index(part, "\n[tool result cut")]
	if len(part) > ResultCap {
		t.Errorf("result text is %d bytes, want at most %d", len(part), ResultCap)
	}
	// Arguments over ArgsCap.
	args := `{"command":` + strings.Repeat(`"`, 0) + fmt.Sprintf("%q", strings.Repeat("echo x; ", 1000)) + `}`
	text = transcriptOf(t, bigRun(t, "go", []string{args}, []string{"ok"}, "ok"))
	if !strings.Contains(text, fmt.Sprintf("[tool arguments cut at 2000 bytes; %d bytes in all]", len(args))) {
		t.Errorf("no notice for %d bytes of arguments:\n%.300s", len(args), text)
	}
	// The whole transcript: head and tail around a marker.
	var results []string
	for i := range 30 {
		results = append(results, fmt.Sprintf("result %02d ", i)+strings.Repeat("z", 4000))
	}
	f := bigRun(t, "first request", nil, results, "the final answer")
	run, branch, _ := Select(f, Run{})
	tr := Serialize(run, branch)
	if !tr.Cut || len(tr.Text) > TranscriptCap {
		t.Fatalf("transcript of %d bytes: cut %v, %d bytes; want cut to at most %d", tr.Bytes, tr.Cut, len(tr.Text), TranscriptCap)
	}
	m := strings.Index(tr.Text, "\n\n[… ")
	if m < 0 {
		t.Fatalf("no marker in the cut transcript")
	}
	if share := float64(m) / float64(len(tr.Text)); share < 0.55 || share > 0.59 {
		t.Errorf("the head is %.3f of the transcript, want about %d%%", share, HeadPercent)
	}
	for _, want := range []string{"USER: first request", "result 00", "ASSISTANT: the final answer", fmt.Sprintf("bytes of the run left out here …]")} {
		if !strings.Contains(tr.Text, want) {
			t.Errorf("cut transcript lacks %q", want)
		}
	}
	if strings.Contains(tr.Text, "result 15 ") {
		t.Errorf("the middle of the run survived the cut")
	}
}

// TestCutsExposeNoHalfSecret puts secrets across every cap and cut: the
// result cap, the arguments cap and the transcript's head and tail cuts.
func TestCutsExposeNoHalfSecret(t *testing.T) {
	const token = "ghp_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d"
	for shift := -30; shift <= 30; shift += 3 {
		// Across the result cap.
		r := strings.Repeat("r", ResultCap+shift-20) + " " + token + " tail"
		if text := transcriptOf(t, bigRun(t, "go", nil, []string{r}, "ok")); leaked(text, token) {
			t.Errorf("shift %d: a token across the result cap leaks:\n%s", shift, excerpt(text, token))
		}
		key := "x " + strings.Repeat("k", ResultCap+shift-40) + "\n" + pemRSA
		if text := transcriptOf(t, bigRun(t, "go", nil, []string{key}, "ok")); leaked(text, "MIIEowIBAAKCAQEAv3xNqmT1kXq8yZ0pJ5rLw2aBcDeFgHiJkLmNoPqRsTuVwXyZ") {
			t.Errorf("shift %d: a private key across the result cap leaks", shift)
		}
		// Across the arguments cap.
		a := fmt.Sprintf(`{"command":%q}`, strings.Repeat("a", ArgsCap+shift-30)+" PASSWORD=Tr0ub4dor-Horse-99 x")
		if text := transcriptOf(t, bigRun(t, "go", []string{a}, []string{"ok"}, "ok")); leaked(text, "Tr0ub4dor-Horse-99") {
			t.Errorf("shift %d: a password across the arguments cap leaks:\n%s", shift, excerpt(text, "Tr0ub4dor"))
		}
	}
	// Across the transcript's head cut and tail cut: user messages, which
	// are not capped on their own, with a token at every position.
	for shift := 0; shift < 60; shift += 7 {
		head := TranscriptCap * HeadPercent / 100
		user := strings.Repeat("u", head-120+shift) + " " + token + " " + strings.Repeat("v", 80000)
		f := bigRun(t, user, nil, nil, strings.Repeat("w", 19950-shift)+" "+token+" end")
		if text := transcriptOf(t, f); leaked(text, token) {
			t.Errorf("shift %d: a token across the transcript cut leaks:\n%s", shift, excerpt(text, token))
		}
	}
}

func readTestdata(name string) ([]byte, error) { return os.ReadFile(filepath.Join("testdata", name)) }

// runsSession holds three runs: a greeting; the build log, with a message
// the user steered in while it ran; a thanks. A compaction sits between
// the second and the third (a relay), which renders nothing.
const runsSession = `{"type":"session","version":3,"id":"s","timestamp":"2026-12-01T10:00:00.000Z","cwd":"/w"}
{"type":"message","id":"u1","parentId":null,"timestamp":"2026-12-01T10:00:01.000Z","message":{"role":"user","content":"hello there","timestamp":1}}
{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-12-01T10:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"Hi."}],"stopReason":"stop","timestamp":2}}
{"type":"message","id":"u2","parentId":"a1","timestamp":"2026-12-01T10:00:03.000Z","message":{"role":"user","content":"show me the build log","timestamp":3}}
{"type":"message","id":"a2","parentId":"u2","timestamp":"2026-12-01T10:00:04.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"make"}}],"stopReason":"toolUse","timestamp":4}}
{"type":"message","id":"u3","parentId":"a2","timestamp":"2026-12-01T10:00:05.000Z","message":{"role":"user","content":"only the errors, please","timestamp":5}}
{"type":"message","id":"r1","parentId":"u3","timestamp":"2026-12-01T10:00:06.000Z","message":{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{"type":"text","text":"2 errors"}],"isError":false,"timestamp":6}}
{"type":"message","id":"a3","parentId":"r1","timestamp":"2026-12-01T10:00:07.000Z","message":{"role":"assistant","content":[{"type":"text","text":"Two errors."}],"stopReason":"stop","timestamp":7}}
{"type":"compaction","id":"k1","parentId":"a3","timestamp":"2026-12-01T10:00:08.000Z","summary":"note","firstKeptEntryId":"a3","tokensBefore":100}
{"type":"message","id":"u4","parentId":"k1","timestamp":"2026-12-01T10:00:09.000Z","message":{"role":"user","content":"thanks","timestamp":9}}
{"type":"message","id":"a4","parentId":"u4","timestamp":"2026-12-01T10:00:10.000Z","message":{"role":"assistant","content":[{"type":"text","text":"You are welcome."}],"stopReason":"stop","timestamp":10}}
`

// TestSerializeRuns: a batch of runs is marked run by run, so the request
// that started each run (not one steered in while it ran) opens it; one
// run, or starts that mark nothing, give no markers.
func TestSerializeRuns(t *testing.T) {
	f, err := session.Parse(strings.NewReader(runsSession))
	if err != nil {
		t.Fatal(err)
	}
	str := func(s string) *string { return &s }
	build := "USER: show me the build log\n\nTOOL CALL bash: {\"command\":\"make\"}\n\nUSER: only the errors, please\n\nTOOL RESULT bash: 2 errors\n\nASSISTANT: Two errors."
	for _, tt := range []struct {
		name string
		run  Run
		want string
	}{
		{"three runs, the last after a compaction", Run{Starts: []string{"a1", "k1"}},
			"--- run 1 of 3 ---\n\nUSER: hello there\n\nASSISTANT: Hi.\n\n--- run 2 of 3 ---\n\n" + build + "\n\n--- run 3 of 3 ---\n\nUSER: thanks\n\nASSISTANT: You are welcome."},
		{"two runs after a baseline", Run{After: str("a1"), Starts: []string{"a3"}},
			"--- run 1 of 2 ---\n\n" + build + "\n\n--- run 2 of 2 ---\n\nUSER: thanks\n\nASSISTANT: You are welcome."},
		{"a start that renders nothing before the next", Run{After: str("a1"), Starts: []string{"a3", "k1"}},
			"--- run 1 of 2 ---\n\n" + build + "\n\n--- run 2 of 2 ---\n\nUSER: thanks\n\nASSISTANT: You are welcome."},
		{"one run", Run{After: str("a1")}, build + "\n\nUSER: thanks\n\nASSISTANT: You are welcome."},
		{"starts off the run", Run{After: str("a3"), Starts: []string{"a1", "nope", "a4"}}, "USER: thanks\n\nASSISTANT: You are welcome."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Prepare(f, tt.run)
			if err != nil {
				t.Fatal(err)
			}
			got := strings.TrimSuffix(strings.TrimPrefix(p.UserMessage, "<recent_work>\n"), "\n</recent_work>\n\nWrite the recap JSON for the work above.")
			if got != tt.want {
				t.Errorf("transcript:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}
