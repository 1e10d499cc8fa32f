package relay

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/pi-session/pi-session/pins"
)

// GitLog is the commits of one directory since the session started; a
// directory whose git failed or timed out is left out of the note.
type GitLog struct {
	Dir     string
	Commits []string // "abc1234 subject", newest first
}

// Section is an extra section a caller adds before the footer (the seed's
// seam for model-written sections), capped by Limits.Extra.
type Section struct {
	Title string
	Body  string
}

// NoteMeta is what a note says about itself.
type NoteMeta struct {
	N            int    // the note's number in its session: <n>.md
	Path         string // where it is stored
	TokensBefore int
	KeptFrom     string // the first entry kept in the context
}

// Layout writes the note for the facts of a branch. It is a pure function
// of its arguments: the same session gives the same note. Every section
// has its own cap; when the total is over Limits.Total, sections shrink in
// this order until it fits: extra, git, files, subagents, the final
// answer, superseded constraints, user instructions. The user's pins come
// first, whole, and never give way; nor are the current constraints cut to
// fit the total: only when they alone exceed it are the oldest left out
// (and said to be). A constraint a pin already holds is not repeated.
func Layout(f Facts, git []GitLog, extra []Section, m NoteMeta, lim Limits) string {
	type part struct {
		budget int
		render func(budget int) string
	}
	head := fmt.Sprintf("# Handoff note %d (context-relay)\nIt replaces %d earlier entries (about %d tokens), written from the session file without a model; the exchange from the last user message on follows unchanged.\n",
		m.N, f.Leaving, m.TokensBefore)
	pinned := pinsSection(f.Pins)
	foot := footer(m)
	cs := withoutPinned(f.Constraints, f.Pins)
	// The order of the note; shrink lists indices in the order they give way.
	parts := []part{
		{lim.Total, func(b int) string { return constraintsSection(cs, b) }},
		{lim.Total / 4, func(b int) string { return supersededSection(cs, b) }},
		{lim.UserMessages, func(b int) string { return instructionsSection(f, lim, b) }},
		{lim.Answer, func(b int) string { return answerSection(f.Answer, b) }},
		{lim.Subagents, func(b int) string { return subagentsSection(f.Subagents, b) }},
		{lim.Files, func(b int) string { return filesSection(f.Files, b) }},
		{lim.Git, func(b int) string { return gitSection(git, b) }},
		{lim.Extra, func(b int) string { return extraSection(extra, b) }},
	}
	// The current constraints (part 0) never give way: with a total too
	// small for them, the note is longer than the total.
	shrink := []int{7, 6, 5, 4, 3, 1, 2}
	out := make([]string, len(parts))
	total := func() int {
		n := runes(head) + runes(foot) + 1
		if pinned != "" {
			n += runes(pinned) + 1
		}
		for i, p := range parts {
			out[i] = ""
			if p.budget > 0 {
				out[i] = p.render(p.budget)
			}
			if out[i] != "" {
				n += runes(out[i]) + 1
			}
		}
		return n
	}
	for _, i := range shrink {
		for total() > lim.Total && parts[i].budget > 0 {
			if parts[i].budget < 300 {
				parts[i].budget = 0
			} else {
				parts[i].budget /= 2
			}
		}
	}
	total()
	var b strings.Builder
	b.WriteString(head)
	if pinned != "" {
		b.WriteString("\n")
		b.WriteString(pinned)
	}
	for _, s := range out {
		if s != "" {
			b.WriteString("\n")
			b.WriteString(s)
		}
	}
	b.WriteString("\n")
	b.WriteString(foot)
	return b.String()
}

func footer(m NoteMeta) string {
	return fmt.Sprintf("---\nWhat left the context is still in the session file: recall({query: \"words\"}) searches it (any order; prefixes and parts of names match), recall({entryId: \"<id>\"}) reads one entry whole, recall({entryId: \"note:%d\"}) this note.\nNote file: %s\n", m.N, m.Path)
}

// pinsSection lists the user's pins verbatim, each whole: a pin holds
// until the user unpins it, whatever the budget.
func pinsSection(texts []string) string {
	if len(texts) == 0 {
		return ""
	}
	return "## Pinned rules (the user pinned these with /pin: verbatim, current until unpinned)\n" + pins.Bullets(texts)
}

