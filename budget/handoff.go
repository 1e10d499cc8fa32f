package budget

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/pi-session/pi-session/clip"
	"github.com/pi-session/pi-session/owndir"
	"github.com/pi-session/pi-session/regfile"
	"github.com/pi-session/pi-session/session"
)

// HandoffParams is a context_handoff call.
type HandoffParams struct {
	Args         []byte   `json:"-"`
	ToolCallID   string   `json:"toolCallId"`
	RunningIDs   []string `json:"runningIds"`   // running jobs, watches, subagents; nil: no registry
	Integrations []string `json:"integrations"` // what the extension could and could not inventory
}

// HandoffAnswer is context_handoff's result.
type HandoffAnswer struct {
	Text    string          `json:"text"`
	IsError bool            `json:"isError,omitempty"`
	Details *HandoffDetails `json:"details,omitempty"`
	View    View            `json:"view"`
}

// toolError is an answer the model sees as a tool error.
func toolError(s *sess, format string, args ...any) HandoffAnswer {
	text := fmt.Sprintf(format, args...)
	if len(text) > 8<<10 {
		text = cutBytes(text, 8<<10) + "…"
	}
	return HandoffAnswer{Text: text, IsError: true, View: s.view()}
}

// Handoff runs context_handoff: validation, the objective checks of
// enforce mode, duplicate back-off, metadata, the resume check, the
// document and its files. In observe and off mode (without a /handoff
// request) nothing is validated or written.
func (e *Engine) Handoff(ctx context.Context, p Peer, arm ArmFunc, hp HandoffParams) HandoffAnswer {
	s := e.open(p, arm)
	defer s.mu.Unlock()
	s.ranHandoff(hp.ToolCallID)
	st := s.state
	manual := st.Manual
	if s.projected() && !manual {
		if s.mode == ModeObserve {
			e.apply(s, HandoffWritten{Path: "(observe: not written)", ToolCallID: hp.ToolCallID})
		}
		return HandoffAnswer{Text: fmt.Sprintf("context_handoff: the budget engine is in %s mode, so no handoff was written and nothing changes; continue your work (the user can ask for one with /handoff).", s.mode), View: s.view()}
	}
	a, err := ParseArgs(hp.Args, s.peer.Cwd)
	if err != nil {
		e.event(s, "handoff_invalid", map[string]any{"error": cutBytes(err.Error(), 1000)})
		return toolError(s, "%v", err)
	}
	// Objective checks: files_to_read exist, running work is covered.
	degraded := st.Rejections >= 2 || st.Fallback != "" || manual && s.projected()
	problems, missing := CheckArgs(a, hp.RunningIDs)
	if len(problems) > 0 && !degraded {
		e.apply(s, HandoffRejected{})
		e.event(s, "handoff_rejected", map[string]any{"problems": problems, "rejections": s.state.Rejections})
		return toolError(s, "%s", Rejection(problems))
	}
	var lint []string
	if degraded {
		for _, pr := range problems {
			if !strings.HasPrefix(pr, "files_to_read") {
				lint = append(lint, pr)
			}
		}
	} else {
		missing = nil
	}
	if len(a.WatchActions) > 0 && hp.RunningIDs == nil {
		lint = append(lint, "watch_actions: the ids were not checked: no pi-jobs or pi-subagents registry is available in this process")
	}
	// Metadata.
	dir := HandoffDir(s.peer.Cwd)
	// A directory someone else could write to is refused before anything
	// is made; a link is used, said once (WriteHandoff makes it).
	dirWarning, err := owndir.Check(dir, 2)
	if err != nil {
		e.event(s, "handoff_write_failed", map[string]any{"error": err.Error()})
		return toolError(s, "context_handoff: no handoff was written: %s", strings.TrimPrefix(err.Error(), "owndir: "))
	}
	var branch []*session.Entry
	e.readBranch(s, func(b []*session.Entry) { branch = b })
	m := Metadata{SessionID: s.peer.SessionID, CreatedAt: e.opt.Now(), Cwd: s.peer.Cwd, SessionFile: s.peer.SessionFile,
		PreviousHandoff: s.last.Path, Integrations: hp.Integrations}
	m.Source = e.previewSource(s)
	if e.opt.Git {
		m.Repo, m.Repos, m.ReposOmitted = CollectRepos(ctx, s.peer.Cwd, TouchedPaths(branch, s.peer.Cwd))
	}
	m.UserMessages = UserMessagesSince(branch, s.wasDiscarded)
	m.Pins = Pins(branch)
	roots := []string{s.peer.Cwd}
	if m.Repo != nil && m.Repo.Root != s.peer.Cwd {
		roots = append(roots, m.Repo.Root)
	}
	m.Lint = append(Lint(roots, LatestStateChange(branch), missing), lint...)
	m.Discarded = lastN(s.discarded, 5)
	head := ""
	if m.Repo != nil {
		head = m.Repo.Head
	} else if len(m.Repos) > 0 {
		head = m.Repos[0].Head
	}
	words := Words(a)
	// Back-off guards against the agent repeating itself; forced
	// handoffs and the user's own /handoff always go through.
	forced := m.Source == SourceBudget || m.Source == SourceHard || m.Source == SourceManual
	if !forced {
		if until := Backoff(s.last, head, words, e.opt.Now()); !until.IsZero() {
			e.event(s, "handoff_backoff", map[string]any{"until": until, "previous": s.last.Path})
			return toolError(s, "context_handoff: refused: this handoff repeats %s (same HEAD, nearly the same goal, facts and next step) written %s ago; retry after %s, once HEAD or the narrative has changed.",
				s.last.Path, e.opt.Now().Sub(s.last.WrittenAt).Round(1e9), until.Local().Format("15:04:05"))
		}
	}
	if s.resume != "" && s.mode == ModeEnforce && !s.peer.Subagent {
		r := RunResumeCheck(ctx, s.resume, s.peer.Cwd, ResumeTimeout, ResumeDrain)
		m.Resume = &r
		e.event(s, "resume_check", map[string]any{"when": "before_handoff", "exitCode": r.ExitCode, "timedOut": r.TimedOut, "truncated": r.Truncated})
	}
	// The number is taken when the files are written: another pi on this
	// session may take the one chosen first, and the handoff, which
	// names its number, is laid out again under the next.
	var renderErr error
	sc, doc, err := CreateHandoff(dir, s.peer.SessionID, max(s.restored.MaxN, s.last.N), func(n int) (*Sidecar, string, error) {
		m.N = n
		doc, err := Render(a, m, DefaultDocLimits)
		if err != nil {
			renderErr = err
			return nil, "", err
		}
		id := fmt.Sprintf("%s-%d", s.peer.SessionID, n)
		path := filepath.Join(dir, id+".md")
		details := HandoffDetails{Kind: "handoff", Path: path, Source: m.Source, N: n, Head: head, Words: words, WrittenAt: e.opt.Now()}
		return &Sidecar{Version: 1, ID: id, ToolCallID: hp.ToolCallID, Path: path, Args: a, Metadata: m, Backoff: details}, doc, nil
	})
	if renderErr != nil {
		e.event(s, "handoff_oversize", map[string]any{"error": renderErr.Error()})
		return toolError(s, "%v", renderErr)
	}
	if err != nil {
		e.event(s, "handoff_write_failed", map[string]any{"error": err.Error()})
		return toolError(s, "context_handoff: %v", err)
	}
	path, details := sc.Path, sc.Backoff
	s.last, s.lastAt = details, e.opt.Now()
	s.restored.MaxN = sc.Metadata.N
	s.discarded = nil
	e.apply(s, HandoffWritten{Path: path, ToolCallID: hp.ToolCallID})
	note := ""
	if dirWarning != "" {
		note = "Warning: " + dirWarning + "."
	}
	if sc.excludeWarning != "" {
		note = strings.TrimSpace(note + " Warning: " + sc.excludeWarning + ".")
	}
	return HandoffAnswer{Text: s.writtenText(path, len(doc), len(m.Lint), manual, note), Details: &details, View: s.view()}
}

