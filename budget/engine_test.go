package budget

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	v := eng.Start(p, nil, "faux/faux-1")
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
	eng := e.engine()
	p := Peer{SessionID: "s2", Cwd: e.cwd}
	eng.Start(p, nil, "faux/faux-1")
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
	eng.Start(p, arm, "faux/faux-1")
	req, _ := eng.Manual(p, arm, "stop here")
	if !strings.HasPrefix(req, ManualPrefix) || !strings.Contains(req, "stop here") || !strings.Contains(req, "fresh process") {
		t.Errorf("manual request: %s", req)
	}
	eng.AgentStart(p, arm, true)
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
	eng := e.engine()
	p := Peer{SessionID: "s4", Cwd: e.cwd}
	eng.Start(p, nil, "faux/faux-1")
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
	start := time.Now()
	r = RunResumeCheck(context.Background(), "sleep 30 & sleep 30", dir, 200*time.Millisecond, 200*time.Millisecond)
	if !r.TimedOut || time.Since(start) > 5*time.Second {
		t.Errorf("timeout: %+v after %v", r, time.Since(start))
	}
	start = time.Now()
	r = RunResumeCheck(context.Background(), "(sleep 30 &) ; echo done", dir, 10*time.Second, 200*time.Millisecond)
	if r.TimedOut || !strings.Contains(r.Output, "done") || time.Since(start) > 5*time.Second {
		t.Errorf("escaped descendant holding the pipe: %+v after %v", r, time.Since(start))
	}
}
