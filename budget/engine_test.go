package budget

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/pi-session/pi-session/session"
	"github.com/pi-session/pi-session/status"
)

type testEnv struct {
	t     *testing.T
	dir   string
	agent string
	cwd   string
	vars  map[string]string
	now   time.Time
}

func newTestEnv(t *testing.T, config string) *testEnv {
	dir := t.TempDir()
	e := &testEnv{t: t, dir: dir, agent: filepath.Join(dir, "agent"), cwd: filepath.Join(dir, "repo"), now: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
	os.MkdirAll(e.agent, 0o700)
	os.MkdirAll(e.cwd, 0o700)
	git := func(args ...string) { runGit(t, e.cwd, args...) }
	git("init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(e.cwd, "a.txt"), []byte("a\n"), 0o600)
	git("add", "a.txt")
	git("commit", "-qm", "one")
	os.WriteFile(filepath.Join(e.cwd, "b.txt"), []byte("b\n"), 0o600)
	e.vars = map[string]string{"PI_CODING_AGENT_DIR": e.agent, "HOME": dir}
	if config != "" {
		os.WriteFile(filepath.Join(e.agent, "context-budget.json"), []byte(config), 0o600)
	}
	return e
}

// runGit runs git in dir with a test identity.
func runGit(t testing.TB, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// start opens an engine and starts session id in e's repository with the
// scripted model.
func (e *testEnv) start(id string) (*Engine, Peer) {
	eng := e.engine()
	p := Peer{SessionID: id, Cwd: e.cwd}
	eng.Start(p, nil, StartParams{Model: "faux/faux-1"})
	return eng, p
}

func (e *testEnv) engine() *Engine {
	eng, err := New(Options{Getenv: func(k string) string { return e.vars[k] }, Now: func() time.Time { return e.now }, Git: true})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { eng.Close() })
	return eng
}

func (e *testEnv) events() []map[string]any {
	f, err := os.Open(filepath.Join(e.agent, "context-budget", "events.jsonl"))
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		json.Unmarshal(sc.Bytes(), &m)
		out = append(out, m)
	}
	return out
}

// named is the events.jsonl lines of one event, in order.
func (e *testEnv) named(name string) []map[string]any {
	var out []map[string]any
	for _, ev := range e.events() {
		if ev["event"] == name {
			out = append(out, ev)
		}
	}
	return out
}

// field is one field of each line of one event.
func (e *testEnv) field(name, key string) []any {
	var out []any
	for _, ev := range e.named(name) {
		out = append(out, ev[key])
	}
	return out
}

func eventNames(evs []map[string]any) string {
	var names []string
	for _, e := range evs {
		names = append(names, e["event"].(string))
	}
	return strings.Join(names, " ")
}

const enforceConfig = `{"mode":"enforce","models":{"faux/faux-1":{"main":{"soft":3000,"handoff":4000,"hard":8000,"minProgress":1000}}},"handoffGrace":{"calls":1}}`

func TestEngineEnforceCycle(t *testing.T) {
	e := newTestEnv(t, enforceConfig)
	eng := e.engine()
	p := Peer{SessionID: "s1", Cwd: e.cwd}
	v := eng.Start(p, nil, StartParams{Model: "faux/faux-1"})
	if v.Mode != ModeEnforce || v.Footer != "budget: enforce" || v.Gate {
		t.Fatalf("start: %+v", v)
	}
	ctx := context.Background()
	a := eng.TurnEnd(ctx, p, nil, TurnEndParams{Tokens: i64(1500), Usage: i64(1500), Model: "faux/faux-1", Continues: true})
	a = eng.TurnEnd(ctx, p, nil, TurnEndParams{Tokens: i64(4100), Usage: i64(4000), Continues: true})
	if !a.View.Gate || a.View.Phase != HandoffRequired || len(a.Entries) != 1 || !strings.Contains(a.Entries[0].Content, "context_handoff") {
		t.Fatalf("past handoff: %+v", a)
	}
	// One grace call for a state file, then blocks naming context_handoff.
	in, _ := json.Marshal(map[string]string{"path": ".ai-work/task/STATE.md", "content": "x"})
	if a := eng.ToolCall(p, nil, ToolCallParams{ToolName: "write", Input: in}); a.Block {
		t.Errorf("grace write blocked: %s", a.Reason)
	}
	if a := eng.ToolCall(p, nil, ToolCallParams{ToolName: "write", Input: in}); !a.Block || !strings.Contains(a.Reason, "context_handoff") {
		t.Errorf("second write after one grace call: %+v", a)
	}
	args := `{"goal":"finish the engine","next_step":"run the tests","facts":"HEAD is one commit","user_constraints":"never push"}`
	h := eng.Handoff(ctx, p, nil, HandoffParams{Args: []byte(args), ToolCallID: "c1"})
	if h.IsError || h.Details == nil {
		t.Fatalf("handoff: %+v", h)
	}
	path := h.Details.Path
	if filepath.Dir(path) != filepath.Join(e.cwd, ".ai-work", "handoffs") || filepath.Base(path) != "s1-1.md" {
		t.Errorf("handoff path %s", path)
	}
	for _, f := range []string{path, strings.TrimSuffix(path, ".md") + ".json"} {
		st, err := os.Stat(f)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v", f, err, st)
		}
	}
	doc, _ := os.ReadFile(path)
	for _, want := range []string{"## User constraints (verbatim)\n\nnever push", "- branch: main, HEAD ", "?? b.txt", "(source: budget)"} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("handoff lacks %q:\n%s", want, doc)
		}
	}
	if a := eng.ToolCall(p, nil, ToolCallParams{ToolName: "bash", Input: []byte(`{"command":"ls"}`)}); !a.Block || !strings.Contains(a.Reason, "End your turn") {
		t.Errorf("tool after the handoff: %+v", a)
	}
	a = eng.TurnEnd(ctx, p, nil, TurnEndParams{Tokens: i64(4300), Continues: true, ToolResults: []ToolResultInfo{{ToolName: "context_handoff"}}})
	if len(a.Entries) != 2 || a.Entries[0].Type != "compaction" || a.Entries[0].FirstKeptEntryID != nil || a.Entries[0].Summary != string(doc) || !a.Continue {
		t.Fatalf("commit drafts: %+v", a)
	}
	if !strings.Contains(a.Entries[1].Content, "Watch check") || !strings.Contains(a.Entries[1].Content, "unchanged") {
		t.Errorf("continuation lacks the watch check:\n%s", a.Entries[1].Content)
	}
	if a.View.Phase != Idle || a.View.Gate || a.View.Floor != nil || a.View.Commits != 1 {
		t.Errorf("after commit: %+v", a.View)
	}
	eng.Close()
	got := eventNames(e.events())
	for _, want := range []string{"session_start", "handoff_required", "grace_call", "tool_blocked", "handoff_written", "handoff_committed"} {
		if !strings.Contains(got, want) {
			t.Errorf("events lack %s: %s", want, got)
		}
	}
	r, err := status.NewStore(filepath.Join(e.agent, "context-budget")).Read("s1")
	if err != nil || r.HandoffCount != 1 || r.LastHandoff != path || r.EffectiveMode != ModeEnforce || r.Phase != "idle" || r.Thresholds.Handoff != 4000 {
		t.Errorf("status record: %+v %v", r, err)
	}
}

