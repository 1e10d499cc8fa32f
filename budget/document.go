package budget

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pi-session/pi-session/clip"
	"github.com/pi-session/pi-session/pins"
)

// RepoState is one repository's automatic git state.
type RepoState struct {
	Root     string   `json:"root"`
	Branch   string   `json:"branch,omitempty"`
	Head     string   `json:"head,omitempty"`
	Upstream string   `json:"upstream,omitempty"`
	Ahead    int      `json:"ahead"`
	Behind   int      `json:"behind"`
	Dirty    int      `json:"dirty"`
	Changes  []string `json:"changes,omitempty"` // short-status lines ("XY path")
	Known    bool     `json:"known"`             // inspected; false: unknown state
	Error    string   `json:"error,omitempty"`
}

// Sync is ahead/behind of the upstream as text.
func (r RepoState) Sync() string {
	switch {
	case !r.Known:
		return "unknown"
	case r.Upstream == "":
		return "no upstream"
	case r.Ahead == 0 && r.Behind == 0:
		return "in sync with " + r.Upstream
	}
	return fmt.Sprintf("ahead %d, behind %d of %s", r.Ahead, r.Behind, r.Upstream)
}

// ResumeResult is a resume check's outcome.
type ResumeResult struct {
	Label     string `json:"label"`
	Output    string `json:"output"`
	ExitCode  int    `json:"exitCode"`
	TimedOut  bool   `json:"timedOut,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
	Error     string `json:"error,omitempty"` // spawn error
}

// Metadata is what the engine collects independently of the agent.
type Metadata struct {
	SessionID       string    `json:"sessionId"`
	N               int       `json:"n"`
	Source          string    `json:"source"`
	CreatedAt       time.Time `json:"createdAt"`
	Cwd             string    `json:"cwd"`
	SessionFile     string    `json:"sessionFile,omitempty"`
	PreviousHandoff string    `json:"previousHandoff,omitempty"`
	// Pins are the user's pinned rules on the session's branch
	// (pins.Replay), verbatim: first in the document, never cut, not
	// counted against its cap. A relaunched pi copies them when the
	// session file it continues cannot be read.
	Pins         []string      `json:"pins,omitempty"`
	Repo         *RepoState    `json:"repo,omitempty"`  // the cwd's repository; nil: cwd is not in one
	Repos        []RepoState   `json:"repos,omitempty"` // repositories touched, cwd's first
	ReposOmitted int           `json:"reposOmitted,omitempty"`
	UserMessages []string      `json:"-"` // since the previous handoff, oldest first
	Resume       *ResumeResult `json:"-"`
	Lint         []string      `json:"lint,omitempty"`
	Discarded    []string      `json:"discarded,omitempty"`
	Integrations []string      `json:"integrations,omitempty"` // "pending jobs/watches: unavailable ..."
}

// DocLimits are the byte budgets of the handoff document.
type DocLimits struct {
	Total, Narrative, UserMessages, Resume, WorkingTree, RepoLine, Repos, WatchActions, Lint, Discarded int
}

// DefaultDocLimits are context-budget's: 52 KiB in all, 12 KiB of narrative,
// 4 KiB each of user messages and resume check, 1 KiB of working-tree
// lines (at most 30), 8 repository lines of 300 bytes, 3 KiB of watch
// actions, 1 KiB each of lint and discarded drafts.
var DefaultDocLimits = DocLimits{Total: DocumentCap, Narrative: NarrativeBudget, UserMessages: 4 << 10, Resume: 4 << 10,
	WorkingTree: 1 << 10, RepoLine: 300, Repos: 8, WatchActions: 3 << 10, Lint: 1 << 10, Discarded: 1 << 10}

// PinsTitle heads the pins in a handoff document and in the mechanical
// summary.
const PinsTitle = "Pinned rules (the user pinned these with /pin: verbatim, current until unpinned)"

// visibleDoc is how the budget writes a document out (a handoff, the
// mechanical summary, a continuation): what the model reads and a user may
// print, so clip.Visible, with a carriage return before a newline taken as
// part of the line end (arguments may hold one; a lone one is written out).
func visibleDoc(s string) string { return clip.Visible(strings.ReplaceAll(s, "\r\n", "\n")) }

// OversizeError is a handoff that does not fit: a tool error, never a
// silent truncation.
type OversizeError struct{ Msg string }

func (e *OversizeError) Error() string { return "context_handoff: " + e.Msg }

// Render is the handoff document: a pure function of the arguments, the
// automatic metadata and the limits. The user's pins come first, whether
// or not the agent quoted them in user_constraints; they are not counted
// against lim.Total, so no number of pins makes a handoff fail.
func Render(a Args, m Metadata, lim DocLimits) (string, error) {
	if n, parts := a.narrative(); n > lim.Narrative {
		return "", &OversizeError{Msg: fmt.Sprintf("the narrative fields are %d bytes (%s), over the budget of %d; shorten them or move detail into a file under .ai-work/ listed in files_to_read, then call context_handoff again (user_constraints is not counted and never cut)", n, strings.Join(parts, ", "), lim.Narrative)}
	}
	var b strings.Builder
	id := fmt.Sprintf("%s-%d", m.SessionID, m.N)
	fmt.Fprintf(&b, "# Handoff %s\n\n", id)
	b.WriteString("Read this handoff, verify HEAD and external state, then continue from Next step without asking the user to restate the task. The agent's facts are claims until rechecked; the automatic state below was collected by pi-session independently.\n")
	section := func(title, body string) {
		body = strings.TrimRight(body, "\n")
		if strings.TrimSpace(body) == "" {
			return
		}
		fmt.Fprintf(&b, "\n## %s\n\n%s\n", title, body)
	}
	pinned := b.Len()
	section(PinsTitle, pins.Bullets(m.Pins))
	pinned = b.Len() - pinned
	section("Goal", a.Goal)
	section("Next step", a.NextStep)
	section("User constraints (verbatim)", a.UserConstraints)
	section("Verified facts", a.Facts)
	section("Decisions", a.Decisions)
	section("Hypotheses (unverified)", a.Hypotheses)
	section("Open items", a.OpenItems)
	if len(a.FilesToRead) > 0 {
		var fb strings.Builder
		for _, f := range a.FilesToRead {
			fb.WriteString("- " + f + "\n")
		}
		section("Files to read first", fb.String())
	}
	if len(a.WatchActions) > 0 {
		var lines []string
		for _, w := range a.WatchActions {
			l := fmt.Sprintf("- %s | %s | on complete: %s", w.ID, w.Target, w.OnComplete)
			if w.Cancel != "" {
				l += " | cancel: " + w.Cancel
			}
			lines = append(lines, oneLine(l))
		}
		section("Watch actions", bounded(lines, lim.WatchActions, "watch actions"))
	}
	if r := m.Resume; r != nil {
		section("Resume check", resumeText(*r, lim.Resume))
	}
	section("User messages since previous handoff (verbatim)", userMessages(m.UserMessages, lim.UserMessages))
	section("Automatic state", automatic(m, lim))
	if len(m.Discarded) > 0 {
		section("Discarded drafts (uncommitted, superseded)", bounded(bullets(m.Discarded), lim.Discarded, "discarded drafts"))
	}
	if len(m.Lint) > 0 {
		var lines []string
		for _, l := range m.Lint {
			lines = append(lines, "- "+cutChars(oneLine(l), 300))
		}
		section("Lint", boundedN(lines, 8, lim.Lint, "lint lines"))
	}
	// Every part, from the agent's paths to a resume check's output, is
	// written out visibly before the size is checked.
	doc := visibleDoc(b.String())
	if len(doc)-pinned > lim.Total {
		return "", &OversizeError{Msg: fmt.Sprintf("the handoff would be %d bytes, over the cap of %d (user_constraints %d bytes, kept verbatim and never cut; the user's pins are not counted); quote only the binding constraints verbatim and reference the rest by file in files_to_read, then call context_handoff again", len(doc)-pinned, lim.Total, len(a.UserConstraints))}
	}
	return doc, nil
}

func automatic(m Metadata, lim DocLimits) string {
	var b strings.Builder
	fmt.Fprintf(&b, "- collected: %s (source: %s)\n", m.CreatedAt.UTC().Format(time.RFC3339), m.Source)
	fmt.Fprintf(&b, "- cwd: %s\n", m.Cwd)
	if m.SessionFile != "" {
		fmt.Fprintf(&b, "- session: %s (%s)\n", m.SessionID, m.SessionFile)
	}
	if m.PreviousHandoff != "" {
		fmt.Fprintf(&b, "- previous handoff: %s\n", m.PreviousHandoff)
	}
	if r := m.Repo; r != nil {
		fmt.Fprintf(&b, "- repository: %s\n", r.Root)
		if r.Known {
			fmt.Fprintf(&b, "- branch: %s, HEAD %s (%s)\n", orDash(r.Branch), orDash(r.Head), r.Sync())
			fmt.Fprintf(&b, "- working tree: %d changed %s\n", r.Dirty, plural(r.Dirty, "path", "paths"))
			if len(r.Changes) > 0 {
				b.WriteString("\n```\n" + boundedN(r.Changes, 30, lim.WorkingTree, "status lines") + "\n```\n")
			}
		} else {
			fmt.Fprintf(&b, "- git state: unknown (%s)\n", orDash(r.Error))
		}
	} else if len(m.Repos) > 0 {
		b.WriteString("- the cwd is not in a git repository; repositories below\n")
	} else {
		b.WriteString("- the cwd is not in a git repository\n")
	}
	if len(m.Repos) > 0 {
		var lines []string
		for i, r := range m.Repos {
			if i == lim.Repos {
				break
			}
			rest := " | " + oneLine(fmt.Sprintf("%s | %s | %d dirty | %s", orDash(r.Branch), short(r.Head), r.Dirty, r.Sync()))
			if !r.Known {
				rest = " | unknown state"
			}
			room := lim.RepoLine - 2 - len(rest)
			root := r.Root
			if len(root) > room {
				root = cutMiddleMark(root, room)
			}
			lines = append(lines, cutBytes("- "+root+rest, lim.RepoLine))
		}
		body := strings.Join(lines, "\n")
		if extra := m.ReposOmitted + max(0, len(m.Repos)-lim.Repos); extra > 0 {
			body += fmt.Sprintf("\n- …(%d more repositories not listed)", extra)
		}
		b.WriteString("\nRepositories touched (root | branch | HEAD | dirty | sync):\n\n" + body + "\n")
	}
	if len(m.Integrations) > 0 {
		b.WriteString("\n" + strings.Join(bullets(m.Integrations), "\n") + "\n")
	}
	return b.String()
}

func resumeText(r ResumeResult, budget int) string {
	status := fmt.Sprintf("exit status %d", r.ExitCode)
	switch {
	case r.Error != "":
		status = "could not run: " + r.Error
	case r.TimedOut:
		status = "timed out after 30 s (process group killed)"
	}
	head := fmt.Sprintf("`%s`: %s", cutChars(oneLine(r.Label), 200), status)
	out := r.Output
	room := budget - len(head) - 40
	trunc := r.Truncated
	if len(out) > room {
		out, trunc = cutBytes(out, max(room, 0)), true
	}
	if trunc {
		head += " (output truncated)"
	}
	if strings.TrimSpace(out) == "" {
		return head + ", no output"
	}
	return head + "\n\n```\n" + strings.ReplaceAll(strings.TrimRight(out, "\n"), "```", "`‵`") + "\n```"
}

