package budget

import (
	"math"
	"slices"
)

// Phase is the policy's named state.
type Phase string

// The phases of the policy.
const (
	Idle            Phase = "idle"
	SoftNotified    Phase = "soft-notified"
	HandoffRequired Phase = "handoff-required"
	PendingCommit   Phase = "handoff-pending-commit"
	Compacting      Phase = "compacting"
	FallbackArmed   Phase = "fallback-armed"
)

// Phases lists every phase, in order.
var Phases = []Phase{Idle, SoftNotified, HandoffRequired, PendingCommit, Compacting, FallbackArmed}

// Handoff sources: what asked for a handoff when it was written.
const (
	SourceBudget    = "budget"    // the handoff threshold
	SourceHard      = "hard"      // the hard limit or a fallback
	SourceIdle      = "idle"      // idle reset at a settle boundary
	SourceManual    = "manual"    // the user's /handoff
	SourceVoluntary = "voluntary" // the agent on its own
)

// Fallback reasons.
const (
	FallbackHard       = "hard"
	FallbackCap        = "cap"
	FallbackLoop       = "loop"
	FallbackCompaction = "compaction"
)

// Limits are the numbers the policy applies to one session: its role's
// thresholds for its model, and whether an owned wrapper can relaunch.
type Limits struct {
	Thresholds    Thresholds
	Grace         Grace
	Cap           int
	Loop          Loop
	IdleMinTokens float64
	Wrapper       bool
}

// LimitsFor derives a session's limits from the configuration.
func LimitsFor(c Config, subagent bool, model string, wrapper bool) Limits {
	return Limits{
		Thresholds:    c.ThresholdsFor(subagent, model),
		Grace:         c.HandoffGrace,
		Cap:           c.MaxHandoffsPerSession,
		Loop:          c.Loop,
		IdleMinTokens: c.IdleMinTokens,
		Wrapper:       wrapper,
	}
}

// EffectiveThresholds are the thresholds in force for a measured floor.
type EffectiveThresholds struct {
	Soft    float64 `json:"soft"`
	Handoff float64 `json:"handoff"`
	Hard    float64 `json:"hard"`
	Grace   float64 `json:"grace"` // where the grace window ends
}

// Effective computes the floor-relative thresholds: handoff' =
// min(hard, max(handoff, floor+minProgress)) and soft' = min(handoff',
// max(soft, handoff'-(handoff-soft))). Without a floor they are the
// configured ones.
func Effective(t Thresholds, g Grace, floor int64, known bool) EffectiveThresholds {
	e := EffectiveThresholds{Soft: t.Soft, Handoff: t.Handoff, Hard: t.Hard}
	if known {
		e.Handoff = math.Min(t.Hard, math.Max(t.Handoff, float64(floor)+t.MinProgress))
		e.Soft = math.Min(e.Handoff, math.Max(t.Soft, e.Handoff-(t.Handoff-t.Soft)))
	}
	e.Grace = e.Handoff + g.Fraction*(e.Hard-e.Handoff)
	return e
}

// Handoff is a written handoff the policy knows of.
type Handoff struct {
	Path       string `json:"path"`
	Source     string `json:"source"`
	ToolCallID string `json:"toolCallId,omitempty"`
	Turn       int    `json:"turn"`
}

