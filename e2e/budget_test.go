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

// runPrint runs pi-session -p with the prompts and returns the model's
// requests and the output; pi-session must succeed after want requests.
func runPrint(t *testing.T, e *pitest.Env, want int, prompts ...string) ([]pitest.Request, []byte) {
	t.Helper()
	out, err := e.Command(pitest.Binary(t), append(append(e.PiArgs(), "-p"), prompts...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("pi-session -p: %v\n%s", err, out)
	}
	reqs := e.Requests()
	if len(reqs) != want {
		ev, _ := os.ReadFile(filepath.Join(e.Agent, "context-budget", "events.jsonl"))
		t.Fatalf("model requests = %d, want %d\n%s\n%s", len(reqs), want, out, ev)
	}
	return reqs, out
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

func hasEvent(evs []map[string]any, name string) bool { return lastEvent(evs, name) != nil }

// lastEvent is the last event named name, or nil.
func lastEvent(evs []map[string]any, name string) map[string]any {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i]["event"] == name {
			return evs[i]
		}
	}
	return nil
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
	reqs, _ := runPrint(t, e, 4, "work")
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
	reqs, _ := runPrint(t, e, 5, "work")
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
	reqs, out := runPrint(t, e, 9, "work")
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
	for _, want := range []string{"handoff_committed", "fallback_armed", "relaunch_armed", "relaunch_marker", "continued_from"} {
		if !hasEvent(evs, want) {
			t.Errorf("events lack %s", want)
		}
	}
	assertNoMarkers(t, e)
	// The relaunched session's last handoff is the one it continued from.
	st, err := e.Command(pitest.Binary(t), "status", "--all").CombinedOutput()
	if err != nil {
		t.Fatalf("pi-session status: %v\n%s", err, st)
	}
	if n := strings.Count(string(st), "; last "); n != 2 || strings.Count(string(st), m[1]) != 2 {
		t.Errorf("pi-session status does not show the second handoff as the last of both sessions:\n%s", st)
	}
}

