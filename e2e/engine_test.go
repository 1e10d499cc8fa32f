package e2e

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi-session/pi-session/hooks"
	"github.com/pi-session/pi-session/pitest"
)

// describeLine matches /pi-session's report of session.describe.
var (
	describeRead   = regexp.MustCompile(`read +(\d+) entries, branch (\d+), (\d+) messages \((\d+) sent to the model\)`)
	describeTokens = regexp.MustCompile(`tokens +(\d+) in context \(pi says (\d+|unknown)\)`)
	connectedLine  = regexp.MustCompile(`pi-session: connected to the engine host \((wrapper|serve), pid (\d+)\)`)
)

// TestDescribe: under pi-session, /pi-session asks the engine host to read
// the session file; its numbers match what the scripted model received and
// pi's own context estimate.
func TestDescribe(t *testing.T) {
	e := pitest.NewEnv(t)
	e.Scenario(map[string]any{"steps": []map[string]any{
		{"tool": "bash", "args": map[string]any{"command": "echo from-the-tool"}},
		{"text": "the tool said: ${lastToolResult}"},
		{"tools": []map[string]any{
			{"tool": "bash", "args": map[string]any{"command": "echo one"}},
			{"tool": "bash", "args": map[string]any{"command": "echo two"}},
		}},
		{"text": "done"},
	}})
	args := append(e.PiArgs(), "-p", "run the tool", "again, twice", "/pi-session")
	out, err := e.Command(pitest.Binary(t), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("pi-session -p: %v\n%s", err, out)
	}
	text := string(out)
	m := connectedLine.FindStringSubmatch(text)
	if m == nil || m[1] != "wrapper" {
		t.Fatalf("/pi-session did not report a connection to the wrapper's host:\n%s", text)
	}
	for _, want := range []string{"relaunch available", "(main, print, headless", "protocol 1", "extension 0.1.0 · pi 1.6.0"} {
		if !strings.Contains(text, want) {
			t.Errorf("/pi-session output lacks %q:\n%s", want, text)
		}
	}
	read := describeRead.FindStringSubmatch(text)
	tokens := describeTokens.FindStringSubmatch(text)
	if read == nil || tokens == nil {
		t.Fatalf("/pi-session output lacks the session's numbers:\n%s", text)
	}
	reqs := e.Requests()
	if len(reqs) != 4 {
		t.Fatalf("model requests = %d, want 4", len(reqs))
	}
	// The projection is what the last request held plus the answer to it.
	last := len(reqs[len(reqs)-1].Messages)
	if got, _ := strconv.Atoi(read[4]); got != last+1 {
		t.Errorf("engine counts %s messages sent to the model; the last request held %d, plus its answer = %d\n%s", read[4], last, last+1, text)
	}
	if tokens[1] != tokens[2] {
		t.Errorf("engine's context estimate %s tokens, pi's %s\n%s", tokens[1], tokens[2], text)
	}
	entries, _ := strconv.Atoi(read[1])
	branch, _ := strconv.Atoi(read[2])
	if entries < last || branch != entries {
		t.Errorf("entries %d, branch %d: want a linear session with at least %d entries", entries, branch, last)
	}
}

// TestServeUnderPlainPi: after pi-session setup, plain pi loads the
// extension from settings, which starts pi-session serve; the host is gone
// once pi exits.
func TestServeUnderPlainPi(t *testing.T) {
	e := pitest.NewEnv(t)
	if out, err := e.Command(pitest.Binary(t), "setup").CombinedOutput(); err != nil {
		t.Fatalf("pi-session setup: %v\n%s", err, out)
	}
	out, err := e.Command(filepath.Join(pitest.ToolsBin(t), "pi"), append(e.PiArgs(), "-p", "hello", "/pi-session")...).CombinedOutput()
	if err != nil {
		t.Fatalf("pi -p: %v\n%s", err, out)
	}
	m := connectedLine.FindStringSubmatch(string(out))
	if m == nil || m[1] != "serve" {
		t.Fatalf("plain pi's /pi-session did not reach a pi-session serve:\n%s", out)
	}
	pid, _ := strconv.Atoi(m[2])
	waitGone(t, pid, "pi-session serve after pi exited")
	if strings.Contains(string(out), "relaunch available") {
		t.Errorf("plain pi claims a relaunch:\n%s", out)
	}
}

