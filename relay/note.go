package relay

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/pi-session/pi-session/clip"
	"github.com/pi-session/pi-session/pins"
	"github.com/pi-session/pi-session/rules"
)

// GitLog is the commits of one directory since the session started; a
// directory whose git failed or timed out is left out of the note.
type GitLog struct {
	Dir     string
	Commits []string // "abc1234 subject", newest first
}

// Section is an extra section a caller adds before the footer (context-relay's
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
// of its arguments: the same session gives the same note. The note is
// written out visibly (clip.Visible): no control character or invalid
// byte of the session, a path or a commit reaches it raw.
//
// The user's pins come first, whole, and never give way. Every other
// section is first written whole. When the note is then over
// Limits.Total, sections give way in this order until it fits: extra,
// git, subagents, the final answer, commands, files, superseded rules,
// user instructions, the task statement; each first down to its own
// limit, then, in the same order, further down to nothing. The user's
// current rules never give way to the total: only past HardCeiling are
// the oldest of them left out, and the note says how many and where
// recall finds them. A rule a pin already holds is not repeated.
func Layout(f Facts, git []GitLog, extra []Section, m NoteMeta, lim Limits) string {
	type part struct {
		limit  int
		render func(budget int, limited bool) string
	}
	head := fmt.Sprintf("# Handoff note %d (context-relay)\nIt replaces %d earlier entries (about %d tokens), written from the session file without a model; the exchange from the last user message on follows unchanged.\n",
		m.N, f.Leaving, m.TokensBefore)
	pinned := pinsSection(f.Pins)
	foot := footer(m)
	cs := withoutPinned(f.Constraints, f.Pins)
	parts := []part{
		{HardCeiling(lim), func(b int, _ bool) string {
			return constraintsSection(cs, f.RulesForgotten, f.Skimmed, HardCeiling(lim))
		}},
		{lim.Total / 4, func(b int, _ bool) string { return supersededSection(cs, b) }},
		{lim.Task, func(b int, _ bool) string { return taskSection(f, b) }},
		{lim.UserMessages, func(b int, limited bool) string { return instructionsSection(f, lim, b, limited) }},
		{lim.Answer, func(b int, _ bool) string { return answerSection(f.Answer, b) }},
		{lim.Subagents, func(b int, _ bool) string { return subagentsSection(f.Subagents, b) }},
		{lim.Commands, func(b int, _ bool) string { return commandsSection(f.Commands, b) }},
		{lim.Files, func(b int, _ bool) string { return filesSection(f.Files, f.Cwd, b) }},
		{lim.Git, func(b int, _ bool) string { return gitSection(git, b) }},
		{lim.Extra, func(b int, _ bool) string { return extraSection(extra, b) }},
	}
	shrink := []int{9, 8, 5, 4, 6, 7, 1, 3, 2}
	out := make([]string, len(parts))
	size := func(s string) int {
		if s == "" {
			return 0
		}
		return runes(s) + 1
	}
	total := runes(head) + runes(foot) + 1
	if pinned != "" {
		total += runes(pinned) + 1
	}
	for i, p := range parts {
		out[i] = p.render(unlimited, false)
		total += size(out[i])
	}
	set := func(i, budget int, limited bool) {
		total -= size(out[i])
		out[i] = ""
		if budget > 0 {
			out[i] = parts[i].render(budget, limited)
		}
		total += size(out[i])
	}
	// Down to each section's own limit, then further; a section gives
	// only what the note is over by, so the room left stays filled.
	for _, i := range shrink {
		if total <= lim.Total {
			break
		}
		if size(out[i]) > parts[i].limit {
			set(i, max(parts[i].limit, size(out[i])-1-(total-lim.Total)), true)
		}
	}
	for _, i := range shrink {
		if total <= lim.Total {
			break
		}
		set(i, size(out[i])-1-(total-lim.Total), true)
	}
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
	return clip.Visible(b.String())
}

// unlimited is the budget of a section written whole.
const unlimited = 1 << 30

// HardCeiling is what the user's current rules may take of a note at
// most: four times Limits.Total. Past it the oldest are left out (a
// message of thousands of generated rules), and the note says so.
func HardCeiling(lim Limits) int { return 4 * lim.Total }