// State is the policy's state of one session. It is a value: Step
// returns a new one and never changes the one it got.
type State struct {
	Phase       Phase `json:"phase"`
	Turn        int   `json:"turn"`
	Tokens      int64 `json:"tokens"`
	TokensKnown bool  `json:"tokensKnown"`
	Floor       int64 `json:"floor"`
	FloorKnown  bool  `json:"floorKnown"`

	SoftLatched    bool   `json:"softLatched,omitempty"`    // the soft advisory of this crossing was given
	HandoffLatched bool   `json:"handoffLatched,omitempty"` // the handoff-required advisory was given
	NoticeDue      string `json:"noticeDue,omitempty"`      // a model-visible notice waiting for a continuing turn
	GraceUsed      int    `json:"graceUsed,omitempty"`
	SettleAsked    bool   `json:"settleAsked,omitempty"` // the settle continuation of this run was used
	IdleAsked      bool   `json:"idleAsked,omitempty"`   // an idle handoff was requested in this run
	Manual         bool   `json:"manual,omitempty"`      // the user asked for a handoff (/handoff)

	Pending  Handoff `json:"pending,omitzero"`   // written, waiting for its turn_end commit
	Relaunch bool    `json:"relaunch,omitempty"` // the pending handoff ends in a relaunch instead
	Stored   Handoff `json:"stored,omitzero"`    // the last handoff, still a valid snapshot

	Commits         int    `json:"commits"`     // budget and hard commits (the cap counts these)
	IdleCommits     int    `json:"idleCommits"` // idle commits (never counted)
	OtherCommits    int    `json:"otherCommits"`
	CommitTurns     []int  `json:"commitTurns,omitempty"` // turns of budget/hard commits since the last progress
	Fallback        string `json:"fallback,omitempty"`
	CapAdvisory     bool   `json:"capAdvisory,omitempty"`
	LoopPaused      bool   `json:"loopPaused,omitempty"`
	WrapperLost     bool   `json:"wrapperLost,omitempty"` // arming the relaunch failed: act as without a wrapper
	Rejections      int    `json:"rejections,omitempty"`
	CompactFailures int    `json:"compactFailures,omitempty"`
	Shutdown        bool   `json:"shutdown,omitempty"`
}

// Effect is one thing the policy asks the hooks to do. Kind doubles as
// the telemetry event name (observe mode logs "would_" + Kind).
type Effect struct {
	Kind    string `json:"kind"`
	Reason  string `json:"reason,omitempty"`
	Handoff string `json:"handoff,omitempty"`
	Source  string `json:"source,omitempty"`
}

// Effect kinds.
const (
	EffSoft      = "soft_crossed"      // UI advisory: past soft
	EffRequired  = "handoff_required"  // UI advisory: past the handoff threshold
	EffHard      = "hard_reached"      // UI advisory: past hard
	EffNotice    = "notice"            // append a model-visible notice at this turn_end (Reason: soft, handoff, hard, cap, loop, compaction)
	EffBlock     = "tool_blocked"      // block the tool call (Reason: handoff, pending, hard, cap, loop, compaction)
	EffGrace     = "grace_call"        // allow the call as a grace call
	EffWritten   = "handoff_written"   // a handoff is pending
	EffCommit    = "handoff_committed" // return the retain-none compaction and continue
	EffDiscard   = "handoff_discarded" // an uncommitted handoff no longer counts (Reason)
	EffRelaunch  = "relaunch_armed"    // arm the relaunch from Handoff now
	EffEmergency = "emergency_handoff" // write a mechanical handoff, then arm the relaunch from it
	EffShutdown  = "shutdown"          // shut pi down (at agent_settled)
	EffContinue  = "settle_continue"   // one continuation asking for a handoff (Reason: handoff, hard, manual, idle, ...)
	EffFallback  = "fallback_armed"    // Reason
	EffCap       = "cap_advisory"      // each turn, without a wrapper
	EffLoop      = "loop_paused"       // each turn, without a wrapper
	EffResumed   = "loop_resumed"
)

// Observation is what the hooks saw.
type Observation interface{ observation() }

// TurnEnd: a turn ended (turn_end).
type TurnEnd struct {
	Tokens       *int64 // pi's context estimate after the turn; nil: unknown (fresh after a compaction)
	Usage        *int64 // the assistant message's reported usage; nil when it has none
	Progress     bool   // a non-handoff tool succeeded (grace calls excepted)
	ToolActivity bool   // a non-handoff tool ran (a stored handoff goes stale)
	Continues    bool   // the turn already schedules a next request (tool results)
}

// ToolCall: the model called a tool (tool_call).
type ToolCall struct {
	Handoff bool // context_handoff
	GraceOK bool // a state-recording read/edit or read-only git command (see Classify)
}

