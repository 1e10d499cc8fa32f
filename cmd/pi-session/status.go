package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pi-session/pi-session/budget"
	"github.com/pi-session/pi-session/marker"
	"github.com/pi-session/pi-session/paths"
	"github.com/pi-session/pi-session/status"
)

const statusUsage = `usage: pi-session status [--all] [--json] [session-id-prefix]

Shows every session that recorded a status: running, crashed (killed by a
signal nobody asked for, or gone without its end recorded), pid reused,
unknown, and corrupt or mismatched records (with their path and what is
wrong: line, column and field). --all adds sessions that ended: exited
(with pi's status) or interrupted (Ctrl+C, or a stop pi-session passed on); a
session id (or a prefix of one) shows only those sessions, whatever their
state. --json prints the same as a JSON array.
Without a session id, it also lists the relaunch markers kept when a
relaunch was refused, with the reason (pi-session prune removes them).
`

// cmdStatus lists the sessions' status records.
func cmdStatus(ctx context.Context, inv *invocation) int {
	fs := newFlagSet("status")
	all := fs.Bool("all", false, "")
	asJSON := fs.Bool("json", false, "")
	args, code, done := parseFlags(inv, fs, inv.args, statusUsage)
	if done {
		return code
	}
	if len(args) > 1 {
		return inv.errorf(exitUsage, "status takes at most one session id (see pi-session status --help)")
	}
	prefix := ""
	if len(args) == 1 {
		prefix = args[0]
	}
	store := status.StoreFromEnv(inv.env.Get)
	entries, err := store.List(status.System(), prefix)
	if err != nil {
		return inv.errorf(exitOSErr, "%v", err)
	}
	now := time.Now()
	var shown []status.Entry
	hidden := 0
	for _, e := range entries {
		if ended(e.State) && !*all && prefix == "" {
			hidden++
			continue
		}
		shown = append(shown, e)
	}
	slices.SortStableFunc(shown, func(a, b status.Entry) int {
		if d := stateOrder(a.State) - stateOrder(b.State); d != 0 {
			return d
		}
		return updated(b).Compare(updated(a)) // most recent first
	})
	if prefix != "" && len(entries) == 0 {
		if *asJSON {
			fmt.Fprintln(inv.stdout, "[]")
		}
		return inv.errorf(1, "no status record matches session id %q in %s", prefix, store.Dir())
	}
	if *asJSON {
		return printStatusJSON(inv, shown, now)
	}
	switch {
	case len(shown) > 0:
		for i, e := range shown {
			if i > 0 {
				fmt.Fprintln(inv.stdout)
			}
			printEntry(inv.stdout, e, now)
		}
		fmt.Fprintf(inv.stdout, "\n%s\n", summary(shown, hidden))
	case hidden > 0:
		fmt.Fprintf(inv.stdout, "no running or crashed sessions; %d ended %s hidden (--all shows them)\n", hidden, plural(hidden, "session", "sessions"))
	default:
		fmt.Fprintf(inv.stdout, "no status records in %s\n", store.Dir())
	}
	if prefix == "" {
		dir := paths.MarkerDir(inv.env.Get)
		list, _, err := marker.ListRetained(dir)
		if err != nil {
			return inv.errorf(exitOSErr, "%v", err)
		}
		printRetained(inv.stdout, dir, list, status.System(), now)
	}
	return 0
}

// ended reports the states of sessions whose end is recorded, which
// status hides without --all.
func ended(s status.State) bool { return s == status.Exited || s == status.Interrupted }

func stateOrder(s status.State) int {
	switch s {
	case status.Running:
		return 0
	case status.Crashed:
		return 1
	case status.PIDReused:
		return 2
	case status.Unknown:
		return 3
	case status.Corrupt, status.Mismatched:
		return 4
	}
	return 5
}

// updated is when the record was last written: its updatedAt, else the
// file's mtime.
func updated(e status.Entry) time.Time {
	if e.Record != nil && !e.Record.UpdatedAt.IsZero() {
		return e.Record.UpdatedAt
	}
	return e.ModTime
}

