package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-session/pi-session/pitest"
)

// TestBudgetFittedToWindow: with the default thresholds (300k/400k/600k)
// on the scripted model's 128k window, the budget's thresholds are fitted
// to it (hard at 90% of 128000 - 16384, where pi compacts by itself, the
// others scaled alike), so the budget crosses soft, handoff and hard
// before pi would compact (with 300k/400k/600k it never acted below pi's
// 111616); the status record and /pi-session show the thresholds in force
// and why.
func TestBudgetFittedToWindow(t *testing.T) {
	e := pitest.NewEnv(t)
	if err := os.WriteFile(filepath.Join(e.Agent, "context-budget.json"), []byte(`{"mode":"observe"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var steps []map[string]any
	for i := range 10 {
		steps = append(steps, map[string]any{"tool": "bash", "args": map[string]any{"command": fmt.Sprintf("echo step %d", i)}, "pad": 10000})
	}
	steps = append(steps, map[string]any{"text": "done"})
	e.Scenario(map[string]any{"steps": steps})
	runPrint(t, e, 11, "grow the context")

	// The crossings are checked at the turns the engine recorded: on a
	// loaded machine a turn's report can miss its deadline (the extension
	// then leaves the engine alone for a while), and a turn it never got
	// crosses nothing.
	turns := budgetTurns(t, e)
	if len(turns) == 0 {
		t.Fatal("the engine recorded no turn")
	}
	evs := budgetEvents(t, e)
	crossed := map[string]float64{}
	for _, ev := range evs {
		name, _ := ev["event"].(string)
		if tok, ok := ev["tokens"].(float64); ok && crossed[name] == 0 {
			crossed[name] = tok
		}
	}
	const piCompacts = 128000 - 16384
	for _, c := range []struct {
		event string
		at    float64 // the fitted threshold
	}{{"would_soft_crossed", 50227}, {"would_handoff_required", 66969}, {"would_hard_reached", 100454}} {
		first := 0.0 // the first recorded turn at or past the threshold
		for _, tu := range turns {
			if tok, _ := tu["tokens"].(float64); tok >= c.at {
				first = tok
				break
			}
		}
		if first == 0 {
			t.Errorf("the engine recorded no turn at or past %v (%d turns recorded)", c.at, len(turns))
		}
		if first >= piCompacts {
			t.Fatalf("the scenario grew past pi's compaction (%v tokens)", first)
		}
		if tok := crossed[c.event]; tok != first {
			t.Errorf("%s at %v tokens, want at %v, the first recorded turn at or past %v (pi compacts past %d)", c.event, tok, first, c.at, piCompacts)
		}
		t.Logf("%s at %v tokens (fitted threshold %v; pi compacts past %d)", c.event, crossed[c.event], c.at, piCompacts)
	}
	for _, tu := range turns {
		if tu["hard"] != 100454.0 || tu["soft"] != 50227.0 {
			t.Errorf("a turn's thresholds are not the fitted ones: %v", tu)
		}
	}
	for _, ev := range evs {
		if ev["event"] == "compaction_failed" || ev["reason"] == "threshold" {
			t.Errorf("pi compacted: %v", ev)
		}
	}

	recs, _ := filepath.Glob(filepath.Join(e.Agent, "context-budget", "status", "*.json"))
	if len(recs) != 1 {
		t.Fatalf("status records %v", recs)
	}
	b, _ := os.ReadFile(recs[0])
	var rec struct {
		Thresholds          map[string]int64 `json:"thresholds"`
		EffectiveThresholds map[string]int64 `json:"effectiveThresholds"`
		Reason              string           `json:"thresholdsReason"`
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Thresholds["hard"] != 600000 || rec.EffectiveThresholds["hard"] != 100454 ||
		!strings.HasPrefix(rec.Reason, "fitted to the 128k window of faux/faux-1 (pi compacts past 111616 tokens") {
		t.Errorf("status record: %s", b)
	}
	out, err := e.Command(pitest.Binary(t), "status", "--all").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "thresholds fitted to the 128k window of faux/faux-1") {
		t.Errorf("pi-session status: %v\n%s", err, out)
	}

	out, err = e.Command(pitest.Binary(t), append(e.PiArgs(), "-p", "/pi-session")...).CombinedOutput()
	if err != nil {
		t.Fatalf("/pi-session: %v\n%s", err, out)
	}
	for _, want := range []string{"budget    observe; soft 50227 / handoff 66969 / hard 100454", "thresholds fitted to the 128k window of faux/faux-1"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("/pi-session lacks %q:\n%s", want, out)
		}
	}
}

// budgetTurns is turns.jsonl: one sample per turn the engine recorded.
func budgetTurns(t *testing.T, e *pitest.Env) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.Agent, "context-budget", "turns.jsonl"))
	if err != nil {
		t.Fatalf("turns.jsonl: %v", err)
	}
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("turns.jsonl: %v", err)
		}
		out = append(out, m)
	}
	return out
}
