package e2e

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-session/pi-session/pitest"
)

// noModelText is what /handoff says when pi has no model to ask.
const noModelText = "no model: /handoff needs one; set one with /model"

// TestHandoffNoModelPrint: with no credentials at all (a fresh agent dir
// and home, no scripted model), pi-session -p "/handoff now" says there is
// no model, once, and exits non-zero (it exited 0 after pi's "No API key
// found", the command waiting for a run that never started).
func TestHandoffNoModelPrint(t *testing.T) {
	e := pitest.NewEnv(t)
	out, err := e.Command(pitest.Binary(t), "-p", "/handoff now").CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("pi-session -p /handoff without a model: %v, want exit status 1\n%s", err, out)
	}
	if n := strings.Count(string(out), noModelText); n != 1 {
		t.Errorf("%q said %d times, want once:\n%s", noModelText, n, out)
	}
	if strings.Contains(string(out), "Extension error") || strings.Contains(string(out), "No API key found") {
		t.Errorf("pi's own error reached the user too:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(e.Work, ".ai-work")); err == nil {
		t.Error("a handoff directory was made")
	}
}

// TestHandoffNoModelTUI: the same in pi's terminal UI: after the message,
// pi is usable at once: a prompt gets pi's own answer (no model: its
// error), and /pi-session, /ce status and /handoff again answer; /quit
// exits 0.
func TestHandoffNoModelTUI(t *testing.T) {
	e := pitest.NewEnv(t)
	tm := pitest.StartTerm(t, e.Command(pitest.Binary(t)))
	tm.WaitReady(1)
	tm.Submit("/handoff now")
	tm.WaitFor(noModelText)
	tm.Submit("hello there")
	tm.WaitFor("No API key found")
	tm.Submit("/pi-session")
	tm.WaitFor("pi-session: connected to the engine host")
	tm.Submit("/ce status")
	tm.WaitFor("/ce status")
	tm.Submit("/handoff again")
	tm.WaitForCount(noModelText, 2)
	tm.Submit("/quit")
	if code := tm.Wait(); code != 0 {
		t.Fatalf("exit status %d, want 0; screen:\n%s", code, tm.Screen())
	}
	if strings.Contains(tm.Screen(), "Extension \"<runtime>\" error") {
		t.Errorf("pi's extension error was shown:\n%s", tm.Screen())
	}
}

// TestHandoffModelUnreachable: /handoff against a model whose endpoint
// refuses connections: pi retries (once here), then pi-session says what
// failed and that no handoff was made, without asking the model a second
// time (it asked again, and failed again, without a word); print mode
// exits non-zero.
func TestHandoffModelUnreachable(t *testing.T) {
	e := pitest.NewEnv(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now: connections are refused
	models := `{"providers":{"deadend":{"baseUrl":"http://` + addr + `/v1","api":"openai-completions","apiKey":"x","models":[{"id":"m1","contextWindow":128000}]}}}`
	if err := os.WriteFile(filepath.Join(e.Agent, "models.json"), []byte(models), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.Agent, "settings.json"), []byte(`{"retry":{"maxRetries":1,"baseDelayMs":10}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := e.Command(pitest.Binary(t), "--model", "deadend/m1", "-p", "/handoff now").CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("pi-session -p /handoff with an unreachable model: %v, want a non-zero exit\n%s", err, out)
	}
	want := "pi-session: /handoff failed: the model did not answer (Connection error."
	if n := strings.Count(string(out), want); n != 1 {
		t.Errorf("%q said %d times, want once:\n%s", want, n, out)
	}
	if !strings.Contains(string(out), "No handoff was made") || !strings.Contains(string(out), "ECONNREFUSED") {
		t.Errorf("the message does not say what failed and that no handoff was made:\n%s", out)
	}
	files, _ := filepath.Glob(filepath.Join(e.Agent, "sessions", "*", "*.jsonl"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if strings.Contains(string(b), "none was written") {
			t.Errorf("the model was asked again after it did not answer: %s", f)
		}
	}
}