// TestBudgetOverflowRecovery: a provider context overflow that pi does not
// recover itself (its compaction is off) is recovered by one
// compact-and-retry. In enforce mode the summary is the budget's
// mechanical one, never pi's default summarizer (which would be a model
// request); in observe mode (the default) it is pi's own summarizer, and
// when that fails, the bounded mechanical one.
func TestBudgetOverflowRecovery(t *testing.T) {
	for _, c := range []struct {
		name       string
		mode       string
		summarizer []map[string]any // the summarizer's request, if pi makes one
		want       []string
	}{
		{"enforce", "enforce", nil, []string{"Emergency handoff (mechanical)", "remember the numbers 4 and 2", "now add them"}},
		{"observe, native summarizer", "observe", []map[string]any{{"text": "SUMMARY: the user gave the numbers 4 and 2"}}, []string{"SUMMARY: the user gave the numbers 4 and 2"}},
		{"observe, summarizer fails", "observe", []map[string]any{{"error": "summarizer unavailable"}}, []string{"Emergency handoff (mechanical)", "remember the numbers 4 and 2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := pitest.NewEnv(t)
			budgetConfig(t, e, c.mode, "")
			if err := os.WriteFile(filepath.Join(e.Agent, "settings.json"), []byte(`{"compaction":{"enabled":false,"keepRecentTokens":1}}`), 0o600); err != nil {
				t.Fatal(err)
			}
			steps := []map[string]any{{"text": "first answer"}, {"error": "prompt is too long: 250000 tokens > 200000 maximum"}}
			steps = append(append(steps, c.summarizer...), map[string]any{"text": "recovered"})
			e.Scenario(map[string]any{"steps": steps})
			rpc := pitest.StartRPC(t, e.Command(pitest.Binary(t), append(e.PiArgs(), "--mode", "rpc")...))
			rpc.Prompt("remember the numbers 4 and 2")
			from := rpc.Prompt("now add them")
			rpc.WaitFrom(from, "the retried turn", func(r pitest.Record) bool {
				return r.Str("type") == "agent_settled" && len(e.Requests()) >= len(steps)
			})
			reqs := e.Requests()
			if len(reqs) != len(steps) {
				t.Fatalf("model requests = %d, want %d (prompt, overflow, %d summarizer calls, retry)", len(reqs), len(steps), len(c.summarizer))
			}
			var texts []string
			for _, m := range nonSystem(reqs[len(reqs)-1]) {
				texts = append(texts, m.Text())
			}
			all := strings.Join(texts, "\n---\n")
			for _, want := range append(c.want, "exceeded the model's context window") {
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
			evs := budgetEvents(t, e)
			if !hasEvent(evs, "overflow_recovery") {
				t.Error("events lack overflow_recovery")
			}
			if mech := hasEvent(evs, "backstop"); mech != strings.Contains(c.want[0], "mechanical") {
				t.Errorf("mechanical backstop used: %v", mech)
			}
		})
	}
}

// nonSystem is a request's messages besides the system prompt.
func nonSystem(r pitest.Request) []pitest.Message {
	var out []pitest.Message
	for _, m := range r.Decoded() {
		if m.Role != "system" {
			out = append(out, m)
		}
	}
	return out
}

// TestBudgetHandoffPlainPi: without pi-session (plain pi with the
// extension, which starts pi-session serve), /handoff commits in place:
// the request after the handoff is the handoff and the continuation, from
// the same process and session. No configuration: observe mode, where
// /handoff works too.
func TestBudgetHandoffPlainPi(t *testing.T) {
	e := pitest.NewEnv(t)
	e.Set("PI_SESSION_BIN", pitest.Binary(t))
	e.Scenario(map[string]any{"steps": []map[string]any{
		{"text": "noted"},
		{"tool": "context_handoff", "args": map[string]any{"goal": "ship the parser", "next_step": "run the tests", "facts": "the lexer is done"}},
		{"text": "continuing in place"},
	}})
	pi := filepath.Join(pitest.ToolsBin(t), "pi")
	out, err := e.Command(pi, append(e.PiArgs("extension"), "-p", "never touch the public API", "/handoff start over")...).CombinedOutput()
	if err != nil {
		t.Fatalf("pi -p: %v\n%s", err, out)
	}
	reqs := e.Requests()
	if len(reqs) != 3 {
		ev, _ := os.ReadFile(filepath.Join(e.Agent, "context-budget", "events.jsonl"))
		t.Fatalf("model requests = %d, want 3\n%s\n%s", len(reqs), out, ev)
	}
	if !strings.Contains(reqs[1].LastUser(), "start over") || strings.Contains(reqs[1].LastUser(), "fresh process") {
		t.Errorf("the /handoff request under plain pi = %q", reqs[1].LastUser())
	}
	msgs := nonSystem(reqs[2])
	if len(msgs) != 2 || !strings.Contains(msgs[0].Text(), "# Handoff ") || !strings.Contains(msgs[0].Text(), "> never touch the public API") ||
		!strings.Contains(msgs[1].Text(), "The context was reset to the handoff above") {
		t.Fatalf("the request after /handoff is not the handoff and the continuation: %v", msgs)
	}
	if reqs[2].PID != reqs[0].PID {
		t.Errorf("pid %d after the handoff, %d before: want the same process", reqs[2].PID, reqs[0].PID)
	}
	evs := budgetEvents(t, e)
	if committed := lastEvent(evs, "handoff_committed"); committed == nil || committed["source"] != "manual" || committed["mode"] != "observe" {
		t.Errorf("handoff_committed = %v, want a manual commit carried out in observe mode", committed)
	}
	if hasEvent(evs, "relaunch_armed") {
		t.Error("plain pi armed a relaunch")
	}
}

// TestBudgetHandoffPastThreshold: /handoff while the policy already
// requires a handoff (enforce mode, past the threshold) is still the
// user's: under pi-session it ends in a relaunch, not an in-place commit.
func TestBudgetHandoffPastThreshold(t *testing.T) {
	e := pitest.NewEnv(t)
	budgetConfig(t, e, "enforce", `,"handoffGrace":{"enabled":false}`)
	e.Scenario(map[string]any{"steps": []map[string]any{
		growSteps[0], growSteps[1],
		{"text": "I will stop here"}, // the policy's settle continuation asks for a handoff
		{"text": "still stopping"},
		{"tool": "context_handoff", "args": map[string]any{"goal": "g", "next_step": "n", "facts": "f"}}, // /handoff
		{"text": "ending this process"},
		{"text": "relaunched: ${lastUser}"},
	}})
	reqs, _ := runPrint(t, e, 7, "work", "/handoff now")
	if reqs[6].PID == reqs[5].PID || !regexp.MustCompile(`^continue from /\S+-1\.md$`).MatchString(reqs[6].LastUser()) {
		t.Errorf("last request from pid %d (before: %d): %q, want a relaunch continuing from the handoff", reqs[6].PID, reqs[5].PID, reqs[6].LastUser())
	}
	evs := budgetEvents(t, e)
	for _, want := range []string{"handoff_required", "relaunch_armed", "relaunch_marker"} {
		if !hasEvent(evs, want) {
			t.Errorf("events lack %s", want)
		}
	}
	if hasEvent(evs, "handoff_committed") {
		t.Error("the /handoff committed in place under pi-session")
	}
}

// TestBudgetGuardOff: a shared guard library at <agentDir>/lib/guards.ts
// whose isGuardOff("context") says true turns enforcement off for the
// session: nothing is blocked, the crossing is logged as
// guard_off_threshold, and the mismatch names the guard.
func TestBudgetGuardOff(t *testing.T) {
	e := pitest.NewEnv(t)
	budgetConfig(t, e, "enforce", `,"handoffGrace":{"enabled":false}`)
	lib := filepath.Join(e.Agent, "lib")
	if err := os.MkdirAll(lib, 0o700); err != nil {
		t.Fatal(err)
	}
	guards := `export function isGuardOff(name: string): boolean { return name === "context"; }` + "\n"
	if err := os.WriteFile(filepath.Join(lib, "guards.ts"), []byte(guards), 0o600); err != nil {
		t.Fatal(err)
	}
	e.Scenario(map[string]any{"steps": append(append([]map[string]any{}, growSteps...), map[string]any{"text": "done"})})
	reqs, _ := runPrint(t, e, 4, "work")
	if r := lastToolResult(t, reqs[3]); !strings.Contains(r, "after-threshold") {
		t.Errorf("a tool was blocked with the context guard off: %q", r)
	}
	evs := budgetEvents(t, e)
	if mismatch := lastEvent(evs, "mode_mismatch"); mismatch == nil || mismatch["effective"] != "off" || mismatch["reason"] != "context guard off" {
		t.Errorf("mode_mismatch = %v", mismatch)
	}
	if !hasEvent(evs, "guard_off_threshold") {
		t.Error("events lack guard_off_threshold")
	}
	for _, not := range []string{"tool_blocked", "handoff_required", "would_tool_blocked"} {
		if hasEvent(evs, not) {
			t.Errorf("the guard's off logged %s", not)
		}
	}
}

// TestBudgetSiblingInvalidates: a tool called beside context_handoff that
// finishes after the handoff was written makes it stale: it is discarded,
// not committed, and the next handoff lists it.
func TestBudgetSiblingInvalidates(t *testing.T) {
	e := pitest.NewEnv(t)
	if err := os.WriteFile(filepath.Join(e.Agent, "context-budget.json"), []byte(`{"mode":"enforce"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	handoff := map[string]any{"tool": "context_handoff", "args": map[string]any{"goal": "g", "next_step": "n", "facts": "${lastUser}"}}
	e.Scenario(map[string]any{"steps": []map[string]any{
		{"tools": []map[string]any{handoff, {"tool": "bash", "args": map[string]any{"command": "sleep 0.5; echo late"}}}},
		{"text": "both ran"},
		handoff,
		{"text": "continued"},
	}})
	reqs, _ := runPrint(t, e, 4, "first", "second")
	if msgs := nonSystem(reqs[1]); len(msgs) != 4 || strings.Contains(msgs[0].Text(), "# Handoff") {
		t.Errorf("the stale handoff was committed: the next request holds %v", msgs)
	}
	msgs := nonSystem(reqs[3])
	if len(msgs) != 2 || !strings.Contains(msgs[0].Text(), "## Discarded drafts") || !strings.Contains(msgs[0].Text(), "-1.md (a tool finished after the handoff)") {
		t.Errorf("the committed handoff does not list the discarded one: %v", msgs)
	}
	if ev := lastEvent(budgetEvents(t, e), "handoff_discarded"); ev == nil || ev["reason"] != "a tool finished after the handoff" {
		t.Errorf("handoff_discarded = %v", ev)
	}
}
