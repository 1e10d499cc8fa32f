package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-session/pi-session/pitest"
	"github.com/pi-session/pi-session/session"
)

// longSteps scripts n answers of pad characters each (about pad/4 tokens).
func longSteps(n, pad int) []map[string]any {
	var steps []map[string]any
	for i := 0; i < n; i++ {
		steps = append(steps, map[string]any{"text": fmt.Sprintf("answer %d", i+1), "pad": pad})
	}
	return steps
}

// relayPrompts are the user's prompts of the long session; the second
// holds a standing instruction in the middle of a longer message.
var relayPrompts = []string{
	"p1: look at the ember_cache module and tell me what it does",
	"p2: the build is slow. Never push to main without asking me. Profile the linker first",
	"p3: summarize the profile",
	"p4: what about the tests",
	"p5: list the slow tests",
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
	for _, want := range []string{"# Handoff note 1", "Never push to main without asking me.", "## Constraints", "recall("} {
		if !strings.Contains(note, want) {
			t.Errorf("the note lacks %q:\n%s", want, note)
		}
	}
	if len(note) > 9500+len(session.CompactionSummaryPrefix)+len(session.CompactionSummarySuffix) {
		t.Errorf("the note has %d characters, over the total cap", len(note))
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
	if code := rpc.Close(); code != 0 {
		t.Errorf("pi exit %d; stderr:\n%s", code, rpc.Stderr())
	}
}
