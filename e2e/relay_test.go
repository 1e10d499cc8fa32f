package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pi-session/pi-session/pitest"
	"github.com/pi-session/pi-session/session"
)

// longSteps scripts n answers of pad characters each (about pad/4 tokens).
func longSteps(n, pad int) []map[string]any {
	var steps []map[string]any
	for i := 0; i < n; i++ {
		steps = append(steps, map[string]any{"text": fmt.Sprintf("answer %d", i+1), "filler": pad})
	}
	return steps
}

// relayPrompts are the user's prompts of the long session; the second
// holds a standing instruction in the middle of a longer message, the
// fourth and fifth rules in Japanese and German among other text, the
// fifth a Spanish one in a bullet under a heading.
var relayPrompts = []string{
	"p1: look at the ember_cache module and tell me what it does",
	"p2: the build is slow. Never push to main without asking me. Profile the linker first",
	"p3: summarize the profile",
	"p4: what about the tests? テストは必ず `go test -race` で実行してください。",
	"p5: list the slow tests. Bitte keine neuen Abhängigkeiten hinzufügen.\n\n## Estilo\n- Nada de `println` en el código de producción.",
	"p6: and now the last question",
}

// startRelaySession runs pi-session in RPC mode with the scripted model and
// sends the prompts; it returns the RPC driver.
func startRelaySession(t *testing.T, e *pitest.Env, extra ...string) *pitest.RPC {
	t.Helper()
	args := append(e.PiArgs(), "--mode", "rpc")
	args = append(args, extra...)
	return pitest.StartRPC(t, e.Command(pitest.Binary(t), args...))
}

func sessionFile(t *testing.T, rpc *pitest.RPC) string {
	t.Helper()
	mark := rpc.Mark()
	id := rpc.Send(map[string]any{"type": "get_state"})
	rec, _ := rpc.WaitFrom(mark, "get_state", func(r pitest.Record) bool { return r.Str("type") == "response" && r.Str("id") == id })
	data, _ := rec["data"].(map[string]any)
	f, _ := data["sessionFile"].(string)
	if f == "" {
		t.Fatalf("get_state has no sessionFile: %v", rec)
	}
	return f
}

