package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pi-session/pi-session/budget"
	"github.com/pi-session/pi-session/clip"
	"github.com/pi-session/pi-session/pitest"
)

// The sinks: every path by which text pi-session does not control (a
// session file, a config, a sidecar or handoff on disk, a status record,
// an engine's answer, an argument) reaches a terminal or a document. Each
// is fed the hostile texts below; what comes out must hold no control
// character but tab and newline and no byte that is not UTF-8 (clip.Visible
// in Go, sink.ts's visible in the extension), and an echo of a
// 10,000-character text must stay a short line. The extension's own sinks
// (notify, status, widget, log, tool errors) have their table in
// extension/pi-session/sink.test.ts, which also checks that no module
// writes to pi's UI or console but through them; the rows here run them
// through real pi.

// hostile are the texts each sink is fed.
var hostile = []struct{ name, text string }{
	{"terminal title (OSC 0, BEL)", "\x1b]0;PWNED\x07"},
	{"clear and home (CSI)", "\x1b[2J\x1b[H"},
	{"clipboard (OSC 52, ST)", "\x1b]52;c;SGk=\x1b\\"},
	{"8-bit CSI, as UTF-8", "\u009b31m"},
	{"8-bit CSI, a raw byte", "\x9b31m"},
	{"invalid UTF-8", "\xff\xfe\xc3("},
	{"carriage return, DEL", "\rover\x7f"},
}

// longEcho is the text of the echo rows: no error line may grow with it.
var longEcho = strings.Repeat("x", 10000)

// maxEchoLine bounds a line that echoes longEcho.
const maxEchoLine = 1000

// rawAt is the byte offset of the first thing in s a terminal would obey or
// misread: a control character but tab and newline, or a byte that is not
// UTF-8; -1 when there is none.
func rawAt(s string) int {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				return i
			}
		}
		if clip.IsControl(r) {
			return i
		}
	}
	return -1
}

// noRaw fails when out holds raw text.
func noRaw(t *testing.T, where, out string) {
	t.Helper()
	if i := rawAt(out); i >= 0 {
		t.Errorf("%s: raw %q at byte %d: …%q…", where, out[i:min(i+8, len(out))], i, out[max(0, i-60):min(len(out), i+40)])
	}
}

