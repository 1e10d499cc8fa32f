package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/pi-session/pi-session/marker"
	"github.com/pi-session/pi-session/pitest"
)

// relaunchExt is a test tool that arms the relaunch through pi's event bus.
var relaunchExt = "testdata/pi/relaunch-tool.ts"

// TestTUIPromptAndQuit: pi's TUI under pi-session answers a typed prompt,
// /quit exits 0, and the terminal is as it was.
func TestTUIPromptAndQuit(t *testing.T) {
	e := pitest.NewEnv(t)
	tm := pitest.StartTerm(t, e.Command(pitest.Binary(t), e.PiArgs()...))
	tm.WaitReady(1)
	tm.Submit("hello from the test")
	tm.WaitFor("faux: hello from the test")
	tm.Submit("/quit")
	if code := tm.Wait(); code != 0 {
		t.Fatalf("pi-session exit status %d, want 0; screen:\n%s", code, tm.Screen())
	}
	if strings.Contains(tm.Screen(), "relaunching") {
		t.Errorf("pi-session relaunched after a plain /quit:\n%s", tm.Screen())
	}
	if tm.Termios() != tm.Before {
		t.Errorf("terminal state not restored after exit")
	}
	reqs := e.Requests()
	if len(reqs) != 1 || reqs[0].LastUser() != "hello from the test" {
		t.Errorf("model requests = %d (last user %q), want 1 with the typed prompt", len(reqs), lastUser(reqs))
	}
}

// TestTUIHandoffRelaunch: /handoff asks the model for a context_handoff;
// the budget engine writes it and arms the relaunch, and pi-session writes
// the marker; pi exits 0; pi-session starts a fresh pi in the same terminal
// whose first model request is "continue from <handoff>".
func TestTUIHandoffRelaunch(t *testing.T) {
	e := pitest.NewEnv(t)
	e.Scenario(map[string]any{"steps": []map[string]any{
		{"text": "faux: ${lastUser}"},
		{"tool": "context_handoff", "args": map[string]any{"goal": "keep going", "next_step": "continue", "facts": "none",
			"user_constraints": "remember the constraint: no network"}},
		{"text": "handed off"},
		{"text": "faux: ${lastUser}"},
	}})
	tm := pitest.StartTerm(t, e.Command(pitest.Binary(t), e.PiArgs()...))
	tm.WaitReady(1)
	tm.Submit("remember the constraint: no network")
	tm.WaitFor("faux: remember the constraint")
	tm.Submit("/handoff keep going")
	tm.WaitFor("pi-session: relaunching pi in ")
	tm.WaitFor("faux: continue from") // pi wraps the long path onto the next line
	tm.WaitReady(2)
	reqs := e.Requests()
	if len(reqs) != 4 {
		t.Fatalf("model requests = %d, want 4 (prompt, handoff request, after the handoff, relaunch)", len(reqs))
	}
	if !strings.HasPrefix(reqs[1].LastUser(), "[/handoff]") || !strings.Contains(reqs[1].LastUser(), "keep going") {
		t.Errorf("the /handoff request = %q", reqs[1].LastUser())
	}
	if reqs[0].PID != reqs[2].PID || reqs[2].PID == reqs[3].PID {
		t.Errorf("pids %d %d %d: the relaunch must be a fresh process", reqs[0].PID, reqs[2].PID, reqs[3].PID)
	}
	cont := reqs[3].LastUser()
	m := regexp.MustCompile(`^continue from (/\S+\.md)$`).FindStringSubmatch(cont)
	if m == nil {
		t.Fatalf("first request of the relaunched pi = %q, want \"continue from <handoff>\"", cont)
	}
	note, err := os.ReadFile(m[1])
	if err != nil {
		t.Fatalf("handoff named in the relaunch: %v", err)
	}
	for _, want := range []string{"keep going", "remember the constraint: no network"} {
		if !strings.Contains(string(note), want) {
			t.Errorf("handoff lacks %q:\n%s", want, note)
		}
	}
	// The relaunched pi's history is fresh: only the continuation.
	if n := countRole(reqs[3], "user"); n != 1 {
		t.Errorf("relaunched pi sent %d user messages, want only the continuation", n)
	}
	tm.Submit("/quit")
	if code := tm.Wait(); code != 0 {
		t.Fatalf("exit status %d, want 0; screen:\n%s", code, tm.Screen())
	}
	if tm.Termios() != tm.Before {
		t.Errorf("terminal state not restored after exit")
	}
	assertNoMarkers(t, e)
}

// TestPrintRelaunchBudget: in print mode the model calls the handoff tool in
// every process; five relaunches pass and the sixth within the hour stops
// with the marker kept.
func TestPrintRelaunchBudget(t *testing.T) {
	e := pitest.NewEnv(t)
	e.Scenario(map[string]any{
		"steps": []map[string]any{
			{"tool": "handoff", "args": map[string]any{"goal": "loop until the budget stops us"}},
			{"text": "handed off: ${lastToolResult}"},
		},
		"repeat": true,
	})
	cmd := e.Command(pitest.Binary(t), append(e.PiArgs(relaunchExt), "-p", "start")...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("pi-session -p: %v\n%s", err, out)
	}
	pids := map[int]bool{}
	for _, r := range e.Requests() {
		pids[r.PID] = true
	}
	if len(pids) != 6 {
		t.Errorf("%d pi processes answered, want 6 (one launch and five relaunches)\n%s", len(pids), out)
	}
	if n := strings.Count(string(out), "pi-session: relaunching pi"); n != 5 {
		t.Errorf("%d relaunch lines, want 5\n%s", n, out)
	}
	if !regexp.MustCompile(`pi-session: not relaunching: 5 relaunches in the last hour reach the limit of 5 .*marker kept at `).Match(out) {
		t.Errorf("no budget stop line in output:\n%s", out)
	}
	markers, _ := filepath.Glob(filepath.Join(e.Agent, "relaunch", "*.json"))
	if len(markers) != 1 {
		t.Errorf("markers kept: %v, want exactly the refused one", markers)
	}
}