// ToolFinished: a tool call that was not blocked finished after a pending
// handoff was written.
type ToolFinished struct{ Handoff bool }

// HandoffWritten: context_handoff wrote a handoff (in observe mode: would have).
type HandoffWritten struct {
	Path       string
	ToolCallID string
	// Source, when set, is the source the handoff's sidecar records: a
	// host taking over a handoff another host wrote does not have the
	// state that decided it.
	Source string
}

// HandoffRejected: context_handoff refused the arguments' objective checks.
type HandoffRejected struct{}

// Settle: the agent is about to stop (agent_before_settle).
type Settle struct {
	PendingWork int // running jobs, watches, subagents
}

// Settled: the run settled (agent_settled).
type Settled struct{}

// ExternalRun: a genuinely new run started from input (before_agent_start).
// Manual marks the run /handoff started.
type ExternalRun struct{ Manual bool }

// ManualRequest: the user asked for a handoff with /handoff.
type ManualRequest struct{}

// CompactionStarted and CompactionDone: a budget-owned compaction.
type CompactionStarted struct{}

// CompactionDone: a compaction succeeded.
type CompactionDone struct{}

// CompactionFailed: a compaction failed. Benign failures (cancelled,
// nothing to compact, already compacted) change nothing; Persistent ones
// arm the fallback at once, transient ones on the third.
type CompactionFailed struct{ Benign, Persistent bool }

// ArmFailed: the wrapper refused to arm a relaunch.
type ArmFailed struct{}

func (TurnEnd) observation()           {}
func (ToolCall) observation()          {}
func (ToolFinished) observation()      {}
func (HandoffWritten) observation()    {}
func (HandoffRejected) observation()   {}
func (Settle) observation()            {}
func (Settled) observation()           {}
func (ExternalRun) observation()       {}
func (ManualRequest) observation()     {}
func (CompactionStarted) observation() {}
func (CompactionDone) observation()    {}
func (CompactionFailed) observation()  {}
func (ArmFailed) observation()         {}

// wrapper reports whether an owned wrapper can relaunch.
func (s State) wrapper(l Limits) bool { return l.Wrapper && !s.WrapperLost }

// Thresholds are s's effective thresholds under l.
func (s State) Thresholds(l Limits) EffectiveThresholds {
	return Effective(l.Thresholds, l.Grace, s.Floor, s.FloorKnown)
}

// Action names what the policy is doing in s, for the status record.
func (s State) Action() string {
	switch s.Phase {
	case SoftNotified:
		return "advise"
	case HandoffRequired:
		return "require-handoff"
	case PendingCommit:
		if s.Relaunch {
			return "relaunch"
		}
		return "commit"
	case Compacting:
		return "compact"
	case FallbackArmed:
		return "fallback-" + s.Fallback
	}
	if s.LoopPaused {
		return "paused"
	}
	return "none"
}