// writtenText is context_handoff's answer for a handoff written to path:
// its size, its lint, and what happens at the end of the turn; note, when
// set, comes after the size.
func (s *sess) writtenText(path string, size, lint int, manual bool, note string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Handoff written to %s (%d bytes).", path, size)
	if note != "" {
		b.WriteString(" " + note)
	}
	if lint > 0 {
		fmt.Fprintf(&b, " %d lint %s recorded in it.", lint, plural(lint, "warning was", "warnings were"))
	}
	if s.state.Relaunch || (manual && s.limits.Wrapper && !s.state.WrapperLost) {
		b.WriteString(" End your turn now without further tools: pi-session restarts pi in a fresh process that continues from this handoff.")
	} else {
		b.WriteString(" End your turn now without further tools: the context resets to this handoff at the end of this turn and work continues from its next step.")
	}
	return b.String()
}

// ranHandoff records that this host runs the context_handoff call id.
func (s *sess) ranHandoff(id string) {
	if s.handoffs == nil {
		s.handoffs = map[string]bool{}
	}
	if id != "" {
		s.handoffs[id] = true
	}
}

// HandoffOutcome says what became of the context_handoff call id whose
// answer the extension never got: the host that ran it died (or the
// connection to it broke) in the middle. A host that ran the call answers
// from its state (after the call, if it still runs). Any other host looks
// for the handoff the call wrote: complete (its document is there), it
// takes the handoff over, pending as if it had written it, so the turn's
// end commits it; not complete, or not there, the answer is a tool error
// saying nothing was written or reset and to call context_handoff again.
func (e *Engine) HandoffOutcome(p Peer, arm ArmFunc, id string) HandoffAnswer {
	s := e.open(p, arm)
	defer s.mu.Unlock()
	if id == "" {
		return toolError(s, "context_handoff: no tool call id to look for")
	}
	if s.handoffs[id] {
		if pend := s.state.Pending; pend.ToolCallID == id && pend.Path != "" {
			details := s.last
			return HandoffAnswer{Text: s.writtenText(pend.Path, fileSize(pend.Path), 0, pend.Source == SourceManual, ""), Details: &details, View: s.view()}
		}
		return toolError(s, "context_handoff: the answer to this call was lost and no handoff of it is waiting to be committed; nothing was reset. Call context_handoff again.")
	}
	sc, torn := e.takeOver(s, id)
	switch {
	case sc != nil:
		details := sc.Backoff
		note := "pi-session's engine host stopped before it could answer this call; the host that took over found the handoff complete."
		return HandoffAnswer{Text: s.writtenText(sc.Path, fileSize(sc.Path), len(sc.Metadata.Lint), sc.Metadata.Source == SourceManual, note), Details: &details, View: s.view()}
	case torn != "":
		return toolError(s, "context_handoff: not written: pi-session's engine host stopped before the handoff was complete (%s holds only its sidecar); nothing was reset. Call context_handoff again.", torn)
	}
	return toolError(s, "context_handoff: not written: pi-session's engine host stopped during this call, before the handoff was written; nothing was reset. Call context_handoff again.")
}