// userMessages keeps the newest messages within budget bytes, counts the
// omitted older ones, and cuts one oversized message in the middle.
func userMessages(msgs []string, budget int) string {
	if len(msgs) == 0 {
		return ""
	}
	var kept []string
	used := 0
	i := len(msgs) - 1
	for ; i >= 0; i-- {
		m := strings.TrimRight(msgs[i], "\n")
		block := quote(m)
		if used+len(block)+1 > budget {
			if len(kept) == 0 {
				block = quote(cutMiddle(m, budget-64))
				kept = append(kept, block)
				i--
			}
			break
		}
		used += len(block) + 1
		kept = append(kept, block)
	}
	var b strings.Builder
	if omitted := i + 1; omitted > 0 {
		fmt.Fprintf(&b, "(%d older %s omitted for space)\n\n", omitted, plural(omitted, "message", "messages"))
	}
	for j := len(kept) - 1; j >= 0; j-- {
		b.WriteString(kept[j])
		if j > 0 {
			b.WriteString("\n\n")
		}
	}
	return b.String()
}

func quote(s string) string {
	return "> " + strings.ReplaceAll(s, "\n", "\n> ")
}

// cutMiddle keeps the start and end of s within n bytes with an explicit
// marker saying how many bytes it cut.
func cutMiddle(s string, n int) string {
	if len(s) <= n {
		return s
	}
	marker := func(cut int) string {
		return fmt.Sprintf("\n[…cut %d bytes from the middle of this message…]\n", cut)
	}
	half := max((n-len(marker(len(s))))/2, 0)
	head, tail := cutBytes(s, half), tailBytes(s, half)
	return head + marker(len(s)-len(head)-len(tail)) + tail
}

func bounded(lines []string, budget int, what string) string {
	return boundedN(lines, len(lines), budget, what)
}

// boundedN keeps at most n lines within budget bytes and counts the rest.
func boundedN(lines []string, n, budget int, what string) string {
	var b strings.Builder
	for i, l := range lines {
		if i == n || b.Len()+len(l)+1 > budget-40 {
			fmt.Fprintf(&b, "…(%d more %s omitted for space)", len(lines)-i, what)
			break
		}
		b.WriteString(l + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// cutMiddleMark shortens s to n bytes with "…" in the middle.
func cutMiddleMark(s string, n int) string {
	if len(s) <= n || n < 8 {
		return cutBytes(s, max(n, 0))
	}
	half := (n - len("…")) / 2
	return cutBytes(s, half) + "…" + tailBytes(s, n-len("…")-half)
}

func bullets(items []string) []string {
	out := make([]string, len(items))
	for i, s := range items {
		out[i] = "- " + oneLine(s)
	}
	return out
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// cutBytes returns s cut to at most n bytes on a UTF-8 boundary.
func cutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func tailBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}

func cutChars(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return orDash(h)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
