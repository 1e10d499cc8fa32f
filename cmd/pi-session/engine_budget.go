package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pi-session/pi-session/budget"
	"github.com/pi-session/pi-session/clip"
	"github.com/pi-session/pi-session/paths"
	"github.com/pi-session/pi-session/regfile"
	"github.com/pi-session/pi-session/session"
)

func init() {
	engineCommands["handoff"] = engineCommand{
		help:  engineHandoffUsage,
		about: "the handoff document a context_handoff call would write",
		run:   cmdEngineHandoff,
	}
	engineCommands["budget"] = engineCommand{
		help:  engineBudgetUsage,
		about: "the budget policy as the engine reads a session",
		run:   cmdEngineBudget,
	}
}

const engineHandoffUsage = `usage: pi-session engine handoff [--dir DIR] [--session FILE] [--session-id ID] [--source SOURCE] ARGS.json

Prints the handoff document a context_handoff call with the arguments in
ARGS.json (a JSON object; - reads stdin) would write: the arguments
validated and checked as the tool's first call checks them (files_to_read
and a launch_prompt file must exist), and the automatic metadata collected
from DIR (default: the current directory) the way the engine collects it:
git state of DIR's repository and of the repositories the session's tool
calls touched, the user's messages since the previous handoff and the
pins of the branch, first (from --session, a pi session file). Writes
nothing; runs no resume check.
Exit status 1 when the arguments are invalid or the document would be
over its size cap, with the tool error the model would get.
`

func cmdEngineHandoff(ctx context.Context, inv *invocation) int {
	fs := newFlagSet("engine handoff")
	dir := fs.String("dir", "", "")
	sessionFile := fs.String("session", "", "")
	sessionID := fs.String("session-id", "", "")
	source := fs.String("source", budget.SourceManual, "")
	args, code, done := parseFlags(inv, fs, inv.args, engineHandoffUsage)
	if done {
		return code
	}
	if len(args) != 1 {
		return inv.errorf(exitUsage, "engine handoff takes one arguments file (see pi-session engine handoff --help)")
	}
	raw, err := readArg(inv, args[0])
	if err != nil {
		return inv.errorf(1, "engine handoff: %v", err)
	}
	name := args[0]
	if name == "-" {
		name = "stdin"
	}
	if len(raw) <= budget.MaxArgsBytes {
		if err := notObjectError(name, raw, `a JSON object with "goal", "next_step" and "facts" (strings)`); err != nil {
			return inv.errorf(1, "engine handoff: %v", err)
		}
	}
	cwd := *dir
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	cwd, _ = filepath.Abs(cwd)
	a, err := budget.ParseArgs(raw, cwd)
	var problems budget.ArgsError
	if errors.As(err, &problems) && len(raw) <= budget.MaxArgsBytes {
		// Each problem at its place in the file; the model gets the same
		// list, without places, and is asked to call again.
		for _, p := range problems {
			fmt.Fprintf(inv.stderr, "pi-session: engine handoff: %s\n", fieldMessage(name, raw, p.Field, p.Problem))
		}
		fmt.Fprintf(inv.stderr, "pi-session: engine handoff: context_handoff would refuse these arguments (%d %s); the model gets the same list and is asked to correct them and call context_handoff again\n",
			len(problems), plural(len(problems), "problem", "problems"))
		return 1
	}
	if err != nil {
		fmt.Fprintln(inv.stderr, err)
		return 1
	}
	m := budget.Metadata{SessionID: *sessionID, N: 1, Source: *source, CreatedAt: time.Now(), Cwd: cwd, SessionFile: *sessionFile}
	var branch []*session.Entry
	if *sessionFile != "" {
		f, err := session.Open(*sessionFile)
		if err != nil {
			return inv.errorf(1, "engine handoff: %v", err)
		}
		if branch, err = f.Branch(""); err != nil {
			return inv.errorf(1, "engine handoff: %v", err)
		}
		if m.SessionID == "" && f.Header != nil {
			m.SessionID = f.Header.ID
		}
		if r := budget.Restore(branch); r.Last.Path != "" {
			m.PreviousHandoff, m.N = r.Last.Path, r.MaxN+1
		}
	}
	if m.SessionID == "" {
		m.SessionID = "session"
	}
	m.Repo, m.Repos, m.ReposOmitted = budget.CollectRepos(ctx, cwd, budget.TouchedPaths(branch, cwd))
	m.UserMessages = budget.UserMessagesSince(branch, nil)
	m.Pins = budget.Pins(branch)
	// The objective checks, as the tool's first call makes them (no
	// registry here, so watch_actions are not checked against running ids).
	if problems, _ := budget.CheckArgs(a, nil); len(problems) > 0 {
		fmt.Fprintln(inv.stderr, budget.Rejection(problems))
		return 1
	}
	roots := []string{cwd}
	if m.Repo != nil && m.Repo.Root != cwd {
		roots = append(roots, m.Repo.Root)
	}
	m.Lint = budget.Lint(roots, budget.LatestStateChange(branch), nil)
	doc, err := budget.Render(a, m, budget.DefaultDocLimits)
	if err != nil {
		fmt.Fprintln(inv.stderr, err)
		return 1
	}
	printDoc(inv.stdout, doc)
	return 0
}