// takeOver makes the handoff the context_handoff call id wrote pending in
// s, when this host did not run the call: the host that did died, and the
// handoff is complete on disk. It returns that handoff, or, when it is not
// complete, the sidecar found without its document. A session this host
// never started is first restored from its file.
func (e *Engine) takeOver(s *sess, id string) (sc *Sidecar, torn string) {
	if id == "" || s.handoffs[id] {
		return nil, ""
	}
	s.ranHandoff(id)
	if !s.started {
		e.restore(s)
	}
	sc, torn = FindHandoff(HandoffDir(s.peer.Cwd), s.peer.SessionID, id)
	if sc == nil {
		e.event(s, "handoff_lost", map[string]any{"toolCallId": id, "sidecar": torn})
		return nil, torn
	}
	s.last, s.lastAt = sc.Backoff, sc.Backoff.WrittenAt
	s.restored.MaxN = max(s.restored.MaxN, sc.Metadata.N)
	s.discarded = nil
	e.apply(s, HandoffWritten{Path: sc.Path, ToolCallID: id, Source: sc.Metadata.Source})
	e.event(s, "handoff_taken_over", map[string]any{"handoff": sc.Path, "toolCallId": id, "source": sc.Metadata.Source})
	return sc, ""
}

// fileSize is the size of the file at path, 0 when it cannot be read.
func fileSize(path string) int {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return int(st.Size())
}