func footer(m NoteMeta) string {
	return fmt.Sprintf("---\nWhat left the context is still in the session file: recall({query: \"words\"}) searches it (any of the words, any order; the best matches first), recall({entryId: \"<id>\"}) reads one entry whole, recall({entryId: \"note:%d\"}) this note.\nNote file: %s\n", m.N, m.Path)
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
func withoutPinned(cs []rules.Rule, pinned []string) []rules.Rule {
	if len(pinned) == 0 {
		return cs
	}
	flat := make([]string, len(pinned))
	for i, p := range pinned {
		flat[i] = oneLine(p)
	}
	out := make([]rules.Rule, 0, len(cs))
	for _, c := range cs {
		t := oneLine(c.Text)
		if t != "" && slices.ContainsFunc(flat, func(p string) bool { return strings.Contains(p, t) }) {
			continue
		}
		out = append(out, c)
	}
	return out
}

// constraintsSection lists the current rules verbatim, oldest first.
// Past budget (the hard ceiling), the oldest are left out, counted, and
// the messages that hold them named for recall. Messages too long to be
// read whole for rules are named too, so that their middle is not taken
// for read.
func constraintsSection(cs []rules.Rule, forgotten rules.Forgotten, skimmed []Skimmed, budget int) string {
	var cur []rules.Rule
	for _, c := range cs {
		if c.Current() {
			cur = append(cur, c)
		}
	}
	if len(cur) == 0 && len(skimmed) == 0 && forgotten.Current == 0 {
		return ""
	}
	const title = "## Constraints (the user's standing rules, verbatim)\n"
	skim := skimmedLine(skimmed)
	// Keep the newest that fit, with room for the lines about the rest;
	// only those are written out (a session may hold thousands).
	n := runes(title) + 200 + runes(skim)
	var newest []string
	for i := len(cur) - 1; i >= 0; i-- {
		line := "- " + oneLine(cur[i].Text) + "\n"
		if n+runes(line) > budget {
			break
		}
		n += runes(line)
		newest = append(newest, line)
	}
	var b strings.Builder
	b.WriteString(title)
	b.WriteString(skim)
	if dropped := len(cur) - len(newest) + forgotten.Current; dropped > 0 {
		id := forgotten.EntryID // the oldest, when rules were forgotten
		if id == "" {
			id = cur[0].EntryID
		}
		fmt.Fprintf(&b, "- (%d older rules are left out: past the note's ceiling of %d characters for rules; recall({entryId: %q}) reads the message that holds them)\n", dropped, budget, id)
	}
	for i := len(newest) - 1; i >= 0; i-- {
		b.WriteString(newest[i])
	}
	return b.String()
}

// skimmedLine says which messages were read for rules only by their ends
// (at most three named), "" when none was.
func skimmedLine(skimmed []Skimmed) string {
	if len(skimmed) == 0 {
		return ""
	}
	s := skimmed[0]
	how := fmt.Sprintf("only their first %s and last %s were read for rules", byteSize(s.Head), byteSize(s.Tail))
	if len(skimmed) == 1 {
		return fmt.Sprintf("- (message %s has %d characters: %s; recall({entryId: %q}) reads it whole)\n", s.EntryID, s.Chars, strings.Replace(how, "their", "its", 1), s.EntryID)
	}
	var ids []string
	for _, s := range skimmed[:min(len(skimmed), 3)] {
		ids = append(ids, s.EntryID)
	}
	more := ""
	if len(skimmed) > 3 {
		more = fmt.Sprintf(" and %d more", len(skimmed)-3)
	}
	return fmt.Sprintf("- (%d messages are too long to read whole, %s%s: %s; recall({entryId}) reads one whole)\n", len(skimmed), strings.Join(ids, ", "), more, how)
}

// byteSize writes n bytes as KB when they are whole kilobytes.
func byteSize(n int) string {
	if n >= 1<<10 && n%(1<<10) == 0 {
		return fmt.Sprintf("%d KB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// supersededSection shows each replaced instruction once, marked, so it is
// never taken as current.
func supersededSection(cs []rules.Rule, budget int) string {
	var b strings.Builder
	const title = "## Superseded instructions (no longer current)\n"
	n := 0
	for _, c := range cs {
		if c.Current() {
			continue
		}
		how := "replaced by"
		if c.Revoked {
			how = "revoked by"
		}
		line := fmt.Sprintf("- (superseded) %s -> %s: %s\n", cut(oneLine(c.Text), 160), how, cut(oneLine(c.SupersededBy), 120))
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

// instructionsSection lists the user's messages since the previous
// boundary, oldest first, the task statement excepted (it has its own
// section). They are written whole when they fit; otherwise every message
// is cut to the same length, as long as the budget allows (at most
// UserMessageEach when the note is over its total, at least 120), and the
// oldest are omitted when even that does not fit. Earlier instructions,
// from before the boundary, are condensed to one line first.
func instructionsSection(f Facts, lim Limits, budget int, limited bool) string {
	var msgs []Instruction
	for _, in := range f.Instructions {
		if in.EntryID != f.TaskEntry {
			msgs = append(msgs, in)
		}
	}
	if len(msgs) == 0 && len(f.Earlier) == 0 {
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
	// Each message made one line once, and the lines measured without
	// being written: the search below tries many cuts.
	flat := make([]string, len(msgs))
	flatRunes := make([]int, len(msgs))
	for i, in := range msgs {
		flat[i] = oneLine(in.Text)
		flatRunes[i] = runes(flat[i])
	}
	line := func(i, each int) string { return instructionLine(msgs[i], flat[i], each) }
	fits := func(from, each int) bool {
		used := n + 60 // the omitted line
		for i := from; i < len(msgs); i++ {
			used += instructionLineLen(msgs[i], flat[i], flatRunes[i], each)
			if used > budget {
				return false
			}
		}
		return true
	}
	maxEach := unlimited
	if limited {
		maxEach = max(lim.UserMessageEach, 120)
	}
	// The fewest omitted, then the longest cut that fits.
	from, each := 0, -1
	for ; from < len(msgs); from++ {
		if fits(from, 120) {
			lo, hi := 120, maxEach
			for lo < hi {
				mid := lo + (hi-lo+1)/2
				if fits(from, mid) {
					lo = mid
				} else {
					hi = mid - 1
				}
			}
			each = lo
			break
		}
	}
	var b strings.Builder
	b.WriteString(title)
	b.WriteString(chain)
	// Facts leave out the oldest a note could not show; they are counted.
	if omitted := from + f.InstructionsOmitted; omitted > 0 {
		fmt.Fprintf(&b, "- (%d older instructions omitted; recall finds them)\n", omitted)
	}
	if each > 0 {
		for i := from; i < len(msgs); i++ {
			b.WriteString(line(i, each))
		}
	}
	if each < 0 && chain == "" && from+f.InstructionsOmitted == 0 {
		return ""
	}
	if runes(b.String()) > budget {
		return ""
	}
	return b.String()
}

// instructionLine is one instruction of the section, flat its text made
// one line, cut to each characters.
func instructionLine(in Instruction, flat string, each int) string {
	return fmt.Sprintf("- [%s] %s\n", in.Time, cutRecall(flat, each, in.EntryID, in.More > 0))
}

// instructionLineLen is runes(instructionLine(in, flat, each)), flatRunes
// being runes(flat), without writing the line.
func instructionLineLen(in Instruction, flat string, flatRunes, each int) int {
	fixed := runes(in.Time) + len("- [] \n")
	if in.More == 0 && flatRunes <= each {
		return fixed + flatRunes
	}
	more := runes(in.EntryID) + len(" [] ") // " […id]": … is one character
	k := max(each-more, 1)
	switch {
	case flatRunes <= k:
		return fixed + flatRunes + more
	case k <= 1:
		return fixed + 1 + more
	}
	head := flat[:runeOffset(flat, k-1)]
	return fixed + k - 1 - (len(head) - len(strings.TrimRight(head, " "))) + 1 + more
}

// taskSection is the session's first user message, the task statement,
// from its start as far as the budget allows; a cut says how much is left
// and how to read it whole.
func taskSection(f Facts, budget int) string {
	if strings.TrimSpace(f.Task) == "" {
		return ""
	}
	title := fmt.Sprintf("## Task (the user's first message, %s, verbatim)\n", f.TaskTime)
	room := budget - runes(title) - 1
	if room < 120 {
		return ""
	}
	text := clip.Visible(strings.TrimSpace(f.Task))
	if runes(text) > room || f.TaskMore > 0 {
		// f.TaskMore: the characters of a message of megabytes past what
		// was read of it.
		tail := fmt.Sprintf("\n[… %%d more characters: recall({entryId: %q})]", f.TaskEntry)
		r := []rune(text)
		keep := min(len(r), room-runes(fmt.Sprintf(tail, len(r)+f.TaskMore)))
		text = strings.TrimRight(string(r[:keep]), " \n") + fmt.Sprintf(tail, len(r)-keep+f.TaskMore)
	}
	return title + text + "\n"
}

// cutRecall cuts s to n characters, pointing at the entry for the rest;
// partial says s is already only the start of the entry's text.
func cutRecall(s string, n int, id string, partial bool) string {
	if !partial && atMost(s, n) {
		return s
	}
	more := fmt.Sprintf(" […%s]", id)
	return cut(s, max(n-runes(more), 1)) + more
}

// condense joins texts into one line of at most n characters, the newest
// last; each text gets an equal share, the oldest give way first.
func condense(texts []string, n int) string {
	var parts []string
	used := 0
	for i := len(texts) - 1; i >= 0; i-- {
		t := cut(oneLine(texts[i]), earlierChars)
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
	return title + headTail(clip.Visible(strings.TrimSpace(answer)), room) + "\n"
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

// filesSection lists every changed file, grouped by directory (relative
// to the session's cwd when under it), directories and their files latest
// change first; what does not fit is counted.
func filesSection(files []FileChange, cwd string, budget int) string {
	if len(files) == 0 {
		return ""
	}
	type dir struct {
		name  string
		files []string
	}
	var dirs []*dir
	byName := map[string]*dir{}
	for _, fc := range files {
		p := fc.Path
		if cwd != "" {
			if rel, ok := strings.CutPrefix(p, strings.TrimRight(cwd, "/")+"/"); ok {
				p = rel
			}
		}
		d, base := "./", p
		if i := strings.LastIndexByte(p, '/'); i >= 0 {
			d, base = p[:i+1], p[i+1:]
		}
		var how []string
		if fc.Write {
			how = append(how, "written")
		}
		if fc.Edits == 1 {
			how = append(how, "1 edit")
		} else if fc.Edits > 1 {
			how = append(how, fmt.Sprintf("%d edits", fc.Edits))
		}
		entry := base
		if len(how) > 0 {
			entry += " (" + strings.Join(how, ", ") + ")"
		}
		g := byName[d]
		if g == nil {
			g = &dir{name: d}
			byName[d] = g
			dirs = append(dirs, g)
		}
		g.files = append(g.files, entry)
	}
	const title = "## Files changed (edit/write; by directory, latest first)\n"
	var b strings.Builder
	b.WriteString(title)
	n := runes(title)
	shown := 0
	const reserve = 24 // the "(N more)" line
	for _, d := range dirs {
		line := "- " + d.name + ": "
		if n+runes(line)+reserve > budget {
			break
		}
		k := 0
		for _, e := range d.files {
			sep := ""
			if k > 0 {
				sep = ", "
			}
			if n+runes(line)+runes(sep+e)+1+reserve > budget {
				break
			}
			line += sep + e
			k++
		}
		if k == 0 {
			break
		}
		b.WriteString(line + "\n")
		n += runes(line) + 1
		shown += k
		if k < len(d.files) {
			break
		}
	}
	if shown == 0 {
		return ""
	}
	if rest := len(files) - shown; rest > 0 {
		fmt.Fprintf(&b, "- (%d more)\n", rest)
	}
	return b.String()
}

// commandsSection lists the build, test and check commands that ran,
// each once, latest first, with the status of its latest run.
func commandsSection(cmds []Command, budget int) string {
	lines := make([]string, 0, len(cmds))
	for _, c := range cmds {
		line := "- `" + cut(oneLine(strings.ReplaceAll(c.Cmd, "`", "'")), 200) + "`"
		if c.Status != "" {
			line += " · " + c.Status
		}
		if c.Time != "" {
			line += " · " + c.Time
		}
		if c.Runs > 1 {
			line += fmt.Sprintf(" · %d runs", c.Runs)
		}
		lines = append(lines, line+"\n")
	}
	return listSection("## Build and test commands run (latest first, status of the latest run)\n", lines, budget)
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

// runes is the length of s in characters once written out: the note is
// written out visibly as a whole (clip.Visible, at the end of Layout), so
// its sections are measured as they will read.
func runes(s string) int { return clip.VisibleLen(s) }

// cut cuts s to n characters as runes counts them (a control character
// as it is written out), ending in "…" when cut. It reads only as far as
// the cut: the sections cut long texts many times over.
func cut(s string, n int) string {
	if atMost(s, n) {
		return s
	}
	if n <= 1 {
		return "…"
	}
	head := s[:runeOffset(s, n-1)]
	if !utf8.ValidString(head) {
		head = string([]rune(head)) // invalid bytes as U+FFFD, as they count
	}
	return strings.TrimRight(head, " ") + "…"
}

// atMost reports whether runes(s) <= n, reading no further than n
// characters of s.
func atMost(s string, n int) bool {
	if len(s) <= n && !strings.ContainsFunc(s, clip.IsControl) {
		return true
	}
	return runeOffset(s, n) == len(s)
}

// runeOffset is the byte offset in s past its longest start of at most n
// characters as runes counts them (len(s) when all of s is).
func runeOffset(s string, n int) int {
	for i, r := range s {
		if n -= clip.VisibleLen(string(r)); n < 0 {
			return i
		}
	}
	return len(s)
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

// oneLine collapses whitespace, newlines included, and writes out control
// characters (clip.Visible): the note is a document the model reads and a
// file a user may print.
func oneLine(s string) string { return clip.Visible(strings.Join(strings.Fields(s), " ")) }

// flatHead is oneLine(s) as far as its first n+1 characters, so that
// cut(flatHead(s, n), n) is cut(oneLine(s), n): of a long s, oneLine of a
// start of it when that holds more than n+4 characters (the last few may
// be those of a character the start cuts), else oneLine(s). A message of
// megabytes is made one line many times over otherwise.
func flatHead(s string, n int) string {
	if k := 16 * (n + 8); len(s) > k {
		if h := oneLine(s[:k]); !atMost(h, n+4) {
			return h
		}
	}
	return oneLine(s)
}
