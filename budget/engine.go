package budget

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/pi-session/pi-session/clip"
	"github.com/pi-session/pi-session/paths"
	"github.com/pi-session/pi-session/rotate"
	"github.com/pi-session/pi-session/session"
	"github.com/pi-session/pi-session/status"
)

// Peer is who calls: the session as its hello says, and whether an owned
// wrapper can relaunch it.
type Peer struct {
	SessionID   string
	SessionFile string
	SessionName string
	Cwd         string
	Subagent    bool // a subagent session or an SDK child: subagent thresholds
	Wrapper     bool // an owned wrapper can relaunch this session's pi
	Mode        string
}

// SessionReader brings a session file up to date and calls fn with it
// (hooks.Sessions.With in the host).
type SessionReader func(path string, fn func(*session.File) error) error

// ArmFunc asks the wrapper to arm the relaunch from a handoff; it returns
// the marker path.
type ArmFunc func(handoff, launchPrompt string) (string, error)

// Options configure an Engine.
type Options struct {
	Getenv   paths.Getenv
	Now      func() time.Time
	Sessions SessionReader
	Logger   *slog.Logger
	Git      bool // collect git metadata (tests may turn it off)
}

// Engine is the budget engine of one host: per-session policy state,
// telemetry and the handoff files.
type Engine struct {
	opt    Options
	events *rotate.Log
	turns  *rotate.Log
	store  *status.Store

	mu       sync.Mutex
	sessions map[string]*sess
	writes   sync.WaitGroup
	flush    chan struct{} // closed by Close: pending status writes go at once
	closed   sync.Once
}

// statusInterval is the least time between two status writes of a session.
const statusInterval = time.Second

// New opens the engine's logs (lazily; nothing is written until used).
func New(opt Options) (*Engine, error) {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	dir := paths.StateDir(opt.Getenv)
	ev, err := rotate.New(filepath.Join(dir, "events.jsonl"), rotate.Events)
	if err != nil {
		return nil, err
	}
	tu, err := rotate.New(filepath.Join(dir, "turns.jsonl"), rotate.Turns)
	if err != nil {
		return nil, err
	}
	return &Engine{opt: opt, events: ev, turns: tu, store: status.NewStore(dir), sessions: map[string]*sess{}, flush: make(chan struct{})}, nil
}

// SetSessions sets how session files are read (the host's cache).
func (e *Engine) SetSessions(r SessionReader) {
	e.mu.Lock()
	e.opt.Sessions = r
	e.mu.Unlock()
}

// Close waits for pending status writes and closes the logs.
func (e *Engine) Close() error {
	e.closed.Do(func() { close(e.flush) })
	e.writes.Wait()
	e.events.Close()
	return e.turns.Close()
}

// sess is one session's engine state.
type sess struct {
	mu        sync.Mutex
	peer      Peer
	arm       ArmFunc
	model     string
	loaded    Loaded
	mode      string // effective
	reason    string // why effective differs from configured
	state     State
	limits    Limits
	restored  Restored
	last      HandoffDetails // the last handoff written
	lastAt    time.Time
	discarded []string
	settledAt time.Time
	resume    string // the resume check command
	statusMu  sync.Mutex
	dirty     bool
	writing   bool

	configured bool              // the configuration was read for this session
	guardOff   bool              // the optional guard integration says the context guard is off
	guard      bool              // the effective mode is off because of the guard (not an explicit off)
	mismatch   string            // the configured/effective difference last logged
	calls      map[string]string // this turn's tool calls the policy blocked ("blocked") or ran as grace calls ("grace")
	started    bool              // Start ran, or the session was restored from its file
	handoffs   map[string]bool   // context_handoff calls this host ran or took over, by tool call id
	done       Counts            // handoffs committed for real (restored and in this process), whatever the mode
}

// Counts are committed handoffs by what the cap counts: budget and hard
// commits, idle ones, and the rest (manual, voluntary).
type Counts struct {
	Budget int `json:"budget"`
	Idle   int `json:"idle"`
	Other  int `json:"other"`
}

func (c *Counts) add(source string) {
	switch source {
	case SourceBudget, SourceHard:
		c.Budget++
	case SourceIdle:
		c.Idle++
	default:
		c.Other++
	}
}

// Total is every committed handoff.
func (c Counts) Total() int { return c.Budget + c.Idle + c.Other }

// projected reports whether the policy only previews (observe mode).
func (s *sess) projected() bool { return s.mode != ModeEnforce }

// wasDiscarded says whether a handoff draft of this session was discarded
// (its entries read "<path> (<why>)"): its tool result is no boundary.
func (s *sess) wasDiscarded(path string) bool {
	for _, d := range s.discarded {
		if strings.HasPrefix(d, path+" (") {
			return true
		}
	}
	return false
}

// open returns the session's state, created on first use and configured
// before its first observation, with its lock held: the caller unlocks.
func (e *Engine) open(p Peer, arm ArmFunc) *sess {
	e.mu.Lock()
	s := e.sessions[p.SessionID]
	if s == nil {
		s = &sess{peer: p}
		e.sessions[p.SessionID] = s
	}
	e.mu.Unlock()
	s.mu.Lock()
	s.peer, s.arm = p, arm
	if !s.configured {
		e.configure(s)
	}
	return s
}

// End forgets a session whose connection closed; an uncommitted handoff
// of a pi that is not being relaunched is discarded (shutdown).
func (e *Engine) End(sessionID string) {
	e.mu.Lock()
	s := e.sessions[sessionID]
	delete(e.sessions, sessionID)
	e.mu.Unlock()
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.state.Pending; p.Path != "" && !s.state.Shutdown {
		carried := !s.projected() || p.Source == SourceManual
		name := "handoff_discarded"
		if !carried {
			name = "would_handoff_discarded"
		}
		e.event(s, name, map[string]any{"handoff": p.Path, "reason": "shutdown", "source": p.Source})
	}
}