func readArg(inv *invocation, name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(io.LimitReader(inv.stdin, budget.MaxArgsBytes+1))
	}
	return regfile.Read(name, budget.MaxArgsBytes)
}

const engineBudgetUsage = `usage: pi-session engine budget [--config FILE] [--model PROVIDER/ID] [--subagent] [--json] SESSION_FILE

Prints the budget policy as the engine reads the pi session file: the
configuration in force (--config, else PI_CONTEXT_BUDGET_CONFIG or
<agent dir>/context-budget.json, the agent dir being PI_CODING_AGENT_DIR,
else the one the session file is kept in) with its errors, the context tokens, the
floor, the configured and effective thresholds, the handoffs committed, the
phase a turn ending now would put the session in, and what the engine
would do there. Writes nothing.
`

// budgetReport is engine budget's answer.
type budgetReport struct {
	SessionFile     string                     `json:"sessionFile"`
	ConfigPath      string                     `json:"configPath"`
	ConfigFound     bool                       `json:"configFound"`
	ConfigErrors    []budget.ConfigError       `json:"configErrors,omitempty"`
	ConfiguredMode  string                     `json:"configuredMode"`
	Mode            string                     `json:"mode"`
	ModeReason      string                     `json:"modeReason,omitempty"`
	Model           string                     `json:"model"`
	Role            string                     `json:"role"`
	Tokens          int                        `json:"tokens"`
	Floor           *int64                     `json:"floor"`
	Thresholds      budget.Thresholds          `json:"thresholds"`
	Effective       budget.EffectiveThresholds `json:"effectiveThresholds"`
	Commits         int                        `json:"commits"`
	IdleCommits     int                        `json:"idleCommits"`
	OtherCommits    int                        `json:"otherCommits"`
	LastHandoff     string                     `json:"lastHandoff,omitempty"`
	Phase           budget.Phase               `json:"phase"`
	Would           []string                   `json:"would"`
	MaxHandoffs     int                        `json:"maxHandoffsPerSession"`
	ResumeCheckable bool                       `json:"-"`
}

