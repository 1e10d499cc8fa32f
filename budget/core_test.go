package budget

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("%s differs (-want +got):\n%s", path, d)
	}
}

func i64(n int64) *int64 { return &n }

var testLimits = Limits{
	Thresholds:    Thresholds{Soft: 3000, Handoff: 4000, Hard: 6000, MinProgress: 1000},
	Grace:         Grace{Enabled: true, Calls: 2, Fraction: 0.5},
	Cap:           2,
	Loop:          Loop{MaxHandoffsWithoutProgress: 2, WithinTurns: 8},
	IdleMinTokens: 3500,
	Wrapper:       true,
}

// phaseStates are one representative state per phase.
func phaseStates() map[Phase]State {
	base := State{Turn: 5, Tokens: 2000, TokensKnown: true, Floor: 1500, FloorKnown: true}
	soft := base
	soft.Phase, soft.Tokens, soft.SoftLatched = SoftNotified, 3200, true
	req := base
	req.Phase, req.Tokens, req.SoftLatched, req.HandoffLatched = HandoffRequired, 4100, true, true
	pend := req
	pend.Phase, pend.Pending = PendingCommit, Handoff{Path: "/r/.ai-work/handoffs/s-1.md", Source: SourceBudget, Turn: 5}
	comp := base
	comp.Phase = Compacting
	fb := base
	fb.Phase, fb.Tokens, fb.Fallback, fb.SoftLatched, fb.HandoffLatched = FallbackArmed, 6100, FallbackHard, true, true
	idle := base
	idle.Phase = Idle
	manual := req
	manual.Manual = true
	manualPend := manual
	manualPend.Phase, manualPend.Pending = PendingCommit, Handoff{Path: "/r/.ai-work/handoffs/s-1.md", Source: SourceManual, Turn: 5}
	hardManual := fb
	hardManual.Manual = true
	return map[Phase]State{Idle: idle, SoftNotified: soft, HandoffRequired: req, PendingCommit: pend, Compacting: comp, FallbackArmed: fb,
		variantManual: manual, variantManualPending: manualPend, variantHardManual: hardManual}
}

// variants are states besides one per phase: the user's /handoff asked
// while a handoff is required, pending, and at the hard limit.
const (
	variantManual        Phase = "handoff-required, /handoff asked"
	variantManualPending Phase = "handoff-pending-commit of a /handoff"
	variantHardManual    Phase = "fallback-armed (hard), /handoff asked"
)

var variants = []Phase{variantManual, variantManualPending, variantHardManual}

// observations are one of each kind, some in several forms.
var observations = []struct {
	name string
	o    Observation
}{
	{"turn_end below soft", TurnEnd{Tokens: i64(2500), Usage: i64(2400)}},
	{"turn_end past soft, continuing", TurnEnd{Tokens: i64(3300), Usage: i64(3200), Continues: true}},
	{"turn_end past handoff, continuing", TurnEnd{Tokens: i64(4200), Usage: i64(4100), Continues: true}},
	{"turn_end past hard", TurnEnd{Tokens: i64(6500), Usage: i64(6400)}},
	{"turn_end tokens unknown", TurnEnd{}},
	{"turn_end with progress", TurnEnd{Tokens: i64(3300), Usage: i64(3200), Progress: true, ToolActivity: true, Continues: true}},
	{"tool_call read", ToolCall{}},
	{"tool_call grace-qualifying", ToolCall{GraceOK: true}},
	{"tool_call context_handoff", ToolCall{Handoff: true}},
	{"tool finished after handoff", ToolFinished{}},
	{"context_handoff finished", ToolFinished{Handoff: true}},
	{"handoff written", HandoffWritten{Path: "/r/.ai-work/handoffs/s-2.md", ToolCallID: "c2"}},
	{"handoff rejected", HandoffRejected{}},
	{"settle, no pending work", Settle{}},
	{"settle, pending work", Settle{PendingWork: 2}},
	{"settled", Settled{}},
	{"external run", ExternalRun{}},
	{"manual request", ManualRequest{}},
	{"compaction started", CompactionStarted{}},
	{"compaction done", CompactionDone{}},
	{"compaction failed, benign", CompactionFailed{Benign: true}},
	{"compaction failed, transient", CompactionFailed{}},
	{"compaction failed, persistent", CompactionFailed{Persistent: true}},
	{"arm failed", ArmFailed{}},
}