// jsonText is s as a JSON string with its bytes kept, as a hostile file
// holds it: control characters escaped (JSON allows no other way), bytes
// that are not UTF-8 left raw.
func jsonText(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20:
			fmt.Fprintf(&b, `\u%04x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// sinkFixture is a place with hostile text h in every file pi-session
// reads: a session file (model id, messages, a tool call's path and
// command, a tool result, a pin, an entry id), the budget's config, a
// status record, a handoff's arguments and a file they name.
type sinkFixture struct {
	text                               string // the hostile text
	dir, agent, session, args, badArgs string
	env                                []string
}

func newSinkFixture(t *testing.T, h string) *sinkFixture {
	t.Helper()
	dir := t.TempDir()
	f := &sinkFixture{text: h, dir: dir, agent: filepath.Join(dir, "agent"), session: filepath.Join(dir, "s.jsonl")}
	for _, d := range []string{f.agent, filepath.Join(f.agent, "context-budget", "status"), filepath.Join(dir, "work")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	j := func(s string) string { return jsonText(s) }
	ts := `"timestamp":"2026-11-30T09:00:00.000Z"`
	usage := `"api":"faux","provider":"faux","model":"faux-1","usage":{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":15,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}`
	lines := []string{
		`{"type":"session","version":3,"id":"sink-session",` + ts + `,"cwd":` + j(dir) + `}`,
		`{"type":"model_change","id":"e1","parentId":null,` + ts + `,"provider":"faux","modelId":` + j("m"+h) + `}`,
		`{"type":"message","id":"e2","parentId":"e1",` + ts + `,"message":{"role":"user","content":` + j("Never push "+h+" to main. Fix the bug "+h) + `,"timestamp":1}}`,
		`{"type":"message","id":"e3","parentId":"e2",` + ts + `,"message":{"role":"assistant","content":[{"type":"text","text":` + j("editing "+h) + `},` +
			`{"type":"toolCall","id":"c1","name":"edit","arguments":{"path":` + j(filepath.Join(dir, "src"+h+".go")) + `,"oldText":"a","newText":"b"}},` +
			`{"type":"toolCall","id":"c2","name":"bash","arguments":{"command":` + j("go test ./"+h) + `}}],` + usage + `,"stopReason":"toolUse","timestamp":2}}`,
		`{"type":"message","id":"e4","parentId":"e3",` + ts + `,"message":{"role":"toolResult","toolCallId":"c1","toolName":"edit","content":[{"type":"text","text":` + j("edited "+h) + `}],"isError":false,"timestamp":3}}`,
		`{"type":"message","id":"e5","parentId":"e4",` + ts + `,"message":{"role":"toolResult","toolCallId":"c2","toolName":"bash","content":[{"type":"text","text":` + j("FAIL "+h) + `}],"isError":true,"timestamp":4}}`,
		`{"type":"message","id":"bad","parentId":` + j("nowhere"+h) + `,` + ts + `,"message":{"role":` + j("role"+h) + `,"content":"x"}}`,
		`{"type":"custom","id":"e6","parentId":"e5",` + ts + `,"customType":"pi-session:pin","data":{"text":` + j("pin "+h) + `}}`,
		`{"type":"message","id":` + j("z"+h) + `,"parentId":"e6",` + ts + `,"message":{"role":"assistant","content":[{"type":"text","text":` + j("done "+h) + `}],` + usage + `,"stopReason":"stop","timestamp":5}}`,
	}
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(f.session, strings.Join(lines, "\n")+"\n")
	config := filepath.Join(dir, "context-budget.json")
	write(config, `{"models": {`+j("p/"+h)+`: {"main": {"soft": 0.5}}, `+j(h)+`: {}}, `+j(h)+`: 1, "mode": `+j(h)+`}`)
	record := `{"sessionId": "rec", "cwd": ` + j("/w/"+h) + `, "model": ` + j(h) + `, "role": "main", "lastHandoff": ` + j("/w/"+h+".md") +
		`, "effectiveMode": ` + j(h) + `, "configuredMode": ` + j(h) + `, "phase": ` + j(h) + `, "action": ` + j(h) + `, "pid": 2147483646, "updatedAt": "2026-01-02T03:04:05Z"}`
	write(filepath.Join(f.agent, "context-budget", "status", "rec.json"), record)
	write(filepath.Join(f.agent, "context-budget", "status", "other.json"), `{"sessionId": `+j("someone "+h)+`, "pid": 2147483646, "updatedAt": "2026-01-02T03:04:05Z"}`)
	named := filepath.Join(dir, "read"+h+".md")
	if err := os.WriteFile(named, []byte("x"), 0o600); err != nil {
		named = filepath.Join(dir, "read.md") // a byte no file name can hold
		write(named, "x")
	}
	f.args = filepath.Join(dir, "args.json")
	write(f.args, `{"goal": "fix the bug", "next_step": "run the tests", "facts": "HEAD is one commit", "files_to_read": [`+j(named)+`], "watch_actions": [{"id": "w1", "target": "ci", "on_complete": "merge"}]}`)
	f.badArgs = filepath.Join(dir, "bad-args.json")
	write(f.badArgs, `{"goal": `+j("g"+h)+`, "next_step": "n", "facts": "f", "files_to_read": [`+j("/nonexistent/"+h)+`], "launch_prompt": `+j("/nonexistent/"+h+".txt")+`, `+j(h)+`: 1}`)
	fakePi := filepath.Join(dir, "fakepi")
	// pi's own output is pi's: the fake prints the hostile text only as
	// its version, which doctor reports.
	write(fakePi, "#!/bin/sh\n[ \"$1\" = --version ] && printf '%s\\n' "+shellQuote("1.6.0 "+h)+"\nexit 0\n")
	os.Chmod(fakePi, 0o700)
	// A marker directory its group can write: the supervisor says relaunch
	// is off, naming it.
	markers := filepath.Join(dir, "markers"+h)
	if err := os.Mkdir(markers, 0o700); err == nil {
		os.Chmod(markers, 0o770)
	}
	f.env = []string{
		"HOME=" + dir, "PATH=" + os.Getenv("PATH"), "PI_CODING_AGENT_DIR=" + f.agent,
		"PI_CONTEXT_BUDGET_CONFIG=" + config, "PI_SESSION_PI=" + fakePi,
		"PI_SESSION_MARKER_DIR=" + markers, "XDG_RUNTIME_DIR=" + filepath.Join(dir, "run"), "PI_SESSION_EXTENSION=off",
	}
	return f
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// commandSinks are pi-session's commands, each printing what its files
// hold. jsonDoc names a command whose stdout is JSON: the documents it
// holds (the recap request, the fallback card) are checked once decoded.
var commandSinks = []struct {
	name    string
	args    func(f *sinkFixture) []string
	stdin   func(f *sinkFixture) string
	want    string // a text the output must hold
	jsonDoc bool
	echo    bool // its error lines echo the hostile text: checked against longEcho
}{
	{name: "engine session: the file as read, every problem", args: func(f *sinkFixture) []string { return []string{"engine", "session", f.session} }, echo: true},
	{name: "engine relay: the relay note", args: func(f *sinkFixture) []string { return []string{"engine", "relay", f.session} }},
	{name: "engine recall: recall's answer", args: func(f *sinkFixture) []string { return []string{"engine", "recall", f.session, "bug"} }},
	{name: "engine pins: the pins and the refused one", args: func(f *sinkFixture) []string { return []string{"engine", "pins", f.session} }, echo: true},
	{name: "engine rules: the rules a note lists", args: func(f *sinkFixture) []string { return []string{"engine", "rules", f.session} }},
	{name: "engine rules --text: a message on stdin", args: func(f *sinkFixture) []string { return []string{"engine", "rules", "--text"} }, stdin: func(f *sinkFixture) string { return "Never push to main. Always " + f.text + " run the tests.\n" }},
	{name: "engine recap: the recap request, its summary line", args: func(f *sinkFixture) []string { return []string{"engine", "recap", f.session} }, echo: true},
	{name: "engine recap --json: the request and the local fallback card", args: func(f *sinkFixture) []string { return []string{"engine", "recap", "--json", f.session} }, jsonDoc: true},
	{name: "engine recap: a baseline that is not on the branch", args: func(f *sinkFixture) []string {
		return []string{"engine", "recap", "--after", "e9" + f.text, f.session}
	}, echo: true},
	{name: "engine budget: the model, the config's errors", args: func(f *sinkFixture) []string { return []string{"engine", "budget", f.session} }, echo: true},
	{name: "engine budget --json", args: func(f *sinkFixture) []string { return []string{"engine", "budget", "--json", f.session} }},
	{name: "engine handoff: the handoff document", args: func(f *sinkFixture) []string {
		return []string{"engine", "handoff", "--dir", f.dir, "--session", f.session, f.args}
	}},
	{name: "engine handoff: a refused call's tool error", args: func(f *sinkFixture) []string {
		return []string{"engine", "handoff", "--dir", f.dir, f.badArgs}
	}, echo: true},
	{name: "status: the records", args: func(f *sinkFixture) []string { return []string{"status", "--all"} }},
	{name: "status --json", args: func(f *sinkFixture) []string { return []string{"status", "--all", "--json"} }},
	{name: "prune --dry-run --verbose", args: func(f *sinkFixture) []string { return []string{"prune", "--dry-run", "--verbose"} }},
	{name: "doctor: pi's version, the marker directory", args: func(f *sinkFixture) []string { return []string{"doctor"} }},
	{name: "the supervisor's notices: relaunch off for the marker directory", args: func(f *sinkFixture) []string { return []string{"-p", "hi"} }, want: "relaunch is off"},
	{name: "a flag that does not exist", args: func(f *sinkFixture) []string { return []string{"engine", "relay", "--" + f.text, f.session} }, echo: true},
	{name: "an engine that does not exist", args: func(f *sinkFixture) []string { return []string{"engine", f.text} }, echo: true},
	// Not an echo row: the operating system's error repeats the path given
	// (a real path is at most PATH_MAX, 4,096 bytes).
	{name: "a session file that does not exist", args: func(f *sinkFixture) []string { return []string{"engine", "session", f.session + f.text} }},
}

func runSink(t *testing.T, f *sinkFixture, args []string, stdin string) (stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(pitest.Binary(t), args...)
	cmd.Dir = filepath.Join(f.dir, "work")
	cmd.Env = f.env
	cmd.Stdin = strings.NewReader(stdin)
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-ctx.Done():
		cmd.Process.Kill()
		<-done
		t.Fatalf("pi-session %q did not finish", args)
	}
	return o.String(), e.String()
}

// TestSinksCommands runs every command sink on every hostile text, and the
// echo rows on a 10,000-character one.
func TestSinksCommands(t *testing.T) {
	texts := append(hostile[:len(hostile):len(hostile)], struct{ name, text string }{"10,000 characters", longEcho})
	for _, h := range texts {
		f := newSinkFixture(t, h.text)
		for _, c := range commandSinks {
			if h.text == longEcho && !c.echo {
				continue
			}
			where := c.name + " / " + h.name
			stdin := ""
			if c.stdin != nil {
				stdin = c.stdin(f)
			}
			stdout, stderr := runSink(t, f, c.args(f), stdin)
			if stdout == "" && stderr == "" {
				t.Errorf("%s: printed nothing", where)
			}
			if !strings.Contains(stdout+stderr, c.want) {
				t.Errorf("%s: the output lacks %q:\n%s%s", where, c.want, stdout, stderr)
			}
			noRaw(t, where+" (stdout)", stdout)
			noRaw(t, where+" (stderr)", stderr)
			if c.jsonDoc {
				var p struct {
					SystemPrompt, UserMessage string
					Fallback                  struct{ Recap, Next string }
				}
				if err := json.Unmarshal([]byte(stdout), &p); err != nil {
					t.Fatalf("%s: %v\n%s\n%s", where, err, stdout, stderr)
				}
				for name, doc := range map[string]string{"recap request": p.SystemPrompt + p.UserMessage, "fallback card": p.Fallback.Recap + p.Fallback.Next} {
					noRaw(t, where+" ("+name+", decoded)", doc)
				}
				if !strings.Contains(p.UserMessage, "Fix the bug") {
					t.Errorf("%s: the request lacks the run:\n%s", where, p.UserMessage)
				}
			}
			if h.text == longEcho {
				// Error lines: stderr's, and the config errors engine budget
				// lists on stdout.
				lines := strings.Split(stderr, "\n")
				for _, l := range strings.Split(stdout, "\n") {
					if strings.Contains(l, ": config: ") {
						lines = append(lines, l)
					}
				}
				for _, l := range lines {
					if len(l) > maxEchoLine {
						t.Errorf("%s: an error line of %d bytes: %.120q…", where, len(l), l)
					}
				}
			}
		}
	}
}

// TestSinksDocuments: the documents the engines write from what they read
// back: a handoff read back for its compaction and the continuation after
// it (with a resume check's output and the sidecar's watch actions), and
// the mechanical summary from a prior handoff's sidecar, each after the
// files on disk were given hostile text.
func TestSinksDocuments(t *testing.T) {
	for _, h := range hostile {
		dir := t.TempDir()
		cwd := filepath.Join(dir, "repo")
		os.MkdirAll(filepath.Join(dir, "agent"), 0o700)
		os.MkdirAll(cwd, 0o700)
		vars := map[string]string{
			"PI_CODING_AGENT_DIR": filepath.Join(dir, "agent"), "HOME": dir,
			"PI_RESUME_CHECK": "printf '%s\\n' " + shellQuote("resume "+h.text),
		}
		os.WriteFile(filepath.Join(dir, "agent", "context-budget.json"), []byte(`{"mode":"enforce","models":{"faux/faux-1":{"main":{"soft":3000,"handoff":4000,"hard":8000,"minProgress":1000}}},"handoffGrace":{"calls":1}}`), 0o600)
		eng, err := budget.New(budget.Options{Getenv: func(k string) string { return vars[k] }})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		p := budget.Peer{SessionID: "s1", Cwd: cwd}
		eng.Start(p, nil, budget.StartParams{Model: "faux/faux-1"})
		eng.Manual(p, nil, "")
		eng.AgentStart(p, nil, budget.AgentStartParams{Manual: true})
		args := `{"goal":"g","next_step":"n","facts":"f","watch_actions":[{"id":"w1","target":"ci","on_complete":"merge"}]}`
		a := eng.Handoff(ctx, p, nil, budget.HandoffParams{Args: []byte(args)})
		if a.IsError || a.Details == nil {
			t.Fatalf("%s: handoff: %s", h.name, a.Text)
		}
		// The files change on disk before they are read back.
		md, sidecar := a.Details.Path, strings.TrimSuffix(a.Details.Path, ".md")+".json"
		doc, _ := os.ReadFile(md)
		os.WriteFile(md, append(doc, []byte("\n## Edited\n\n"+h.text+"\n")...), 0o600)
		var sc map[string]any
		b, _ := os.ReadFile(sidecar)
		if err := json.Unmarshal(b, &sc); err != nil {
			t.Fatal(err)
		}
		scArgs := sc["args"].(map[string]any)
		scArgs["goal"] = "goal " + h.text
		scArgs["files_to_read"] = []string{"/w/" + h.text}
		scArgs["watch_actions"] = []map[string]string{{"id": "w" + h.text, "target": h.text, "on_complete": h.text}}
		b, _ = json.Marshal(sc)
		os.WriteFile(sidecar, []byte(strings.ReplaceAll(string(b), `\ufffd`, "\xff")), 0o600) // keep an invalid byte invalid
		ans := eng.TurnEnd(ctx, p, nil, budget.TurnEndParams{Continues: true, ToolResults: []budget.ToolResultInfo{{ToolName: "context_handoff"}}})
		if len(ans.Entries) != 2 {
			t.Fatalf("%s: no commit: %+v", h.name, ans)
		}
		noRaw(t, h.name+": the handoff read back as the compaction's summary", ans.Entries[0].Summary)
		noRaw(t, h.name+": the continuation (resume check, watch actions)", ans.Entries[1].Content)
		if !strings.Contains(ans.Entries[1].Content, "resume ") || !strings.Contains(ans.Entries[1].Content, "on complete:") {
			t.Errorf("%s: the continuation lacks the resume check or the watch actions:\n%s", h.name, ans.Entries[1].Content)
		}
		eng.Close()

		prior, err := budget.ReadPrior(md)
		if err != nil {
			t.Fatalf("%s: %v", h.name, err)
		}
		mech := budget.MechanicalSummary(prior, []string{"request " + h.text}, []string{"a pin"}, filepath.Join(dir, "s"+h.text+".jsonl"))
		noRaw(t, h.name+": the mechanical summary", mech)
		if !strings.Contains(mech, "goal ") {
			t.Errorf("%s: the mechanical summary lacks the prior goal:\n%s", h.name, mech)
		}
	}
}

// The rows through real pi: text that reaches pi's screen through the
// extension's notices and the recap card. A terminal's output holds pi's
// own escape sequences, so these look for the hostile ones: none may come
// out raw, and each must be on the screen written out.
var screenHostile = []struct{ raw, shown string }{
	{"\x1b]0;PWNED\x07", `\x1b]0;PWNED\x07`},
	{"\x1b]52;c;SGk=\x07", `\x1b]52;c;SGk=\x07`},
	{"\u009b2J", `\u009b2J`},
}

func screenText() string {
	var b strings.Builder
	for _, h := range screenHostile {
		b.WriteString(" " + h.raw)
	}
	return b.String()
}

// checkScreen fails when a hostile text reached the terminal raw, or is
// not on the screen written out.
func checkScreen(t *testing.T, tm *pitest.Term, where string) {
	t.Helper()
	raw := tm.Raw()
	for _, h := range screenHostile {
		if i := strings.Index(raw, h.raw); i >= 0 {
			t.Errorf("%s: %q reached the terminal raw: …%q…", where, h.raw, raw[max(0, i-80):min(len(raw), i+40)])
		}
		tm.WaitFor(h.shown)
	}
}

// TestSinksRecapModelNotice: the recap config's provider and model names,
// in the notice that the model is not available and in the local card's
// source line (ctrl+o), through real pi in its TUI. Before the writer, the
// provider's OSC 0 retitled the terminal.
func TestSinksRecapModelNotice(t *testing.T) {
	t.Parallel()
	e := pitest.NewEnv(t)
	e.Set("PI_SUMMARY_IDLE_MS", "30000")
	dir := filepath.Join(e.Agent, "summaries")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := `{"enabled": true, "provider": ` + jsonText("evil"+screenText()) + `, "model": "m", "reasoning": "off"}`
	if err := os.WriteFile(filepath.Join(dir, "config.private.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	tm := pitest.StartTerm(t, e.Command(pitest.Binary(t), e.PiArgs()...))
	tm.WaitReady(1)
	tm.Submit("a task")
	tm.WaitFor("faux: a task")
	tm.WaitFor("A local recap was written instead")
	tm.Type("\x0f") // ctrl+o: the card's source line
	tm.WaitFor("local fallback")
	checkScreen(t, tm, "the recap model's notice and card")
}

// TestSinksRecapCardFromFile: a recap card read back from a session file
// that something else wrote (its recap, next step, provider and model
// hostile), drawn when pi opens the session.
func TestSinksRecapCardFromFile(t *testing.T) {
	t.Parallel()
	e := pitest.NewEnv(t)
	h := screenText()
	file := filepath.Join(t.TempDir(), "s.jsonl")
	ts := `"timestamp":"2026-11-30T09:00:00.000Z"`
	lines := []string{
		`{"type":"session","version":3,"id":"01a22bc1-2a41-7691-b9ae-01bfc8cd0017",` + ts + `,"cwd":` + jsonText(e.Work) + `}`,
		`{"type":"message","id":"e1","parentId":null,` + ts + `,"message":{"role":"user","content":"a task","timestamp":1}}`,
		`{"type":"custom","id":"e2","parentId":"e1",` + ts + `,"customType":"summary-recap","data":{"recap":` + jsonText("card"+h) + `,"next":` + jsonText("next"+h) +
			`,"provider":` + jsonText("p"+h) + `,"model":"m","reasoning":` + jsonText("low"+h) + `,"fallback":false}}`,
	}
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tm := pitest.StartTerm(t, e.Command(pitest.Binary(t), append(e.PiArgs(), "--session", file)...))
	tm.WaitReady(1)
	tm.WaitFor("✦ Recap")
	tm.Type("\x0f")
	tm.WaitFor("· low")
	checkScreen(t, tm, "the recap card")
}

// TestSinksReportPrintMode: /pi-session's report in print mode (stderr)
// names a session file whose path holds hostile text, and the problems
// the engine found in it.
func TestSinksReportPrintMode(t *testing.T) {
	t.Parallel()
	e := pitest.NewEnv(t)
	for _, h := range hostile {
		dir := filepath.Join(t.TempDir(), "d"+h.text)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(dir, "s.jsonl")
		ts := `"timestamp":"2026-11-30T09:00:00.000Z"`
		lines := []string{
			`{"type":"session","version":3,"id":"01a22bc1-2a41-7691-b9ae-01bfc8cd0018",` + ts + `,"cwd":` + jsonText(e.Work) + `}`,
			`{"type":"message","id":"e1","parentId":null,` + ts + `,"message":{"role":"user","content":"a task","timestamp":1}}`,
			`{"type":"message","id":"e2","parentId":` + jsonText("nowhere"+h.text) + `,` + ts + `,"message":{"role":"user","content":"x","timestamp":2}}`,
			`{"type":"message","id":"e3","parentId":"e1",` + ts + `,"message":{"role":"user","content":"again","timestamp":3}}`,
		}
		if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := e.Command(pitest.Binary(t), append(e.PiArgs(), "--session", file, "-p", "/pi-session")...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", h.name, err, out)
		}
		// Node opens no path that is not UTF-8 (pi starts a new session
		// at the path with U+FFFD instead), so those have no problems.
		if !strings.Contains(string(out), "  file ") || utf8.ValidString(h.text) && !strings.Contains(string(out), "problems") {
			t.Fatalf("%s: no report:\n%s", h.name, out)
		}
		noRaw(t, h.name+": /pi-session's report", string(out))
	}
}