// TestEngineKilled: the engine host (pi-session serve under plain pi) is
// killed in the middle of a session. pi keeps answering, the user is told
// once, the extension starts a new host and calls work again; that host
// ends with pi.
func TestEngineKilled(t *testing.T) {
	e := pitest.NewEnv(t)
	e.Set("PI_SESSION_BIN", pitest.Binary(t))
	rpc := pitest.StartRPC(t, e.Command(filepath.Join(pitest.ToolsBin(t), "pi"), append(e.PiArgs("extension"), "--mode", "rpc")...))
	first := hostPID(t, rpc, "serve")

	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, first, "the killed host")
	for _, p := range []string{"still there?", "and now?"} {
		mark := rpc.Prompt(p)
		rpc.WaitFrom(mark, "an answer to "+p, func(r pitest.Record) bool {
			return r.Str("type") == "message_end" && strings.Contains(messageText(r), "faux: "+p)
		})
	}
	second := hostPID(t, rpc, "serve")
	if second == first {
		t.Fatalf("the same host pid %d answered after it was killed", first)
	}
	var outages []string
	for _, n := range rpc.Notices(0) {
		if strings.Contains(n, "pi continues without it") {
			outages = append(outages, n)
		}
	}
	if len(outages) != 1 {
		t.Errorf("outage notices = %q, want exactly one", outages)
	}
	if code := rpc.Close(); code != 0 {
		t.Errorf("pi exit status %d, want 0; stderr:\n%s", code, rpc.Stderr())
	}
	waitGone(t, second, "the restarted host after pi exited")
}

