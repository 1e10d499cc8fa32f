package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-session/pi-session/diskfull"
	"github.com/pi-session/pi-session/pitest"
)

// TestRelayLogOnFullDisk: with the relay's directory on a full file
// system, /relay fails and says so each time, and the user is told once
// that the relay log cannot be written, with the cause; pi goes on.
func TestRelayLogOnFullDisk(t *testing.T) {
	e := pitest.NewEnv(t)
	dir := filepath.Join(e.Agent, "context-relay")
	diskfull.MountOn(t, dir, 256<<10)
	steps := longSteps(3, 40000)
	steps = append(steps, map[string]any{"text": "still here"})
	e.Scenario(map[string]any{"steps": steps})
	rpc := startRelaySession(t, e)
	for _, p := range relayPrompts[:3] {
		rpc.Prompt(p)
	}
	diskfull.Fill(t, dir)
	var failed, warned int
	for i := range 2 {
		mark := rpc.Prompt("/relay")
		rpc.WaitFrom(mark, "the relay's failure", func(r pitest.Record) bool {
			return r.IsNotify() && strings.Contains(r.Str("message"), "context-relay: relay failed")
		})
		for _, n := range rpc.Notices(mark) {
			switch {
			case strings.Contains(n, "relay failed"):
				failed++
			case strings.Contains(n, "relay log"):
				warned++
				if !strings.Contains(n, "could not be written (no space left on device)") || !strings.Contains(n, filepath.Join(dir, "log.jsonl")) {
					t.Errorf("relay %d: the warning does not name the log and the cause: %q", i+1, n)
				}
			}
		}
	}
	if failed != 2 || warned != 1 {
		t.Errorf("two relays on a full disk: %d failure notices and %d log warnings, want 2 and 1\nstderr:\n%s", failed, warned, rpc.Stderr())
	}
	mark := rpc.Prompt("p4: carry on")
	answered := false
	for _, r := range rpc.Records(mark) {
		answered = answered || r.Str("type") == "message_end" && strings.Contains(messageText(r), "still here")
	}
	if !answered {
		t.Errorf("the prompt after the relays got no answer")
	}
	if code := rpc.Close(); code != 0 {
		t.Errorf("pi-session exited %d", code)
	}
}

// TestCleanEndOnFullDisk: a session whose state directory fills up while
// it runs still records its clean end, so `pi-session status` says
// exited, not crashed.
func TestCleanEndOnFullDisk(t *testing.T) {
	e := pitest.NewEnv(t)
	state := filepath.Join(e.Agent, "context-budget")
	diskfull.MountOn(t, state, 256<<10)
	e.Scenario(map[string]any{"steps": []map[string]any{{"text": "hello"}}})
	rpc := startRelaySession(t, e)
	rpc.Prompt("p1: hello")
	pid := e.Requests()[0].PID
	if got := statusOf(t, e, pid); got != "running" {
		t.Fatalf("pi (pid %d) has status %q before the disk fills, want running", pid, got)
	}
	diskfull.Fill(t, state)
	if code := rpc.Close(); code != 0 {
		t.Errorf("pi-session exited %d; stderr:\n%s", code, rpc.Stderr())
	}
	if got := statusOf(t, e, pid); got != "exited" {
		b, _ := e.Command(pitest.Binary(t), "status", "--all").CombinedOutput()
		t.Errorf("pi (pid %d) ended cleanly on a full disk has status %q, want exited:\n%s", pid, got, b)
	}
}