// Step is the policy: the state after observation o, and the effects the
// hooks must carry out. It is pure.
func Step(s State, l Limits, o Observation) (State, []Effect) {
	var fx []Effect
	emit := func(e Effect) { fx = append(fx, e) }
	s.CommitTurns = slices.Clone(s.CommitTurns)
	switch o := o.(type) {
	case TurnEnd:
		s.Turn++
		if s.Phase == Compacting {
			// A turn ran, so the compaction is over; its outcome never
			// arrived (the extension lost its answer). Measure afresh.
			s.Phase = Idle
		}
		s.TokensKnown = o.Tokens != nil
		s.Tokens = 0
		if o.Tokens != nil {
			s.Tokens = *o.Tokens
		}
		if o.Usage != nil && *o.Usage > 0 && !s.FloorKnown {
			s.Floor, s.FloorKnown = *o.Usage, true
		}
		if o.Progress {
			s.CommitTurns = nil
			if s.LoopPaused {
				s.LoopPaused = false
				emit(Effect{Kind: EffResumed, Reason: "tool succeeded"})
			}
		}
		if s.LoopPaused && commitsInWindow(s, l) == 0 {
			s.LoopPaused = false
			s.CommitTurns = nil
			emit(Effect{Kind: EffResumed, Reason: "window aged out"})
		}
		if o.ToolActivity && s.Stored.Path != "" && s.Pending.Path == "" {
			s.Stored = Handoff{}
		}
		if s.Pending.Path != "" && !s.Relaunch {
			return commit(s, l, fx)
		}
		if s.Pending.Path == "" && s.Phase != Compacting {
			s, fx = evaluate(s, l, fx)
		}
		if o.Continues && s.NoticeDue != "" {
			emit(Effect{Kind: EffNotice, Reason: s.NoticeDue})
			s.NoticeDue = ""
		}
		if s.CapAdvisory {
			emit(Effect{Kind: EffCap, Reason: "handoff cap reached without a wrapper"})
		}
		if s.LoopPaused {
			emit(Effect{Kind: EffLoop, Reason: "handoffs without progress"})
		}
	case ToolCall:
		if o.Handoff || s.LoopPaused {
			break
		}
		switch {
		case s.Pending.Path != "":
			emit(Effect{Kind: EffBlock, Reason: "pending", Source: s.Pending.Source})
		case s.Phase == HandoffRequired:
			e := s.Thresholds(l)
			if l.Grace.Enabled && o.GraceOK && s.GraceUsed < l.Grace.Calls && float64(s.Tokens) < e.Grace && s.Stored.Path == "" {
				s.GraceUsed++
				emit(Effect{Kind: EffGrace})
				break
			}
			emit(Effect{Kind: EffBlock, Reason: "handoff"})
		case s.Phase == FallbackArmed:
			emit(Effect{Kind: EffBlock, Reason: s.Fallback})
		}
	case ToolFinished:
		if o.Handoff || s.Pending.Path == "" {
			break
		}
		emit(Effect{Kind: EffDiscard, Handoff: s.Pending.Path, Reason: "a tool finished after the handoff", Source: s.Pending.Source})
		s.Pending, s.Relaunch = Handoff{}, false
		s = settlePhase(s, l)
	case HandoffWritten:
		// The user's /handoff wins: it is carried out in every mode, never
		// counted toward the cap or the loop guard, and under an owned
		// wrapper it always ends in a relaunch.
		src := SourceVoluntary
		switch {
		case s.Manual:
			src = SourceManual
		case s.Fallback != "":
			src = SourceHard
		case s.Phase == HandoffRequired, s.Pending.Source == SourceBudget:
			src = SourceBudget
		case s.IdleAsked:
			src = SourceIdle
		}
		if o.Source != "" {
			src = o.Source
		}
		if s.Pending.Path != "" {
			emit(Effect{Kind: EffDiscard, Handoff: s.Pending.Path, Reason: "replaced by a newer handoff", Source: s.Pending.Source})
		}
		s.Pending = Handoff{Path: o.Path, Source: src, ToolCallID: o.ToolCallID, Turn: s.Turn}
		s.Relaunch = false
		s.Rejections = 0
		s.Phase = PendingCommit
		emit(Effect{Kind: EffWritten, Handoff: o.Path, Source: src})
		if s.wrapper(l) && (src == SourceManual || s.Fallback == FallbackCap || s.Fallback == FallbackLoop || s.Fallback == FallbackCompaction) {
			s.Relaunch = true
		}
	case HandoffRejected:
		s.Rejections++
	case Settle:
		if s.Pending.Path != "" || s.LoopPaused {
			break
		}
		reason, src := "", ""
		switch {
		case s.Manual:
			reason, src = "manual", SourceManual
		case s.Phase == HandoffRequired:
			reason = "handoff"
		case s.Phase == FallbackArmed:
			reason = s.Fallback
		}
		if reason != "" {
			if !s.SettleAsked {
				s.SettleAsked = true
				emit(Effect{Kind: EffContinue, Reason: reason, Source: src})
			}
			break
		}
		if !s.IdleAsked && (s.Phase == Idle || s.Phase == SoftNotified) && s.TokensKnown &&
			float64(s.Tokens) >= l.IdleMinTokens && o.PendingWork > 0 && s.Stored.Path == "" {
			s.IdleAsked = true
			emit(Effect{Kind: EffContinue, Reason: SourceIdle})
		}
	case Settled:
		switch {
		case s.Shutdown:
		case s.Pending.Path != "" && s.Relaunch:
			emit(Effect{Kind: EffRelaunch, Handoff: s.Pending.Path, Source: s.Pending.Source})
			emit(Effect{Kind: EffShutdown, Source: s.Pending.Source})
			s.Shutdown = true
		case s.Phase == FallbackArmed && s.wrapper(l) && s.SettleAsked && s.Fallback != "":
			if s.Stored.Path != "" {
				emit(Effect{Kind: EffRelaunch, Handoff: s.Stored.Path, Reason: s.Fallback})
			} else {
				emit(Effect{Kind: EffEmergency, Reason: s.Fallback})
			}
			emit(Effect{Kind: EffShutdown})
			s.Shutdown = true
		}
	case ExternalRun:
		s.SettleAsked, s.IdleAsked = false, false
		if !o.Manual {
			s.Manual = false
		}
		if s.Pending.Path != "" {
			emit(Effect{Kind: EffDiscard, Handoff: s.Pending.Path, Reason: "a new run started", Source: s.Pending.Source})
			s.Pending, s.Relaunch = Handoff{}, false
			s = settlePhase(s, l)
		}
		s.Stored = Handoff{}
	case ManualRequest:
		s.Manual = true
		s.SettleAsked = false
	case CompactionStarted:
		if s.Pending.Path == "" {
			s.Phase = Compacting
		}
	case CompactionDone:
		if s.Phase == Compacting {
			s.Phase = Idle
		}
		s = reset(s)
		s.CompactFailures = 0
		if s.Fallback == FallbackCompaction {
			s.Fallback = ""
		}
		s = settlePhase(s, l)
	case CompactionFailed:
		if s.Phase == Compacting {
			s.Phase = Idle
		}
		if !o.Benign {
			s.CompactFailures++
			if o.Persistent || s.CompactFailures >= 3 {
				s.Fallback = FallbackCompaction
				emit(Effect{Kind: EffFallback, Reason: FallbackCompaction})
			}
		}
		s = settlePhase(s, l)
	case ArmFailed:
		s.WrapperLost = true
		s.Shutdown = false
		if s.Relaunch && s.Pending.Path != "" {
			s.Relaunch = false // commit in place at the next turn_end instead
		}
		if s.Fallback == FallbackCap || s.Fallback == FallbackLoop || s.Fallback == FallbackCompaction {
			s.Fallback = ""
		}
		s = settlePhase(s, l)
	}
	return s, fx
}

