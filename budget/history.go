package budget

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/pi-session/pi-session/pins"
	"github.com/pi-session/pi-session/session"
)

// HandoffDetails is the details object of a committed handoff compaction
// (kind "handoff") and of context_handoff's tool result.
type HandoffDetails struct {
	Kind       string    `json:"kind"` // "handoff"
	Path       string    `json:"path"`
	Source     string    `json:"source"`
	N          int       `json:"n,omitempty"`
	Head       string    `json:"head,omitempty"`
	Words      []string  `json:"words,omitempty"` // for duplicate back-off
	WrittenAt  time.Time `json:"writtenAt,omitzero"`
	Mechanical bool      `json:"mechanical,omitempty"`
}

// Restored is what a session file says about its handoffs, so that counts
// and back-off survive a restart.
type Restored struct {
	Commits      int            // budget/hard commits
	IdleCommits  int            // idle commits
	OtherCommits int            // manual, voluntary
	Last         HandoffDetails // the last handoff written (tool result) or committed
	LastCommitAt time.Time
	MaxN         int // the highest handoff number seen
	Floor        int64
	FloorKnown   bool
	// ContinuedFrom is the handoff a relaunched pi's first prompt names
	// ("continue from <handoff>"), when the session has none of its own.
	ContinuedFrom string
}

// continueRE is the prompt pi-session relaunches pi with.
var continueRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^continue from (/\S+\.md)\s*$`) })

// Restore reads a session's branch.
func Restore(branch []*session.Entry) Restored {
	var r Restored
	afterCompaction := true
	firstUser := true
	for _, e := range branch {
		switch e.Type {
		case "compaction":
			afterCompaction = true
			r.Floor, r.FloorKnown = 0, false
			p, err := e.Decode()
			if err != nil {
				continue
			}
			c := p.(*session.CompactionEntry)
			var d HandoffDetails
			if json.Unmarshal(c.Details, &d) != nil || d.Kind != "handoff" {
				continue
			}
			switch d.Source {
			case SourceBudget, SourceHard:
				r.Commits++
			case SourceIdle:
				r.IdleCommits++
			default:
				r.OtherCommits++
			}
			r.Last = d
			r.LastCommitAt, _ = time.Parse(time.RFC3339Nano, e.Timestamp)
			r.MaxN = max(r.MaxN, d.N)
		case "message":
			if e.Role == "user" && firstUser {
				firstUser = false
				if p, err := e.Decode(); err == nil {
					if m := continueRE().FindStringSubmatch(p.(*session.MessageEntry).Message.Content.Text("\n")); m != nil {
						r.ContinuedFrom = m[1]
					}
				}
			}
			if e.Role != "assistant" && e.Role != "toolResult" {
				continue
			}
			p, err := e.Decode()
			if err != nil {
				continue
			}
			m := p.(*session.MessageEntry).Message
			if e.Role == "assistant" && afterCompaction && m.Usage != nil && m.StopReason != "error" && m.StopReason != "aborted" {
				if t := int64(m.Usage.TotalTokens); t > 0 {
					r.Floor, r.FloorKnown = t, true
					afterCompaction = false
				}
			}
			if e.Role == "toolResult" && m.ToolName == "context_handoff" && !m.IsError {
				var d HandoffDetails
				if json.Unmarshal(m.Details, &d) == nil && d.Kind == "handoff" && d.Path != "" {
					r.Last = d
					r.MaxN = max(r.MaxN, d.N)
				}
			}
		}
	}
	return r
}

// Pins are the texts of the user's pins on the branch (pins.Replay).
func Pins(branch []*session.Entry) []string {
	list, _ := pins.Replay(branch)
	return pins.Texts(list)
}

// UserMessagesSince returns the text of user messages after the last
// boundary on the branch, oldest first: a compaction, or a context_handoff
// that succeeded (a handoff a relaunch continued from leaves no compaction
// in this file) and was not discarded later. In-flight and failed handoff
// calls never cut off earlier requests. Messages that only ask for a
// handoff (/handoff's request) are kept: they carry the user's
// instructions.
func UserMessagesSince(branch []*session.Entry, discarded func(path string) bool) []string {
	start := 0
	for i, e := range branch {
		switch {
		case e.Type == "compaction":
			start = i + 1
		case e.Type == "message" && e.Role == "toolResult":
			p, err := e.Decode()
			if err != nil {
				continue
			}
			m := p.(*session.MessageEntry).Message
			if m.ToolName != "context_handoff" || m.IsError {
				continue
			}
			var d HandoffDetails
			if json.Unmarshal(m.Details, &d) != nil || d.Kind != "handoff" || d.Path == "" || (discarded != nil && discarded(d.Path)) {
				continue
			}
			start = i + 1
		}
	}
	var out []string
	for _, e := range branch[start:] {
		if e.Type != "message" || e.Role != "user" {
			continue
		}
		p, err := e.Decode()
		if err != nil {
			continue
		}
		if t := strings.TrimSpace(p.(*session.MessageEntry).Message.Content.Text("\n")); t != "" {
			out = append(out, t)
		}
	}
	return out
}

var cdRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?:^|[;&|]\s*)(?:cd|pushd)\s+([^\s;&|]+)|git\s+-C\s+([^\s;&|]+)`)
})