func cmdEngineBudget(ctx context.Context, inv *invocation) int {
	fs := newFlagSet("engine budget")
	config := fs.String("config", "", "")
	model := fs.String("model", "", "")
	subagent := fs.Bool("subagent", false, "")
	asJSON := fs.Bool("json", false, "")
	args, code, done := parseFlags(inv, fs, inv.args, engineBudgetUsage)
	if done {
		return code
	}
	if len(args) != 1 {
		return inv.errorf(exitUsage, "engine budget takes one session file (see pi-session engine budget --help)")
	}
	path := *config
	if path == "" {
		// The session's own agent dir, as engine relay and recall use it.
		agentDir := paths.SessionAgentDir(inv.env.Get, args[0])
		path = budget.ConfigPath(func(k string) string {
			if k == "PI_CODING_AGENT_DIR" {
				return agentDir
			}
			return inv.env.Get(k)
		})
	}
	l := budget.LoadConfig(path)
	f, err := session.Open(args[0])
	if err != nil {
		return inv.errorf(1, "engine budget: %v", err)
	}
	printDiagnostics(inv, f)
	if f.Header == nil {
		return inv.errorf(1, "engine budget: %s: %v", clip.Echo(args[0]), session.ErrNoHeader)
	}
	branch, err := f.Branch("")
	if err != nil {
		return inv.errorf(1, "engine budget: %v", err)
	}
	if *model == "" {
		*model = lastModel(branch)
	}
	cwd := ""
	if f.Header != nil {
		cwd = f.Header.Cwd
	}
	mode, reason := l.Config.Effective(cwd)
	if l.Invalid() {
		reason = "invalid configuration"
	}
	r := budget.Restore(branch)
	lim := budget.LimitsFor(l.Config, *subagent, *model, false)
	tokens := session.EstimateContextTokens(branch, session.Project(branch)).Tokens
	st := budget.State{Phase: budget.Idle, Commits: r.Commits, IdleCommits: r.IdleCommits, OtherCommits: r.OtherCommits, Floor: r.Floor, FloorKnown: r.FloorKnown}
	t := int64(tokens)
	st, fx := budget.Step(st, lim, budget.TurnEnd{Tokens: &t, Continues: true})
	configured := l.Config.Mode
	if l.Requested != "" {
		configured = l.Requested // what the file asks for, even when an error forces observe
	}
	rep := budgetReport{SessionFile: args[0], ConfigPath: l.Path, ConfigFound: l.Found, ConfigErrors: l.Errors, ConfiguredMode: configured,
		Mode: mode, ModeReason: reason, Model: *model, Role: map[bool]string{true: "subagent", false: "main"}[*subagent], Tokens: tokens,
		Thresholds: lim.Thresholds, Effective: st.Thresholds(lim), Commits: r.Commits, IdleCommits: r.IdleCommits, OtherCommits: r.OtherCommits,
		LastHandoff: r.Last.Path, Phase: st.Phase, MaxHandoffs: lim.Cap}
	if st.FloorKnown {
		rep.Floor = &st.Floor
	}
	for _, e := range fx {
		rep.Would = append(rep.Would, describeEffect(e))
	}
	switch st.Phase {
	case budget.HandoffRequired:
		rep.Would = append(rep.Would, fmt.Sprintf("block every tool but context_handoff (after up to %d grace calls for .ai-work notes and read-only git)", lim.Grace.Calls))
	case budget.FallbackArmed:
		rep.Would = append(rep.Would, "block every tool but context_handoff; commit a valid handoff in place (or relaunch under pi-session when the cap or loop guard says so)")
	}
	if r.Commits >= lim.Cap {
		rep.Would = append(rep.Would, fmt.Sprintf("the next budget/hard handoff is past maxHandoffsPerSession (%d): relaunch under pi-session, advisory without it", lim.Cap))
	}
	if len(rep.Would) == 0 {
		rep.Would = []string{"nothing: below the soft threshold"}
	}
	if mode != budget.ModeEnforce {
		for i := range rep.Would {
			rep.Would[i] = "(" + mode + " mode: logged as would_*) " + rep.Would[i]
		}
	}
	if *asJSON {
		b, _ := json.MarshalIndent(rep, "", "  ")
		fmt.Fprintf(inv.stdout, "%s\n", b)
		return 0
	}
	w := inv.stdout
	row := func(k, format string, a ...any) { fmt.Fprintf(w, "%-11s %s\n", k, fmt.Sprintf(format, a...)) }
	row("session", "%s", rep.SessionFile)
	found := ""
	if !rep.ConfigFound {
		found = ", not found: defaults"
	}
	row("config", "%s%s", rep.ConfigPath, found)
	for _, e := range rep.ConfigErrors {
		row("", "%s", e.Error())
	}
	m := rep.Mode
	if rep.Mode != rep.ConfiguredMode || rep.ModeReason != "" {
		m = fmt.Sprintf("configured %s, effective %s (%s)", rep.ConfiguredMode, rep.Mode, rep.ModeReason)
	}
	row("mode", "%s", m)
	row("model", "%s (%s thresholds)", orNone(rep.Model), rep.Role)
	floor := "unknown (no assistant usage since the last compaction)"
	if rep.Floor != nil {
		floor = fmt.Sprint(*rep.Floor)
	}
	row("tokens", "%d (floor %s)", rep.Tokens, floor)
	th := rep.Thresholds
	row("thresholds", "soft %.0f / handoff %.0f / hard %.0f, minProgress %.0f", th.Soft, th.Handoff, th.Hard, th.MinProgress)
	ef := rep.Effective
	row("effective", "soft %.0f / handoff %.0f / hard %.0f (grace ends at %.0f)", ef.Soft, ef.Handoff, ef.Hard, ef.Grace)
	last := ""
	if rep.LastHandoff != "" {
		last = "; last " + rep.LastHandoff
	}
	row("handoffs", "%d budget/hard of %d, %d idle, %d other%s", rep.Commits, rep.MaxHandoffs, rep.IdleCommits, rep.OtherCommits, last)
	row("phase", "%s", rep.Phase)
	for i, s := range rep.Would {
		k := ""
		if i == 0 {
			k = "would"
		}
		row(k, "%s", s)
	}
	return 0
}

func describeEffect(e budget.Effect) string {
	switch e.Kind {
	case budget.EffSoft:
		return "advise: past soft, record state and prepare a handoff"
	case budget.EffRequired:
		return "require a handoff: past the handoff threshold"
	case budget.EffHard:
		return "past the hard limit"
	case budget.EffFallback:
		return "arm the fallback (" + e.Reason + ")"
	case budget.EffNotice:
		return "append a model-visible notice (" + e.Reason + ") at the turn's end"
	}
	return strings.ReplaceAll(e.Kind, "_", " ")
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// lastModel is provider/model-id of the branch's last model change or
// assistant message.
func lastModel(branch []*session.Entry) string {
	for i := len(branch) - 1; i >= 0; i-- {
		p, err := branch[i].Decode()
		if err != nil {
			continue
		}
		switch v := p.(type) {
		case *session.ModelChangeEntry:
			return v.Provider + "/" + v.ModelID
		case *session.MessageEntry:
			if v.Message.Role == "assistant" && v.Message.Provider != "" {
				return v.Message.Provider + "/" + v.Message.Model
			}
		}
	}
	return ""
}