func TestEngineObserveBlocksNothing(t *testing.T) {
	e := newTestEnv(t, strings.Replace(enforceConfig, "enforce", "observe", 1))
	eng, p := e.start("s2")
	ctx := context.Background()
	eng.TurnEnd(ctx, p, nil, TurnEndParams{Tokens: i64(1500), Usage: i64(1500), Continues: true})
	a := eng.TurnEnd(ctx, p, nil, TurnEndParams{Tokens: i64(4100), Usage: i64(4000), Continues: true})
	if len(a.Entries) != 0 || !a.View.Gate || !a.View.Projected || a.View.Phase != HandoffRequired {
		t.Fatalf("observe: %+v", a)
	}
	if a := eng.ToolCall(p, nil, ToolCallParams{ToolName: "bash", Input: []byte(`{"command":"ls"}`)}); a.Block {
		t.Errorf("observe blocked a tool: %s", a.Reason)
	}
	h := eng.Handoff(ctx, p, nil, HandoffParams{Args: []byte(`{"goal":"g","next_step":"n","facts":"f"}`)})
	if h.IsError || h.Details != nil || !strings.Contains(h.Text, "observe mode") {
		t.Errorf("observe handoff: %+v", h)
	}
	if _, err := os.Stat(filepath.Join(e.cwd, ".ai-work")); err == nil {
		t.Error("observe mode wrote a handoff")
	}
	eng.Close()
	got := eventNames(e.events())
	for _, want := range []string{"would_handoff_required", "would_tool_blocked", "would_handoff_written"} {
		if !strings.Contains(got, want) {
			t.Errorf("events lack %s: %s", want, got)
		}
	}
	if strings.Contains(got, " tool_blocked") {
		t.Errorf("observe logged a real block: %s", got)
	}
}

func TestEngineManualWithWrapperArmsRelaunch(t *testing.T) {
	e := newTestEnv(t, "") // no configuration: observe
	eng := e.engine()
	p := Peer{SessionID: "s3", Cwd: e.cwd, Wrapper: true}
	var armed string
	arm := func(h, lp string) (string, error) { armed = h; return "/m/marker.json", nil }
	eng.Start(p, arm, StartParams{Model: "faux/faux-1"})
	req, _ := eng.Manual(p, arm, "stop here")
	if !strings.HasPrefix(req, ManualPrefix) || !strings.Contains(req, "stop here") || !strings.Contains(req, "fresh process") {
		t.Errorf("manual request: %s", req)
	}
	eng.AgentStart(p, arm, AgentStartParams{Manual: true})
	h := eng.Handoff(context.Background(), p, arm, HandoffParams{Args: []byte(`{"goal":"g","next_step":"n","facts":"f","launch_prompt":"resume the demo"}`)})
	if h.IsError {
		t.Fatalf("manual handoff in observe mode: %s", h.Text)
	}
	if a := eng.TurnEnd(context.Background(), p, arm, TurnEndParams{Continues: true}); len(a.Entries) != 0 {
		t.Errorf("a manual handoff under the wrapper committed in place: %+v", a.Entries)
	}
	a := eng.Settled(context.Background(), p, arm)
	if !a.Shutdown || a.Marker != "/m/marker.json" || armed != h.Details.Path {
		t.Errorf("settled: %+v armed %q", a, armed)
	}
	lp, err := os.ReadFile(filepath.Join(filepath.Dir(h.Details.Path), "s3-1.launch-prompt.md"))
	if err != nil || string(lp) != "resume the demo" {
		t.Errorf("launch prompt: %q %v", lp, err)
	}
}

func TestEngineBackoffAndRejections(t *testing.T) {
	e := newTestEnv(t, enforceConfig)
	eng, p := e.start("s4")
	ctx := context.Background()
	args := `{"goal":"the same goal","next_step":"the same step","facts":"the same facts","files_to_read":["missing.md"]}`
	for i := 0; i < 2; i++ {
		h := eng.Handoff(ctx, p, nil, HandoffParams{Args: []byte(args)})
		if !h.IsError || !strings.Contains(h.Text, "missing.md does not exist") {
			t.Fatalf("rejection %d: %+v", i, h)
		}
	}
	h := eng.Handoff(ctx, p, nil, HandoffParams{Args: []byte(args)})
	if h.IsError {
		t.Fatalf("third attempt should degrade to lint: %s", h.Text)
	}
	doc, _ := os.ReadFile(h.Details.Path)
	if !strings.Contains(string(doc), "missing.md does not exist (missing)") {
		t.Errorf("lint lacks the missing file:\n%s", doc)
	}
	eng.TurnEnd(ctx, p, nil, TurnEndParams{Continues: true})
	e.now = e.now.Add(5 * time.Minute)
	h = eng.Handoff(ctx, p, nil, HandoffParams{Args: []byte(`{"goal":"the same goal","next_step":"the same step","facts":"the same facts"}`)})
	if !h.IsError || !strings.Contains(h.Text, "retry after") {
		t.Errorf("duplicate within 15 minutes: %+v", h)
	}
	e.now = e.now.Add(11 * time.Minute)
	if h := eng.Handoff(ctx, p, nil, HandoffParams{Args: []byte(`{"goal":"the same goal","next_step":"the same step","facts":"the same facts"}`)}); h.IsError {
		t.Errorf("after the window: %s", h.Text)
	}
}