// withoutPinned drops the constraints a pin already holds (the user pinned
// the message they stand in, or the rule itself): a current one would be
// listed twice, and a superseded one would contradict the pin, which holds
// until the user unpins it.
func withoutPinned(cs []Constraint, pinned []string) []Constraint {
	if len(pinned) == 0 {
		return cs
	}
	flat := make([]string, len(pinned))
	for i, p := range pinned {
		flat[i] = oneLine(p)
	}
	out := make([]Constraint, 0, len(cs))
	for _, c := range cs {
		t := oneLine(c.Text)
		if t != "" && slices.ContainsFunc(flat, func(p string) bool { return strings.Contains(p, t) }) {
			continue
		}
		out = append(out, c)
	}
	return out
}

// constraintsSection lists the current constraints verbatim. Over budget,
// the oldest are left out and counted.
func constraintsSection(cs []Constraint, budget int) string {
	var cur []Constraint
	for _, c := range cs {
		if c.SupersededBy == "" {
			cur = append(cur, c)
		}
	}
	if len(cur) == 0 {
		return ""
	}
	const title = "## Constraints (the user's standing instructions, verbatim)\n"
	lines := make([]string, len(cur))
	for i, c := range cur {
		lines[i] = "- " + oneLine(c.Text) + "\n"
	}
	// Keep the newest that fit; say how many older ones were left out.
	n := runes(title)
	keep := len(lines)
	for i := len(lines) - 1; i >= 0; i-- {
		if n+runes(lines[i]) > budget {
			keep = len(lines) - 1 - i
			break
		}
		n += runes(lines[i])
	}
	var b strings.Builder
	b.WriteString(title)
	if dropped := len(lines) - keep; dropped > 0 {
		fmt.Fprintf(&b, "- (%d older constraints did not fit; recall({query: \"never always must\"}) finds them)\n", dropped)
	}
	for _, l := range lines[len(lines)-keep:] {
		b.WriteString(l)
	}
	return b.String()
}

// supersededSection shows each replaced instruction once, marked, so it is
// never taken as current.
func supersededSection(cs []Constraint, budget int) string {
	var b strings.Builder
	const title = "## Superseded instructions (no longer current)\n"
	n := 0
	for _, c := range cs {
		if c.SupersededBy == "" {
			continue
		}
		line := fmt.Sprintf("- (superseded) %s -> replaced by: %s\n", cut(oneLine(c.Text), 160), cut(oneLine(c.SupersededBy), 120))
		if b.Len() == 0 {
			if runes(title)+runes(line) > budget {
				return ""
			}
			b.WriteString(title)
			n = runes(title)
		}
		if n+runes(line) > budget {
			break
		}
		b.WriteString(line)
		n += runes(line)
	}
	return b.String()
}

// instructionsSection lists the user's messages since the previous boundary,
// oldest first: the newest keeps up to UserMessageEach characters, each
// older one half of the next newer's (at least 120), and the oldest are
// omitted when the section's budget is spent. Earlier instructions, from
// before the boundary, are condensed to one line first.
func instructionsSection(f Facts, lim Limits, budget int) string {
	if len(f.Instructions) == 0 && len(f.Earlier) == 0 {
		return ""
	}
	const title = "## User instructions since the last boundary (oldest first)\n"
	n := runes(title)
	var chain string
	if len(f.Earlier) > 0 && lim.Chain > 0 {
		chain = "- Earlier: " + condense(f.Earlier, min(lim.Chain, max(budget-n, 0))) + "\n"
		if runes(chain) > budget-n || strings.HasSuffix(chain, "Earlier: \n") {
			chain = ""
		}
		n += runes(chain)
	}
	each := lim.UserMessageEach
	var items []string
	omitted := 0
	for i := len(f.Instructions) - 1; i >= 0; i-- {
		in := f.Instructions[i]
		line := fmt.Sprintf("- [%s] %s\n", in.Time, cut(oneLine(in.Text), each))
		if n+runes(line) > budget {
			omitted = i + 1
			break
		}
		items = append(items, line)
		n += runes(line)
		each = max(each/2, 120)
	}
	var b strings.Builder
	b.WriteString(title)
	b.WriteString(chain)
	if omitted > 0 {
		fmt.Fprintf(&b, "- (%d older instructions omitted; recall finds them)\n", omitted)
	}
	for i := len(items) - 1; i >= 0; i-- {
		b.WriteString(items[i])
	}
	if len(items) == 0 && chain == "" && omitted == 0 {
		return ""
	}
	return b.String()
}

// condense joins texts into one line of at most n characters, the newest
// last; each text gets an equal share, the oldest give way first.
func condense(texts []string, n int) string {
	var parts []string
	used := 0
	for i := len(texts) - 1; i >= 0; i-- {
		t := cut(oneLine(texts[i]), 100)
		if used+runes(t)+3 > n {
			if len(parts) == 0 {
				parts = append(parts, cut(t, max(n-3, 0)))
			}
			break
		}
		parts = append(parts, t)
		used += runes(t) + 3
	}
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return strings.Join(parts, " · ")
}