// CheckArgs runs the objective checks of a handoff's arguments against
// the world, before anything is written: files_to_read that do not exist
// (also returned as missing, for lint), running jobs or subagents
// (runningIDs; nil when no registry can say) not covered by
// watch_actions, and a launch_prompt naming a file that is not an
// existing regular file.
func CheckArgs(a Args, runningIDs []string) (problems, missing []string) {
	for i, f := range a.FilesToRead {
		if i == MaxFilesChecked {
			break
		}
		st, err := os.Stat(f)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			missing = append(missing, f)
			problems = append(problems, fmt.Sprintf("files_to_read: %s does not exist", clip.Echo(f)))
		case err != nil:
			// A link loop, a denied directory: say which, not "does not exist".
			missing = append(missing, f)
			problems = append(problems, fmt.Sprintf("files_to_read: %s cannot be read: %s", clip.Echo(f), clip.Echo(statReason(err))))
		case !st.IsDir() && !st.Mode().IsRegular():
			// The next process would block reading a FIFO, or read a device forever.
			problems = append(problems, fmt.Sprintf("files_to_read: %s is %s, not a file to read", clip.Echo(f), regfile.Kind(st.Mode())))
		}
	}
	if runningIDs != nil {
		covered := map[string]bool{}
		for _, w := range a.WatchActions {
			covered[w.ID] = true
		}
		for _, id := range runningIDs {
			ok := covered[id]
			for c := range covered {
				if len(c) >= 8 && strings.HasPrefix(id, c) {
					ok = true
				}
			}
			if !ok {
				problems = append(problems, fmt.Sprintf("watch_actions: running %s is not covered", id))
			}
		}
	}
	// A launch_prompt naming a file must name an existing one; checked
	// now, before anything is written or a resume check runs.
	if lp, isPath := launchPromptFile(a.LaunchPrompt); isPath {
		if st, err := os.Stat(lp); err != nil || !st.Mode().IsRegular() {
			problems = append(problems, fmt.Sprintf("launch_prompt: %s is not an existing regular file (give the prompt text itself, or an absolute path to a file)", clip.Echo(lp)))
		} else if st.Size() > MaxLaunchPrompt {
			// The relaunched pi gets it as @file, its whole text as the first prompt.
			problems = append(problems, fmt.Sprintf("launch_prompt: %s is %d bytes, over the limit of %d for a launch prompt", clip.Echo(lp), st.Size(), MaxLaunchPrompt))
		}
	}
	return problems, missing
}

// statReason is why a stat failed, without the path the message names.
func statReason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// maxHandoffRead bounds a handoff document read back (its path may come
// from the session's entries): a document is capped at DocumentCap.
const maxHandoffRead = 1 << 20

// readHandoff reads a handoff document back for a compaction, written out
// visibly (visibleDoc) as when it was written: the file on disk may have
// been changed since, or written by another tool.
func readHandoff(path string) (string, error) {
	b, err := regfile.Read(path, maxHandoffRead)
	return visibleDoc(string(b)), err
}

// Rejection is the tool error for arguments that failed CheckArgs.
func Rejection(problems []string) string {
	return "context_handoff: rejected, nothing was written:\n- " + strings.Join(problems, "\n- ") + "\nFix these and call context_handoff again (after two rejections these checks only warn)."
}

// launchPromptFile reports whether a launch_prompt names a file (an
// absolute path on one line without spaces) rather than giving the text.
func launchPromptFile(lp string) (string, bool) {
	return lp, lp != "" && filepath.IsAbs(lp) && !strings.ContainsAny(lp, " \t\r\n")
}

// previewSource is the source HandoffWritten will record.
func (e *Engine) previewSource(s *sess) string {
	st, _ := Step(s.state, s.limits, HandoffWritten{Path: "x"})
	return st.Pending.Source
}

func lastN(s []string, n int) []string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// CompactionParams is session_before_compact as the extension forwards it.
type CompactionParams struct {
	Reason       string `json:"reason"` // manual, threshold, overflow
	Owned        bool   `json:"owned"`  // the budget asked for this compaction
	TokensBefore int    `json:"tokensBefore"`
	Mechanical   bool   `json:"mechanical"` // the native summarizer failed: the bounded mechanical one
}

// CompactionAnswer is the budget's answer: nil passes to pi.
type CompactionAnswer struct {
	Cancel  bool            `json:"cancel,omitempty"`
	Summary string          `json:"summary,omitempty"`
	Details *HandoffDetails `json:"details,omitempty"`
}