// TestTUISigtermNoRelaunch: SIGTERM to pi-session reaches pi, which exits 0;
// even with a valid marker armed, pi-session does not relaunch, exits 143
// and restores the terminal.
func TestTUISigtermNoRelaunch(t *testing.T) {
	e := pitest.NewEnv(t)
	tm := pitest.StartTerm(t, e.Command(pitest.Binary(t), e.PiArgs()...))
	tm.WaitReady(1)
	tm.Submit("ping")
	tm.WaitFor("faux: ping")

	// Arm a valid marker for this launch: what supervisor.armRelaunch
	// writes when pi asks for it.
	pi := findPi(t, tm.Cmd.Process.Pid)
	env := procEnv(t, pi)
	handoff := filepath.Join(e.Work, "handoff.md")
	if err := os.WriteFile(handoff, []byte("# Handoff\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := marker.Assignment{Path: env[marker.EnvMarker], LaunchID: env[marker.EnvLaunchID]}
	if err := marker.WriteAssigned(a, marker.Marker{Cwd: e.Work, Handoff: handoff}); err != nil {
		t.Fatal(err)
	}

	syscall.Kill(tm.Cmd.Process.Pid, syscall.SIGTERM)
	if code := tm.Wait(); code != 143 {
		t.Errorf("exit status %d, want 143; screen:\n%s", code, tm.Screen())
	}
	if !strings.Contains(tm.Screen(), "not relaunching: pi-session received SIGTERM") {
		t.Errorf("no stop line for SIGTERM; screen:\n%s", tm.Screen())
	}
	if _, err := os.Stat(a.Path); err != nil {
		t.Errorf("marker not kept as evidence: %v", err)
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(pi)); err == nil {
		t.Errorf("pi (pid %d) still runs after pi-session exited", pi)
	}
	if tm.Termios() != tm.Before {
		t.Errorf("terminal state not restored after SIGTERM")
	}
	if strings.Contains(tm.Screen(), "pi was killed") {
		t.Errorf("pi exited 0 on the SIGTERM pi-session forwarded, yet pi-session reported a kill:\n%s", tm.Screen())
	}
}

// TestTUIKilled: kill -9 of pi leaves its terminal modes on and the
// cursor inside its screen; pi-session turns the modes off (bracketed
// paste, which pi had on, among them), leaves the alternate screen or moves
// below pi's screen, says in one line that pi was killed, and exits 137
// with the terminal restored.
func TestTUIKilled(t *testing.T) {
	e := pitest.NewEnv(t)
	tm := pitest.StartTerm(t, e.Command(pitest.Binary(t), e.PiArgs()...))
	tm.WaitReady(1)
	if !strings.Contains(tm.Raw(), "\x1b[?2004h") {
		t.Fatalf("pi did not turn bracketed paste on; the test relies on it")
	}
	pi := findPi(t, tm.Cmd.Process.Pid)
	syscall.Kill(pi, syscall.SIGKILL)
	if code := tm.Wait(); code != 137 {
		t.Errorf("exit status %d, want 137; screen:\n%s", code, tm.Screen())
	}
	raw := tm.Raw()
	fresh := "\x1b[999B\r\n" // below pi's screen
	if strings.Contains(raw, "\x1b[?1049h") {
		fresh = "\x1b[?1049l\r\n" // pi ran in the alternate screen: leave it
	}
	i := strings.LastIndex(raw, "\x1b[?2004l")
	if i < 0 || !strings.HasSuffix(raw, fresh+"pi-session: pi was killed (SIGKILL)\r\n") || strings.Contains(raw[i:], "\x1b[?2004h") {
		t.Errorf("after the kill, want bracketed paste off, then %q and the kill line; output ends %q", fresh, raw[max(0, len(raw)-300):])
	}
	if tm.Termios() != tm.Before {
		t.Errorf("terminal state not restored after pi was killed")
	}
}

func lastUser(reqs []pitest.Request) string {
	if len(reqs) == 0 {
		return ""
	}
	return reqs[len(reqs)-1].LastUser()
}

func countRole(r pitest.Request, role string) int {
	n := 0
	for _, m := range r.Decoded() {
		if m.Role == role {
			n++
		}
	}
	return n
}

func assertNoMarkers(t *testing.T, e *pitest.Env) {
	t.Helper()
	markers, _ := filepath.Glob(filepath.Join(e.Agent, "relaunch", "*.json"))
	if len(markers) != 0 {
		t.Errorf("markers left after a completed relaunch: %v", markers)
	}
}

// findPi finds the pi (node) process under pi-session: pi-session -> leader -> pi.
func findPi(t *testing.T, supervisor int) int {
	t.Helper()
	for _, leader := range childPIDs(supervisor) {
		for _, pi := range childPIDs(leader) {
			return pi
		}
	}
	t.Fatalf("no pi process under pi-session %d", supervisor)
	return 0
}

func childPIDs(pid int) []int {
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	var out []int
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, s := range strings.Fields(string(b)) {
			n, _ := strconv.Atoi(s)
			out = append(out, n)
		}
	}
	return out
}

func procEnv(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, kv := range strings.Split(string(b), "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}