func describe(s State, fx []Effect) string {
	var parts []string
	for _, e := range fx {
		p := e.Kind
		var args []string
		for _, a := range []string{e.Reason, e.Source, filepath.Base(e.Handoff)} {
			if a != "" && a != "." {
				args = append(args, a)
			}
		}
		if len(args) > 0 {
			p += "(" + strings.Join(args, ",") + ")"
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		parts = []string{"-"}
	}
	extra := ""
	if s.Pending.Path != "" {
		extra += " pending=" + filepath.Base(s.Pending.Path) + "/" + s.Pending.Source
	}
	if s.Relaunch {
		extra += " relaunch"
	}
	if s.Fallback != "" {
		extra += " fallback=" + s.Fallback
	}
	return fmt.Sprintf("-> %s%s: %s", s.Phase, extra, strings.Join(parts, " "))
}

// TestTransitionMatrix applies every observation to a state in every
// phase, with and without a wrapper; the matrix is a golden file.
func TestTransitionMatrix(t *testing.T) {
	var b strings.Builder
	for _, wrapper := range []bool{true, false} {
		l := testLimits
		l.Wrapper = wrapper
		fmt.Fprintf(&b, "## wrapper=%v\n", wrapper)
		states := phaseStates()
		for _, p := range append(slices.Clone(Phases), variants...) {
			fmt.Fprintf(&b, "\n[%s]\n", p)
			for _, ob := range observations {
				before := states[p]
				before.CommitTurns = []int{4}
				snapshot := fmt.Sprintf("%+v", before)
				s, fx := Step(before, l, ob.o)
				if fmt.Sprintf("%+v", before) != snapshot {
					t.Fatalf("Step changed its input state (%s, %s)", p, ob.name)
				}
				fmt.Fprintf(&b, "  %-34s %s\n", ob.name, describe(s, fx))
			}
		}
		b.WriteString("\n")
	}
	golden(t, "matrix.golden", []byte(b.String()))
}

func TestEffectiveThresholds(t *testing.T) {
	th := Thresholds{Soft: 150000, Handoff: 220000, Hard: 400000, MinProgress: 120000}
	g := Grace{Fraction: 0.5}
	for _, c := range []struct {
		floor int64
		known bool
		want  EffectiveThresholds
	}{
		{0, false, EffectiveThresholds{Soft: 150000, Handoff: 220000, Hard: 400000, Grace: 310000}},
		{150000, true, EffectiveThresholds{Soft: 200000, Handoff: 270000, Hard: 400000, Grace: 335000}},
		{20000, true, EffectiveThresholds{Soft: 150000, Handoff: 220000, Hard: 400000, Grace: 310000}},
		{350000, true, EffectiveThresholds{Soft: 330000, Handoff: 400000, Hard: 400000, Grace: 400000}},
	} {
		if got := Effective(th, g, c.floor, c.known); got != c.want {
			t.Errorf("Effective(floor %d, %v) = %+v, want %+v", c.floor, c.known, got, c.want)
		}
	}
}

// run applies observations in order and collects every effect kind.
func run(s State, l Limits, obs ...Observation) (State, []string) {
	var kinds []string
	for _, o := range obs {
		var fx []Effect
		s, fx = Step(s, l, o)
		for _, e := range fx {
			k := e.Kind
			if e.Reason != "" {
				k += ":" + e.Reason
			}
			kinds = append(kinds, k)
		}
	}
	return s, kinds
}

func TestHandoffCycle(t *testing.T) {
	l := testLimits
	s, kinds := run(State{}, l,
		TurnEnd{Tokens: i64(1500), Usage: i64(1500), Continues: true}, // floor 1500: handoff' = 4000
		TurnEnd{Tokens: i64(3100), Usage: i64(3000)},                  // soft, not continuing: notice waits
		TurnEnd{Tokens: i64(3500), Usage: i64(3400), Continues: true}, // the soft notice is delivered now
		TurnEnd{Tokens: i64(4100), Usage: i64(4000), Continues: true}, // handoff required, notice at once
		ToolCall{GraceOK: true}, ToolCall{GraceOK: true}, ToolCall{GraceOK: true}, ToolCall{},
		HandoffWritten{Path: "/h/1.md"},
		ToolCall{},
		TurnEnd{Tokens: i64(4300), Continues: true}, // commit
	)
	want := []string{"soft_crossed", "notice:soft", "handoff_required", "notice:handoff", "grace_call", "grace_call",
		"tool_blocked:handoff", "tool_blocked:handoff", "handoff_written", "tool_blocked:pending", "handoff_committed"}
	if d := cmp.Diff(want, kinds); d != "" {
		t.Errorf("effects (-want +got):\n%s", d)
	}
	if s.Phase != Idle || s.FloorKnown || s.Commits != 1 || s.Stored.Path != "/h/1.md" || s.Stored.Source != SourceBudget {
		t.Errorf("after commit: %+v", s)
	}
}

func TestGraceEndsAtFraction(t *testing.T) {
	l := testLimits // floor 1500: handoff 4000, hard 6000, grace ends at 5000
	s := State{Phase: HandoffRequired, Tokens: 5000, TokensKnown: true, Floor: 1500, FloorKnown: true}
	if _, fx := Step(s, l, ToolCall{GraceOK: true}); len(fx) != 1 || fx[0].Kind != EffBlock {
		t.Errorf("grace call at the grace limit: %v, want blocked", fx)
	}
	s.Tokens = 4999
	if _, fx := Step(s, l, ToolCall{GraceOK: true}); len(fx) != 1 || fx[0].Kind != EffGrace {
		t.Errorf("grace call below the grace limit: %v, want grace", fx)
	}
	l.Grace.Enabled = false
	if _, fx := Step(s, l, ToolCall{GraceOK: true}); len(fx) != 1 || fx[0].Kind != EffBlock {
		t.Errorf("grace disabled: %v, want blocked", fx)
	}
}

func TestCapWithAndWithoutWrapper(t *testing.T) {
	for _, wrapper := range []bool{true, false} {
		l := testLimits
		l.Wrapper = wrapper
		l.Loop.MaxHandoffsWithoutProgress = 100
		s := State{Commits: 2, Turn: 10}
		s, _ = run(s, l, TurnEnd{Tokens: i64(4100), Usage: i64(1500)}) // floor 1500 set now, handoff required
		if s.Phase != HandoffRequired {
			t.Fatalf("phase %s, want handoff-required", s.Phase)
		}
		s, kinds := run(s, l, HandoffWritten{Path: "/h/3.md"}, TurnEnd{Tokens: i64(4200), Continues: true}, Settle{}, Settled{})
		if wrapper {
			want := []string{"handoff_written", "fallback_armed:cap", "relaunch_armed", "shutdown"}
			if d := cmp.Diff(want, kinds); d != "" || !s.Shutdown {
				t.Errorf("with a wrapper (-want +got):\n%s", d)
			}
			continue
		}
		want := []string{"handoff_written", "cap_advisory:handoff cap reached without a wrapper", "handoff_committed"}
		if d := cmp.Diff(want, kinds); d != "" {
			t.Errorf("without a wrapper (-want +got):\n%s", d)
		}
		if _, k := run(s, l, TurnEnd{Tokens: i64(1600), Usage: i64(1600)}); len(k) != 1 || !strings.HasPrefix(k[0], EffCap) {
			t.Errorf("the cap warning is not repeated each turn: %v", k)
		}
	}
}

func TestLoopGuardWithoutWrapperPausesUntilProgress(t *testing.T) {
	l := testLimits
	l.Wrapper = false
	l.Cap = 100
	s := State{Turn: 1, CommitTurns: []int{0, 1}}
	s, kinds := run(s, l, TurnEnd{Tokens: i64(4100), Usage: i64(1500)}, HandoffWritten{Path: "/h/3.md"}, TurnEnd{Tokens: i64(4200)})
	if !s.LoopPaused || s.Pending.Path != "" || s.Stored.Path != "/h/3.md" {
		t.Fatalf("after the third handoff without progress: %+v (%v)", s, kinds)
	}
	if _, fx := Step(s, l, ToolCall{}); len(fx) != 0 {
		t.Errorf("tools are blocked while the loop guard pauses enforcement: %v", fx)
	}
	s, kinds = run(s, l, TurnEnd{Tokens: i64(4300), Progress: true})
	if s.LoopPaused || kinds[0] != "loop_resumed:tool succeeded" {
		t.Errorf("a successful tool did not resume enforcement: %+v %v", s, kinds)
	}
}

func TestSiblingInvalidatesAndBlockedDoesNot(t *testing.T) {
	l := testLimits
	s := phaseStates()[HandoffRequired]
	s, _ = run(s, l, HandoffWritten{Path: "/h/1.md"})
	// A blocked sibling produces no ToolFinished (the hooks only report
	// calls that ran); one that ran and finished afterwards discards it.
	s, kinds := run(s, l, ToolCall{}, ToolFinished{})
	if s.Pending.Path != "" || s.Phase != HandoffRequired {
		t.Errorf("after a sibling finished: %+v", s)
	}
	if d := cmp.Diff([]string{"tool_blocked:pending", "handoff_discarded:a tool finished after the handoff"}, kinds); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

func TestSettleContinuationOncePerExternalRun(t *testing.T) {
	l := testLimits
	s := phaseStates()[HandoffRequired]
	s, k1 := run(s, l, Settle{}, Settle{})
	s, k2 := run(s, l, ExternalRun{}, Settle{})
	if d := cmp.Diff([]string{"settle_continue:handoff"}, k1); d != "" {
		t.Errorf("first run (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"settle_continue:handoff"}, k2); d != "" {
		t.Errorf("after a new external run (-want +got):\n%s", d)
	}
	_ = s
}

func TestIdleCommitsDoNotCount(t *testing.T) {
	l := testLimits
	s := State{Turn: 3, Tokens: 3600, TokensKnown: true, Floor: 3000, FloorKnown: true, Phase: Idle}
	s, kinds := run(s, l, Settle{PendingWork: 1}, HandoffWritten{Path: "/h/i.md"}, TurnEnd{Tokens: i64(3700), Continues: true})
	if d := cmp.Diff([]string{"settle_continue:idle", "handoff_written", "handoff_committed"}, kinds); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if s.Commits != 0 || s.IdleCommits != 1 || len(s.CommitTurns) != 0 {
		t.Errorf("idle commit counted: %+v", s)
	}
}

func TestManualHandoff(t *testing.T) {
	for _, wrapper := range []bool{true, false} {
		l := testLimits
		l.Wrapper = wrapper
		s, kinds := run(State{}, l, ManualRequest{}, ExternalRun{Manual: true}, Settle{}, HandoffWritten{Path: "/h/m.md"}, TurnEnd{Continues: true}, Settle{}, Settled{})
		want := []string{"settle_continue:manual", "handoff_written", "relaunch_armed", "shutdown"}
		if !wrapper {
			want = []string{"settle_continue:manual", "handoff_written", "handoff_committed"}
		}
		if d := cmp.Diff(want, kinds); d != "" {
			t.Errorf("wrapper %v (-want +got):\n%s", wrapper, d)
		}
		if !wrapper && (s.OtherCommits != 1 || s.Commits != 0) {
			t.Errorf("manual commit counted as budget: %+v", s)
		}
	}
}

func TestArmFailedFallsBackToInPlace(t *testing.T) {
	l := testLimits
	s, _ := run(State{}, l, ManualRequest{}, HandoffWritten{Path: "/h/m.md"}, TurnEnd{}, Settled{})
	if !s.Shutdown {
		t.Fatal("no shutdown requested")
	}
	s, kinds := run(s, l, ArmFailed{}, TurnEnd{Continues: true})
	if d := cmp.Diff([]string{"handoff_committed"}, kinds); d != "" || s.Shutdown {
		t.Errorf("after a refused relaunch (-want +got):\n%s\n%+v", d, s)
	}
}

func TestUnknownFloorNeverBlocks(t *testing.T) {
	s, kinds := run(State{}, testLimits, TurnEnd{Tokens: i64(7000)})
	if s.Phase != SoftNotified {
		t.Errorf("phase %s with an unknown floor, want soft-notified at most", s.Phase)
	}
	if _, fx := Step(s, testLimits, ToolCall{}); len(fx) != 0 {
		t.Errorf("blocked with an unknown floor: %v (%v)", fx, kinds)
	}
}

// TestFit: thresholds past 90% of where pi compacts (window - reserve) are
// scaled by one factor that puts hard there; ones that fit, an unknown
// window and a window with no room are left alone; the floor-relative
// rules apply to the fitted thresholds.
func TestFit(t *testing.T) {
	def := Default().Main
	cases := []struct {
		name    string
		in      Thresholds
		w       Window
		want    Thresholds
		fitted  bool
		floor   int64
		handoff float64 // effective handoff with that floor
	}{
		{"128k", def, Window{Tokens: 128000, Reserve: 16384, PiCompacts: true}, Thresholds{Soft: 50227, Handoff: 66969, Hard: 100454, MinProgress: 8371}, true, 2000, 66969},
		{"200k", def, Window{Tokens: 200000, Reserve: 16384, PiCompacts: true}, Thresholds{Soft: 82627, Handoff: 110169, Hard: 165254, MinProgress: 13771}, true, 0, 110169},
		{"128k, prompt-heavy floor", def, Window{Tokens: 128000, Reserve: 16384}, Thresholds{Soft: 50227, Handoff: 66969, Hard: 100454, MinProgress: 8371}, true, 70000, 78371},
		{"1M fits", def, Window{Tokens: 1000000, Reserve: 16384}, def, false, 0, 400000},
		{"unknown window", def, Window{}, def, false, 0, 400000},
		{"no room", def, Window{Tokens: 16000, Reserve: 16384}, def, false, 0, 400000},
		{"small explicit ones fit", Thresholds{Soft: 40000, Handoff: 60000, Hard: 90000, MinProgress: 10000}, Window{Tokens: 128000, Reserve: 16384}, Thresholds{Soft: 40000, Handoff: 60000, Hard: 90000, MinProgress: 10000}, false, 0, 60000},
	}
	for _, c := range cases {
		got, f := Fit(c.in, c.w)
		if d := cmp.Diff(c.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, d)
		}
		if (f.Factor != 0) != c.fitted {
			t.Errorf("%s: fitted %+v, want fitted %v", c.name, f, c.fitted)
		}
		if c.fitted && got.Hard >= float64(c.w.Ceiling()) {
			t.Errorf("%s: hard %v not below pi's compaction at %d", c.name, got.Hard, c.w.Ceiling())
		}
		e := Effective(got, Grace{Fraction: 0.5}, c.floor, c.floor > 0)
		if e.Handoff != c.handoff || e.Soft > e.Handoff || e.Handoff > e.Hard {
			t.Errorf("%s: effective %+v, want handoff %v and soft <= handoff <= hard", c.name, e, c.handoff)
		}
	}
	if got := (Fitted{}).Reason("m"); got != "" {
		t.Errorf("unfitted reason %q", got)
	}
	_, f := Fit(def, Window{Tokens: 128000, Reserve: 16384})
	if got, want := f.Reason("p/m"), "fitted to the 128k window of p/m (111616 tokens left once pi's reserve of 16384 for the answer is kept; hard at 90% of that, the configured thresholds scaled by 0.167)"; got != want {
		t.Errorf("reason %q, want %q", got, want)
	}
}