// TestFailOpen: while the engine is down, tool results reach the model
// unchanged and pi works on; when the engine is back, its hook applies
// again. The engine here is a test host whose tool_result hook marks every
// result.
func TestFailOpen(t *testing.T) {
	e := pitest.NewEnv(t)
	dir, err := os.MkdirTemp("", "fo")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "h.sock")
	mark := hooks.Engine{Name: "mark", Hooks: map[string]string{"tool_result": "toolResult"}, Methods: map[string]hooks.Handler{
		"toolResult": func(ctx context.Context, r *hooks.Request) (any, error) {
			tr, err := hooks.DecodeToolResult(r)
			if err != nil {
				return nil, err
			}
			out := []hooks.Block{}
			for _, b := range tr.Content {
				if b.Type == "text" {
					b.Text = "[marked] " + b.Text
				}
				out = append(out, b)
			}
			return hooks.ToolResultPatch{Content: out}.Reply(), nil
		},
	}}
	start := func() *hooks.Host {
		h, err := hooks.Listen(hooks.Config{Path: sock, Mode: "serve"})
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Register(mark); err != nil {
			t.Fatal(err)
		}
		go h.Serve(context.Background())
		return h
	}
	h := start()
	e.Set(hooks.EnvSocket, sock)
	e.Scenario(map[string]any{"repeat": true, "steps": []map[string]any{
		{"tool": "bash", "args": map[string]any{"command": "echo result-of-the-tool"}},
		{"text": "saw: ${lastToolResult}"},
	}})
	rpc := pitest.StartRPC(t, e.Command(filepath.Join(pitest.ToolsBin(t), "pi"), append(e.PiArgs("extension"), "--mode", "rpc")...))
	rpc.WaitFrom(0, "connected", func(r pitest.Record) bool {
		return r.IsStatus("pi-session", "pi-session") && !r.IsStatus("pi-session", "offline")
	})

	toolResult := func(prompt string) string {
		t.Helper()
		rpc.Prompt(prompt)
		reqs := e.Requests()
		last := reqs[len(reqs)-1]
		msgs := last.Decoded()
		for i := len(msgs) - 1; i >= 0; i-- {
			if msgs[i].Role == "toolResult" {
				return msgs[i].Text()
			}
		}
		t.Fatalf("no tool result in the model's last request")
		return ""
	}
	if got := toolResult("one"); got != "[marked] result-of-the-tool\n" {
		t.Errorf("with the engine up, the model saw %q, want the marked result", got)
	}
	h.Close() // the engine dies
	rpc.WaitFrom(0, "the offline footer", func(r pitest.Record) bool { return r.IsStatus("pi-session", "offline") })
	for _, p := range []string{"two", "three"} {
		if got := toolResult(p); got != "result-of-the-tool\n" {
			t.Errorf("with the engine down, the model saw %q, want the original result", got)
		}
	}
	mark0 := rpc.Mark()
	h = start() // the engine is back
	defer h.Close()
	rpc.WaitFrom(mark0, "connected again", func(r pitest.Record) bool {
		return r.IsStatus("pi-session", "pi-session") && !r.IsStatus("pi-session", "offline")
	})
	if got := toolResult("four"); got != "[marked] result-of-the-tool\n" {
		t.Errorf("after the engine came back, the model saw %q, want the marked result", got)
	}
	var outages int
	for _, n := range rpc.Notices(0) {
		if strings.Contains(n, "pi continues without it") {
			outages++
		}
	}
	if outages != 1 {
		t.Errorf("%d outage notices, want 1: %q", outages, rpc.Notices(0))
	}
	if code := rpc.Close(); code != 0 {
		t.Errorf("pi exit status %d; stderr:\n%s", code, rpc.Stderr())
	}
}

// TestTUIStatus: under pi-session the TUI footer shows the extension's
// status and /pi-session reports the wrapper's engine host.
func TestTUIStatus(t *testing.T) {
	e := pitest.NewEnv(t)
	tm := pitest.StartTerm(t, e.Command(pitest.Binary(t), e.PiArgs()...))
	tm.WaitReady(1)
	tm.Submit("/pi-session")
	tm.WaitFor("connected to the engine host (wrapper")
	for _, want := range []string{"main, tui", "relaunch available", "latency"} {
		tm.WaitFor(want)
	}
	tm.Submit("/quit")
	if code := tm.Wait(); code != 0 {
		t.Fatalf("exit status %d; screen:\n%s", code, tm.Screen())
	}
}

// hostPID runs /pi-session until it reports a connection to a host of the
// given kind and returns the host's pid.
func hostPID(t *testing.T, rpc *pitest.RPC, kind string) int {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		mark := rpc.Prompt("/pi-session")
		rec, _ := rpc.WaitFrom(mark, "the /pi-session report", func(r pitest.Record) bool {
			return r.IsNotify() && strings.HasPrefix(r.Str("message"), "pi-session: ")
		})
		if m := connectedLine.FindStringSubmatch(rec.Str("message")); m != nil && m[1] == kind {
			pid, _ := strconv.Atoi(m[2])
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("/pi-session never reported a %s host; last report:\n%s", kind, rec.Str("message"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// messageText is the text of a message_end record's message.
func messageText(r pitest.Record) string {
	msg, _ := r["message"].(map[string]any)
	blocks, _ := msg["content"].([]any)
	var parts []string
	for _, b := range blocks {
		if m, _ := b.(map[string]any); m["type"] == "text" {
			s, _ := m["text"].(string)
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "\n")
}

// waitGone waits until process pid no longer exists.
func waitGone(t *testing.T, pid int, what string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil || strings.Contains(string(b), ") Z ") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s (pid %d) still runs", what, pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