// Compaction answers the compactions the budget owns (its idle-input and
// overflow recovery) and, in enforce mode, every automatic one (the
// overflow backstop): a still-valid handoff, else the bounded mechanical
// summary; never pi's default summarizer. Other compactions pass.
func (e *Engine) Compaction(p Peer, arm ArmFunc, cp CompactionParams) *CompactionAnswer {
	s := e.open(p, arm)
	defer s.mu.Unlock()
	enforce := s.mode == ModeEnforce
	if !(cp.Owned && (enforce || cp.Mechanical)) && !(enforce && cp.Reason != "manual") {
		return nil
	}
	st := s.state
	h := st.Stored.Path
	if h == "" && st.Pending.Path != "" {
		h = st.Pending.Path
	}
	if h != "" {
		if doc, err := readHandoff(h); err == nil {
			e.event(s, "backstop", map[string]any{"reason": cp.Reason, "handoff": h})
			return &CompactionAnswer{Summary: doc, Details: &HandoffDetails{Kind: "handoff", Path: h, Source: SourceIdle}}
		}
	}
	prior := priorHandoff(s.last.Path)
	var requests, pinned []string
	e.readBranch(s, func(b []*session.Entry) { requests, pinned = UserMessagesSince(b, s.wasDiscarded), Pins(b) })
	e.event(s, "backstop", map[string]any{"reason": cp.Reason, "mechanical": true})
	return &CompactionAnswer{Summary: MechanicalSummary(prior, requests, pinned, s.peer.SessionFile), Details: &HandoffDetails{Kind: "backstop", Mechanical: true, Source: cp.Reason}}
}

// CompactResultParams is the outcome of a compaction.
type CompactResultParams struct {
	OK     bool   `json:"ok"`
	Error  string `json:"error"`
	Owned  bool   `json:"owned"`
	Reason string `json:"reason"`
}

// ClassifyCompactionError sorts a compaction failure by pi 1.6's messages:
// "benign" (cancelled, nothing to compact, already compacted: nothing is
// wrong), "persistent" (retrying cannot help: no model for the summary, no
// credentials, an invalid compaction setting) or "transient" (anything
// else: a provider or network error, which may pass).
func ClassifyCompactionError(msg string) string {
	m := strings.ToLower(msg)
	for _, b := range []string{"cancel", "abort", "nothing to compact", "already compacted"} {
		if m == "" || strings.Contains(m, b) {
			return "benign"
		}
	}
	for _, p := range []string{"no model available", "no api key", "authentication failed", "invalid compaction", "missing from the session context", "/login"} {
		if strings.Contains(m, p) {
			return "persistent"
		}
	}
	return "transient"
}

// CompactResult observes a compaction's outcome. Unowned manual errors
// are ignored; transient failures arm the fallback on the third.
func (e *Engine) CompactResult(p Peer, arm ArmFunc, cr CompactResultParams) View {
	s := e.open(p, arm)
	defer s.mu.Unlock()
	switch {
	case cr.OK:
		e.apply(s, CompactionDone{})
	case !cr.Owned && cr.Reason == "manual":
	default:
		class := ClassifyCompactionError(cr.Error)
		e.event(s, "compaction_failed", map[string]any{"error": cutBytes(cr.Error, 500), "owned": cr.Owned, "reason": cr.Reason, "class": class})
		e.apply(s, CompactionFailed{Benign: class == "benign", Persistent: class == "persistent"})
	}
	return s.view()
}

// OverflowParams: the run ended on a provider context overflow that pi did
// not recover.
type OverflowParams struct {
	Attempted bool `json:"attempted"` // the extension's one attempt was used already
}

// OverflowAnswer says whether to compact and retry once.
type OverflowAnswer struct {
	Recover bool   `json:"recover"`
	Text    string `json:"text"`
	View    View   `json:"view"`
}

// Overflow decides the bounded overflow recovery: one compact-and-retry in
// every mode but explicit off, unless overflowRecovery is false.
func (e *Engine) Overflow(p Peer, arm ArmFunc, op OverflowParams) OverflowAnswer {
	s := e.open(p, arm)
	defer s.mu.Unlock()
	c := s.loaded.Config
	switch {
	case c.Mode == ModeOff && !s.loaded.Invalid():
		return OverflowAnswer{View: s.view()}
	case !c.OverflowRecovery:
		e.event(s, "overflow_not_recovered", map[string]any{"reason": "overflowRecovery is false"})
		return OverflowAnswer{View: s.view()}
	case op.Attempted:
		e.event(s, "overflow_recovery_exhausted", nil)
		return OverflowAnswer{Text: "context-budget: the context still overflows after one compact-and-retry; reduce the context (start a fresh session, /handoff) or switch to a model with a larger window", View: s.view()}
	}
	e.event(s, "overflow_recovery", map[string]any{"mode": s.mode})
	e.apply(s, CompactionStarted{})
	return OverflowAnswer{Recover: true, Text: "context-budget: the provider reported a context overflow; compacting once and retrying", View: s.view()}
}
