package e2e

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pi-session/pi-session/pitest"
)

// The recap tests run real pi in its TUI on a PTY with the scripted recap
// model (FAUX_RECAP) and the shortest quiet delay pi-session allows
// (PI_SUMMARY_IDLE_MS=30000, its floor), so each waits about 30 s: they
// run in parallel.

// Secrets a tool prints during the run; none may reach the recap model.
const (
	recapGitHubToken = "ghp_R3capE2eT0kenAbcdefghijklmnopqrstuvw"
	recapAWSKey      = "AKIAZ7RECAPE2EKEY123"
	recapPassword    = "hunter2-Recap-E2e"
)

// recapEnv is an Env with the recap model configured and logged.
func recapEnv(t *testing.T, answers, reasoning string) (*pitest.Env, string) {
	t.Helper()
	e := pitest.NewEnv(t)
	log := filepath.Join(filepath.Dir(e.Log), "recap.jsonl")
	e.Set("FAUX_RECAP", answers)
	e.Set("FAUX_RECAP_LOG", log)
	e.Set("PI_SUMMARY_IDLE_MS", "30000")
	dir := filepath.Join(e.Agent, "summaries")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := `{"enabled": true, "provider": "faux-recap", "model": "recap-1", "reasoning": "` + reasoning + `"}`
	if err := os.WriteFile(filepath.Join(dir, "config.private.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return e, log
}

// recapRequest is one request the scripted recap model received.
type recapRequest struct {
	N            int              `json:"n"`
	SystemPrompt string           `json:"systemPrompt"`
	Messages     []pitest.Message `json:"messages"`
	Reasoning    *string          `json:"reasoning"`
	MaxTokens    int              `json:"maxTokens"`
}

func (r recapRequest) user() string {
	if len(r.Messages) == 0 {
		return ""
	}
	return r.Messages[len(r.Messages)-1].Text()
}

func recapRequests(t *testing.T, log string) []recapRequest {
	t.Helper()
	b, err := os.ReadFile(log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []recapRequest
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		var r recapRequest
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("recap log line %q: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

// waitRecapRequests waits until the recap model got n requests.
func waitRecapRequests(t *testing.T, tm *pitest.Term, log string, n int) []recapRequest {
	t.Helper()
	deadline := time.Now().Add(120 * time.Second)
	for {
		if rs := recapRequests(t, log); len(rs) >= n {
			return rs
		}
		if time.Now().After(deadline) {
			t.Fatalf("the recap model got %d requests, want %d; screen:\n%s", len(recapRequests(t, log)), n, tm.Screen())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// recapEntries reads the summary-recap entries of the session files.
func recapEntries(t *testing.T, e *pitest.Env) []map[string]any {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(e.Agent, "sessions", "*", "*.jsonl"))
	var out []map[string]any
	for _, f := range files {
		fd, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fd)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var entry struct {
				Type       string         `json:"type"`
				CustomType string         `json:"customType"`
				Data       map[string]any `json:"data"`
			}
			if json.Unmarshal(sc.Bytes(), &entry) == nil && entry.Type == "custom" && entry.CustomType == "summary-recap" {
				out = append(out, entry.Data)
			}
		}
		fd.Close()
	}
	return out
}

// TestRecapCard: a run whose tool prints secrets settles; after the quiet
// delay the recap model gets a transcript without them (its first answer
// is not JSON, so it is asked again without reasoning), and the card shows
// the recap and the next step; ctrl+o shows which model wrote it.
func TestRecapCard(t *testing.T) {
	t.Parallel()
	e, log := recapEnv(t, "garbage,good", "low")
	e.Scenario(map[string]any{"steps": []map[string]any{
		{"tool": "bash", "args": map[string]any{"command": "printf 'export GITHUB_TOKEN=" + recapGitHubToken + "\\naws_access_key_id=" + recapAWSKey + "\\nmysql -uroot -p" + recapPassword + " app\\n'"}},
		{"text": "deployed with the token"},
	}})
	tm := pitest.StartTerm(t, e.Command(pitest.Binary(t), e.PiArgs()...))
	tm.WaitReady(1)
	tm.Submit("deploy the app")
	tm.WaitFor("deployed with the token")
	tm.WaitFor("✦ Recap")
	tm.WaitFor(`Ran 1 tool call (bash) for "deploy the app"`)
	tm.WaitFor("Next: Review the answer")

	reqs := recapRequests(t, log)
	if len(reqs) != 2 {
		t.Fatalf("recap requests = %d, want 2 (an invalid answer with reasoning, then one without)", len(reqs))
	}
	if r := reqs[0]; r.Reasoning == nil || *r.Reasoning != "low" || r.MaxTokens != 8000 {
		t.Errorf("first attempt: reasoning %v, maxTokens %d; want low, 8000", r.Reasoning, r.MaxTokens)
	}
	if r := reqs[1]; r.Reasoning != nil || r.MaxTokens != 1000 {
		t.Errorf("retry: reasoning %v, maxTokens %d; want none, 1000", r.Reasoning, r.MaxTokens)
	}
	for _, r := range reqs {
		body := r.SystemPrompt + "\n" + r.user()
		for _, secret := range []string{recapGitHubToken, recapAWSKey, recapPassword, recapGitHubToken[4:20]} {
			if strings.Contains(body, secret) {
				t.Errorf("request %d to the recap model holds the secret %q:\n%s", r.N, secret, r.user())
			}
		}
		for _, want := range []string{"<recent_work>", "USER: deploy the app", "TOOL CALL bash:", "TOOL RESULT bash:", "[REDACTED]", "ASSISTANT: deployed with the token"} {
			if !strings.Contains(r.user(), want) {
				t.Errorf("request %d lacks %q:\n%s", r.N, want, r.user())
			}
		}
	}
	entries := recapEntries(t, e)
	if len(entries) != 1 {
		t.Fatalf("summary-recap entries = %d, want 1", len(entries))
	}
	if d := entries[0]; d["provider"] != "faux-recap" || d["model"] != "recap-1" || d["reasoning"] != "low" || d["fallback"] != nil {
		t.Errorf("recap entry = %v, want faux-recap/recap-1 · low, not a fallback", d)
	}
	// The entry never reaches the main model's context.
	tm.Submit("and now?")
	tm.WaitFor("faux: and now?")
	for _, r := range e.Requests() {
		for _, m := range r.Decoded() {
			if strings.Contains(m.Text(), "Ran 1 tool call") {
				t.Errorf("the main model's request %d holds the recap", r.N)
			}
		}
	}
	tm.Type("\x0f") // ctrl+o expands
	tm.WaitFor("faux-recap/recap-1 · low")
}

// TestRecapUserActivity: typing while a recap is generated aborts it and
// leaves the run pending; the next quiet stretch recaps both runs in one
// card. The second answer is hostile (fenced, escapes, "Next:") and comes
// out clean.
func TestRecapUserActivity(t *testing.T) {
	t.Parallel()
	e, log := recapEnv(t, "slow,hostile", "off")
	tm := pitest.StartTerm(t, e.Command(pitest.Binary(t), e.PiArgs()...))
	tm.WaitReady(1)
	tm.Submit("first task")
	tm.WaitFor("faux: first task")
	waitRecapRequests(t, tm, log, 1) // the slow answer is in flight
	tm.WaitFor("summarizing run")
	tm.Submit("second task")
	tm.WaitFor("faux: second task")
	reqs := waitRecapRequests(t, tm, log, 2)
	tm.WaitFor("Ran the scripted tools and checked the output.")
	tm.WaitFor("Next: run make test")
	if n := strings.Count(tm.Screen(), "✦ Recap"); n < 1 {
		t.Errorf("no recap card on the screen")
	}
	second := reqs[1].user()
	for _, want := range []string{"USER: first task", "USER: second task"} {
		if !strings.Contains(second, want) {
			t.Errorf("the recap after the aborted one lacks %q (the boundary must survive):\n%s", want, second)
		}
	}
	entries := recapEntries(t, e)
	if len(entries) != 1 {
		t.Fatalf("summary-recap entries = %d, want 1 (the aborted recap writes none)", len(entries))
	}
	if got := entries[0]["recap"]; got != "Ran the scripted tools and checked the output." {
		t.Errorf("recap = %q, want the hostile answer cleaned", got)
	}
	if got := entries[0]["next"]; got != "run make test" {
		t.Errorf("next = %q, want the Next: prefix removed", got)
	}
	if n := len(recapRequests(t, log)); n != 2 {
		t.Errorf("recap requests = %d, want 2", n)
	}
}

// TestRecapFallback: the recap model fails; a local recap is written from
// the transcript, the user is warned with the error, and the card says it
// is a local fallback.
func TestRecapFallback(t *testing.T) {
	t.Parallel()
	e, log := recapEnv(t, "fail", "medium")
	e.Scenario(map[string]any{"steps": []map[string]any{
		{"tool": "bash", "args": map[string]any{"command": "echo built"}},
		{"tool": "bash", "args": map[string]any{"command": "echo tested"}},
		{"text": "Everything is built and tested."},
	}})
	tm := pitest.StartTerm(t, e.Command(pitest.Binary(t), e.PiArgs()...))
	tm.WaitReady(1)
	tm.Submit("build and test")
	tm.WaitFor("Everything is built and tested.")
	tm.WaitFor("Warning: Recap: The summary model request failed: scripted recap failure: 503 Service Unavailable")
	tm.WaitFor("2 tool calls (bash). Last answer: Everything is built and tested.")
	if n := len(recapRequests(t, log)); n != 1 {
		t.Errorf("recap requests = %d, want 1 (a transport failure is not retried)", n)
	}
	entries := recapEntries(t, e)
	if len(entries) != 1 || entries[0]["fallback"] != true {
		t.Fatalf("summary-recap entries = %v, want one local fallback", entries)
	}
	tm.Type("\x0f")
	tm.WaitFor("faux-recap/recap-1 · medium · local fallback")
}

// TestRecapShellCancels: a command the user runs with ! while a recap is
// pending cancels it (no recap in the quiet stretch that follows); the
// next run's recap covers the first run, the command and the second run.
func TestRecapShellCancels(t *testing.T) {
	t.Parallel()
	e, log := recapEnv(t, "good", "off")
	tm := pitest.StartTerm(t, e.Command(pitest.Binary(t), e.PiArgs()...))
	tm.WaitReady(1)
	tm.Submit("first task")
	tm.WaitFor("faux: first task")
	tm.Submit("!echo shell-activity")
	tm.WaitFor("shell-activity")
	// The recap would fire 30 s after the run settled; 40 s pass quietly.
	time.Sleep(40 * time.Second)
	if n := len(recapRequests(t, log)); n != 0 {
		t.Fatalf("recap requests = %d after a ! command, want 0 (the pending recap is cancelled)", n)
	}
	tm.Submit("second task")
	tm.WaitFor("faux: second task")
	reqs := waitRecapRequests(t, tm, log, 1)
	tm.WaitFor("✦ Recap")
	for _, want := range []string{"USER: first task", "USER SHELL (exit 0): $ echo shell-activity", "USER: second task"} {
		if !strings.Contains(reqs[0].user(), want) {
			t.Errorf("the recap request lacks %q:\n%s", want, reqs[0].user())
		}
	}
}

// TestRecapCommand: /recap changes the model (cheapest first, then the
// reasoning level) and turns recaps off, in the private config file.
func TestRecapCommand(t *testing.T) {
	t.Parallel()
	e := pitest.NewEnv(t)
	e.Set("FAUX_RECAP", "good")
	tm := pitest.StartTerm(t, e.Command(pitest.Binary(t), e.PiArgs()...))
	tm.WaitReady(1)
	tm.Submit("/recap")
	tm.WaitFor("Change model…")
	tm.Type("\r")
	tm.WaitFor("faux-recap/recap-1 · $0.10/Mtok out")
	tm.Type("\r")
	tm.WaitFor("Thinking Level")
	if strings.Contains(tm.Screen(), "xhigh") {
		t.Errorf("the reasoning picker offers xhigh, which the recap model does not support:\n%s", tm.Screen())
	}
	tm.Type("\r") // the default, medium, is preselected
	tm.WaitFor("Summary model: faux-recap/recap-1 · medium")
	path := filepath.Join(e.Agent, "summaries", "config.private.json")
	var cfg map[string]any
	readConfig := func() {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &cfg); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	readConfig()
	if cfg["provider"] != "faux-recap" || cfg["model"] != "recap-1" || cfg["reasoning"] != "medium" || cfg["enabled"] != true {
		t.Errorf("config = %v, want faux-recap/recap-1 · medium, enabled", cfg)
	}
	for p, want := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700} {
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: mode %v (%v), want %v", p, st.Mode().Perm(), err, want)
		}
	}
	tm.Submit("/recap")
	tm.WaitForCount("Disable recaps", 2)
	tm.Type("\x1b[B\r")
	tm.WaitFor("Recaps disabled.")
	readConfig()
	if cfg["enabled"] != false || cfg["provider"] != "faux-recap" {
		t.Errorf("config after disabling = %v", cfg)
	}
	tm.Submit("/recap")
	tm.WaitFor("Enable recaps")
}

// recapSession is a session with two recap entries: a local fallback and
// one without its payload.
const recapSession = `{"type":"session","version":3,"id":"01a22bc0-1a36-74a5-80f2-9894ba8d6c3b","timestamp":"2026-12-01T09:18:59.639Z","cwd":"WORK"}
{"type":"message","id":"u1","parentId":null,"timestamp":"2026-12-01T09:19:00.000Z","message":{"role":"user","content":"build it","timestamp":1}}
{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-12-01T09:19:01.000Z","message":{"role":"assistant","content":[{"type":"text","text":"Built."}],"api":"faux","provider":"faux","model":"faux-1","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":2}}
{"type":"custom","id":"r1","parentId":"a1","timestamp":"2026-12-01T09:22:01.000Z","customType":"summary-recap","data":{"recap":"Built the **project** once.","next":"Run the tests.","provider":"faux-recap","model":"recap-1","reasoning":"low","fallback":true}}
{"type":"custom","id":"r2","parentId":"r1","timestamp":"2026-12-01T09:25:01.000Z","customType":"summary-recap"}
`

// TestRecapCardsAndSettings: cards of a resumed session, a local one and
// one whose entry lost its payload; /recap's notices when the config
// cannot be saved, and a menu dismissed at each step that changes nothing.
func TestRecapCardsAndSettings(t *testing.T) {
	t.Parallel()
	e := pitest.NewEnv(t)
	e.Set("FAUX_RECAP", "good")
	session := filepath.Join(e.Work, "recaps.jsonl")
	if err := os.WriteFile(session, []byte(strings.ReplaceAll(recapSession, "WORK", e.Work)), 0o600); err != nil {
		t.Fatal(err)
	}
	tm := pitest.StartTerm(t, e.Command(pitest.Binary(t), append(e.PiArgs(), "--session", session)...))
	tm.WaitReady(1)
	tm.WaitFor("Built the project once.")
	tm.WaitFor("Next: Run the tests.")
	tm.WaitFor("Recap unavailable")
	tm.Type("\x0f") // ctrl+o expands
	tm.WaitFor("faux-recap/recap-1 · low · local fallback")

	// A dismissed menu writes nothing.
	path := filepath.Join(e.Agent, "summaries", "config.private.json")
	tm.Submit("/recap")
	tm.WaitFor("Change model…")
	tm.Type("\x03") // ctrl+c cancels a menu (a lone Esc would join the next key as Alt)
	tm.Submit("/recap")
	tm.WaitForCount("Change model…", 2)
	tm.Type("\r")
	tm.WaitFor("faux-recap/recap-1 · $0.10/Mtok out")
	tm.Type("\x03")
	tm.Submit("/recap") // dismissed at the reasoning level
	tm.WaitForCount("Change model…", 3)
	tm.Type("\r")
	tm.WaitForCount("faux-recap/recap-1 · $0.10/Mtok out", 2)
	tm.Type("\r")
	tm.WaitFor("Thinking Level")
	tm.Type("\x03")
	tm.Submit("/recap")
	tm.WaitForCount("Disable recaps", 4)
	// By now a dismissed /recap that saved anyway would have written.
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("a dismissed /recap wrote %s (%v)", path, err)
	}

	// The config cannot be written: a directory holds its name.
	if err := os.MkdirAll(filepath.Join(path, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	tm.Type("\x1b[B\r")
	tm.WaitFor("Could not save the private summary config.")
	tm.Submit("/recap")
	tm.WaitForCount("Change model…", 5)
	tm.Type("\r")
	tm.WaitForCount("faux-recap/recap-1 · $0.10/Mtok out", 3)
	tm.Type("\r")
	tm.WaitForCount("Thinking Level", 2)
	tm.Type("\r")
	tm.WaitFor("Could not save the private summary model config.")
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("%s holds %d entries after failed saves, want only the directory in the way", filepath.Dir(path), len(entries))
	}
}

// TestRecapOutsideTUI: in RPC mode /recap says it needs the TUI, and a
// settled run gets no recap (no request to the recap model, no entry, no
// footer status) after the quiet delay.
func TestRecapOutsideTUI(t *testing.T) {
	t.Parallel()
	e, log := recapEnv(t, "good", "off")
	rpc := pitest.StartRPC(t, e.Command(pitest.Binary(t), append(e.PiArgs(), "--mode", "rpc")...))
	mark := rpc.Prompt("/recap")
	rpc.WaitFrom(mark, "the TUI-only notice", func(r pitest.Record) bool {
		return r.IsNotify() && r.Str("message") == "Recap settings are only available in the TUI."
	})
	mark = rpc.Prompt("a task")
	// The recap would be written 30 s after the run settled; 40 s pass.
	time.Sleep(40 * time.Second)
	if n := len(recapRequests(t, log)); n != 0 {
		t.Errorf("recap requests in RPC mode = %d, want 0", n)
	}
	for _, r := range rpc.Records(mark) {
		if r.IsStatus("summaries", "") {
			t.Errorf("RPC mode set the recap status: %v", r)
		}
	}
	if n := len(recapEntries(t, e)); n != 0 {
		t.Errorf("summary-recap entries in RPC mode = %d, want 0", n)
	}
}

// TestRecapNoModels: without any model that has credentials (no scripted
// model loaded), /recap's model picker says so and writes nothing.
func TestRecapNoModels(t *testing.T) {
	t.Parallel()
	e := pitest.NewEnv(t)
	tm := pitest.StartTerm(t, e.Command(pitest.Binary(t)))
	tm.WaitReady(1)
	tm.Submit("/recap")
	tm.WaitFor("Change model…")
	tm.Type("\r")
	tm.WaitFor("No configured models are available for run recaps.")
	path := filepath.Join(e.Agent, "summaries", "config.private.json")
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("/recap without models wrote %s (%v)", path, err)
	}
}

// TestRecapTypoNextToEnabled: the measured case. A config that means to
// turn recaps off but misspells the key ("enabeld": false) left recaps on
// without a word, and the run's transcript went to the model the user
// wanted off. Now the session says where the mistake is, what it may have
// meant and that recaps are off, and no request reaches the recap model
// after the quiet delay.
func TestRecapTypoNextToEnabled(t *testing.T) {
	t.Parallel()
	e, log := recapEnv(t, "good", "low")
	path := filepath.Join(e.Agent, "summaries", "config.private.json")
	if err := os.WriteFile(path, []byte("{\"enabeld\": false,\n \"provider\": \"faux-recap\", \"model\": \"recap-1\", \"reasoning\": \"low\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tm := pitest.StartTerm(t, e.Command(pitest.Binary(t), e.PiArgs()...))
	tm.WaitReady(1)
	tm.Submit("a task")
	tm.WaitFor(`did you mean "enabled"?`)
	tm.WaitFor("recaps are off until this is fixed")
	// The recap would be written 30 s after the run settled; 40 s pass.
	time.Sleep(40 * time.Second)
	if n := len(recapRequests(t, log)); n != 0 {
		t.Errorf("recap requests with \"enabeld\": false = %d, want 0", n)
	}
	if n := len(recapEntries(t, e)); n != 0 {
		t.Errorf("summary-recap entries = %d, want 0", n)
	}
}

// TestRecapNamesEachRunsPrompt: the measured case of the demo. A greeting,
// then a run with a tool for the build log (and a message steered in while
// its tool ran), in one quiet stretch: the card named the greeting for the
// tools of the build log ("Ran 1 tool call (bash) for "hello there""), as
// the recap covers both runs and the transcript did not say where the
// second began. Now the request marks each run, and the card leads with the
// last run and the prompt that started it. After /relay, a run with a
// follow-up queued while its tool ran gets a card of its own, naming its
// own prompt.
func TestRecapNamesEachRunsPrompt(t *testing.T) {
	t.Parallel()
	e, log := recapEnv(t, "good", "off")
	// pi keeps the last 2k tokens on a compaction, so /relay has the
	// greeting's long answer to replace.
	if err := os.WriteFile(filepath.Join(e.Agent, "settings.json"), []byte(`{"compaction":{"keepRecentTokens":2000}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	e.Scenario(map[string]any{"steps": []map[string]any{
		{"text": "Hello!", "pad": 4000},
		{"tool": "bash", "args": map[string]any{"command": "sleep 8; echo build-ok"}},
		{"text": "The build log has no errors."},
		{"tool": "bash", "args": map[string]any{"command": "sleep 8; echo tests-ok"}},
		{"text": "The tests pass."},
		{"text": "The linter is clean."},
	}})
	tm := pitest.StartTerm(t, e.Command(pitest.Binary(t), e.PiArgs()...))
	tm.WaitReady(1)
	tm.Submit("hello there")
	tm.WaitFor("Hello!")
	tm.Submit("show me the build log")
	tm.WaitFor("sleep 8; echo build-ok")
	tm.Submit("only the errors, please") // steered into the running run
	tm.WaitFor("The build log has no errors.")
	reqs := waitRecapRequests(t, tm, log, 1)
	tm.WaitFor("✦ Recap")
	first := reqs[0].user()
	for _, want := range []string{"--- run 1 of 2 ---\n\nUSER: hello there", "--- run 2 of 2 ---\n\nUSER: show me the build log", "USER: only the errors, please"} {
		if !strings.Contains(first, want) {
			t.Errorf("the first recap request lacks %q:\n%s", want, first)
		}
	}
	if strings.Contains(first, "--- run 3") {
		t.Errorf("the steered message started a run of its own:\n%s", first)
	}
	entries := recapEntries(t, e)
	if len(entries) != 1 {
		t.Fatalf("summary-recap entries = %d, want 1", len(entries))
	}
	if got, want := entries[0]["recap"], `Ran 1 tool call (bash) for "show me the build log" (earlier: "hello there"); the run finished without errors.`; got != want {
		t.Errorf("first card = %q, want %q", got, want)
	}

	tm.Submit("/relay")
	tm.WaitFor("context-relay: relayed")
	tm.Submit("now check the tests")
	tm.WaitFor("sleep 8; echo tests-ok")
	tm.Type("and the linter")
	time.Sleep(50 * time.Millisecond)
	tm.Type("\x1b\r") // alt+enter queues a follow-up
	tm.WaitFor("The linter is clean.")
	reqs = waitRecapRequests(t, tm, log, 2)
	second := reqs[1].user()
	for _, want := range []string{"USER: now check the tests", "USER: and the linter"} {
		if !strings.Contains(second, want) {
			t.Errorf("the second recap request lacks %q:\n%s", want, second)
		}
	}
	for _, unwanted := range []string{"--- run", "hello there", "show me the build log"} {
		if strings.Contains(second, unwanted) {
			t.Errorf("the second recap request holds %q (one run since the first card):\n%s", unwanted, second)
		}
	}
	tm.WaitForCount("✦ Recap", 2)
	entries = recapEntries(t, e)
	if len(entries) != 2 {
		t.Fatalf("summary-recap entries = %d, want 2", len(entries))
	}
	if got, want := entries[1]["recap"], `Ran 1 tool call (bash) for "now check the tests"; the run finished without errors.`; got != want {
		t.Errorf("second card = %q, want %q", got, want)
	}
}
