package e2e

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pi-session/pi-session/pitest"
)

// budgetConfig writes context-budget.json with small thresholds for the
// scripted model: the handoff threshold is 500 tokens above the measured
// floor (pi's system prompt and tools, about 2.6k tokens).
func budgetConfig(t *testing.T, e *pitest.Env, mode string, extra string) {
	t.Helper()
	cfg := `{"mode":"` + mode + `","models":{"faux/faux-1":{"main":{"soft":100,"handoff":200,"hard":100000,"minProgress":500}}}` + extra + `}`
	if err := os.WriteFile(filepath.Join(e.Agent, "context-budget.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
}

func budgetEvents(t *testing.T, e *pitest.Env) []map[string]any {
	t.Helper()
	f, err := os.Open(filepath.Join(e.Agent, "context-budget", "events.jsonl"))
	if err != nil {
		t.Fatalf("events.jsonl: %v", err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("events.jsonl: %v", err)
		}
		out = append(out, m)
	}
	return out
}

func hasEvent(evs []map[string]any, name string) bool {
	for _, e := range evs {
		if e["event"] == name {
			return true
		}
	}
	return false
}

// growSteps: a tool turn that measures the floor, one that grows the
// context past the handoff threshold, then one more tool call.
var growSteps = []map[string]any{
	{"tool": "bash", "args": map[string]any{"command": "echo floor"}},
	{"tool": "bash", "args": map[string]any{"command": "echo grow"}, "pad": 1200},
	{"tool": "bash", "args": map[string]any{"command": "echo after-threshold"}},
}

// TestBudgetObserve: observe mode logs what enforcement would do and
// blocks nothing.
func TestBudgetObserve(t *testing.T) {
	e := pitest.NewEnv(t)
	budgetConfig(t, e, "observe", "")
	e.Scenario(map[string]any{"steps": append(append([]map[string]any{}, growSteps...), map[string]any{"text": "done"})})
	out, err := e.Command(pitest.Binary(t), append(e.PiArgs(), "-p", "work")...).CombinedOutput()
	if err != nil {
		t.Fatalf("pi-session -p: %v\n%s", err, out)
	}
	reqs := e.Requests()
	if len(reqs) != 4 {
		t.Fatalf("model requests = %d, want 4\n%s", len(reqs), out)
	}
	if r := lastToolResult(t, reqs[3]); !strings.Contains(r, "after-threshold") {
		t.Errorf("observe mode changed a tool result: %q", r)
	}
	evs := budgetEvents(t, e)
	for _, want := range []string{"would_handoff_required", "would_tool_blocked"} {
		if !hasEvent(evs, want) {
			t.Errorf("events.jsonl lacks %s", want)
		}
	}
	for _, not := range []string{"tool_blocked", "handoff_required"} {
		if hasEvent(evs, not) {
			t.Errorf("observe mode logged a real %s", not)
		}
	}
	if _, err := os.Stat(filepath.Join(e.Work, ".ai-work")); err == nil {
		t.Error("observe mode wrote a handoff")
	}
}

// TestBudgetEnforce: past the handoff threshold a tool is blocked with a
// message naming context_handoff; context_handoff is accepted; the next
// model request is the handoff alone followed by the automatic
// continuation, in the same process and session.
func TestBudgetEnforce(t *testing.T) {
	e := pitest.NewEnv(t)
	budgetConfig(t, e, "enforce", `,"handoffGrace":{"enabled":false}`)
	steps := append(append([]map[string]any{}, growSteps...),
		map[string]any{"tool": "context_handoff", "args": map[string]any{"goal": "finish the work", "next_step": "say continued",
			"facts": "echo ran three times", "user_constraints": "keep it offline"}},
		map[string]any{"text": "continued"},
	)
	e.Scenario(map[string]any{"steps": steps})
	out, err := e.Command(pitest.Binary(t), append(e.PiArgs(), "-p", "work")...).CombinedOutput()
	if err != nil {
		t.Fatalf("pi-session -p: %v\n%s", err, out)
	}
	reqs := e.Requests()
	if len(reqs) != 5 {
		t.Fatalf("model requests = %d, want 5\n%s", len(reqs), out)
	}
	blocked := lastToolResult(t, reqs[3])
	if !strings.Contains(blocked, "blocked") || !strings.Contains(blocked, "context_handoff") || strings.Contains(blocked, "after-threshold") {
		t.Errorf("the tool past the threshold was not blocked with a message naming context_handoff: %q", blocked)
	}
	if !strings.Contains(string(reqs[2].Messages[len(reqs[2].Messages)-1]), "past the handoff threshold") {
		t.Errorf("no handoff-required notice was appended at turn_end: %.300s", reqs[2].Messages[len(reqs[2].Messages)-1])
	}
	var handoff string
	var nonSystem []pitest.Message
	for _, m := range reqs[4].Decoded() {
		if m.Role != "system" {
			nonSystem = append(nonSystem, m)
		}
	}
	if len(nonSystem) != 2 {
		t.Fatalf("the request after the handoff holds %d messages besides the system prompt, want the handoff and the continuation:\n%v", len(nonSystem), nonSystem)
	}
	if !strings.Contains(nonSystem[0].Text(), "# Handoff ") || !strings.Contains(nonSystem[0].Text(), "keep it offline") {
		t.Errorf("first message is not the handoff: %.500s", nonSystem[0].Text())
	}
	m := regexp.MustCompile(`The context was reset to the handoff above \((/\S+\.md)\)`).FindStringSubmatch(nonSystem[1].Text())
	if m == nil {
		t.Fatalf("second message is not the automatic continuation: %.500s", nonSystem[1].Text())
	}
	handoff = m[1]
	if filepath.Dir(handoff) != filepath.Join(e.Work, ".ai-work", "handoffs") {
		t.Errorf("handoff at %s, want under the cwd's .ai-work/handoffs", handoff)
	}
	if st, err := os.Stat(handoff); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("handoff file: %v %v", err, st)
	}
	if reqs[0].PID != reqs[4].PID {
		t.Errorf("the continuation came from pid %d, the session from %d: want the same process", reqs[4].PID, reqs[0].PID)
	}
	files, _ := filepath.Glob(filepath.Join(e.Agent, "sessions", "*", "*.jsonl"))
	if len(files) != 1 {
		t.Errorf("session files %v, want one: the session id stays", files)
	}
	if evs := budgetEvents(t, e); !hasEvent(evs, "handoff_committed") || !hasEvent(evs, "tool_blocked") {
		t.Errorf("events lack handoff_committed or tool_blocked")
	}
	// pi-session status shows the phase, tokens against the effective
	// thresholds and the last handoff.
	st, err := e.Command(pitest.Binary(t), "status", "--all").CombinedOutput()
	if err != nil {
		t.Fatalf("pi-session status: %v\n%s", err, st)
	}
	for _, want := range []string{"phase idle", "of soft ", " / handoff ", "1 so far; last", handoff, "enforce"} {
		if !strings.Contains(string(st), want) {
			t.Errorf("pi-session status lacks %q:\n%s", want, st)
		}
	}
}

// TestBudgetCapRelaunch: under pi-session, the handoff beyond
// maxHandoffsPerSession ends in a relaunch whose first prompt continues
// from it.
func TestBudgetCapRelaunch(t *testing.T) {
	e := pitest.NewEnv(t)
	budgetConfig(t, e, "enforce", `,"maxHandoffsPerSession":1,"handoffGrace":{"enabled":false}`)
	handoff := map[string]any{"tool": "context_handoff", "args": map[string]any{"goal": "the long task", "next_step": "go on", "facts": "round ${lastUser}"}}
	steps := []map[string]any{
		growSteps[0], growSteps[1], handoff, // the first handoff commits in place
		{"tool": "bash", "args": map[string]any{"command": "echo again"}},             // the new floor
		{"tool": "bash", "args": map[string]any{"command": "echo grow"}, "pad": 1200}, // past the threshold again
		{"tool": "bash", "args": map[string]any{"command": "echo more"}},              // blocked
		handoff, // the second is beyond the cap
		{"text": "ending this process"},
		{"text": "relaunched: ${lastUser}"},
	}
	e.Scenario(map[string]any{"steps": steps})
	out, err := e.Command(pitest.Binary(t), append(e.PiArgs(), "-p", "work")...).CombinedOutput()
	if err != nil {
		t.Fatalf("pi-session -p: %v\n%s", err, out)
	}
	reqs := e.Requests()
	if len(reqs) != 9 {
		ev, _ := os.ReadFile(filepath.Join(e.Agent, "context-budget", "events.jsonl"))
		t.Fatalf("model requests = %d, want 9\n%s\n%s", len(reqs), out, ev)
	}
	last := reqs[8]
	if last.PID == reqs[7].PID {
		t.Errorf("the last request came from the same pid %d: no relaunch\n%s", last.PID, out)
	}
	m := regexp.MustCompile(`^continue from (/\S+-2\.md)$`).FindStringSubmatch(last.LastUser())
	if m == nil {
		t.Fatalf("first prompt of the relaunched pi = %q, want continue from the second handoff\n%s", last.LastUser(), out)
	}
	if !strings.Contains(string(out), "pi-session: relaunching pi in ") {
		t.Errorf("no relaunch line:\n%s", out)
	}
	evs := budgetEvents(t, e)
	for _, want := range []string{"handoff_committed", "fallback_armed", "relaunch_armed", "relaunch_marker"} {
		if !hasEvent(evs, want) {
			t.Errorf("events lack %s", want)
		}
	}
	assertNoMarkers(t, e)
}

// TestBudgetOverflowRecovery: a provider context overflow that pi does not
// recover itself (its compaction is off) is recovered by one
// compact-and-retry; in enforce mode the summary is the budget's
// mechanical one, never pi's default summarizer (which would be a model
// request).
func TestBudgetOverflowRecovery(t *testing.T) {
	e := pitest.NewEnv(t)
	budgetConfig(t, e, "enforce", "")
	if err := os.WriteFile(filepath.Join(e.Agent, "settings.json"), []byte(`{"compaction":{"enabled":false,"keepRecentTokens":1}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	e.Scenario(map[string]any{"steps": []map[string]any{
		{"text": "first answer"},
		{"error": "prompt is too long: 250000 tokens > 200000 maximum"},
		{"text": "recovered"},
	}})
	rpc := pitest.StartRPC(t, e.Command(pitest.Binary(t), append(e.PiArgs(), "--mode", "rpc")...))
	rpc.Prompt("remember the numbers 4 and 2")
	from := rpc.Prompt("now add them")
	rpc.WaitFrom(from, "the retried turn", func(r pitest.Record) bool {
		return r.Str("type") == "agent_settled" && len(e.Requests()) >= 3
	})
	reqs := e.Requests()
	if len(reqs) != 3 {
		t.Fatalf("model requests = %d, want 3 (no summarizer call)", len(reqs))
	}
	var texts []string
	for _, m := range reqs[2].Decoded() {
		if m.Role != "system" {
			texts = append(texts, m.Text())
		}
	}
	all := strings.Join(texts, "\n---\n")
	for _, want := range []string{"Emergency handoff (mechanical)", "remember the numbers 4 and 2", "now add them", "exceeded the model's context window"} {
		if !strings.Contains(all, want) {
			t.Errorf("the retried request lacks %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, "first answer") {
		t.Errorf("the retried request still holds the old history:\n%s", all)
	}
	if code := rpc.Close(); code != 0 {
		t.Errorf("exit status %d", code)
	}
	if evs := budgetEvents(t, e); !hasEvent(evs, "overflow_recovery") || !hasEvent(evs, "backstop") {
		t.Errorf("events lack overflow_recovery or backstop")
	}
}