// configure (re)loads the configuration and recomputes mode and limits.
// It logs each configuration error once (until the errors change).
func (e *Engine) configure(s *sess) {
	l := LoadConfig(ConfigPath(e.opt.Getenv))
	prevErrs := fmt.Sprint(s.loaded.Errors)
	s.loaded = l
	s.configured = true
	if fmt.Sprint(l.Errors) != prevErrs {
		for _, ce := range l.Errors {
			e.event(s, "config_error", map[string]any{"key": ce.Key, "message": ce.Message, "warning": ce.Warning, "path": l.Path, "line": ce.Line, "column": ce.Column})
		}
	}
	e.remode(s)
}

// setGuard records what the optional guard integration says (nil: no
// integration, or it could not answer) and recomputes the mode when that
// changes.
func (e *Engine) setGuard(s *sess, off *bool) {
	g := off != nil && *off
	if g != s.guardOff {
		s.guardOff = g
		e.remode(s)
	}
}

// remode recomputes the effective mode, limits and resume check from the
// loaded configuration, the cwd and the guard. It logs each
// configured/effective difference once, and each change of the effective
// mode. Entering or leaving enforcement starts the policy afresh: the
// preview's latches and commits are discarded, the real commit counts
// stay.
func (e *Engine) remode(s *sess) {
	l := s.loaded
	prevMode := s.mode
	mode, reason := l.Config.Effective(s.peer.Cwd)
	if l.Invalid() {
		reason = "invalid configuration"
	}
	s.guard = false
	if s.guardOff && mode != ModeOff {
		mode, reason, s.guard = ModeOff, "context guard off", true
	}
	s.mode, s.reason = mode, reason
	s.limits = LimitsFor(l.Config, s.peer.Subagent, s.model, s.peer.Wrapper)
	s.resume = ResumeCommand(e.opt.Getenv, l.Config, s.peer.SessionName)
	configured := s.configuredMode()
	mismatch := ""
	if configured != mode || l.Invalid() {
		mismatch = configured + " " + mode + " " + reason
	}
	if mismatch != s.mismatch {
		s.mismatch = mismatch
		if mismatch != "" {
			e.event(s, "mode_mismatch", map[string]any{"configured": configured, "effective": mode, "reason": reason})
		}
	}
	if prevMode == "" || prevMode == mode {
		return
	}
	e.event(s, "mode_changed", map[string]any{"from": prevMode, "to": mode, "configured": configured, "reason": reason})
	if mode != ModeEnforce && prevMode != ModeEnforce {
		return
	}
	old := s.state
	if p := old.Pending; p.Path != "" {
		real := prevMode == ModeEnforce || p.Source == SourceManual
		name := "handoff_discarded"
		if !real {
			name = "would_handoff_discarded"
		} else {
			s.discarded = append(s.discarded, p.Path+" (mode change)")
		}
		e.event(s, name, map[string]any{"handoff": p.Path, "reason": "mode change", "source": p.Source})
	}
	s.state = State{Turn: old.Turn, Tokens: old.Tokens, TokensKnown: old.TokensKnown, Floor: old.Floor, FloorKnown: old.FloorKnown,
		Commits: s.done.Budget, IdleCommits: s.done.Idle, OtherCommits: s.done.Other}
	if old.Stored.Path != "" && filepath.IsAbs(old.Stored.Path) && (prevMode == ModeEnforce || old.Stored.Source == SourceManual) {
		s.state.Stored = old.Stored // a real handoff, committed
	}
	s.state = settlePhase(s.state, s.limits)
}

// configuredMode is the mode the configuration file asks for (even when
// an error elsewhere in it forces observe).
func (s *sess) configuredMode() string {
	if s.loaded.Requested != "" {
		return s.loaded.Requested
	}
	return s.loaded.Config.Mode
}

// Footer is the text the extension shows in pi's footer.
func (s *sess) footer() string {
	configured := s.configuredMode()
	if configured == s.mode && !s.loaded.Invalid() {
		return "budget: " + s.mode
	}
	return fmt.Sprintf("context-budget: configured %s, effective %s (%s)", configured, s.mode, s.reason)
}

// event appends one line to events.jsonl; failures are logged, never returned.
func (e *Engine) event(s *sess, name string, fields map[string]any) {
	rec := map[string]any{"ts": e.opt.Now().UTC().Format(time.RFC3339Nano), "event": name}
	if s != nil {
		rec["sessionId"] = s.peer.SessionID
		rec["mode"] = s.mode
		rec["phase"] = s.state.Phase
		if s.state.TokensKnown {
			rec["tokens"] = s.state.Tokens
		}
	}
	for k, v := range fields {
		rec[k] = v
	}
	if err := e.events.AppendJSON(rec); err != nil {
		e.opt.Logger.Warn("budget events", "err", err)
	}
}

// apply runs the policy on o and returns the effects to carry out. In
// observe mode every effect becomes a would_* event and nothing is carried
// out, except what concerns the user's /handoff, in every mode.
func (e *Engine) apply(s *sess, o Observation) []Effect {
	live, _ := e.step(s, o)
	return live
}