func printEntry(w io.Writer, e status.Entry, now time.Time) {
	if e.Err != nil {
		fmt.Fprintf(w, "%s  %s  %s\n", e.SessionID, e.State, e.Path)
		fmt.Fprintf(w, "  error    %v\n", e.Err)
		return
	}
	r := e.Record
	state := string(e.State)
	if e.State == status.Exited && r.ExitStatus != nil && r.ExitSignal == "" {
		state += " " + strconv.Itoa(*r.ExitStatus)
	}
	fmt.Fprintf(w, "%s  %s  %s  updated %s ago", e.SessionID, state, r.PIDText(), age(now.Sub(updated(e))))
	if r.ProcessStart != nil {
		fmt.Fprintf(w, ", started %s ago", age(now.Sub(*r.ProcessStart)))
	}
	fmt.Fprintln(w)
	line := func(label, format string, args ...any) {
		fmt.Fprintf(w, "  %-8s %s\n", label, fmt.Sprintf(format, args...))
	}
	if r.Cwd != "" {
		line("cwd", "%s", r.Cwd)
	}
	if r.Model != "" || r.Role != "" {
		model := r.Model
		if model == "" {
			model = "?"
		}
		if r.Role != "" {
			model += " (" + r.Role + ")"
		}
		line("model", "%s", model)
	}
	if t := tokens(r); t != "" {
		line("tokens", "%s", t)
	}
	if r.Continues != "" {
		line("chain", "continues %s", r.Continues)
	}
	if r.ContinuedBy != "" {
		line("chain", "continued by %s (relaunched from its last handoff)", r.ContinuedBy)
	}
	own := r.HandoffCount
	if r.ContinuedBy != "" {
		own++ // the handoff the relaunch carried out, which pi's process never committed itself
	}
	if total := r.HandoffsBefore + own; total > 0 || r.LastHandoff != "" {
		h := fmt.Sprintf("%d so far", total)
		if r.HandoffsBefore > 0 {
			h += fmt.Sprintf(" (%d in the sessions this one continues)", r.HandoffsBefore)
		}
		if r.LastHandoff != "" {
			h += "; last"
			if r.LastHandoffAt != nil {
				h += " " + age(now.Sub(*r.LastHandoffAt)) + " ago"
			}
			h += ": " + r.LastHandoff
		}
		line("handoff", "%s", h)
	}
	if m := mode(r); m != "" {
		line("mode", "%s", m)
	}
	if r.ExitStatus != nil {
		switch {
		case r.EndedBy == status.EndInterrupt:
			line("exit", "interrupted by %s (status %d)", r.ExitSignal, *r.ExitStatus)
		case r.ExitSignal != "":
			line("exit", "killed by %s (status %d)", r.ExitSignal, *r.ExitStatus)
		case r.ExitNote != "":
			line("exit", "status %d; pi said: %s", *r.ExitStatus, r.ExitNote)
		default:
			line("exit", "status %d", *r.ExitStatus)
		}
	}
	if r.Source == "supervisor" {
		line("note", "written by pi-session: pi never said hello (its extension did not connect), so its session id is unknown")
	}
	line("record", "%s", e.Path)
}

func tokens(r *status.Record) string {
	var parts []string
	if r.Tokens != nil {
		parts = append(parts, fmt.Sprintf("%d", *r.Tokens))
	} else {
		parts = append(parts, "unknown")
	}
	th := r.EffectiveThresholds
	if th == nil {
		th = r.Thresholds
	}
	if th != nil {
		parts = append(parts, fmt.Sprintf("of soft %d / handoff %d / hard %d", th.Soft, th.Handoff, th.Hard))
	}
	if r.Floor != nil {
		parts = append(parts, fmt.Sprintf("(floor %d)", *r.Floor))
	}
	if r.Tokens == nil && th == nil && r.Floor == nil {
		return ""
	}
	return strings.Join(parts, " ")
}

func mode(r *status.Record) string {
	var b strings.Builder
	b.WriteString(r.EffectiveMode)
	if r.ConfiguredMode != "" && r.ConfiguredMode != r.EffectiveMode {
		fmt.Fprintf(&b, " (configured %s)", r.ConfiguredMode)
	}
	phase, action := r.Phase, r.Action
	if r.ContinuedBy != "" && phase == string(budget.PendingCommit) {
		// a write of the ended process that came after the relaunch's
		phase, action = status.PhaseRelaunched, ""
	}
	if phase != "" {
		fmt.Fprintf(&b, ", phase %s", phase)
	}
	if action != "" {
		fmt.Fprintf(&b, ", action %s", action)
	}
	if r.Projected && (phase != "" || action != "") && phase != status.PhaseRelaunched { // a relaunch is never a preview
		b.WriteString(" (projected)")
	}
	if r.Fallback != "" {
		fmt.Fprintf(&b, ", fallback %s", r.Fallback)
	}
	if r.WrapperOwned {
		b.WriteString(", wrapper-owned")
	}
	return strings.TrimPrefix(b.String(), ", ")
}

// age formats a duration the way a person reads it: 42s, 7m, 5h, 3d.
func age(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func summary(shown []status.Entry, hidden int) string {
	counts := map[status.State]int{}
	for _, e := range shown {
		counts[e.State]++
	}
	var parts []string
	for _, s := range []status.State{status.Running, status.Crashed, status.PIDReused, status.Unknown, status.Corrupt, status.Mismatched, status.Exited, status.Interrupted} {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
		}
	}
	out := fmt.Sprintf("%d %s (%s)", len(shown), plural(len(shown), "session", "sessions"), strings.Join(parts, ", "))
	if hidden > 0 {
		out += fmt.Sprintf("; %d ended %s hidden (--all shows them)", hidden, plural(hidden, "session", "sessions"))
	}
	return out
}

// statusJSON is one entry of `status --json`.
type statusJSON struct {
	SessionID  string         `json:"sessionId"`
	State      status.State   `json:"state"`
	Path       string         `json:"path"`
	UpdatedAt  time.Time      `json:"updatedAt"`
	AgeSeconds int64          `json:"ageSeconds"`
	Error      string         `json:"error,omitempty"`
	Record     *status.Record `json:"record,omitempty"`
}

func printStatusJSON(inv *invocation, entries []status.Entry, now time.Time) int {
	out := make([]statusJSON, 0, len(entries))
	for _, e := range entries {
		j := statusJSON{SessionID: e.SessionID, State: e.State, Path: e.Path, UpdatedAt: updated(e).UTC(), Record: e.Record}
		j.AgeSeconds = int64(now.Sub(j.UpdatedAt) / time.Second)
		if e.Err != nil {
			j.Error = e.Err.Error()
		}
		out = append(out, j)
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return inv.errorf(exitInternal, "%v", err)
	}
	fmt.Fprintf(inv.stdout, "%s\n", b)
	return 0
}