// commit carries out the pending handoff at turn_end.
func commit(s State, l Limits, fx []Effect) (State, []Effect) {
	h := s.Pending
	counted := h.Source == SourceBudget || h.Source == SourceHard
	if counted {
		if commitsInWindow(s, l)+1 > l.Loop.MaxHandoffsWithoutProgress {
			if s.wrapper(l) {
				s.Fallback, s.Relaunch, s.Phase = FallbackLoop, true, PendingCommit
				return s, append(fx, Effect{Kind: EffFallback, Reason: FallbackLoop})
			}
			s.LoopPaused = true
			s.Stored, s.Pending = h, Handoff{}
			s.Fallback = ""
			s.Phase = Idle
			return s, append(fx, Effect{Kind: EffLoop, Reason: "handoffs without progress"})
		}
		if s.Commits >= l.Cap {
			if s.wrapper(l) {
				s.Fallback, s.Relaunch, s.Phase = FallbackCap, true, PendingCommit
				return s, append(fx, Effect{Kind: EffFallback, Reason: FallbackCap})
			}
			s.CapAdvisory = true
			fx = append(fx, Effect{Kind: EffCap, Reason: "handoff cap reached without a wrapper"})
		}
	}
	fx = append(fx, Effect{Kind: EffCommit, Handoff: h.Path, Source: h.Source})
	switch {
	case counted:
		s.Commits++
		s.CommitTurns = append(s.CommitTurns, s.Turn)
	case h.Source == SourceIdle:
		s.IdleCommits++
	default:
		s.OtherCommits++
	}
	s.Stored, s.Pending = h, Handoff{}
	s.Fallback = ""
	s.Manual = false
	s.Rejections = 0
	s.CompactFailures = 0
	s = reset(s)
	s.Phase = Idle
	return s, fx
}