// TestRelayEndToEnd: /relay on a long scripted session makes no model call;
// the next request is system + note + tail; the note keeps the user's
// constraint verbatim; recall finds an entry that left the context and
// returns its full text by entryId; the relay is logged.
func TestRelayEndToEnd(t *testing.T) {
	e := pitest.NewEnv(t)
	steps := longSteps(len(relayPrompts), 40000)
	steps = append(steps,
		map[string]any{"text": "after the relay"},
		map[string]any{"tool": "recall", "args": map[string]any{"query": "EMBER-cache module"}},
		map[string]any{"tool": "recall", "args": map[string]any{"entryId": "${lastEntryId}"}},
		map[string]any{"text": "recalled"},
	)
	e.Scenario(map[string]any{"steps": steps})
	rpc := startRelaySession(t, e)
	for _, p := range relayPrompts {
		rpc.Prompt(p)
	}
	before := len(e.Requests())
	mark := rpc.Prompt("/relay")
	rpc.WaitFrom(mark, "the relay's notice", func(r pitest.Record) bool {
		return r.IsNotify() && strings.Contains(r.Str("message"), "context-relay:")
	})
	notices := strings.Join(rpc.Notices(mark), "\n")
	if !strings.Contains(notices, "context-relay: relayed") {
		t.Fatalf("/relay did not report a relay:\n%s\nstderr:\n%s", notices, rpc.Stderr())
	}
	if got := len(e.Requests()); got != before {
		t.Errorf("/relay made %d model calls, want none", got-before)
	}

	rpc.Prompt("p7: carry on")
	reqs := e.Requests()
	next := reqs[before]
	var roles []string
	var texts []string
	for _, m := range next.Decoded() {
		roles = append(roles, m.Role)
		texts = append(texts, m.Text())
	}
	// system + note + the tail from the last user message (p6, its answer) + p7.
	i := 0
	for i < len(roles) && roles[i] == "system" {
		i++
	}
	if i == 0 || len(roles)-i != 4 || roles[i] != "user" || !strings.HasPrefix(texts[i], session.CompactionSummaryPrefix) {
		t.Fatalf("the request after /relay is %v, want system, the note, p6, its answer, p7", roles)
	}
	note := texts[i]
	for _, want := range []string{"# Handoff note 1", "Never push to main without asking me.", "## Constraints", "recall(",
		"- テストは必ず `go test -race` で実行してください。\n", "- Bitte keine neuen Abhängigkeiten hinzufügen.\n", "- Estilo: Nada de `println` en el código de producción.\n"} {
		if !strings.Contains(note, want) {
			t.Errorf("the note lacks %q:\n%s", want, note)
		}
	}
	// limits.total counts characters (the note holds Japanese: 3 bytes each).
	if n := utf8.RuneCountInString(note); n > 9500+utf8.RuneCountInString(session.CompactionSummaryPrefix+session.CompactionSummarySuffix) {
		t.Errorf("the note has %d characters, over the total cap", n)
	}
	if !strings.HasPrefix(texts[i+1], relayPrompts[5]) || !strings.HasPrefix(texts[i+3], "p7:") {
		t.Errorf("the tail is %q ... %q, want p6 ... p7", texts[i+1], texts[i+3])
	}

	// recall finds p1, which left the context, and reads it whole.
	mark = rpc.Prompt("p8: what did I first ask?")
	reqs = e.Requests()
	found := lastToolResult(t, reqs[len(reqs)-2])
	if !strings.Contains(found, "entryId") || !strings.Contains(found, "ember_cache") {
		t.Fatalf("recall did not find the first prompt:\n%s", found)
	}
	whole := lastToolResult(t, reqs[len(reqs)-1])
	if !strings.Contains(whole, relayPrompts[0]) {
		t.Errorf("recall by entryId did not return the entry's text:\n%.2000s", whole)
	}

	// The note file and the log.
	sf := sessionFile(t, rpc)
	id := strings.TrimSuffix(filepath.Base(sf), ".jsonl")
	id = id[strings.LastIndex(id, "_")+1:]
	stored, err := os.ReadFile(filepath.Join(e.Agent, "context-relay", id, "1.md"))
	if err != nil || !strings.Contains(note, strings.TrimSpace(string(stored))[:200]) {
		t.Errorf("note file: %v\n%.300s", err, stored)
	}
	logLine, err := os.ReadFile(filepath.Join(e.Agent, "context-relay", "log.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var l map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(string(logLine))), &l); err != nil || l["trigger"] != "manual" || l["ok"] != true || l["sessionId"] != id {
		t.Errorf("relay log %s: %v", logLine, err)
	}
	at, _ := l["at"].(string)
	if _, err := time.Parse(time.RFC3339Nano, at); err != nil {
		t.Errorf("relay log at %q: %v", at, err)
	}
	if tb, _ := l["tokensBefore"].(float64); tb < 50000 {
		t.Errorf("relay log tokensBefore %v, want the session's size (about 60k)", l["tokensBefore"])
	}
	if nc, _ := l["noteChars"].(float64); int(nc) != len([]rune(strings.TrimSpace(string(stored))))+1 && int(nc) != len([]rune(string(stored))) {
		t.Errorf("relay log noteChars %v, the note file has %d characters", l["noteChars"], len([]rune(string(stored))))
	}
	if kf, _ := l["keptFrom"].(string); kf == "" || !strings.Contains(string(data(t, sf)), `"id":"`+kf+`"`) {
		t.Errorf("relay log keptFrom %q names no entry of the session", l["keptFrom"])
	}
	if _, ok := l["error"]; ok {
		t.Errorf("a relay that worked logged an error: %s", logLine)
	}
	if code := rpc.Close(); code != 0 {
		t.Errorf("pi exit %d; stderr:\n%s", code, rpc.Stderr())
	}
}

// data reads a file.
func data(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRelayLeavesOtherCompactionsAlone: a compaction the relay did not ask
// for (/compact, here over RPC) is pi's own: the model writes its summary,
// the relay writes no note and logs nothing.
func TestRelayLeavesOtherCompactionsAlone(t *testing.T) {
	e := pitest.NewEnv(t)
	// pi summarizes a split turn in two calls.
	steps := append(longSteps(len(relayPrompts), 40000), map[string]any{"text": "## Goal\nThe model's own summary."}, map[string]any{"text": "The turn so far."})
	e.Scenario(map[string]any{"steps": steps})
	rpc := startRelaySession(t, e)
	for _, p := range relayPrompts {
		rpc.Prompt(p)
	}
	before := len(e.Requests())
	from := rpc.Mark()
	id := rpc.Send(map[string]any{"type": "compact", "customInstructions": "focus on the build"})
	resp, _ := rpc.WaitFrom(from, "the compaction's response", func(r pitest.Record) bool { return r.Str("type") == "response" && r.Str("id") == id })
	if resp["success"] != true {
		t.Fatalf("/compact failed: %v\nstderr:\n%s", resp, rpc.Stderr())
	}
	if got := len(e.Requests()); got == before {
		t.Errorf("/compact made no model call, want pi's summary")
	}
	c := compactions(t, sessionFile(t, rpc))
	if len(c) != 1 || !strings.Contains(fmt.Sprint(c[0]["summary"]), "The model's own summary.") {
		t.Fatalf("compactions %v, want pi's with the model's summary", c)
	}
	if d, _ := c[0]["details"].(map[string]any); d["relay"] != nil {
		t.Errorf("pi's compaction has relay details: %v", d)
	}
	if _, err := os.Stat(filepath.Join(e.Agent, "context-relay")); err == nil {
		ents, _ := os.ReadDir(filepath.Join(e.Agent, "context-relay"))
		t.Errorf("the relay wrote %d files for pi's own compaction", len(ents))
	}
	rpc.Close()
}

// relayPiArgs runs plain pi with the repository's extension loaded first
// (and the given test extensions after it), starting pi-session serve.
func relayPiArgs(t *testing.T, e *pitest.Env, extensions ...string) (string, []string) {
	e.Set("PI_SESSION_BIN", pitest.Binary(t))
	return filepath.Join(pitest.ToolsBin(t), "pi"), append(e.PiArgs(append([]string{"extension"}, extensions...)...), "--mode", "rpc")
}

// compactions returns the compaction entries of a session file.
func compactions(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := session.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, en := range f.Entries {
		if en.Type == "compaction" {
			var m map[string]any
			json.Unmarshal(en.Raw, &m)
			out = append(out, m)
		}
	}
	return out
}

// TestRelayAbortLeavesNoNote: the relay's compaction is aborted after the
// engine wrote the note and before pi appended the compaction (another
// extension holds session_before_compact open); the note file is removed
// and the session has no compaction.
func TestRelayAbortLeavesNoNote(t *testing.T) {
	e := pitest.NewEnv(t)
	mark := filepath.Join(e.Work, "..", "compact-waiting")
	e.Set("SLOW_COMPACT_MARK", mark)
	e.Set("SLOW_COMPACT_MS", "60000")
	e.Scenario(map[string]any{"steps": longSteps(len(relayPrompts), 40000)})
	pi, args := relayPiArgs(t, e, "testdata/pi/slow-compact.ts")
	rpc := pitest.StartRPC(t, e.Command(pi, args...))
	for _, p := range relayPrompts {
		rpc.Prompt(p)
	}
	sf := sessionFile(t, rpc)
	id := strings.TrimSuffix(filepath.Base(sf), ".jsonl")
	id = id[strings.LastIndex(id, "_")+1:]
	notes := filepath.Join(e.Agent, "context-relay", id)

	from := rpc.Mark()
	rpc.Send(map[string]any{"type": "prompt", "message": "/relay"})
	waitFile(t, mark)
	// Every file but the note counter (.last), which keeps the number taken.
	files := func() []string {
		ents, _ := os.ReadDir(notes)
		var names []string
		for _, d := range ents {
			if d.Name() != ".last" {
				names = append(names, d.Name())
			}
		}
		return names
	}
	if names := files(); len(names) != 1 {
		t.Fatalf("while pi waits to append the compaction, %s holds %v, want the note", notes, names)
	}
	rpc.Send(map[string]any{"type": "abort"})
	rpc.WaitFrom(from, "the relay's failure notice", func(r pitest.Record) bool {
		return r.IsNotify() && strings.Contains(r.Str("message"), "context-relay: relay failed")
	})
	if names := files(); len(names) != 0 {
		t.Errorf("an aborted relay left %v in %s", names, notes)
	}
	if c := compactions(t, sf); len(c) != 0 {
		t.Errorf("an aborted relay appended %d compactions", len(c))
	}
	logLine, _ := os.ReadFile(filepath.Join(e.Agent, "context-relay", "log.jsonl"))
	if !strings.Contains(string(logLine), `"ok":false`) {
		t.Errorf("the relay log does not record the failed relay: %s", logLine)
	}
	rpc.Close()
}

// waitFile waits until a file exists; the deadline only bounds a failing test.
func waitFile(t *testing.T, path string) {
	t.Helper()
	for i := 0; i < 3000; i++ {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s never appeared", path)
}

// writeRelayConfig writes <agentDir>/context-relay.json.
func writeRelayConfig(t testing.TB, e *pitest.Env, cfg string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(e.Agent, "context-relay.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestRelayOnInput: with a low inputMinTokens, a prompt is held, the
// session relays, and the prompt is sent once after a resend audit entry
// that fingerprints it.
func TestRelayOnInput(t *testing.T) {
	e := pitest.NewEnv(t)
	writeRelayConfig(t, e, `{"auto": {"inputMinTokens": 58000, "beforeExpiry": false}}`)
	steps := append(longSteps(len(relayPrompts), 40000), map[string]any{"text": "answered after the relay"})
	e.Scenario(map[string]any{"steps": steps})
	rpc := startRelaySession(t, e)
	for _, p := range relayPrompts {
		rpc.Prompt(p)
	}
	before := len(e.Requests())
	const held = "p7: a new question after a long session"
	from := rpc.Mark()
	id := rpc.Send(map[string]any{"type": "prompt", "message": held})
	resp, _ := rpc.WaitFrom(from, "the held prompt's response", func(r pitest.Record) bool { return r.Str("type") == "response" && r.Str("id") == id })
	if d, _ := resp["data"].(map[string]any); d["disposition"] != "handled" {
		t.Fatalf("the prompt over inputMinTokens was not held: %v", resp)
	}
	rpc.WaitFrom(from, "the answer to the resent prompt", func(r pitest.Record) bool {
		return r.Str("type") == "message_end" && strings.Contains(messageText(r), "answered after the relay")
	})
	notices := strings.Join(rpc.Notices(from), "\n")
	if !strings.Contains(notices, "context-relay: auto relay (new message)") {
		t.Errorf("no auto relay notice:\n%s", notices)
	}
	reqs := e.Requests()
	if len(reqs) != before+1 {
		t.Fatalf("model requests after the held prompt = %d, want 1 (the relay calls no model; the prompt is sent once)", len(reqs)-before)
	}
	msgs := reqs[before].Decoded()
	var users []string
	for _, m := range msgs {
		if m.Role == "user" {
			users = append(users, m.Text())
		}
	}
	if len(users) < 2 || !strings.HasPrefix(users[0], session.CompactionSummaryPrefix) || users[len(users)-1] != held {
		t.Errorf("the request after the relay has user messages %q..., want the note first and the held prompt last", users)
	}
	sf := sessionFile(t, rpc)
	data, _ := os.ReadFile(sf)
	sum := sha256.Sum256([]byte(held))
	if n := strings.Count(string(data), `"customType":"context-relay:resend"`); n != 1 || !strings.Contains(string(data), hex.EncodeToString(sum[:])) {
		t.Errorf("the session has %d resend entries, want 1 with the prompt's sha256", n)
	}
	if n := strings.Count(string(data), `"text":"`+held+`"`); n != 1 {
		t.Errorf("the held prompt is in the session %d times, want once", n)
	}
	rpc.Close()
}

// TestRelayBeforeExpiry: a model declaring a 22 s prompt cache makes the
// idle session relay 20 s before the cache expires, by itself.
func TestRelayBeforeExpiry(t *testing.T) {
	e := pitest.NewEnv(t)
	writeRelayConfig(t, e, `{"auto": {"onInput": false, "expiryMinTokens": 58000}}`)
	e.Set("FAUX_PROMPT_CACHE", "22")
	e.Scenario(map[string]any{"steps": longSteps(len(relayPrompts), 40000)})
	rpc := startRelaySession(t, e)
	for _, p := range relayPrompts {
		rpc.Prompt(p)
	}
	from := rpc.Mark()
	rpc.WaitFrom(from, "the relay before the cache expires", func(r pitest.Record) bool {
		return r.IsNotify() && strings.Contains(r.Str("message"), "context-relay: auto relay (cache expiry)")
	})
	sf := sessionFile(t, rpc)
	c := compactions(t, sf)
	if len(c) != 1 {
		t.Fatalf("compactions = %d, want the relay's", len(c))
	}
	if d, _ := c[0]["details"].(map[string]any); d["relay"] != true {
		t.Errorf("the compaction is not a relay's: %v", c[0]["details"])
	}
	logLine, _ := os.ReadFile(filepath.Join(e.Agent, "context-relay", "log.jsonl"))
	if !strings.Contains(string(logLine), `"trigger":"expiry"`) {
		t.Errorf("the relay log lacks the expiry relay: %s", logLine)
	}
	rpc.Close()
}

// TestRelaySubagentRegistersNothing: in a session named like a subagent's,
// neither /relay nor recall exists: the model's recall call finds no such
// tool, and /relay goes to the model as text.
func TestRelaySubagentRegistersNothing(t *testing.T) {
	for _, tt := range []struct {
		name  string
		extra []string
		want  bool
	}{
		{"main", nil, true},
		{"subagent", []string{"-n", "worker#1a2b3c4d"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := pitest.NewEnv(t)
			e.Scenario(map[string]any{"steps": []map[string]any{
				{"tool": "recall", "args": map[string]any{"query": "anything"}},
				{"text": "done"},
				{"text": "got it"},
			}})
			rpc := startRelaySession(t, e, tt.extra...)
			rpc.Prompt("hello")
			rpc.Prompt("/relay")
			reqs := e.Requests()
			result := lastToolResult(t, reqs[1])
			if got := strings.HasPrefix(result, "recall"); got != tt.want {
				t.Errorf("the model's recall call answered %q; recall registered = %v, want %v", result, got, tt.want)
			}
			toModel := len(reqs) == 3 && reqs[2].LastUser() == "/relay"
			if toModel == tt.want {
				t.Errorf("/relay sent to the model as text = %v, want %v", toModel, !tt.want)
			}
			rpc.Close()
		})
	}
}

// TestRelayHeadlessRegistersNothing: in print and json mode (one-shot
// runs) recall does not exist either: the model's call finds no such tool.
func TestRelayHeadlessRegistersNothing(t *testing.T) {
	for _, tt := range []struct {
		name string
		mode []string
	}{{"print", []string{"-p"}}, {"json", []string{"--mode", "json", "-p"}}} {
		mode := tt.mode
		t.Run(tt.name, func(t *testing.T) {
			e := pitest.NewEnv(t)
			e.Scenario(map[string]any{"steps": []map[string]any{
				{"tool": "recall", "args": map[string]any{"query": "anything"}},
				{"text": "done"},
			}})
			args := append(append(e.PiArgs(), mode...), "hello")
			if out, err := e.Command(pitest.Binary(t), args...).CombinedOutput(); err != nil {
				t.Fatalf("pi-session %v: %v\n%s", mode, err, out)
			}
			reqs := e.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d model requests, want 2", len(reqs))
			}
			if result := lastToolResult(t, reqs[1]); strings.HasPrefix(result, "recall") || !strings.Contains(result, "not found") {
				t.Errorf("in %v the model's recall call answered %q, want no such tool", mode, result)
			}
		})
	}
}

// TestRecallFindsOffloadedLines: recall searches the session's offloaded
// tool results and answers with the handle and the matching line.
func TestRecallFindsOffloadedLines(t *testing.T) {
	e := pitest.NewEnv(t)
	path, _ := buildLog(t, e.Work)
	log, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(log, "step 999999 FATAL quokkaHabitat shard 17 lost its replica")
	log.Close()
	e.Scenario(map[string]any{"steps": []map[string]any{
		{"tool": "dump_file", "args": map[string]any{"path": path}},
		{"text": "stored"},
		{"tool": "recall", "args": map[string]any{"query": "quokka-habitat replica"}},
		{"text": "found"},
	}})
	rpc := startRelaySession(t, e, "-e", e.Extension("testdata/pi/test-tools.ts"))
	rpc.Prompt("dump the build log")
	rpc.Prompt("where did the replica go?")
	reqs := e.Requests()
	got := lastToolResult(t, reqs[len(reqs)-1])
	handle := handleRE.FindString(lastToolResult(t, reqs[1]))
	if handle == "" {
		t.Fatalf("the log was not offloaded")
	}
	for _, want := range []string{"In offloaded tool results", handle, "FATAL quokkaHabitat shard 17 lost its replica", `ctx_read({"id":"` + handle + `"`} {
		if !strings.Contains(got, want) {
			t.Errorf("recall's answer lacks %q:\n%s", want, got)
		}
	}
	rpc.Close()
}

// TestRelaySessionSwitchReturnsHeldText: trigger A holds a prompt with an
// image and relays; the user starts a new session before the relay ends
// (another extension holds the compaction open); the held text goes back
// to the editor with a warning naming the image to re-attach, and nothing
// is sent to the model or resent into either session.
func TestRelaySessionSwitchReturnsHeldText(t *testing.T) {
	e := pitest.NewEnv(t)
	mark := filepath.Join(e.Work, "..", "compact-waiting")
	e.Set("SLOW_COMPACT_MARK", mark)
	e.Set("SLOW_COMPACT_MS", "60000")
	writeRelayConfig(t, e, `{"auto": {"inputMinTokens": 58000, "beforeExpiry": false}}`)
	e.Scenario(map[string]any{"steps": longSteps(len(relayPrompts), 40000)})
	pi, args := relayPiArgs(t, e, "testdata/pi/slow-compact.ts")
	rpc := pitest.StartRPC(t, e.Command(pi, args...))
	for _, p := range relayPrompts {
		rpc.Prompt(p)
	}
	sf := sessionFile(t, rpc)
	before := len(e.Requests())

	const held = "p7: a question typed just before switching sessions"
	// A 1x1 PNG.
	png := "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
	from := rpc.Mark()
	id := rpc.Send(map[string]any{"type": "prompt", "message": held, "images": []map[string]any{{"type": "image", "data": png, "mimeType": "image/png"}}})
	resp, _ := rpc.WaitFrom(from, "the held prompt's response", func(r pitest.Record) bool { return r.Str("type") == "response" && r.Str("id") == id })
	if d, _ := resp["data"].(map[string]any); d["disposition"] != "handled" {
		t.Fatalf("the prompt over inputMinTokens was not held: %v", resp)
	}
	waitFile(t, mark)
	sw := rpc.Send(map[string]any{"type": "new_session"})
	rpc.WaitFrom(from, "the new session", func(r pitest.Record) bool { return r.Str("type") == "response" && r.Str("id") == sw })
	editor, _ := rpc.WaitFrom(from, "the held text back in the editor", func(r pitest.Record) bool {
		return r.Str("type") == "extension_ui_request" && r.Str("method") == "set_editor_text"
	})
	if got := editor.Str("text"); got != held {
		t.Errorf("the editor got %q, want the held text %q", got, held)
	}
	warn, _ := rpc.WaitFrom(from, "the warning", func(r pitest.Record) bool {
		return r.IsNotify() && strings.Contains(r.Str("message"), "the session changed during the relay")
	})
	if msg := warn.Str("message"); !strings.Contains(msg, "re-attach 1 image") {
		t.Errorf("the warning does not name the image to re-attach: %q", msg)
	}
	if got := len(e.Requests()); got != before {
		t.Errorf("the held prompt reached the model (%d requests)", got-before)
	}
	if n := strings.Count(string(data(t, sf)), held); n != 0 {
		t.Errorf("the held prompt is in the old session %d times, want none", n)
	}
	if sf2 := sessionFile(t, rpc); sf2 == sf {
		t.Errorf("new_session kept the session file %s", sf)
	} else if b, err := os.ReadFile(sf2); err == nil && strings.Contains(string(b), held) {
		t.Errorf("the held prompt was sent into the new session")
	}
	rpc.Close()
}
