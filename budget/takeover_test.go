package budget

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTakeOverAtTurnEnd: the host that wrote a handoff dies before the
// turn's end; the host that takes over gets the turn end with the pending
// handoff named by its tool call, and commits it: the compaction holds
// the handoff, the continuation follows.
func TestTakeOverAtTurnEnd(t *testing.T) {
	e := bareEnv(t, `{"mode":"enforce"}`)
	p := Peer{SessionID: "s", Cwd: e.dir}
	dead := e.engine()
	dead.Start(p, nil, StartParams{Model: "faux/faux-1"})
	h := dead.Handoff(context.Background(), p, nil, HandoffParams{Args: []byte(`{"goal":"ship","next_step":"test","facts":"done"}`), ToolCallID: "c1"})
	if h.IsError {
		t.Fatalf("handoff: %s", h.Text)
	}
	taker := e.engine()
	ctx := context.Background()
	results := []ToolResultInfo{{ToolName: "context_handoff", ToolCallID: "c1"}}
	// Without the reference the new host knows of no handoff: nothing to commit.
	if a := taker.TurnEnd(ctx, p, nil, TurnEndParams{Continues: true, ToolResults: results}); a.Committed != "" {
		t.Fatalf("a host that knows no handoff committed %s", a.Committed)
	}
	taker = e.engine()
	a := taker.TurnEnd(ctx, p, nil, TurnEndParams{Continues: true, ToolResults: results, Pending: &PendingRef{ToolCallID: "c1", Path: h.Details.Path}})
	if a.Committed != h.Details.Path || len(a.Entries) != 2 || a.Entries[0].Type != "compaction" || !strings.HasPrefix(a.Entries[0].Summary, "# Handoff s-1\n") || !a.Continue {
		t.Fatalf("the host taking over did not commit the handoff: %+v", a)
	}
	// The reference again (an extension that retries) changes nothing.
	if a := taker.TurnEnd(ctx, p, nil, TurnEndParams{Continues: true, Pending: &PendingRef{ToolCallID: "c1", Path: h.Details.Path}}); a.Committed != "" {
		t.Errorf("the same handoff was committed twice")
	}
}

// TestHandoffOutcome: what a host answers for a context_handoff call whose
// answer was lost.
func TestHandoffOutcome(t *testing.T) {
	e := bareEnv(t, `{"mode":"enforce"}`)
	p := Peer{SessionID: "s", Cwd: e.dir}
	args := []byte(`{"goal":"ship","next_step":"test","facts":"done"}`)
	alive := e.engine()
	h := alive.Handoff(context.Background(), p, nil, HandoffParams{Args: args, ToolCallID: "c1"})
	// The host that ran it still runs: it answers from its state.
	if a := alive.HandoffOutcome(p, nil, "c1"); a.IsError || a.View.Pending != h.Details.Path || !strings.Contains(a.Text, "Handoff written to "+h.Details.Path) {
		t.Errorf("the host that ran the call: %+v", a)
	}
	if a := alive.HandoffOutcome(p, nil, "never"); !a.IsError || !strings.Contains(a.Text, "Call context_handoff again") {
		t.Errorf("a call nobody ran: %+v", a)
	}
	// Another host takes the complete handoff over.
	taker := e.engine()
	a := taker.HandoffOutcome(p, nil, "c1")
	if a.IsError || a.View.Pending != h.Details.Path || a.Details == nil || a.Details.Path != h.Details.Path || !strings.Contains(a.Text, "found the handoff complete") {
		t.Errorf("the host taking over: %+v", a)
	}
	// A sidecar without its document is no handoff.
	torn := e.engine()
	doc := filepath.Join(HandoffDir(e.dir), "s-1.md")
	if err := os.Remove(doc); err != nil {
		t.Fatal(err)
	}
	if a := torn.HandoffOutcome(p, nil, "c1"); !a.IsError || a.View.Pending != "" || !strings.Contains(a.Text, "holds only its sidecar") || !strings.Contains(a.Text, "Call context_handoff again") {
		t.Errorf("a sidecar alone: %+v", a)
	}
}