// TouchedPaths are the paths the session's tool calls named, newest
// first: path arguments, and cd / git -C targets in bash commands.
func TouchedPaths(branch []*session.Entry, cwd string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		p = strings.Trim(p, `"'`)
		if p == "" || strings.ContainsAny(p, "$`") {
			return
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		p = filepath.Clean(p)
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	eachToolCall(branch, MaxRepoCandidate*8, func(_ *session.Entry, b session.Block) bool {
		var args map[string]any
		if json.Unmarshal(b.Arguments, &args) != nil {
			return len(out) < MaxRepoCandidate
		}
		if s, ok := args["path"].(string); ok {
			add(NormalizePath(s, cwd, os.Getenv("HOME")))
		}
		if s, ok := args["command"].(string); ok {
			for _, m := range cdRE().FindAllStringSubmatch(s, -1) {
				add(m[1] + m[2])
			}
		}
		return len(out) < MaxRepoCandidate
	})
	return out
}

// readOnlyPrefix: bash segments starting with these do not change state.
var readOnlyPrefix = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\s*(git\s+(status|diff|log|show|rev-parse|branch|worktree\s+list|blame|grep)|cat|head|tail|less|ls|find|grep|rg|fd|wc|stat|file|tree|pwd|echo|gh\s+(pr|issue|run)\s+(view|list|status|checks)|sed\s+-n)\b`)
})

// LatestStateChange is the time of the newest tool call that may have
// changed state (an edit, a write, a bash command other than read-only
// inspection), scanning at most 2000 branch entries. Recording state is
// not a change of state: edits and writes of .ai-work/ files and STATE*.md
// do not count.
func LatestStateChange(branch []*session.Entry) time.Time {
	var latest time.Time
	eachToolCall(branch, 2000, func(e *session.Entry, b session.Block) bool {
		switch b.Name {
		case "edit", "write":
			var args struct{ Path string }
			json.Unmarshal(b.Arguments, &args)
			if isStateNote(args.Path) {
				return true
			}
		case "bash":
			var args struct{ Command string }
			json.Unmarshal(b.Arguments, &args)
			readOnly := true
			for _, seg := range segmentRE().Split(args.Command, -1) {
				if strings.TrimSpace(seg) != "" && !readOnlyPrefix().MatchString(seg) {
					readOnly = false
				}
			}
			if readOnly {
				return true
			}
		default:
			return true
		}
		t, err := time.Parse(time.RFC3339Nano, e.Timestamp)
		if err != nil {
			return true
		}
		latest = t
		return false
	})
	return latest
}

var segmentRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`&&|\|\||;|\|`) })

// isStateNote reports whether a tool's path argument names a state note:
// a file under an .ai-work directory, or STATE*.md.
func isStateNote(p string) bool {
	p = filepath.ToSlash(strings.TrimPrefix(p, "@"))
	base := filepath.Base(p)
	return strings.Contains("/"+p, "/.ai-work/") || strings.HasPrefix(base, "STATE") && strings.HasSuffix(base, ".md")
}

// eachToolCall calls fn with the tool calls of the branch's assistant
// messages, newest first, looking at most limit entries back, until fn
// returns false.
func eachToolCall(branch []*session.Entry, limit int, fn func(e *session.Entry, b session.Block) bool) {
	for i, n := len(branch)-1, 0; i >= 0 && n < limit; i, n = i-1, n+1 {
		e := branch[i]
		if e.Type != "message" || e.Role != "assistant" {
			continue
		}
		p, err := e.Decode()
		if err != nil {
			continue
		}
		for _, b := range p.(*session.MessageEntry).Message.Content.Blocks {
			if b.Type == "toolCall" && !fn(e, b) {
				return
			}
		}
	}
}

// Lint warns when state files (STATE*.md in the roots, .ai-work/**
// outside handoffs/) are older than the latest state-changing tool call.
func Lint(roots []string, latest time.Time, missing []string) []string {
	var out []string
	for _, m := range missing {
		out = append(out, "files_to_read: "+m+" does not exist (missing)")
	}
	if latest.IsZero() {
		return out
	}
	seen := map[string]bool{}
	check := func(p string, info os.FileInfo) {
		if seen[p] || info.ModTime().After(latest) {
			return
		}
		seen[p] = true
		out = append(out, p+" predates the latest state-changing tool call ("+latest.UTC().Format(time.RFC3339)+"); update it if it records task state")
	}
	for _, root := range roots {
		if matches, _ := filepath.Glob(filepath.Join(root, "STATE*.md")); len(matches) > 0 {
			for _, m := range matches {
				if info, err := os.Stat(m); err == nil {
					check(m, info)
				}
			}
		}
		base := filepath.Join(root, ".ai-work")
		count := 0
		filepath.Walk(base, func(p string, info os.FileInfo, err error) error {
			if err != nil || count > 200 {
				return filepath.SkipDir
			}
			if info.IsDir() && info.Name() == "handoffs" {
				return filepath.SkipDir
			}
			if !info.IsDir() && strings.HasSuffix(p, ".md") {
				count++
				check(p, info)
			}
			return nil
		})
	}
	return out
}

// MechanicalSummary is the emergency summary of the overflow backstop:
// bounded excerpts of the prior handoff (from its sidecar, else recovered
// from its Markdown; cited even when unreadable) when there is one, the recent user requests, and instructions to re-establish state
// from files and git. The user's pins come first, whole. It needs no
// writable storage. Like every document, it is written out visibly
// (visibleDoc): a sidecar read back is as untrusted as the session.
func MechanicalSummary(prior *Sidecar, requests, pinned []string, sessionFile string) string {
	var b strings.Builder
	b.WriteString("# Emergency handoff (mechanical)\n\nThe context overflowed or could not be compacted normally, so pi-session replaced it with this bounded mechanical summary. Re-establish state from files and git before acting: read the prior handoff below (if any) in full, check `git status` and `git log --oneline --no-show-signature -5`, re-verify CI, review and issue facts, then continue.\n")
	if len(pinned) > 0 {
		b.WriteString("\n## " + PinsTitle + "\n\n" + pins.Bullets(pinned))
	}
	if sessionFile != "" {
		b.WriteString("\nSession file (full history): " + sessionFile + "\n")
	}
	if prior != nil {
		b.WriteString("\n## Prior handoff: " + prior.Path + "\n")
		switch r := prior.recovered; {
		case r == "markdown":
			b.WriteString("\n(Its JSON sidecar is missing or damaged: the excerpts below were recovered from the Markdown.)\n")
		case r != "":
			b.WriteString("\n(It could not be read here: " + cutBytes(oneLine(strings.TrimPrefix(r, "unreadable: ")), 300) + ". Find it or its session file before acting.)\n")
		}
		ex := func(title, s string, n int) {
			if strings.TrimSpace(s) == "" {
				return
			}
			cut := cutBytes(s, n)
			if cut != s {
				cut += "\n[abbreviated; reread " + prior.Path + " for the full text]"
			}
			b.WriteString("\n### " + title + "\n\n" + nestHeadings(cut, 4) + "\n")
		}
		ex("Goal", prior.Args.Goal, 1<<10)
		ex("User constraints (verbatim)", prior.Args.UserConstraints, 4<<10)
		ex("Facts (claims from the prior handoff)", prior.Args.Facts, 1<<10)
		ex("Next step", prior.Args.NextStep, 512)
		var files []string
		used := 0
		for _, f := range prior.Args.FilesToRead {
			if used+len(f)+3 > 1<<10 {
				continue // never cut a path
			}
			used += len(f) + 3
			files = append(files, "- "+f)
		}
		if len(files) > 0 {
			b.WriteString("\n### Read first\n\n" + strings.Join(files, "\n") + "\n")
		}
	}
	if len(requests) > 0 {
		b.WriteString("\n## Recent user requests (verbatim)\n\n" + userMessages(requests, 4<<10) + "\n")
	}
	return visibleDoc(b.String())
}

// nestHeadings shifts the Markdown headings of an excerpt (outside code
// fences) so that the highest becomes level top, keeping their order of
// levels (at most 6): a prior handoff's nested headings stay nested under
// the excerpt's own heading instead of reading as its siblings. Only the
// leading # marks change.
func nestHeadings(s string, top int) string {
	level := func(l string) int {
		n := 0
		for n < len(l) && l[n] == '#' {
			n++
		}
		if n == 0 || n > 6 || (n < len(l) && l[n] != ' ' && l[n] != '\t') {
			return 0
		}
		return n
	}
	lines := strings.Split(s, "\n")
	headings, minLevel := make([]bool, len(lines)), 7
	fence := ""
	for i, l := range lines {
		t := strings.TrimLeft(l, " ")
		switch {
		case fence != "":
			if strings.HasPrefix(t, fence) {
				fence = ""
			}
		case strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~"):
			fence = t[:3]
		case level(l) > 0:
			headings[i] = true
			minLevel = min(minLevel, level(l))
		}
	}
	if minLevel >= top {
		return s
	}
	shift := top - minLevel
	for i, l := range lines {
		if headings[i] {
			n := level(l)
			lines[i] = strings.Repeat("#", min(6, n+shift)) + l[n:]
		}
	}
	return strings.Join(lines, "\n")
}