func TestResumeCheck(t *testing.T) {
	dir := t.TempDir()
	r := RunResumeCheck(context.Background(), "echo hello; echo err >&2; exit 3", dir, 5*time.Second, time.Second)
	if r.ExitCode != 3 || !strings.Contains(r.Output, "hello") || !strings.Contains(r.Output, "err") || r.TimedOut {
		t.Errorf("plain check: %+v", r)
	}
	r = RunResumeCheck(context.Background(), "yes | head -c 100000", dir, 5*time.Second, time.Second)
	if !r.Truncated || len(r.Output) > ResumeBytes {
		t.Errorf("large output: truncated %v, %d bytes", r.Truncated, len(r.Output))
	}
	// A check past its timeout is killed with its whole process group: both
	// sleeps are gone when it returns, not 30 s later.
	pids := filepath.Join(dir, "pids")
	r = RunResumeCheck(context.Background(), "sleep 30 & echo $! > pids; echo $$ >> pids; sleep 30", dir, 200*time.Millisecond, 200*time.Millisecond)
	if !r.TimedOut {
		t.Errorf("timeout: %+v", r)
	}
	for _, pid := range readPIDs(t, pids) {
		waitGone(t, pid)
	}
	// A descendant that escaped the group and holds the pipe does not hold
	// the check: it returns with the output while that sleep still runs.
	r = RunResumeCheck(context.Background(), "(sleep 30 & echo $! > pids) ; echo done", dir, 10*time.Second, 200*time.Millisecond)
	escaped := readPIDs(t, pids)
	alive := len(escaped) == 1 && syscall.Kill(escaped[0], 0) == nil
	for _, pid := range escaped {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	if r.TimedOut || !strings.Contains(r.Output, "done") || !alive {
		t.Errorf("escaped descendant holding the pipe: %+v; the descendant was alive when the check returned: %v", r, alive)
	}
}

// readPIDs reads the pids a check wrote, one a line.
func readPIDs(t *testing.T, path string) []int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("%s: %q", path, b)
		}
		pids = append(pids, pid)
	}
	return pids
}