// step is apply, also returning every effect of the policy, carried out
// or only previewed.
func (e *Engine) step(s *sess, o Observation) (live, all []Effect) {
	var fx []Effect
	s.state, fx = Step(s.state, s.limits, o)
	for _, f := range fx {
		name := f.Kind
		// What concerns the user's /handoff is carried out in every mode.
		carry := !s.projected() || f.Source == SourceManual
		if s.mode == ModeOff && !carry {
			// Explicit off is silent; the guard's off logs each handoff
			// and hard crossing (same latches as enforcement).
			if s.guard && (f.Kind == EffRequired || f.Kind == EffHard) {
				th := "handoff"
				if f.Kind == EffHard {
					th = "hard"
				}
				e.event(s, "guard_off_threshold", map[string]any{"threshold": th})
			}
			continue
		}
		fields := map[string]any{}
		if !carry {
			name = "would_" + name
			if f.Kind == EffContinue && f.Reason == SourceIdle {
				fields["requiresHandoff"] = true // a preview: no handoff is prepared
			}
		} else {
			live = append(live, f)
			if f.Kind == EffCommit {
				s.done.add(f.Source)
			}
		}
		if f.Reason != "" {
			fields["reason"] = f.Reason
		}
		if f.Handoff != "" {
			fields["handoff"] = f.Handoff
		}
		if f.Source != "" {
			fields["source"] = f.Source
		}
		if f.Kind == EffDiscard && carry {
			s.discarded = append(s.discarded, f.Handoff+" ("+f.Reason+")")
		}
		e.event(s, name, fields)
	}
	e.writeStatus(s)
	return live, fx
}

// writeStatus records the session's budget fields in its status record,
// in the background, coalescing writes.
func (e *Engine) writeStatus(s *sess) {
	if !status.ValidSessionID(s.peer.SessionID) {
		return
	}
	s.statusMu.Lock()
	s.dirty = true
	if s.writing {
		s.statusMu.Unlock()
		return
	}
	s.writing = true
	s.statusMu.Unlock()
	e.writes.Add(1)
	go func() {
		defer e.writes.Done()
		for {
			s.statusMu.Lock()
			if !s.dirty {
				s.writing = false
				s.statusMu.Unlock()
				return
			}
			s.dirty = false
			s.statusMu.Unlock()
			s.mu.Lock()
			fields, peer := s.statusFields(), s.peer
			s.mu.Unlock()
			// Patch, not Read then Write: a bye's end written meanwhile stays.
			err := e.store.Patch(peer.SessionID, func(r *status.Record) {
				if r.Cwd == "" && r.SessionFile == "" {
					r.Cwd, r.SessionFile = peer.Cwd, peer.SessionFile
				}
				fields(r)
				r.UpdatedAt = time.Time{}
			})
			if err != nil {
				e.opt.Logger.Warn("budget status", "session", peer.SessionID, "err", err)
			}
			// At most one durable write a second per session: later
			// changes wait (and coalesce) unless the engine is closing.
			select {
			case <-time.After(statusInterval):
			case <-e.flush:
			}
		}
	}()
}

