package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-session/pi-session/pitest"
)

// TestConfigStartNotices: every configuration file with a problem gets the
// same notice when a session starts, naming file:line:column and what it
// means: the budget's (it showed only in the footer, as "effective observe
// (invalid configuration)"), the relay's, the offload engine's (RPC mode,
// the notices' exact text) and the recap's (the TUI, where recaps run).
func TestConfigStartNotices(t *testing.T) {
	e := pitest.NewEnv(t)
	write := func(path, body string) string {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	budget := write(filepath.Join(e.Agent, "context-budget.json"), "{\n  \"mode\": \"enforce\",\n  \"idleMinutes\": -1\n}\n")
	relay := write(filepath.Join(e.Agent, "context-relay.json"), "{\n  \"enabled\": tru\n}\n")
	offload := write(filepath.Join(e.Work, ".pi", "context-engineer.json"), "{\n  \"turnBudgetBytes\": \"big\"\n}\n")
	recap := write(filepath.Join(e.Agent, "summaries", "config.private.json"), `{"provider": 3, "model": "m", "reasoning": "low"}`)

	rpc := pitest.StartRPC(t, e.Command(pitest.Binary(t), append(e.PiArgs(), "--mode", "rpc")...))
	want := []string{
		"pi-session: " + budget + `:3:18: field "idleMinutes": must be a positive finite number, got -1; the budget runs in observe mode until the file is fixed`,
		"pi-session: " + relay + `:2:17: invalid JSON: invalid character '\n' in literal true (expecting 'e'): every key has its default`,
		"pi-session: " + offload + `:2:22: turnBudgetBytes: "big" is not a number; using the default 0`,
	}
	for _, w := range want {
		rec, _ := rpc.WaitFrom(0, "the notice "+w, func(r pitest.Record) bool { return r.IsNotify() && r.Str("message") == w })
		if rec.Str("notifyType") != "warning" {
			t.Errorf("%q is a %q notice, want a warning", w, rec.Str("notifyType"))
		}
	}
	rpc.Prompt("hello")
	n := 0
	for _, m := range rpc.Notices(0) {
		if strings.Contains(m, "configuration problem") || strings.HasPrefix(m, "pi-session: /") {
			n++
		}
	}
	if n != len(want) {
		t.Errorf("%d configuration notices, want %d (each once): %q", n, len(want), rpc.Notices(0))
	}
	rpc.Close()

	tm := pitest.StartTerm(t, e.Command(pitest.Binary(t), e.PiArgs()...))
	tm.WaitReady(1)
	// The screen wraps at 120 columns, where depends on how long the
	// temporary directory's name is: the notice is matched across the wrap.
	tm.WaitForFlat(filepath.Base(filepath.Dir(recap)) + "/" + filepath.Base(recap) + `:1:14: field "provider": is 3, want a string; recaps use the default model`)
	tm.Submit("/quit")
	tm.Wait()
}