// waitGone waits until pid has exited: gone, or a zombie (a killed
// group's orphans go to init, which may reap them late or never in a
// container).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	running := func() bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return false
		}
		i := bytes.LastIndexByte(b, ')')
		return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
	}
	for i := 0; running(); i++ {
		if i == 1000 {
			t.Errorf("pid %d of the timed-out check is still running", pid)
			syscall.Kill(pid, syscall.SIGKILL)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// policyEvents are the events of the policy's effects in order, with the
// would_ prefix of observe mode removed.
func policyEvents(evs []map[string]any) []string {
	kinds := map[string]bool{}
	for _, k := range []string{EffSoft, EffRequired, EffHard, EffNotice, EffBlock, EffGrace, EffWritten, EffCommit, EffDiscard,
		EffRelaunch, EffEmergency, EffShutdown, EffContinue, EffFallback, EffCap, EffLoop, EffResumed} {
		kinds[k] = true
	}
	var out []string
	for _, ev := range evs {
		name := strings.TrimPrefix(ev["event"].(string), "would_")
		if !kinds[name] {
			continue
		}
		if r, ok := ev["reason"].(string); ok {
			name += ":" + r
		}
		out = append(out, name)
	}
	return out
}

// TestObserveParity: observe mode runs the same transitions, with the same
// latches, as enforce mode; every effect becomes a would_* event. The
// extension does not block in observe mode, so it reports the would-be
// blocked call as having run; the engine's own record keeps the preview's
// loop guard counting it as blocked, as enforcement would.
func TestObserveParity(t *testing.T) {
	config := `{"mode":"%s","models":{"faux/faux-1":{"main":{"soft":3000,"handoff":4000,"hard":8000,"minProgress":1000}}},"handoffGrace":{"calls":1},"loop":{"maxHandoffsWithoutProgress":1,"withinTurns":20}}`
	run := func(mode string) ([]string, *testEnv) {
		e := newTestEnv(t, fmt.Sprintf(config, mode))
		eng := e.engine()
		p := Peer{SessionID: "p-" + mode, Cwd: e.cwd}
		ctx := context.Background()
		eng.Start(p, nil, StartParams{Model: "faux/faux-1"})
		grace, _ := json.Marshal(map[string]string{"path": ".ai-work/t/STATE.md", "content": "x"})
		for round := 0; round < 2; round++ {
			eng.TurnEnd(ctx, p, nil, TurnEndParams{Tokens: i64(1500), Usage: i64(1500), Continues: true})
			eng.TurnEnd(ctx, p, nil, TurnEndParams{Tokens: i64(3200), Usage: i64(3100), Continues: false}) // soft: notice waits
			eng.TurnEnd(ctx, p, nil, TurnEndParams{Tokens: i64(4200), Usage: i64(4100), Continues: true})
			id := fmt.Sprintf("c%d", round)
			eng.ToolCall(p, nil, ToolCallParams{ToolName: "write", ToolCallID: id + "g", Input: grace})
			eng.ToolCall(p, nil, ToolCallParams{ToolName: "bash", ToolCallID: id, Input: []byte(`{"command":"make"}`)})
			// The extension blocks nothing in observe mode: the call ran and succeeded.
			eng.TurnEnd(ctx, p, nil, TurnEndParams{Tokens: i64(4300), Usage: i64(4200), Continues: true,
				ToolResults: []ToolResultInfo{{ToolName: "write", ToolCallID: id + "g"}, {ToolName: "bash", ToolCallID: id, Blocked: mode == ModeEnforce}}})
			eng.Settle(p, nil, 0)
			eng.Settle(p, nil, 0)
			eng.Handoff(ctx, p, nil, HandoffParams{Args: []byte(fmt.Sprintf(`{"goal":"round %d","next_step":"n","facts":"f"}`, round)), ToolCallID: id + "h"})
			eng.TurnEnd(ctx, p, nil, TurnEndParams{Tokens: i64(4400), Continues: true, ToolResults: []ToolResultInfo{{ToolName: "context_handoff", ToolCallID: id + "h"}}})
		}
		eng.Close()
		return policyEvents(e.events()), e
	}
	enforce, _ := run(ModeEnforce)
	observe, oe := run(ModeObserve)
	if d := cmp.Diff(enforce, observe); d != "" {
		t.Errorf("observe's would_* events differ from enforce's events (-enforce +observe):\n%s", d)
	}
	for _, want := range []string{"loop_paused", "grace_call", "tool_blocked:handoff", "settle_continue:handoff", "handoff_committed"} {
		if !slices.Contains(enforce, want) && !slices.ContainsFunc(enforce, func(s string) bool { return strings.HasPrefix(s, want) }) {
			t.Errorf("the sequence never reached %s: %v", want, enforce)
		}
	}
	for _, ev := range oe.events() {
		if name := ev["event"].(string); slices.Contains([]string{"tool_blocked", "handoff_committed", "handoff_written"}, name) {
			t.Errorf("observe mode carried out %s", name)
		}
	}
	if _, err := os.Stat(filepath.Join(oe.cwd, ".ai-work")); err == nil {
		t.Error("observe mode wrote a handoff")
	}
}

// TestObserveCountsAreReal: the status record's handoff count is what was
// committed, not the preview's would-be commits; a /handoff commit in
// observe mode counts.
func TestObserveCountsAreReal(t *testing.T) {
	e := newTestEnv(t, strings.Replace(enforceConfig, "enforce", "observe", 1))
	eng, p := e.start("0198a2b4-5f2d-74b1-9cd8-17718871d601")
	ctx := context.Background()
	eng.TurnEnd(ctx, p, nil, TurnEndParams{Tokens: i64(1500), Usage: i64(1500), Continues: true})
	eng.TurnEnd(ctx, p, nil, TurnEndParams{Tokens: i64(4200), Usage: i64(4100), Continues: true})
	eng.Handoff(ctx, p, nil, HandoffParams{Args: []byte(`{"goal":"g","next_step":"n","facts":"f"}`)})
	a := eng.TurnEnd(ctx, p, nil, TurnEndParams{Tokens: i64(4300), Continues: true})
	if len(a.Entries) != 0 || a.View.Commits != 0 {
		t.Fatalf("a preview commit was carried out or counted: %+v", a)
	}
	eng.Manual(p, nil, "")
	eng.AgentStart(p, nil, AgentStartParams{Manual: true})
	h := eng.Handoff(ctx, p, nil, HandoffParams{Args: []byte(`{"goal":"mine","next_step":"n","facts":"f"}`)})
	if h.IsError {
		t.Fatal(h.Text)
	}
	a = eng.TurnEnd(ctx, p, nil, TurnEndParams{Tokens: i64(4400), Continues: true, ToolResults: []ToolResultInfo{{ToolName: "context_handoff"}}})
	if len(a.Entries) != 2 || !a.Continue {
		t.Fatalf("/handoff in observe mode was not committed: %+v", a)
	}
	eng.Close()
	r, err := status.NewStore(filepath.Join(e.agent, "context-budget")).Read(p.SessionID)
	if err != nil || r.HandoffCount != 1 || r.LastHandoff != h.Details.Path || !r.Projected {
		t.Errorf("status record: count %d, last %q, projected %v (%v); want 1 real commit, %s", r.HandoffCount, r.LastHandoff, r.Projected, err, h.Details.Path)
	}
	var counts Counts
	if err := json.Unmarshal(r.Extra["budgetCounts"], &counts); err != nil || counts != (Counts{Other: 1}) {
		t.Errorf("budgetCounts = %s (%v)", r.Extra["budgetCounts"], err)
	}
}

// TestGuardOff: the optional guard integration turns enforcement off for
// the session: nothing is blocked, the footer says why, each handoff and
// hard crossing logs guard_off_threshold once (re-armed below), and the
// bounded overflow recovery still runs. Explicit off stays silent.
func TestGuardOff(t *testing.T) {
	e := newTestEnv(t, enforceConfig)
	eng := e.engine()
	p := Peer{SessionID: "g1", Cwd: e.cwd}
	ctx := context.Background()
	on, off := false, true
	v := eng.Start(p, nil, StartParams{Model: "faux/faux-1", GuardOff: &off})
	if v.Mode != ModeOff || v.Footer != "context-budget: configured enforce, effective off (context guard off)" {
		t.Fatalf("guard off at start: mode %s, footer %q", v.Mode, v.Footer)
	}
	for _, tok := range []int64{1500, 4200, 4300, 2000, 4200, 9000} {
		a := eng.TurnEnd(ctx, p, nil, TurnEndParams{Tokens: i64(tok), Usage: i64(1500), Continues: true, GuardOff: &off})
		if len(a.Entries) != 0 || a.View.Gate {
			t.Fatalf("guard off, %d tokens: %+v", tok, a)
		}
	}
	if a := eng.ToolCall(p, nil, ToolCallParams{ToolName: "bash", Input: []byte(`{"command":"ls"}`)}); a.Block {
		t.Errorf("guard off blocked a tool")
	}
	if o := eng.Overflow(p, nil, OverflowParams{}); !o.Recover {
		t.Errorf("guard off: no overflow recovery")
	}
	v = eng.AgentStart(p, nil, AgentStartParams{})
	a := eng.TurnEnd(ctx, p, nil, TurnEndParams{Tokens: i64(1600), Usage: i64(1600), Continues: true, GuardOff: &on})
	if a.View.Mode != ModeEnforce || a.View.Footer != "budget: enforce" {
		t.Errorf("guard back on: %+v", a.View)
	}
	eng.Close()
	names := eventNames(e.events())
	if d := cmp.Diff([]any{"handoff", "handoff", "hard"}, e.field("guard_off_threshold", "threshold")); d != "" {
		t.Errorf("guard_off_threshold events (-want +got):\n%s\n%s", d, names)
	}
	for _, want := range []string{"mode_mismatch", "mode_changed"} {
		if !strings.Contains(names, want) {
			t.Errorf("events lack %s: %s", want, names)
		}
	}
	if strings.Contains(names, "tool_blocked") || strings.Contains(names, "would_") {
		t.Errorf("guard off enforced or previewed: %s", names)
	}

	// Explicit off: silent, and no overflow recovery.
	e2 := newTestEnv(t, strings.Replace(enforceConfig, "enforce", "off", 1))
	eng2 := e2.engine()
	eng2.Start(p, nil, StartParams{Model: "faux/faux-1"})
	eng2.TurnEnd(ctx, p, nil, TurnEndParams{Tokens: i64(1500), Usage: i64(1500), Continues: true})
	eng2.TurnEnd(ctx, p, nil, TurnEndParams{Tokens: i64(9000), Usage: i64(9000), Continues: true})
	if o := eng2.Overflow(p, nil, OverflowParams{}); o.Recover {
		t.Errorf("explicit off recovered an overflow")
	}
	eng2.Close()
	if names := eventNames(e2.events()); strings.Contains(names, "guard_off") || strings.Contains(names, "would_") || strings.Contains(names, "mode_mismatch") {
		t.Errorf("explicit off logged: %s", names)
	}
}

// TestConfiguredBeforeFirstUse: a session whose first call is not start
// (the extension connected late) still runs under its configuration.
func TestConfiguredBeforeFirstUse(t *testing.T) {
	e := newTestEnv(t, enforceConfig)
	eng := e.engine()
	p := Peer{SessionID: "late", Cwd: e.cwd}
	ctx := context.Background()
	a := eng.TurnEnd(ctx, p, nil, TurnEndParams{Tokens: i64(1500), Usage: i64(1500), Model: "faux/faux-1", Continues: true})
	if a.View.Mode != ModeEnforce || a.View.Phase != Idle || a.View.Thresholds.Hard != 8000 {
		t.Errorf("first call without start: %+v", a.View)
	}
}

// TestModeMismatchLoggedOnce: enforce outside enforceCwds is observe; the
// difference is logged once, not at every input, and shown in the footer.
func TestModeMismatchLoggedOnce(t *testing.T) {
	e := newTestEnv(t, `{"mode":"enforce","enforceCwds":["/nowhere"]}`)
	eng := e.engine()
	p := Peer{SessionID: "m1", Cwd: e.cwd}
	v := eng.Start(p, nil, StartParams{})
	for i := 0; i < 3; i++ {
		_, v = eng.Input(p, nil, InputParams{Source: "interactive"})
	}
	if v.Footer != "context-budget: configured enforce, effective observe (cwd restriction)" {
		t.Errorf("footer %q", v.Footer)
	}
	eng.Close()
	if n := strings.Count(eventNames(e.events()), "mode_mismatch"); n != 1 {
		t.Errorf("%d mode_mismatch events, want 1: %s", n, eventNames(e.events()))
	}
	// An invalid file names the mode it asked for.
	e2 := newTestEnv(t, `{"mode":"enforce","main":{"soft":500000}}`)
	v = e2.engine().Start(p, nil, StartParams{})
	if v.Mode != ModeObserve || v.Footer != "context-budget: configured enforce, effective observe (invalid configuration)" {
		t.Errorf("invalid configuration: mode %s, footer %q", v.Mode, v.Footer)
	}
}

func TestClassifyCompactionError(t *testing.T) {
	for msg, want := range map[string]string{
		"":                                       "benign",
		"Compaction cancelled":                   "benign",
		"Nothing to compact (session too small)": "benign",
		"Already compacted":                      "benign",
		"Request was aborted":                    "benign",
		"No model available for summarization":   "persistent",
		`No API key found for "anthropic"`:       "persistent",
		`Authentication failed for "x". Credentials may have expired`: "persistent",
		"Invalid compaction.reserveTokens setting: -1":                "persistent",
		"Summarization failed: 529 overloaded":                        "transient",
		"fetch failed":                                                "transient",
	} {
		if got := ClassifyCompactionError(msg); got != want {
			t.Errorf("ClassifyCompactionError(%q) = %s, want %s", msg, got, want)
		}
	}
}

// TestCompactionFailures: benign failures change nothing, transient ones
// arm the compaction fallback on the third, a persistent one at once;
// unowned manual errors are ignored; a success disarms it.
func TestCompactionFailures(t *testing.T) {
	for _, c := range []struct {
		name   string
		errs   []CompactResultParams
		armed  bool
		failed int
	}{
		{"benign", []CompactResultParams{{Error: "Compaction cancelled", Owned: true}, {Error: "Nothing to compact", Owned: true}, {Error: "Already compacted", Owned: true}}, false, 0},
		{"two transient", []CompactResultParams{{Error: "fetch failed", Owned: true}, {Error: "fetch failed", Reason: "threshold"}}, false, 2},
		{"three transient", []CompactResultParams{{Error: "fetch failed", Owned: true}, {Error: "fetch failed", Reason: "threshold"}, {Error: "529", Owned: true}}, true, 3},
		{"persistent", []CompactResultParams{{Error: "No model available for summarization", Reason: "threshold"}}, true, 1},
		{"unowned manual", []CompactResultParams{{Error: "No model available for summarization", Reason: "manual"}}, false, 0},
		{"success disarms", []CompactResultParams{{Error: "No model available for summarization", Owned: true}, {OK: true, Owned: true}}, false, 1},
	} {
		e := newTestEnv(t, enforceConfig)
		eng := e.engine()
		p := Peer{SessionID: "c1", Cwd: e.cwd}
		eng.Start(p, nil, StartParams{Model: "faux/faux-1"})
		var v View
		for _, r := range c.errs {
			v = eng.CompactResult(p, nil, r)
		}
		armed := v.Phase == FallbackArmed && v.Action == "fallback-compaction"
		if armed != c.armed {
			t.Errorf("%s: phase %s action %s, want armed %v", c.name, v.Phase, v.Action, c.armed)
		}
		eng.Close()
		n := 0
		for _, class := range e.field("compaction_failed", "class") {
			if class != "benign" {
				n++
			}
		}
		if n != c.failed {
			t.Errorf("%s: %d compaction_failed events (not benign), want %d", c.name, n, c.failed)
		}
	}
}

// TestTelemetryFailureNeverStopsACommit: with the state directory
// unusable (events, turns and status cannot be written) a handoff is
// still written and committed.
func TestTelemetryFailureNeverStopsACommit(t *testing.T) {
	e := newTestEnv(t, enforceConfig)
	blocker := filepath.Join(e.dir, "not-a-dir")
	os.WriteFile(blocker, nil, 0o600)
	e.vars["PI_CONTEXT_BUDGET_STATE_DIR"] = filepath.Join(blocker, "state")
	eng, p := e.start("0198a2b4-5f2d-74b1-9cd8-17718871d602")
	ctx := context.Background()
	eng.TurnEnd(ctx, p, nil, TurnEndParams{Tokens: i64(1500), Usage: i64(1500), Continues: true})
	eng.TurnEnd(ctx, p, nil, TurnEndParams{Tokens: i64(4200), Usage: i64(4100), Continues: true})
	h := eng.Handoff(ctx, p, nil, HandoffParams{Args: []byte(`{"goal":"g","next_step":"n","facts":"f"}`)})
	if h.IsError {
		t.Fatal(h.Text)
	}
	a := eng.TurnEnd(ctx, p, nil, TurnEndParams{Tokens: i64(4300), Continues: true})
	if len(a.Entries) != 2 || a.Entries[0].Type != "compaction" || !a.Continue {
		t.Errorf("no commit with telemetry failing: %+v", a)
	}
}

// TestIdleInput: a user's input after idleMinutes compacts to a still
// valid stored handoff in enforce mode; observe mode logs the preview,
// marked requiresHandoff when it has no handoff.
func TestIdleInput(t *testing.T) {
	cfg := `{"mode":"%s","models":{"faux/faux-1":{"main":{"soft":3000,"handoff":4000,"hard":8000,"minProgress":1000}}},"idleMinutes":10,"keepRecentTokens":1000}`
	e := newTestEnv(t, fmt.Sprintf(cfg, ModeEnforce))
	eng, p := e.start("i1")
	ctx := context.Background()
	eng.TurnEnd(ctx, p, nil, TurnEndParams{Tokens: i64(1500), Usage: i64(1500), Continues: true})
	eng.Manual(p, nil, "")
	eng.AgentStart(p, nil, AgentStartParams{Manual: true})
	eng.Handoff(ctx, p, nil, HandoffParams{Args: []byte(`{"goal":"g","next_step":"n","facts":"f"}`)})
	eng.TurnEnd(ctx, p, nil, TurnEndParams{Tokens: i64(1600), Continues: true, ToolResults: []ToolResultInfo{{ToolName: "context_handoff"}}})
	eng.TurnEnd(ctx, p, nil, TurnEndParams{Tokens: i64(2500), Usage: i64(2500)}) // the continuation answered, no tools
	eng.Settled(ctx, p, nil)
	if c, _ := eng.Input(p, nil, InputParams{Source: "interactive"}); c {
		t.Error("compacted before idleMinutes")
	}
	e.now = e.now.Add(11 * time.Minute)
	if c, _ := eng.Input(p, nil, InputParams{Source: "extension"}); c {
		t.Error("an extension's input compacted")
	}
	c, v := eng.Input(p, nil, InputParams{Source: "interactive"})
	if !c || v.Phase != Compacting {
		t.Errorf("idle input: compact %v, phase %s", c, v.Phase)
	}
	eng.Close()
	if !strings.Contains(eventNames(e.events()), "idle_input_compaction") {
		t.Errorf("no idle_input_compaction event")
	}

	o := newTestEnv(t, fmt.Sprintf(cfg, ModeObserve))
	eng = o.engine()
	eng.Start(p, nil, StartParams{Model: "faux/faux-1"})
	eng.TurnEnd(ctx, p, nil, TurnEndParams{Tokens: i64(2500), Usage: i64(2500)})
	eng.Settled(ctx, p, nil)
	o.now = o.now.Add(11 * time.Minute)
	if c, _ := eng.Input(p, nil, InputParams{Source: "interactive"}); c {
		t.Error("observe mode compacted")
	}
	eng.Close()
	if preview := o.field("would_idle_input_compaction", "requiresHandoff"); len(preview) != 1 || preview[0] != true {
		t.Errorf("observe preview's requiresHandoff = %v, want [true]", preview)
	}
}

// TestEndDiscardsPending: a session that ends (bye) with a handoff written
// but not committed logs it as discarded (shutdown); one ending in a
// relaunch does not.
func TestEndDiscardsPending(t *testing.T) {
	e := newTestEnv(t, enforceConfig)
	eng, p := e.start("e1")
	ctx := context.Background()
	eng.Handoff(ctx, p, nil, HandoffParams{Args: []byte(`{"goal":"g","next_step":"n","facts":"f"}`)})
	eng.End("e1")
	eng.End("e1")
	eng.Close()
	if d := cmp.Diff([]any{"shutdown"}, e.field("handoff_discarded", "reason")); d != "" {
		t.Errorf("discards (-want +got):\n%s", d)
	}
}

// TestQuietBelow: in enforce mode an idle session tells the extension
// below which size a turn cannot change anything; never with something
// due, in observe mode, or past soft.
func TestQuietBelow(t *testing.T) {
	e := newTestEnv(t, enforceConfig)
	eng := e.engine()
	ctx := context.Background()
	p := Peer{SessionID: "q1", Cwd: e.cwd}
	v := eng.Start(p, nil, StartParams{Model: "faux/faux-1"})
	if v.QuietBelow == nil || *v.QuietBelow != 3000 {
		t.Fatalf("at start: quietBelow %v, want the configured soft 3000", v.QuietBelow)
	}
	a := eng.TurnEnd(ctx, p, nil, TurnEndParams{Tokens: i64(2600), Usage: i64(2600), Continues: true})
	if a.View.Floor == nil || a.View.QuietBelow == nil || *a.View.QuietBelow != a.View.Thresholds.Soft {
		t.Errorf("with a floor: quietBelow %v, effective soft %v", a.View.QuietBelow, a.View.Thresholds.Soft)
	}
	a = eng.TurnEnd(ctx, p, nil, TurnEndParams{Tokens: i64(3700), Usage: i64(3700), Continues: false}) // soft: a notice is due
	if a.View.QuietBelow != nil {
		t.Errorf("past soft: quietBelow %v", *a.View.QuietBelow)
	}
}

// TestHandoffLaunchPromptAndWatchActions: a launch_prompt naming a missing
// file is rejected before anything is written; prompt text starting with
// a slash is text; watch_actions that no registry can check are lint.
func TestHandoffLaunchPromptAndWatchActions(t *testing.T) {
	e := newTestEnv(t, enforceConfig)
	eng, p := e.start("l1")
	ctx := context.Background()
	h := eng.Handoff(ctx, p, nil, HandoffParams{Args: []byte(`{"goal":"g","next_step":"n","facts":"f","launch_prompt":"/nowhere/prompt.md"}`)})
	if !h.IsError || !strings.Contains(h.Text, "launch_prompt: /nowhere/prompt.md is not an existing regular file") {
		t.Fatalf("missing launch prompt file: %+v", h)
	}
	if _, err := os.Stat(filepath.Join(e.cwd, ".ai-work")); err == nil {
		t.Error("a rejected handoff wrote files")
	}
	h = eng.Handoff(ctx, p, nil, HandoffParams{Args: []byte(`{"goal":"g","next_step":"n","facts":"f","launch_prompt":"/review the diff first",
		"watch_actions":[{"id":"job-1","target":"CI","on_complete":"read it"}]}`)})
	if h.IsError {
		t.Fatal(h.Text)
	}
	lp, err := os.ReadFile(strings.TrimSuffix(h.Details.Path, ".md") + ".launch-prompt.md")
	if err != nil || string(lp) != "/review the diff first" {
		t.Errorf("launch prompt text: %q %v", lp, err)
	}
	doc, _ := os.ReadFile(h.Details.Path)
	if !strings.Contains(string(doc), "watch_actions: the ids were not checked: no pi-jobs or pi-subagents registry") {
		t.Errorf("no lint for unchecked watch_actions:\n%s", doc)
	}
	a := eng.TurnEnd(ctx, p, nil, TurnEndParams{Continues: true, ToolResults: []ToolResultInfo{{ToolName: "context_handoff"}}})
	if len(a.Entries) != 2 || !strings.Contains(a.Entries[1].Content, "job-1 | CI | on complete: read it") {
		t.Errorf("the watch check lacks the declared work:\n%+v", a.Entries)
	}
}

// TestManualBypassesBackoff: the user's /handoff is never refused as a
// repeat; the agent's own voluntary one is.
func TestManualBypassesBackoff(t *testing.T) {
	e := newTestEnv(t, enforceConfig)
	eng, p := e.start("b1")
	ctx := context.Background()
	args := []byte(`{"goal":"same goal","next_step":"same step","facts":"same facts"}`)
	commit := func() {
		eng.TurnEnd(ctx, p, nil, TurnEndParams{Continues: true, ToolResults: []ToolResultInfo{{ToolName: "context_handoff"}}})
	}
	if h := eng.Handoff(ctx, p, nil, HandoffParams{Args: args}); h.IsError {
		t.Fatal(h.Text)
	}
	commit()
	e.now = e.now.Add(time.Minute)
	if h := eng.Handoff(ctx, p, nil, HandoffParams{Args: args}); !h.IsError || !strings.Contains(h.Text, "retry after") {
		t.Errorf("voluntary repeat: %+v", h)
	}
	eng.Manual(p, nil, "")
	eng.AgentStart(p, nil, AgentStartParams{Manual: true})
	if h := eng.Handoff(ctx, p, nil, HandoffParams{Args: args}); h.IsError {
		t.Errorf("/handoff refused as a repeat: %s", h.Text)
	}
}

// TestHardFallbackEmergencyRelaunch: at the hard limit with no handoff,
// after the one settle continuation, an owned wrapper relaunches from a
// mechanical emergency handoff; without one, pi is never shut down.
func TestHardFallbackEmergencyRelaunch(t *testing.T) {
	for _, wrapper := range []bool{true, false} {
		e := newTestEnv(t, enforceConfig)
		eng := e.engine()
		ctx := context.Background()
		p := Peer{SessionID: "h1", Cwd: e.cwd, Wrapper: wrapper}
		var armed string
		var arm ArmFunc
		if wrapper {
			arm = func(h, lp string) (string, error) { armed = h; return "/m/marker.json", nil }
		}
		eng.Start(p, arm, StartParams{Model: "faux/faux-1"})
		eng.TurnEnd(ctx, p, arm, TurnEndParams{Tokens: i64(1500), Usage: i64(1500), Continues: true})
		a := eng.TurnEnd(ctx, p, arm, TurnEndParams{Tokens: i64(9000), Usage: i64(9000), Continues: true})
		if a.View.Action != "fallback-hard" {
			t.Fatalf("wrapper %v: past hard: %+v", wrapper, a.View)
		}
		if s := eng.Settle(p, arm, 0); !s.Continue {
			t.Errorf("wrapper %v: no settle continuation at the hard limit", wrapper)
		}
		eng.Settle(p, arm, 0)
		a = eng.Settled(ctx, p, arm)
		if !wrapper {
			if a.Shutdown || a.Marker != "" {
				t.Errorf("without a wrapper pi was shut down: %+v", a)
			}
			continue
		}
		if !a.Shutdown || a.Marker != "/m/marker.json" {
			t.Fatalf("with a wrapper: %+v", a)
		}
		doc, err := os.ReadFile(armed)
		if err != nil || !strings.Contains(string(doc), "# Emergency handoff (mechanical)") {
			t.Errorf("relaunch armed from %q: %v\n%s", armed, err, doc)
		}
	}
}

// TestResumeCheckInHandoffAndContinuation: PI_RESUME_CHECK runs before a
// handoff is written (its output in the handoff) and after the reset (in
// the continuation), in enforce mode only and never for a subagent.
func TestResumeCheckInHandoffAndContinuation(t *testing.T) {
	for _, c := range []struct {
		name     string
		config   string
		subagent bool
		want     bool
	}{
		{"enforce", enforceConfig, false, true},
		{"subagent", enforceConfig, true, false},
		{"observe, /handoff", strings.Replace(enforceConfig, "enforce", "observe", 1), false, false},
	} {
		e := newTestEnv(t, c.config)
		e.vars["PI_RESUME_CHECK"] = "echo state-ok from $PWD; exit 3"
		eng := e.engine()
		ctx := context.Background()
		p := Peer{SessionID: "r1", Cwd: e.cwd, Subagent: c.subagent}
		eng.Start(p, nil, StartParams{Model: "faux/faux-1"})
		eng.Manual(p, nil, "")
		eng.AgentStart(p, nil, AgentStartParams{Manual: true})
		h := eng.Handoff(ctx, p, nil, HandoffParams{Args: []byte(`{"goal":"g","next_step":"n","facts":"f"}`)})
		if h.IsError {
			t.Fatalf("%s: %s", c.name, h.Text)
		}
		doc, _ := os.ReadFile(h.Details.Path)
		a := eng.TurnEnd(ctx, p, nil, TurnEndParams{Continues: true, ToolResults: []ToolResultInfo{{ToolName: "context_handoff"}}})
		if len(a.Entries) != 2 {
			t.Fatalf("%s: no commit: %+v", c.name, a)
		}
		want := "`echo state-ok from $PWD; exit 3`: exit status 3\n\n```\nstate-ok from " + e.cwd + "\n```"
		if got := strings.Contains(string(doc), "## Resume check\n\n"+want); got != c.want {
			t.Errorf("%s: resume check in the handoff: %v, want %v\n%s", c.name, got, c.want, doc)
		}
		if got := strings.Contains(a.Entries[1].Content, "## Resume check\n\n"+want); got != c.want {
			t.Errorf("%s: resume check in the continuation: %v, want %v\n%s", c.name, got, c.want, a.Entries[1].Content)
		}
	}
}

// TestBackstopRecoversPriorFromMarkdown: after a committed handoff whose
// JSON sidecar was then lost, the overflow backstop's mechanical summary
// recovers the goal and the user's constraints from the Markdown, and
// cites the handoff.
func TestBackstopRecoversPriorFromMarkdown(t *testing.T) {
	e := newTestEnv(t, enforceConfig)
	eng := e.engine()
	p := Peer{SessionID: "s1", Cwd: e.cwd}
	eng.Start(p, nil, StartParams{Model: "faux/faux-1"})
	ctx := context.Background()
	eng.TurnEnd(ctx, p, nil, TurnEndParams{Tokens: i64(1500), Usage: i64(1500), Model: "faux/faux-1", Continues: true})
	eng.TurnEnd(ctx, p, nil, TurnEndParams{Tokens: i64(4100), Usage: i64(4000), Continues: true})
	args := `{"goal":"finish the engine","next_step":"run the tests","facts":"HEAD is one commit","user_constraints":"never push\n\n## Style\n\nsmall commits"}`
	h := eng.Handoff(ctx, p, nil, HandoffParams{Args: []byte(args), ToolCallID: "c1"})
	if h.IsError || h.Details == nil {
		t.Fatalf("handoff: %+v", h)
	}
	if a := eng.TurnEnd(ctx, p, nil, TurnEndParams{Tokens: i64(4300), Continues: true, ToolResults: []ToolResultInfo{{ToolName: "context_handoff"}}}); a.View.Commits != 1 {
		t.Fatalf("not committed: %+v", a.View)
	}
	// Work goes on after the commit: the handoff is no longer a valid snapshot.
	eng.TurnEnd(ctx, p, nil, TurnEndParams{Tokens: i64(2500), Usage: i64(2500), Continues: true, ToolResults: []ToolResultInfo{{ToolName: "bash"}}})
	if err := os.Remove(strings.TrimSuffix(h.Details.Path, ".md") + ".json"); err != nil {
		t.Fatal(err)
	}
	ans := eng.Compaction(p, nil, CompactionParams{Reason: "overflow", TokensBefore: 9000})
	if ans == nil || ans.Details == nil || !ans.Details.Mechanical {
		t.Fatalf("the overflow backstop in enforce mode gave %+v, want the mechanical summary", ans)
	}
	for _, want := range []string{"## Prior handoff: " + h.Details.Path, "recovered from the Markdown", "finish the engine", "never push\n\n#### Style\n\nsmall commits", "run the tests"} {
		if !strings.Contains(ans.Summary, want) {
			t.Errorf("the mechanical summary lacks %q:\n%s", want, ans.Summary)
		}
	}
}

// TestHandoffCarriesPins: the handoff a context_handoff call writes and
// the emergency one both carry the branch's pins first, whole, whether or
// not the agent quoted them, and the sidecar keeps them.
func TestHandoffCarriesPins(t *testing.T) {
	e := newTestEnv(t, enforceConfig)
	sf := filepath.Join(e.dir, "s.jsonl")
	os.WriteFile(sf, []byte(`{"type":"session","version":3,"id":"pin1","timestamp":"2026-11-30T08:00:00.000Z","cwd":"/w"}
{"type":"message","id":"m1","parentId":null,"timestamp":"2026-11-30T08:01:00.000Z","message":{"role":"user","content":"start","timestamp":1}}
{"type":"custom","id":"p1","parentId":"m1","timestamp":"2026-11-30T08:02:00.000Z","customType":"pi-session:pin","data":{"text":"Never push to main."}}
{"type":"custom","id":"p2","parentId":"p1","timestamp":"2026-11-30T08:03:00.000Z","customType":"pi-session:pin","data":{"text":"Two lines:\nkeep both"}}
{"type":"custom","id":"p3","parentId":"p2","timestamp":"2026-11-30T08:04:00.000Z","customType":"pi-session:pin","data":{"text":"gone"}}
{"type":"custom","id":"u1","parentId":"p3","timestamp":"2026-11-30T08:05:00.000Z","customType":"pi-session:unpin","data":{"pin":"p3"}}
`), 0o600)
	open := func() *Engine {
		eng, err := New(Options{Getenv: func(k string) string { return e.vars[k] }, Now: func() time.Time { return e.now }, Git: true,
			Sessions: func(path string, fn func(*session.File) error) error {
				f, err := session.Open(path)
				if err != nil {
					return err
				}
				return fn(f)
			}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { eng.Close() })
		return eng
	}
	eng := open()
	ctx := context.Background()
	p := Peer{SessionID: "pin1", Cwd: e.cwd, SessionFile: sf, Wrapper: true}
	var armed string
	arm := func(h, lp string) (string, error) { armed = h; return "/m/marker.json", nil }
	eng.Start(p, arm, StartParams{Model: "faux/faux-1"})
	eng.Manual(p, arm, "")
	eng.AgentStart(p, arm, AgentStartParams{Manual: true})
	h := eng.Handoff(ctx, p, arm, HandoffParams{Args: []byte(`{"goal":"g","next_step":"n","facts":"f","user_constraints":"Never push to main."}`)})
	if h.IsError {
		t.Fatalf("handoff: %s", h.Text)
	}
	const section = "## " + PinsTitle + "\n\n- Never push to main.\n- Two lines:\n  keep both\n\n## Goal"
	doc, _ := os.ReadFile(h.Details.Path)
	if !strings.Contains(string(doc), section) || strings.Contains(string(doc), "gone") {
		t.Errorf("the handoff lacks the pins before its goal, or holds the unpinned one:\n%s", doc)
	}
	sc, err := ReadSidecar(h.Details.Path)
	if err != nil || !slices.Equal(sc.Metadata.Pins, []string{"Never push to main.", "Two lines:\nkeep both"}) {
		t.Errorf("sidecar pins: %v, %v", sc, err)
	}
	// The emergency handoff at the hard limit carries them too.
	eng = open()
	p.SessionID = "pin2"
	eng.Start(p, arm, StartParams{Model: "faux/faux-1"})
	eng.TurnEnd(ctx, p, arm, TurnEndParams{Tokens: i64(1500), Usage: i64(1500), Continues: true})
	eng.TurnEnd(ctx, p, arm, TurnEndParams{Tokens: i64(9000), Usage: i64(9000), Continues: true})
	eng.Settle(p, arm, 0)
	eng.Settle(p, arm, 0)
	armed = ""
	eng.Settled(ctx, p, arm)
	em, err := os.ReadFile(armed)
	if err != nil || !strings.Contains(string(em), "# Emergency handoff (mechanical)") || !strings.Contains(string(em), "\n\n- Never push to main.\n- Two lines:\n  keep both\n") {
		t.Errorf("emergency handoff %q: %v\n%s", armed, err, em)
	}
}

// TestManualWithoutModel: a /handoff that has no model to ask changes
// nothing and says why and what to do; one whose model did not answer is
// not asked for again, and the user is told it was not made (in every
// mode), while a model that answers still gets the one continuation.
func TestManualWithoutModel(t *testing.T) {
	for _, config := range []string{"", enforceConfig} {
		e := newTestEnv(t, config)
		eng, p := e.start("m1")
		for _, c := range []struct{ problem, model, want string }{
			{NoModel, "unknown/unknown", "pi-session: no model: /handoff needs one; set one with /model. No handoff was made."},
			{NoCredentials, "anthropic/x\x1b[2J", `anthropic/x\x1b[2J has no API key or login; log in with /login or set another with /model`},
		} {
			text, v := eng.Refuse(p, nil, c.problem, c.model)
			if !strings.Contains(text, c.want) {
				t.Errorf("%s: %q, want %q", c.problem, text, c.want)
			}
			if v.Gate || v.Action != "none" || v.Live != (config != "") {
				t.Errorf("%s: a refused /handoff changed the policy: %+v", c.problem, v)
			}
		}
		if got := e.field("manual_refused", "reason"); len(got) != 2 {
			t.Errorf("manual_refused events: %v", got)
		}

		eng.Manual(p, nil, "")
		eng.AgentStart(p, nil, AgentStartParams{Manual: true})
		a := eng.SettleWith(p, nil, SettleParams{ModelError: "Connection error.: connect ECONNREFUSED 127.0.0.1:9\n"})
		if a.Continue || len(a.Entries) != 0 {
			t.Errorf("config %q: a model that did not answer was asked again: %+v", config, a)
		}
		want := []Notify{{Level: "error", Text: "pi-session: /handoff failed: the model did not answer (Connection error.: connect ECONNREFUSED 127.0.0.1:9). No handoff was made; check the model's connection or choose another with /model, then run /handoff again."}}
		if d := cmp.Diff(want, a.Notify); d != "" {
			t.Errorf("config %q: notify (-want +got):\n%s", config, d)
		}
		if a.View.Live && config == "" {
			t.Errorf("the failed /handoff still counts as asked: %+v", a.View)
		}
		if a := eng.SettleWith(p, nil, SettleParams{ModelError: "again"}); len(a.Notify) != 0 {
			t.Errorf("told twice: %+v", a.Notify)
		}

		eng.Manual(p, nil, "")
		eng.AgentStart(p, nil, AgentStartParams{Manual: true})
		if a := eng.SettleWith(p, nil, SettleParams{}); !a.Continue || len(a.Notify) != 0 {
			t.Errorf("config %q: a model that answered without a handoff: %+v", config, a)
		}
	}
}