// statusFields returns a function setting context-budget's status fields of a
// record from s (called with s.mu held).
func (s *sess) statusFields() func(*status.Record) {
	st, lim, done := s.state, s.limits, s.done
	eff := st.Thresholds(lim)
	model, mode, configured, projected, last, lastAt, reason := s.model, s.mode, s.configuredMode(), s.projected(), s.last.Path, s.lastAt, s.reason
	return func(r *status.Record) {
		r.Model = model
		r.Tokens, r.Floor = nil, nil
		if st.TokensKnown {
			r.Tokens = ptr(st.Tokens)
		}
		if st.FloorKnown {
			r.Floor = ptr(st.Floor)
		}
		t := lim.Thresholds
		r.Thresholds = &status.Thresholds{Soft: int64(t.Soft), Handoff: int64(t.Handoff), Hard: int64(t.Hard), MinProgress: int64(t.MinProgress)}
		r.EffectiveThresholds = &status.Thresholds{Soft: int64(eff.Soft), Handoff: int64(eff.Handoff), Hard: int64(eff.Hard), MinProgress: int64(t.MinProgress)}
		if last != "" {
			r.LastHandoff = last
			at := lastAt.UTC()
			r.LastHandoffAt = &at
		}
		r.HandoffCount = done.Total() // committed for real: a preview's commits are not counted
		r.EffectiveMode, r.ConfiguredMode = mode, configured
		r.Phase, r.Action, r.Projected = string(st.Phase), st.Action(), projected
		r.Fallback = st.Fallback
		if r.Extra == nil {
			r.Extra = map[string]json.RawMessage{}
		}
		extra := map[string]any{"budgetCounts": done,
			"modeReason": reason, "wrapperCanRelaunch": lim.Wrapper && !st.WrapperLost}
		for k, v := range extra {
			r.Extra[k], _ = json.Marshal(v)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// readBranch reads the session's current branch; nil when the file does
// not exist yet.
func (e *Engine) readBranch(s *sess, fn func(branch []*session.Entry)) {
	e.mu.Lock()
	read := e.opt.Sessions
	e.mu.Unlock()
	if s.peer.SessionFile == "" || read == nil {
		fn(nil)
		return
	}
	err := read(s.peer.SessionFile, func(f *session.File) error {
		b, err := f.Branch("")
		if err != nil {
			return err
		}
		fn(b)
		return nil
	})
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			e.opt.Logger.Warn("budget: read session", "file", s.peer.SessionFile, "err", err)
		}
		fn(nil)
	}
}

// View is the policy as a session sees it: what the extension shows and
// whether it must ask before each tool call.
type View struct {
	Mode           string              `json:"mode"`
	ConfiguredMode string              `json:"configuredMode"`
	Reason         string              `json:"reason,omitempty"`
	Footer         string              `json:"footer"`
	Phase          Phase               `json:"phase"`
	Action         string              `json:"action"`
	Projected      bool                `json:"projected"`
	Tokens         *int64              `json:"tokens"`
	Floor          *int64              `json:"floor"`
	Thresholds     EffectiveThresholds `json:"thresholds"`
	Gate           bool                `json:"gate"`    // tool calls must be checked
	Live           bool                `json:"live"`    // answers may carry effects (else the hooks need not wait for them)
	Pending        string              `json:"pending"` // a handoff waiting for its commit
	Wrapper        bool                `json:"wrapper"`
	Commits        int                 `json:"commits"` // budget/hard handoffs committed for real
	Model          string              `json:"model"`
	// QuietBelow, when set, is a context size below which a turn_end with
	// the same model cannot change anything pi does (enforce mode, idle,
	// nothing due): the extension then need not wait for the answer.
	QuietBelow   *float64      `json:"quietBelow"`
	LastHandoff  string        `json:"lastHandoff,omitempty"`
	ConfigPath   string        `json:"configPath"`
	ConfigErrors []ConfigError `json:"configErrors,omitempty"`
}

func (s *sess) view() View {
	st := s.state
	v := View{Mode: s.mode, ConfiguredMode: s.configuredMode(), Reason: s.reason, Footer: s.footer(), Phase: st.Phase,
		Action: st.Action(), Projected: s.projected(), Thresholds: st.Thresholds(s.limits), Pending: st.Pending.Path,
		Wrapper: s.limits.Wrapper && !st.WrapperLost, Commits: s.done.Budget, LastHandoff: s.last.Path, Model: s.model,
		ConfigPath: s.loaded.Path, ConfigErrors: s.loaded.Errors}
	if st.TokensKnown {
		v.Tokens = ptr(st.Tokens)
	}
	if st.FloorKnown {
		v.Floor = ptr(st.Floor)
	}
	// In observe mode the preview is asked too (it logs would_tool_blocked)
	// but only a manual handoff's answers block, in every mode.
	v.Gate = st.Pending.Source == SourceManual || s.mode != ModeOff && (st.Pending.Path != "" || st.Phase == HandoffRequired || st.Phase == FallbackArmed)
	v.Live = s.mode == ModeEnforce || st.Manual || st.Pending.Source == SourceManual
	// Below the soft threshold an idle enforce-mode turn has no effect:
	// evaluate (core.go) emits nothing under soft, and the floor a turn
	// may measure only raises the effective soft threshold.
	if s.mode == ModeEnforce && st.Phase == Idle && st.Pending.Path == "" && st.NoticeDue == "" && st.Fallback == "" &&
		!st.CapAdvisory && !st.LoopPaused && !st.Manual {
		q := s.limits.Thresholds.Soft
		if st.FloorKnown {
			q = v.Thresholds.Soft
		}
		v.QuietBelow = &q
	}
	return v
}

// StartParams is what session_start reports.
type StartParams struct {
	Model    string `json:"model"`
	GuardOff *bool  `json:"guardOff"` // the optional guard integration's answer; nil: none
}

// Start begins (or resumes) a session: configuration, restoration from
// the session file, the status record.
func (e *Engine) Start(p Peer, arm ArmFunc, sp StartParams) View {
	s := e.open(p, arm)
	defer s.mu.Unlock()
	s.model = sp.Model
	s.guardOff = sp.GuardOff != nil && *sp.GuardOff
	e.configure(s)
	e.restore(s)
	e.event(s, "session_start", map[string]any{"configured": s.configuredMode(), "wrapper": p.Wrapper, "subagent": p.Subagent, "model": sp.Model, "guardOff": s.guardOff})
	e.writeStatus(s)
	return s.view()
}

// restore reads the session's budget history from its file: commits,
// floor, the last handoff.
func (e *Engine) restore(s *sess) {
	s.started = true
	e.readBranch(s, func(b []*session.Entry) {
		r := Restore(b)
		s.restored = r
		s.done = Counts{Budget: r.Commits, Idle: r.IdleCommits, Other: r.OtherCommits}
		s.state = State{Phase: Idle, Commits: r.Commits, IdleCommits: r.IdleCommits, OtherCommits: r.OtherCommits, Floor: r.Floor, FloorKnown: r.FloorKnown}
		if r.Last.Path != "" {
			s.last, s.lastAt = r.Last, r.Last.WrittenAt
		} else if r.ContinuedFrom != "" {
			e.continuedFrom(s, r.ContinuedFrom)
		}
	})
}

// InputParams is what the input hook reports.
type InputParams struct {
	Source   string `json:"source"` // interactive, rpc, extension
	GuardOff *bool  `json:"guardOff"`
}

// Input is every input: the configuration is reloaded; an input from the
// user re-arms recovery. It answers whether to compact first: the
// idle-input recovery, when the user comes back after idleMinutes to a
// valid stored handoff with enough history since (enforce mode; observe
// mode logs would_idle_input_compaction, with requiresHandoff when no
// handoff is stored).
func (e *Engine) Input(p Peer, arm ArmFunc, ip InputParams) (compact bool, v View) {
	s := e.open(p, arm)
	defer s.mu.Unlock()
	s.guardOff = ip.GuardOff != nil && *ip.GuardOff
	e.configure(s)
	c := s.loaded.Config
	st := s.state
	idle := ip.Source != "extension" && !s.settledAt.IsZero() &&
		e.opt.Now().Sub(s.settledAt) >= time.Duration(c.IdleMinutes*float64(time.Minute)) &&
		st.Pending.Path == "" && st.TokensKnown && float64(st.Tokens) >= c.KeepRecentTokens
	switch {
	case !idle:
	case s.mode == ModeEnforce && st.Stored.Path != "":
		compact = true
		e.event(s, "idle_input_compaction", map[string]any{"handoff": st.Stored.Path, "idleMinutes": c.IdleMinutes})
		e.apply(s, CompactionStarted{})
	case s.mode == ModeObserve:
		e.event(s, "would_idle_input_compaction", map[string]any{"handoff": st.Stored.Path, "idleMinutes": c.IdleMinutes, "requiresHandoff": st.Stored.Path == ""})
	}
	return compact, s.view()
}

// continuedFrom records the handoff a relaunched pi continues from as the
// session's last handoff: pi-session status shows it, the next handoff
// names it as the previous one.
func (e *Engine) continuedFrom(s *sess, handoff string) {
	if sc, err := ReadSidecar(handoff); err == nil && sc.Backoff.Path == handoff {
		s.last, s.lastAt = sc.Backoff, sc.Backoff.WrittenAt
	} else {
		s.last, s.lastAt = HandoffDetails{Kind: "handoff", Path: handoff}, time.Time{}
	}
	e.event(s, "continued_from", map[string]any{"handoff": handoff})
}

// AgentStartParams is before_agent_start from input.
type AgentStartParams struct {
	Manual bool   `json:"manual"` // the run /handoff started
	Prompt string `json:"prompt"` // the prompt's end (the extension sends at most 4 KiB)
}

// AgentStart is a genuinely new run (before_agent_start from input). The
// first prompt of a pi relaunched from a handoff names it.
func (e *Engine) AgentStart(p Peer, arm ArmFunc, ap AgentStartParams) View {
	s := e.open(p, arm)
	defer s.mu.Unlock()
	if s.last.Path == "" {
		if m := continueRE().FindStringSubmatch(ap.Prompt); m != nil {
			e.continuedFrom(s, m[1])
		}
	}
	e.apply(s, ExternalRun{Manual: ap.Manual})
	return s.view()
}

// ToolResultInfo is one tool result of a turn.
type ToolResultInfo struct {
	ToolName   string `json:"toolName"`
	ToolCallID string `json:"toolCallId"`
	IsError    bool   `json:"isError"`
	Grace      bool   `json:"grace"` // it ran as a grace call
	Blocked    bool   `json:"blocked"`
}

// TurnEndParams is what turn_end reports.
type TurnEndParams struct {
	TurnIndex   int              `json:"turnIndex"`
	Tokens      *int64           `json:"tokens"`
	Usage       *int64           `json:"usage"`
	Model       string           `json:"model"`
	ToolResults []ToolResultInfo `json:"toolResults"`
	Continues   bool             `json:"continues"`
	Outcome     string           `json:"outcome"`
	GuardOff    *bool            `json:"guardOff"` // the optional guard integration, consulted each turn
	// Pending is the handoff the extension was told is written and waits
	// for this turn's commit; a host that did not write it (the one that
	// did died) takes it over from its files.
	Pending *PendingRef `json:"pending,omitempty"`
}

// PendingRef names a written handoff by the context_handoff call that
// wrote it.
type PendingRef struct {
	ToolCallID string `json:"toolCallId"`
	Path       string `json:"path"`
}

// Draft is a session entry draft the extension returns from turn_end or
// agent_before_settle.
type Draft struct {
	Type             string  `json:"type"` // compaction, custom_message
	Summary          string  `json:"summary,omitempty"`
	FirstKeptEntryID *string `json:"firstKeptEntryId"`
	Details          any     `json:"details,omitempty"`
	CustomType       string  `json:"customType,omitempty"`
	Content          string  `json:"content,omitempty"`
	Display          bool    `json:"display"`
}

// Notify is a UI notification.
type Notify struct {
	Level string `json:"level"` // info, warning, error
	Text  string `json:"text"`
}

// Answer is what an engine call asks the extension to do.
type Answer struct {
	View      View     `json:"view"`
	Entries   []Draft  `json:"entries,omitempty"`
	Continue  bool     `json:"continue,omitempty"`
	Notify    []Notify `json:"notify,omitempty"`
	Block     bool     `json:"block,omitempty"`
	Grace     bool     `json:"grace,omitempty"` // the call runs as a grace call
	Reason    string   `json:"reason,omitempty"`
	Shutdown  bool     `json:"shutdown,omitempty"`
	Marker    string   `json:"marker,omitempty"`
	Committed string   `json:"committed,omitempty"` // the handoff this boundary commits
}

// CustomType of the budget's messages in the session.
const CustomType = "pi-session-budget"

// TurnEnd observes a turn: tokens, floor, progress; it may commit the
// pending handoff (a retain-none compaction and a continuation) or append
// a notice.
func (e *Engine) TurnEnd(ctx context.Context, p Peer, arm ArmFunc, tp TurnEndParams) Answer {
	s := e.open(p, arm)
	defer s.mu.Unlock()
	if tp.Model != "" && tp.Model != s.model {
		s.model = tp.Model
		s.limits = LimitsFor(s.loaded.Config, s.peer.Subagent, s.model, s.peer.Wrapper)
	}
	e.setGuard(s, tp.GuardOff)
	if tp.Pending != nil {
		e.takeOver(s, tp.Pending.ToolCallID)
	}
	o := TurnEnd{Tokens: tp.Tokens, Usage: tp.Usage, Continues: tp.Continues}
	for _, r := range tp.ToolResults {
		// The engine's own record of its answers counts too: in observe
		// mode a call the preview would have blocked ran, but the
		// preview must see it as blocked (the same latches as enforce).
		decided := s.calls[r.ToolCallID]
		if r.ToolName == "context_handoff" || r.Blocked || decided == "blocked" {
			continue
		}
		o.ToolActivity = true
		if !r.IsError && !r.Grace && decided != "grace" {
			o.Progress = true
		}
	}
	clear(s.calls)
	pending := s.state.Pending
	fx := e.apply(s, o)
	var a Answer
	for _, f := range fx {
		switch f.Kind {
		case EffCommit:
			a.Entries = append(a.Entries, e.commitDrafts(ctx, s, pending)...)
			a.Continue = true
			a.Committed = pending.Path
		case EffNotice:
			a.Entries = append(a.Entries, Draft{Type: "custom_message", CustomType: CustomType, Content: s.notice(f.Reason), Display: true})
		case EffSoft, EffRequired, EffHard, EffFallback, EffCap, EffLoop, EffResumed:
			a.Notify = append(a.Notify, Notify{Level: level(f.Kind), Text: s.advisory(f)})
		}
	}
	eff := s.state.Thresholds(s.limits)
	sample := map[string]any{"ts": e.opt.Now().UTC().Format(time.RFC3339Nano), "sessionId": s.peer.SessionID, "turn": s.state.Turn,
		"turnIndex": tp.TurnIndex, "tokens": tp.Tokens, "usage": tp.Usage, "floor": nilIf(s.state.FloorKnown, s.state.Floor),
		"phase": s.state.Phase, "mode": s.mode, "projected": s.projected(), "soft": int64(eff.Soft), "handoff": int64(eff.Handoff), "hard": int64(eff.Hard), "model": s.model}
	if err := e.turns.AppendJSON(sample); err != nil {
		e.opt.Logger.Warn("budget turns", "err", err)
	}
	a.View = s.view()
	return a
}

func nilIf(ok bool, v int64) any {
	if !ok {
		return nil
	}
	return v
}

func level(kind string) string {
	switch kind {
	case EffSoft, EffResumed:
		return "info"
	}
	return "warning"
}

// commitDrafts are the retain-none compaction holding the handoff and the
// automatic continuation (with resume check and watch check).
func (e *Engine) commitDrafts(ctx context.Context, s *sess, h Handoff) []Draft {
	summary, err := readHandoff(h.Path)
	if err != nil {
		summary = fmt.Sprintf("# Handoff\n\nThe handoff %s could not be read (%v). Read it from disk, verify HEAD and external state, then continue.", h.Path, err)
	}
	d := s.last
	if d.Path != h.Path {
		d = HandoffDetails{Kind: "handoff", Path: h.Path}
	}
	d.Source = h.Source
	e.event(s, "handoff_commit_drafted", map[string]any{"handoff": h.Path, "source": h.Source})
	cont := []string{fmt.Sprintf("[pi-session budget] The context was reset to the handoff above (%s). Read it, verify HEAD and external state, then continue from Next step without asking the user to restate the task.", h.Path)}
	if sc, err := ReadSidecar(h.Path); err == nil {
		if check := watchCheck(ctx, sc, e.opt.Git); check != "" {
			cont = append(cont, check)
		}
	}
	if s.resume != "" && s.mode == ModeEnforce && !s.peer.Subagent {
		r := RunResumeCheck(ctx, s.resume, s.peer.Cwd, ResumeTimeout, ResumeDrain)
		e.event(s, "resume_check", map[string]any{"when": "after_reset", "exitCode": r.ExitCode, "timedOut": r.TimedOut, "truncated": r.Truncated})
		cont = append(cont, "## Resume check\n\n"+resumeText(r, ResumeBytes))
	}
	return []Draft{
		{Type: "compaction", Summary: summary, FirstKeptEntryID: nil, Details: d},
		// Shown in pi and read by the model: the resume check's output and
		// the sidecar's watch actions are written out visibly.
		{Type: "custom_message", CustomType: CustomType, Content: visibleDoc(strings.Join(cont, "\n\n")), Display: true},
	}
}

// watchCheck is the one check after a reset: the work the handoff
// declared running (watch_actions) with what to do when it completes, and
// each recorded repository's HEAD, branch and dirty count compared with
// now (when git is inspected).
func watchCheck(ctx context.Context, sc *Sidecar, git bool) string {
	var lines, watch []string
	for _, w := range sc.Args.WatchActions {
		l := fmt.Sprintf("- %s | %s | on complete: %s", w.ID, w.Target, w.OnComplete)
		if w.Cancel != "" {
			l += " | cancel: " + w.Cancel
		}
		watch = append(watch, oneLine(l))
	}
	if len(watch) > 0 {
		lines = append(lines, bounded(watch, DefaultDocLimits.WatchActions, "watch actions"),
			"  (declared by the handoff; no job or subagent registry is available to pi-session, so check whether each is still running)")
	}
	for _, r := range sc.Metadata.Repos {
		if !git {
			break
		}
		if !r.Known {
			continue
		}
		now := InspectRepo(ctx, r.Root)
		if !now.Known {
			lines = append(lines, fmt.Sprintf("- %s: now unknown (%s)", r.Root, now.Error))
			continue
		}
		same := now.Head == r.Head && now.Branch == r.Branch && now.Dirty == r.Dirty
		mark := "unchanged"
		if !same {
			mark = fmt.Sprintf("CHANGED: was %s@%s (%d dirty), now %s@%s (%d dirty)", r.Branch, short(r.Head), r.Dirty, now.Branch, short(now.Head), now.Dirty)
		}
		lines = append(lines, fmt.Sprintf("- %s: %s", r.Root, mark))
	}
	if len(lines) == 0 {
		return ""
	}
	return "## Watch check\n\n" + strings.Join(lines, "\n") + "\n\nRe-verify CI, review and issue facts before relying on them; the handoff's facts are claims."
}

// notice is the model-visible text of a notice.
func (s *sess) notice(reason string) string {
	st := s.state
	e := st.Thresholds(s.limits)
	tok := "unknown"
	if st.TokensKnown {
		tok = fmt.Sprint(st.Tokens)
	}
	switch reason {
	case "soft":
		return fmt.Sprintf("[pi-session budget] The context holds %s tokens, past the soft threshold of %.0f (a handoff is required at %.0f). Finish the current atomic step, update .ai-work/<task>/STATE.md and your task notes, and prepare a handoff.", tok, e.Soft, e.Handoff)
	case "handoff":
		return fmt.Sprintf("[pi-session budget] The context holds %s tokens, past the handoff threshold of %.0f. Record state now: a few edits of .ai-work/**/*.md and read-only git status/diff/log calls are still allowed. Then call context_handoff (goal, next_step, facts; user_constraints verbatim, hypotheses, files_to_read). Every other tool is blocked until the handoff is written; the session then continues from it in this process.", tok, e.Handoff)
	case "hard":
		return fmt.Sprintf("[pi-session budget] The context holds %s tokens, at or past the hard limit of %.0f. Every tool except context_handoff is blocked: call context_handoff now.", tok, e.Hard)
	}
	return "[pi-session budget] A handoff is required: call context_handoff now."
}

// advisory is the UI text of an advisory effect.
func (s *sess) advisory(f Effect) string {
	st := s.state
	e := st.Thresholds(s.limits)
	switch f.Kind {
	case EffSoft:
		return fmt.Sprintf("context-budget: %d tokens, past soft %.0f; the agent is asked to record state and prepare a handoff", st.Tokens, e.Soft)
	case EffRequired:
		return fmt.Sprintf("context-budget: %d tokens, past handoff %.0f; tools are blocked until context_handoff", st.Tokens, e.Handoff)
	case EffHard:
		return fmt.Sprintf("context-budget: %d tokens, past hard %.0f", st.Tokens, e.Hard)
	case EffFallback:
		if s.limits.Wrapper && !st.WrapperLost {
			return "context-budget: fallback armed (" + f.Reason + "): pi-session restarts pi in a fresh process from the handoff when this run ends"
		}
		return "context-budget: fallback armed (" + f.Reason + "): write a handoff; no wrapper can restart pi"
	case EffCap:
		return fmt.Sprintf("context-budget: %d handoffs in this session reach maxHandoffsPerSession (%d); handoffs continue in place, but consider starting a fresh session (run pi under pi-session to restart automatically)", st.Commits, s.limits.Cap)
	case EffLoop:
		return "context-budget: repeated handoffs without progress; enforcement is paused until a tool call succeeds"
	case EffResumed:
		return "context-budget: enforcement resumed (" + f.Reason + ")"
	}
	return "context-budget: " + f.Kind
}

// ToolCallParams is one tool call.
type ToolCallParams struct {
	ToolName   string          `json:"toolName"`
	ToolCallID string          `json:"toolCallId"`
	Input      json.RawMessage `json:"input"`
}

// ToolCall decides whether a tool may run.
func (e *Engine) ToolCall(p Peer, arm ArmFunc, tc ToolCallParams) Answer {
	s := e.open(p, arm)
	defer s.mu.Unlock()
	o := ToolCall{Handoff: tc.ToolName == "context_handoff"}
	if !o.Handoff && s.state.Phase == HandoffRequired {
		roots := []string{s.peer.Cwd}
		if r := RepoRoot(s.peer.Cwd, nil); r != "" && r != s.peer.Cwd {
			roots = append(roots, r)
		}
		o.GraceOK, _ = Classify(GraceInput{Tool: tc.ToolName, Input: tc.Input, Cwd: s.peer.Cwd, Home: paths.Home(e.opt.Getenv), Roots: roots}, osFS{})
	}
	live, all := e.step(s, o)
	if s.calls == nil {
		s.calls = map[string]string{}
	}
	// The policy's decision counts for its own bookkeeping (progress,
	// grace) whether it is carried out or only previewed.
	for _, f := range all {
		switch f.Kind {
		case EffBlock:
			s.calls[tc.ToolCallID] = "blocked"
		case EffGrace:
			s.calls[tc.ToolCallID] = "grace"
		}
	}
	a := Answer{}
	for _, f := range live {
		switch f.Kind {
		case EffBlock:
			a.Block, a.Reason = true, s.blockReason(tc.ToolName, f.Reason)
		case EffGrace:
			a.Grace = true
		}
	}
	a.View = s.view()
	return a
}

type osFS struct{}

func (osFS) EvalSymlinks(p string) (string, error) { return filepath.EvalSymlinks(p) }

func (s *sess) blockReason(tool, why string) string {
	st := s.state
	e := st.Thresholds(s.limits)
	t := clip.Echo(tool)
	wrapper := s.limits.Wrapper && !st.WrapperLost
	switch why {
	case "pending":
		if st.Relaunch {
			return fmt.Sprintf("pi-session budget: %s is blocked: the handoff %s is written and pi-session restarts pi from it when this turn ends. End your turn now without further tools.", t, st.Pending.Path)
		}
		return fmt.Sprintf("pi-session budget: %s is blocked: the handoff %s is written and the context resets to it at the end of this turn. End your turn now without further tools.", t, st.Pending.Path)
	case "handoff":
		return fmt.Sprintf("pi-session budget: %s is blocked: the context holds %d tokens, past the handoff threshold of %.0f. Call context_handoff now (goal, next_step, facts; user_constraints verbatim, hypotheses, files_to_read); the session continues from it in this process.", t, st.Tokens, e.Handoff)
	case FallbackHard:
		return fmt.Sprintf("pi-session budget: %s is blocked: the context holds %d tokens, past the hard limit of %.0f. Call context_handoff now; only that tool runs.", t, st.Tokens, e.Hard)
	}
	if wrapper {
		return fmt.Sprintf("pi-session budget: %s is blocked (fallback: %s). Call context_handoff now; pi-session then restarts pi in a fresh process from it when this turn ends.", t, why)
	}
	return fmt.Sprintf("pi-session budget: %s is blocked (fallback: %s). Call context_handoff now, then end your turn.", t, why)
}

// ToolDone: a tool that was not blocked finished while a handoff is pending.
func (e *Engine) ToolDone(p Peer, arm ArmFunc, toolName string) View {
	s := e.open(p, arm)
	defer s.mu.Unlock()
	e.apply(s, ToolFinished{Handoff: toolName == "context_handoff"})
	return s.view()
}

// Manual records the user's /handoff and returns the request the
// extension sends as the user's message.
func (e *Engine) Manual(p Peer, arm ArmFunc, instructions string) (string, View) {
	s := e.open(p, arm)
	defer s.mu.Unlock()
	e.configure(s)
	e.apply(s, ManualRequest{})
	req := ManualPrefix + " The user asked for a handoff. Call the context_handoff tool now: goal (the task and the original request, verbatim where it matters), next_step (the exact next action), facts (verified state: HEAD, test results, completed work), user_constraints (the user's constraints, verbatim), hypotheses (unverified), files_to_read (notes to read first)."
	if strings.TrimSpace(instructions) != "" {
		req += "\n\nThe user's instructions for this handoff: " + instructions
	}
	if s.limits.Wrapper && !s.state.WrapperLost {
		req += "\n\nAfter the tool succeeds, end your turn: pi-session restarts pi in a fresh process that continues from the handoff."
	} else {
		req += "\n\nAfter the tool succeeds, end your turn: the context resets to the handoff and work continues from it."
	}
	return req, s.view()
}

// ManualPrefix starts the request /handoff sends, so the run it starts is
// known to be the manual one.
const ManualPrefix = "[/handoff]"

// Settle is agent_before_settle: one continuation asking for a handoff
// when one is required (or requested), or an idle handoff request.
func (e *Engine) Settle(p Peer, arm ArmFunc, pendingWork int) Answer {
	s := e.open(p, arm)
	defer s.mu.Unlock()
	fx := e.apply(s, Settle{PendingWork: pendingWork})
	a := Answer{}
	for _, f := range fx {
		if f.Kind != EffContinue {
			continue
		}
		var text string
		switch f.Reason {
		case "manual":
			text = "[pi-session budget] The user asked for a handoff and none was written. Call context_handoff now, then end your turn."
		case SourceIdle:
			text = fmt.Sprintf("[pi-session budget] Work is still pending (%d running jobs, watches or subagents) and the context is large (%d tokens). Write a warm-cache handoff with context_handoff now, covering every running item in watch_actions; the context resets to it and the work continues in this process.", pendingWork, s.state.Tokens)
		default:
			text = "[pi-session budget] A handoff is required before you stop (" + f.Reason + "). Call context_handoff now with goal, next_step and facts; the session continues from it."
		}
		a.Entries = append(a.Entries, Draft{Type: "custom_message", CustomType: CustomType, Content: text, Display: true})
		a.Continue = true
	}
	a.View = s.view()
	return a
}

// Settled is agent_settled: arm the relaunch and shut pi down when the
// policy says so (an owned wrapper only).
func (e *Engine) Settled(ctx context.Context, p Peer, arm ArmFunc) Answer {
	s := e.open(p, arm)
	defer s.mu.Unlock()
	s.settledAt = e.opt.Now()
	fx := e.apply(s, Settled{})
	a := Answer{}
	for _, f := range fx {
		switch f.Kind {
		case EffRelaunch, EffEmergency:
			handoff := f.Handoff
			if f.Kind == EffEmergency {
				var err error
				handoff, err = e.writeEmergency(s, f.Reason)
				if err != nil {
					a.Notify = append(a.Notify, Notify{Level: "error", Text: "context-budget: cannot write an emergency handoff: " + err.Error()})
					e.apply(s, ArmFailed{})
					continue
				}
			}
			launch := ""
			if sc, err := ReadSidecar(handoff); err == nil {
				launch = sc.Launch
			}
			if s.arm == nil {
				e.event(s, "relaunch_failed", map[string]any{"handoff": handoff, "error": "no wrapper"})
				e.apply(s, ArmFailed{})
				continue
			}
			marker, err := s.arm(handoff, launch)
			if err != nil {
				e.event(s, "relaunch_failed", map[string]any{"handoff": handoff, "error": err.Error()})
				a.Notify = append(a.Notify, Notify{Level: "warning", Text: "context-budget: pi-session could not arm the relaunch (" + err.Error() + "); continuing in this process"})
				e.apply(s, ArmFailed{})
				continue
			}
			e.event(s, "relaunch_marker", map[string]any{"handoff": handoff, "marker": marker})
			a.Marker = marker
		case EffShutdown:
			if a.Marker != "" {
				a.Shutdown = true
			}
		}
	}
	a.View = s.view()
	return a
}

// writeEmergency writes a mechanical handoff for a fallback that found no
// usable one.
func (e *Engine) writeEmergency(s *sess, reason string) (string, error) {
	prior := priorHandoff(s.last.Path)
	var requests, pinned []string
	e.readBranch(s, func(b []*session.Entry) { requests, pinned = UserMessagesSince(b, s.wasDiscarded), Pins(b) })
	doc := MechanicalSummary(prior, requests, pinned, s.peer.SessionFile)
	dir := HandoffDir(s.peer.Cwd)
	sc, _, err := CreateHandoff(dir, s.peer.SessionID, s.restored.MaxN, func(n int) (*Sidecar, string, error) {
		id := fmt.Sprintf("%s-%d", s.peer.SessionID, n)
		path := filepath.Join(dir, id+".md")
		return &Sidecar{Version: 1, ID: id, Path: path,
			Args:     Args{Goal: "(emergency handoff: " + reason + ")", NextStep: "Re-establish state from files and git.", Facts: "(none recorded)"},
			Metadata: Metadata{SessionID: s.peer.SessionID, N: n, Source: SourceHard, CreatedAt: e.opt.Now(), Cwd: s.peer.Cwd, SessionFile: s.peer.SessionFile, Pins: pinned},
			Backoff:  HandoffDetails{Kind: "handoff", Path: path, Source: SourceHard, N: n, WrittenAt: e.opt.Now(), Mechanical: true}}, doc, nil
	})
	if err != nil {
		return "", err
	}
	s.restored.MaxN = sc.Metadata.N
	s.last, s.lastAt = sc.Backoff, e.opt.Now()
	e.event(s, "emergency_handoff", map[string]any{"handoff": sc.Path, "reason": reason})
	return sc.Path, nil
}