// answerSection keeps the beginning and the end of the final answer.
func answerSection(answer string, budget int) string {
	if strings.TrimSpace(answer) == "" {
		return ""
	}
	const title = "## The last answer before the kept exchange\n"
	room := budget - runes(title) - 1
	if room < 80 {
		return ""
	}
	return title + headTail(strings.TrimSpace(answer), room) + "\n"
}

// listSection writes a title and as many lines as fit in budget, then
// "(N more)"; "" when not one line fits.
func listSection(title string, lines []string, budget int) string {
	var b strings.Builder
	b.WriteString(title)
	n := runes(title)
	shown := 0
	for _, line := range lines {
		if n+runes(line)+16 > budget {
			break
		}
		b.WriteString(line)
		n += runes(line)
		shown++
	}
	if shown == 0 {
		return ""
	}
	if rest := len(lines) - shown; rest > 0 {
		fmt.Fprintf(&b, "- (%d more)\n", rest)
	}
	return b.String()
}

func subagentsSection(subs []Subagent, budget int) string {
	lines := make([]string, 0, len(subs))
	for _, a := range subs {
		state := a.State
		if a.Running {
			state = "RUNNING"
		}
		line := fmt.Sprintf("- %s %s", state, a.ID)
		if a.Type != "" {
			line += " (" + a.Type + ")"
		}
		if a.Description != "" {
			line += ": " + cut(oneLine(a.Description), 120)
		}
		if a.Worktree != "" {
			line += " · worktree " + a.Worktree
		}
		if a.Branch != "" {
			line += " · branch " + a.Branch
		}
		if a.Running && a.Started != "" {
			line += " · since " + minute(a.Started)
		}
		if !a.Running && a.Result != "" {
			line += " · result: " + cut(oneLine(a.Result), 160)
		}
		lines = append(lines, line+"\n")
	}
	return listSection("## Subagents (RUNNING first)\n", lines, budget)
}

func filesSection(files []FileChange, budget int) string {
	lines := make([]string, 0, len(files))
	for _, fc := range files {
		var how []string
		if fc.Write {
			how = append(how, "written")
		}
		if fc.Edits > 0 {
			how = append(how, fmt.Sprintf("%d edits", fc.Edits))
		}
		lines = append(lines, fmt.Sprintf("- %s (%s)\n", fc.Path, strings.Join(how, ", ")))
	}
	return listSection("## Files changed (edit/write, latest first)\n", lines, budget)
}

func gitSection(logs []GitLog, budget int) string {
	const title = "## Git commits since the session started\n"
	var b strings.Builder
	n := runes(title)
	for _, g := range logs {
		if len(g.Commits) == 0 {
			continue
		}
		head := g.Dir + ":\n"
		if n+runes(head) > budget {
			break
		}
		if b.Len() == 0 {
			b.WriteString(title)
		}
		b.WriteString(head)
		n += runes(head)
		for i, c := range g.Commits {
			line := "- " + cut(oneLine(c), 120) + "\n"
			if n+runes(line)+16 > budget {
				fmt.Fprintf(&b, "- (%d more)\n", len(g.Commits)-i)
				n += 16
				break
			}
			b.WriteString(line)
			n += runes(line)
		}
	}
	return b.String()
}

func extraSection(extra []Section, budget int) string {
	var b strings.Builder
	n := 0
	for _, s := range extra {
		text := "## " + oneLine(s.Title) + "\n" + strings.TrimSpace(s.Body) + "\n"
		if n+runes(text) > budget {
			room := budget - n - runes(s.Title) - 5
			if room < 80 {
				break
			}
			text = "## " + oneLine(s.Title) + "\n" + cut(strings.TrimSpace(s.Body), room) + "\n"
		}
		b.WriteString(text)
		n += runes(text)
	}
	return b.String()
}

func runes(s string) int { return utf8.RuneCountInString(s) }

// cut cuts s to n characters, ending in "…" when cut.
func cut(s string, n int) string {
	if runes(s) <= n {
		return s
	}
	if n <= 1 {
		return "…"
	}
	r := []rune(s)
	return strings.TrimRight(string(r[:n-1]), " ") + "…"
}

// headTail keeps the start and the end of s within n characters.
func headTail(s string, n int) string {
	if runes(s) <= n {
		return s
	}
	r := []rune(s)
	const mark = "\n[…]\n"
	h := (n - runes(mark)) * 2 / 5
	t := max(n-runes(mark)-h, 0)
	return string(r[:h]) + mark + string(r[len(r)-t:])
}

// oneLine collapses whitespace, newlines included.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