// reset forgets the measurements and latches of the context a compaction replaced.
func reset(s State) State {
	s.Tokens, s.TokensKnown = 0, false
	s.Floor, s.FloorKnown = 0, false
	s.SoftLatched, s.HandoffLatched = false, false
	s.NoticeDue = ""
	s.GraceUsed = 0
	if s.Fallback == FallbackHard {
		s.Fallback = ""
	}
	return s
}

// commitsInWindow counts budget/hard commits in the loop window.
func commitsInWindow(s State, l Limits) int {
	n := 0
	for _, t := range s.CommitTurns {
		if t > s.Turn-l.Loop.WithinTurns {
			n++
		}
	}
	return n
}

// evaluate moves between idle, soft-notified, handoff-required and the
// hard fallback by the measured tokens.
func evaluate(s State, l Limits, fx []Effect) (State, []Effect) {
	if !s.TokensKnown {
		return s, fx
	}
	e := s.Thresholds(l)
	t := float64(s.Tokens)
	if t < e.Soft {
		s.SoftLatched = false
	}
	if t < e.Handoff {
		s.HandoffLatched = false
	}
	if s.Fallback != "" && s.Fallback != FallbackHard {
		s.Phase = FallbackArmed
		return s, fx
	}
	level := 0
	switch {
	case s.LoopPaused:
		if t >= e.Soft {
			level = 1
		}
	case s.FloorKnown && t >= e.Hard:
		level = 3
	case s.FloorKnown && t >= e.Handoff:
		level = 2
	case t >= e.Soft:
		level = 1
	}
	switch level {
	case 3:
		if s.Fallback != FallbackHard {
			s.Fallback = FallbackHard
			s.Phase = FallbackArmed
			s.NoticeDue = "hard"
			fx = append(fx, Effect{Kind: EffHard}, Effect{Kind: EffFallback, Reason: FallbackHard})
		}
	case 2:
		s.Fallback = ""
		if s.Phase != HandoffRequired {
			s.Phase = HandoffRequired
			s.GraceUsed = 0
		}
		if !s.HandoffLatched {
			s.HandoffLatched = true
			s.NoticeDue = "handoff"
			fx = append(fx, Effect{Kind: EffRequired})
		}
	case 1:
		s.Fallback = ""
		s.Phase = SoftNotified
		if !s.SoftLatched {
			s.SoftLatched = true
			s.NoticeDue = "soft"
			fx = append(fx, Effect{Kind: EffSoft})
		}
	default:
		s.Fallback = ""
		s.Phase = Idle
		s.NoticeDue = ""
	}
	return s, fx
}

// settlePhase recomputes the phase after a pending handoff went away.
func settlePhase(s State, l Limits) State {
	switch {
	case s.Pending.Path != "":
		s.Phase = PendingCommit
	case s.Fallback != "":
		s.Phase = FallbackArmed
	case s.Phase == Compacting:
	default:
		s.Phase = Idle
		if s.TokensKnown {
			e := s.Thresholds(l)
			switch t := float64(s.Tokens); {
			case s.FloorKnown && !s.LoopPaused && t >= e.Handoff:
				s.Phase = HandoffRequired
			case t >= e.Soft:
				s.Phase = SoftNotified
			}
		}
	}
	return s
}
