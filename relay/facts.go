package relay

import (
	"bytes"
	"encoding/json"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/pi-session/pi-session/pins"
	"github.com/pi-session/pi-session/rules"
	"github.com/pi-session/pi-session/session"
)

// Facts are what a note is made of, gathered from the model-visible view of
// one branch: context_edit applied (omitted entries give nothing, replaced
// ones their replacement), abandoned branches never seen.
type Facts struct {
	SessionID string
	Cwd       string
	Started   string // the session header's timestamp: git commits since then

	// Instructions are the user messages since the previous boundary (the
	// latest compaction's kept range) that leave the context now, oldest
	// first.
	Instructions []Instruction
	// InstructionsOmitted counts the older ones left out of Instructions:
	// a note could not show them.
	InstructionsOmitted int
	// Earlier are the user messages before that boundary, oldest first
	// (the latest of them, each cut to 100 characters): condensed to one
	// line.
	Earlier []string
	// Pins are the rules the user pinned with /pin on this branch, in
	// the order pinned: verbatim, first in the note, never cut.
	Pins []string
	// Constraints are the user's standing rules, current and
	// superseded, oldest first; RulesForgotten counts the current ones
	// older still, past rules.MaxRules.
	Constraints    []rules.Rule
	RulesForgotten rules.Forgotten
	// Task is the first user message of the branch (the task statement)
	// when it left the context, and its entry; "" when it is still in
	// the kept part.
	Task      string
	TaskEntry string
	TaskTime  string
	TaskMore  int // characters of the task statement past Task (a message of megabytes)
	// Commands are the build, test and check commands run on the branch,
	// the latest first.
	Commands []Command
	// Answer is the last assistant text before the kept exchange.
	Answer      string
	AnswerEntry string
	Subagents   []Subagent
	Files       []FileChange
	Worktrees   []string // .../worktrees/<name> paths seen in subagent results
	Leaving     int      // context entries this relay removes
	Relays      int      // earlier relay notes on the branch
	// Skimmed are the user messages too long to be read whole for rules
	// (rulesBounds), oldest first.
	Skimmed []Skimmed
}

// Skimmed is a user message read for rules only by its ends: its first
// Head and its last Tail bytes.
type Skimmed struct {
	EntryID    string
	Chars      int // its length in characters
	Head, Tail int
}

// Instruction is one user message.
type Instruction struct {
	EntryID string
	Time    string // "2006-01-02 15:04", from the entry
	Text    string
	More    int // characters of the message past Text (a message of megabytes)
}

// Subagent is one subagent seen on the branch.
type Subagent struct {
	ID          string
	Type        string
	Description string
	State       string // "running", "completed", "failed", ... as recorded; RUNNING is inferred
	Running     bool
	Worktree    string
	Branch      string
	Result      string
	Started     string
}

// FileChange is a file the agent changed with edit or write.
type FileChange struct {
	Path  string
	Edits int
	Write bool
}

// view is one branch as the model sees it, read lazily in one pass: an
// entry's content is looked at only by the section that needs it, with
// context_edit applied (an omitted entry gives nothing, a replaced one its
// replacement), and the rest of the entry is never decoded. Nothing is
// projected beyond the kept tail, whose size decides the cut.
type view struct {
	branch  []*session.Entry
	edits   map[string]*session.Entry // target id -> the latest context_edit of it on the branch
	context []bool                    // by position: in the current context
	// lim are the note's limits: what of a text (a user message, an
	// answer) is read for it is bounded by them (ends.go).
	lim Limits
}

func newView(branch []*session.Entry) *view {
	v := &view{branch: branch, edits: map[string]*session.Entry{}, lim: DefaultConfig().Limits}
	for _, e := range branch {
		if e.Type == "context_edit" {
			if id, ok := session.MemberString(e.Raw, "targetId"); ok {
				v.edits[id] = e
			}
		}
	}
	v.context = contextMask(branch)
	return v
}

// contextMask marks the entries of branch that session.ContextEntries
// keeps: the latest compaction, the kept range before it, all after it.
func contextMask(branch []*session.Entry) []bool {
	mask := make([]bool, len(branch))
	ctx := session.ContextEntries(branch)
	i := 0
	if len(ctx) > 0 && ctx[0].Type == "compaction" {
		// The latest compaction comes first; the rest is in branch order.
		for k := len(branch) - 1; k >= 0; k-- {
			if branch[k] == ctx[0] {
				mask[k] = true
				break
			}
		}
		ctx = ctx[1:]
	}
	for _, e := range ctx {
		for i < len(branch) && branch[i] != e {
			i++
		}
		if i < len(branch) {
			mask[i] = true
		}
	}
	return mask
}

// pos is the position of entry id on the branch, or -1.
func (v *view) pos(id string) int {
	if id == "" {
		return -1
	}
	for i := len(v.branch) - 1; i >= 0; i-- {
		if v.branch[i].ID == id {
			return i
		}
	}
	return -1
}

// visible reports whether the model sees entry e (no context_edit omits
// it) and returns the content it sees: the replacement's for an edited
// user, assistant, tool result or custom message (nil when the
// replacement has none), the stored one otherwise. Only message and
// custom_message entries have content.
func (v *view) visible(e *session.Entry) (content json.RawMessage, ok bool) {
	var holder json.RawMessage // the object content is a member of
	role := e.Role
	switch e.Type {
	case "message":
		holder = e.Message()
	case "custom_message":
		holder, role = e.Raw, "custom"
	default:
		return nil, false
	}
	if holder == nil {
		return nil, false
	}
	if ed := v.edits[e.ID]; ed != nil {
		rep := session.Member(ed.Raw, "replacement")
		if len(rep) == 0 || rep[0] != '{' {
			return nil, false // omitted
		}
		switch role {
		case "user", "assistant", "toolResult", "custom":
			return session.Member(rep, "content"), true
		}
	}
	return firstMember(holder, "content"), true
}

// firstMember is the value of the first member key of the JSON object raw:
// pi writes the members a note needs (role, toolCallId, toolName, content)
// ahead of the large ones, so the scan stops early.
func firstMember(raw []byte, key string) json.RawMessage {
	var v json.RawMessage
	session.Members(raw, func(k string, value json.RawMessage) bool {
		if k == key {
			v = value
			return false
		}
		return true
	})
	return v
}

// firstString is firstMember's value as a string, or "".
func firstString(raw []byte, key string) string {
	v := firstMember(raw, key)
	if len(v) == 0 || v[0] != '"' {
		return ""
	}
	s, _, _ := session.StringPrefix(v, len(v))
	return s
}

// KeptFrom decides where the kept part of the context starts: the last user
// message; pi's own cut point when the part from the last user message on
// holds more than tailMaxChars and pi's is later; pi's when there is no
// user message.
func KeptFrom(branch []*session.Entry, piFirstKept string, tailMaxChars int) string {
	v := newView(branch)
	return v.keptFrom(piFirstKept, tailMaxChars)
}

func (v *view) keptFrom(piFirstKept string, tailMaxChars int) string {
	last := -1
	for i := len(v.branch) - 1; i >= 0 && last < 0; i-- {
		if e := v.branch[i]; e.Type == "message" && e.Role == "user" && v.context[i] {
			if _, ok := v.visible(e); ok {
				last = i
			}
		}
	}
	if last < 0 {
		return piFirstKept
	}
	id := v.branch[last].ID
	piAt := v.pos(piFirstKept)
	if piAt <= last {
		return id
	}
	// The tail's size as pi estimates it (characters are 4 per token),
	// counted only as far as the limit.
	tail := make([]*session.Entry, 0, len(v.branch)-last)
	for _, e := range v.branch[last:] {
		if e.Type != "compaction" {
			tail = append(tail, e)
		}
	}
	chars := 0
	for _, m := range session.Project(tail) {
		if chars += m.Tokens() * 4; chars > tailMaxChars {
			return piFirstKept
		}
	}
	return id
}

// Gather collects the facts of a note for branch (root first, ending at the
// leaf being relayed), keeping the context from keptFrom on.
func Gather(h *session.Header, branch []*session.Entry, keptFrom string) Facts {
	return newView(branch).gather(h, keptFrom)
}

func (v *view) gather(h *session.Header, keptFrom string) Facts {
	branch := v.branch
	f := Facts{}
	if h != nil {
		f.SessionID, f.Cwd, f.Started = h.ID, h.Cwd, h.Timestamp
	}
	keptAt := v.pos(keptFrom)
	if keptAt < 0 {
		keptAt = len(branch)
	}
	type user struct {
		id      string
		content json.RawMessage
		long    *longText // read by shownText when it is long, else nil
	}
	var users []user // read for rules after the pass, one at a time
	recent := recentInstructions{lim: v.lim}
	var earlier []string
	subs := newSubagents()
	cmds := newCommands()
	files := map[string]*FileChange{}
	last := map[string]int{} // path -> the number of its latest change
	changes := 0
	// One pass in branch order, so a later record of a subagent wins.
	for at, e := range branch {
		if at < keptAt {
			if v.context[at] && e.Type != "compaction" {
				f.Leaving++
			}
			if e.Type == "compaction" {
				if d := session.Member(e.Raw, "details"); d != nil && string(session.Member(d, "relay")) == "true" {
					f.Relays++
				}
			}
		}
		switch e.Type {
		case "custom":
			// subagents:record entries are extension state, not messages.
			if firstString(e.Raw, "customType") == "subagents:record" {
				subs.record(session.Member(e.Raw, "data"), e.Timestamp)
			}
			continue
		case "message", "custom_message":
		default:
			continue
		}
		content, ok := v.visible(e)
		if !ok {
			continue
		}
		role := e.Role
		if e.Type == "custom_message" {
			role = "custom"
		}
		switch role {
		case "user":
			users = append(users, user{id: e.ID, content: content})
			first := len(users) == 1 && at < keptAt
			if at >= keptAt && !first {
				continue
			}
			ut, more, long := v.shownText(content)
			users[len(users)-1].long = long
			if first {
				f.Task, f.TaskEntry, f.TaskTime, f.TaskMore = ut, e.ID, minute(e.Timestamp), more
			}
			if at >= keptAt {
				continue
			}
			if v.context[at] {
				recent.add(Instruction{EntryID: e.ID, Time: minute(e.Timestamp), Text: ut, More: more}, e.ID == f.TaskEntry)
			} else if e.ID != f.TaskEntry {
				// The task statement has its own section; of the rest,
				// the "Earlier:" line shows the start of the latest.
				earlier = append(earlier, cut(flatHead(ut, earlierChars), earlierChars))
				if keep := earlierKept(v.lim); len(earlier) > 2*keep {
					earlier = append(earlier[:0], earlier[len(earlier)-keep:]...)
				}
			}
		case "assistant":
			if !bytes.Contains(content, []byte(`"toolCall"`)) {
				continue
			}
			for _, c := range toolCalls(content) {
				name := strings.ToLower(c.Name)
				if name == "bash" {
					if cmd := boundedString(session.Member(c.Arguments, "command"), maxCommandBytes); cmd != "" {
						cmds.call(c.ID, cmd, e.Timestamp)
					}
					continue
				}
				if name != "edit" && name != "write" && name != "multiedit" {
					if isAgentTool(c.Name) {
						subs.launchCall(c.ID, c.Arguments, e.Timestamp)
					}
					continue
				}
				p, _ := session.MemberString(c.Arguments, "path")
				if p == "" {
					p, _ = session.MemberString(c.Arguments, "file_path")
				}
				if p == "" {
					continue
				}
				fc := files[p]
				if fc == nil {
					fc = &FileChange{Path: p}
					files[p] = fc
				}
				if name == "write" {
					fc.Write = true
				} else {
					fc.Edits++
				}
				changes++
				last[p] = changes
			}
		case "bashExecution":
			// The user's own !command.
			msg := e.Message()
			if cmd := boundedString(firstMember(msg, "command"), maxCommandBytes); cmd != "" {
				cmds.call(e.ID, cmd, e.Timestamp)
				status := ""
				if code := session.Member(msg, "exitCode"); len(code) > 0 && code[0] != 'n' {
					status = "exit " + string(code)
				}
				if string(session.Member(msg, "cancelled")) == "true" {
					status = "aborted"
				}
				cmds.status(e.ID, status)
			}
		case "toolResult":
			msg := e.Message()
			if firstString(msg, "toolName") == "bash" {
				// Only a build command's result is read, and only its end,
				// where pi's bash tool writes the exit status.
				if id := firstString(msg, "toolCallId"); cmds.wants(id) {
					cmds.result(id, textTail(content, 400), string(session.Member(msg, "isError")) == "true")
				}
				continue
			}
			if !isAgentTool(firstString(msg, "toolName")) {
				continue
			}
			subs.launchResult(firstString(msg, "toolCallId"), boundedText(content, maxAgentBytes), session.Member(msg, "details"), e.Timestamp)
		case "custom":
			holder := e.Raw
			if e.Type == "message" {
				holder = e.Message()
			}
			if firstString(holder, "customType") != "subagent-notification" {
				continue
			}
			subs.notification(boundedText(content, maxAgentBytes), session.Member(holder, "details"), e.Timestamp)
		}
	}
	f.Answer, f.AnswerEntry = v.answer(keptAt)
	f.Instructions, f.InstructionsOmitted = recent.list, recent.omitted
	f.Earlier = earlier[max(len(earlier)-earlierKept(v.lim), 0):]
	// Each message is decoded when the rules reach it and let go after:
	// the messages of a session are never held together.
	sizes := make([]int, len(users))
	for i, u := range users {
		sizes[i] = len(u.content)
	}
	head, tail := rulesBounds(sizes, branchBytes(branch))
	f.Constraints, f.RulesForgotten = rules.Default().ExtractSeq(func(yield func(rules.Message) bool) {
		for _, u := range users {
			msg, chars := rulesMessage(u.content, u.long, head, tail)
			msg.EntryID = u.id
			if msg.Partial() {
				f.Skimmed = append(f.Skimmed, Skimmed{EntryID: u.id, Chars: chars, Head: head, Tail: tail})
			}
			if !yield(msg) {
				return
			}
		}
	})
	f.Commands = cmds.list()
	list, _ := pins.Replay(branch)
	f.Pins = pins.Texts(list)
	f.Subagents, f.Worktrees = subs.list()
	for _, fc := range files {
		f.Files = append(f.Files, *fc)
	}
	// The latest changed first.
	sort.Slice(f.Files, func(i, j int) bool { return last[f.Files[i].Path] > last[f.Files[j].Path] })
	return f
}

// shownText is what a note may show of a user message: its text, at most
// showBytes of it (a note shows no more of any one message), and how many
// characters of it are past that; and the text read as long, when it is.
func (v *view) shownText(content json.RawMessage) (string, int, *longText) {
	show := showBytes(v.lim)
	if len(content) <= show {
		return string(text(content, 0)), 0, nil
	}
	long := readLong(content)
	e := long.ends(show, 0)
	return e.Head, e.Runes - chars([]byte(e.Head)), long
}

// rulesMessage is a user message as its rules are read: whole when it is no
// longer than what is read of one (head and tail bytes), else by its ends,
// never decoded whole; and its length in characters. long is its text
// already read as long, or nil.
func rulesMessage(content json.RawMessage, long *longText, head, tail int) (rules.Message, int) {
	whole := head + tail
	if len(content) <= whole {
		return rules.Message{Text: string(text(content, 0))}, 0
	}
	if long == nil {
		long = readLong(content)
	}
	if long.bytes <= whole { // long only by its escapes
		return rules.Message{Text: string(text(content, 0))}, 0
	}
	e := long.ends(head, tail)
	return rules.Message{Text: e.Head, Tail: e.Tail}, e.Runes
}

// rulesBudget is how many bytes of user messages a note reads for rules
// at most, of a branch of size bytes: 2 MB, or 1/32 of the branch when
// that is more. Reading for rules costs some 0.3 s of CPU a megabyte (the
// model reads every sentence), a hundred times a read of the session
// file: a session of many pasted logs (1,800 messages of 20-120 KB in 120
// MB) took 29 s for a note read whole.
func rulesBudget(size int) int { return max(2<<20, size/32) }

// rulesBounds is what is read for rules of each user message, given the
// sizes of their contents, oldest first, in a branch of size bytes: its
// first head and last tail bytes (a shorter one whole). They are
// rules.ReadHead and rules.ReadTail, halved as often as it takes for all
// of the messages read to fit in rulesBudget, down to 1 KB and 256 bytes:
// messages the user typed are read whole, a paste by the words before and
// after it. Halving, not cutting to fit, keeps what is read of a message
// the same from one note to the next, so an engine host reads it once.
func rulesBounds(sizes []int, size int) (head, tail int) {
	budget := rulesBudget(size)
	head, tail = rules.ReadHead, rules.ReadTail
	for head > 1<<10 {
		read := 0
		for _, n := range sizes {
			read += min(n, head+tail)
		}
		if read <= budget {
			break
		}
		head, tail = head/2, tail/2
	}
	return head, tail
}

// showBytes is how much of one text a note with these limits may show:
// four bytes for each character of its total.
func showBytes(lim Limits) int { return 4 * max(lim.Total, 1) }

// earlierChars is what the "Earlier:" line shows of a message before the
// boundary at most (see condense).
const earlierChars = 100

// earlierKept is how many of the messages before the boundary the
// "Earlier:" line can show: the latest, in at most limits.chain
// characters, 3 or more each.
func earlierKept(lim Limits) int { return lim.Chain/3 + 2 }

// recentInstructions keeps the instructions since the boundary that a note
// can show: the newest, as far back as their shortest lines (cut to 120
// characters, instructionsSection's shortest) still fit in the note's
// total. Older ones could never be shown and are only counted, so a
// session of thousands of long messages is not held in memory.
type recentInstructions struct {
	lim     Limits
	list    []Instruction
	short   []int // the runes of each one's shortest line
	task    bool  // list[0] is the task statement (it has its own section)
	sum     int   // of short, but the task's
	omitted int
}

func (r *recentInstructions) add(in Instruction, isTask bool) {
	n := 0
	if !isTask {
		n = runes(instructionLine(in, flatHead(in.Text, 120), 120))
		r.sum += n
	}
	if len(r.list) == 0 {
		r.task = isTask
	}
	r.list = append(r.list, in)
	r.short = append(r.short, n)
	for {
		oldest := 0
		if r.task {
			oldest = 1
		}
		if len(r.list)-oldest < 2 || r.sum-r.short[oldest] <= r.lim.Total {
			return
		}
		r.sum -= r.short[oldest]
		r.list = append(r.list[:oldest], r.list[oldest+1:]...)
		r.short = append(r.short[:oldest], r.short[oldest+1:]...)
		r.omitted++
	}
}

// answer is the last assistant text before the kept part (position
// keptAt) that did not end aborted or in an error, and its entry.
func (v *view) answer(keptAt int) (string, string) {
	for i := keptAt - 1; i >= 0; i-- {
		e := v.branch[i]
		if e.Type != "message" || e.Role != "assistant" {
			continue
		}
		content, ok := v.visible(e)
		if !ok || content == nil {
			continue
		}
		if stop, _ := session.MemberString(e.Message(), "stopReason"); stop == "aborted" || stop == "error" {
			continue
		}
		if t := answerText(content, showBytes(v.lim)); strings.TrimSpace(t) != "" {
			return strings.TrimSpace(t), e.ID
		}
	}
	return "", ""
}

// toolCall is one toolCall block of an assistant message.
type toolCall struct {
	ID, Name  string
	Arguments json.RawMessage
}

// toolCalls returns the tool calls of an assistant message's content,
// reading each block's members once, in whatever order they come.
func toolCalls(content json.RawMessage) []toolCall {
	var out []toolCall
	session.Elements(content, func(block json.RawMessage) bool {
		var c toolCall
		typ := ""
		session.Members(block, func(k string, v json.RawMessage) bool {
			switch k {
			case "type":
				typ, _, _ = session.StringPrefix(v, len(v))
			case "id":
				c.ID, _, _ = session.StringPrefix(v, len(v))
			case "name":
				c.Name, _, _ = session.StringPrefix(v, len(v))
			case "arguments":
				c.Arguments = v
			}
			return true
		})
		if typ == "toolCall" {
			out = append(out, c)
		}
		return true
	})
	return out
}

// minute shortens an ISO timestamp to "2006-01-02 15:04".
func minute(ts string) string {
	if len(ts) >= 16 && ts[10] == 'T' {
		return ts[:10] + " " + ts[11:16]
	}
	return ts
}

// isAgentTool names the tools that launch subagents.
func isAgentTool(name string) bool {
	switch name {
	case "Agent", "agent", "subagent", "Task":
		return true
	}
	return false
}

var worktreeRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?:/[A-Za-z0-9._@+~-]+)+/worktrees/[A-Za-z0-9._@+-]+`)
})

// subagents merges what the branch says about each subagent: launch calls
// and their results, notifications and records. A subagent with a launch
// and no terminal state is RUNNING (an inference: one lost in a pi restart
// stays RUNNING).
type subagents struct {
	byID      map[string]*Subagent
	order     []string
	calls     map[string]json.RawMessage // toolCallId -> launch arguments
	callTime  map[string]string
	worktrees []string
}

func newSubagents() *subagents {
	return &subagents{byID: map[string]*Subagent{}, calls: map[string]json.RawMessage{}, callTime: map[string]string{}}
}

func (s *subagents) get(id string) *Subagent {
	a := s.byID[id]
	if a == nil {
		a = &Subagent{ID: id}
		s.byID[id] = a
		s.order = append(s.order, id)
	}
	return a
}

func (s *subagents) launchCall(callID string, args json.RawMessage, ts string) {
	s.calls[callID] = args
	s.callTime[callID] = ts
}

var agentIDRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)\b(?:agent[ _-]?id|id)\s*[:=]\s*["']?([A-Za-z0-9._-]{3,64})`)
})

func (s *subagents) launchResult(callID, text string, details json.RawMessage, ts string) {
	fields := obj(details)
	args := obj(s.calls[callID])
	id := first(fields, "id", "agentId", "agent_id", "runId")
	if id == "" {
		if m := agentIDRE().FindStringSubmatch(text); m != nil {
			id = m[1]
		} else {
			id = callID
		}
	}
	a := s.get(id)
	a.Type = firstNonEmpty(a.Type, first(fields, "type", "agentType", "subagent_type", "agent"), first(args, "subagent_type", "type", "agent", "agentType"))
	a.Description = firstNonEmpty(a.Description, first(fields, "description"), first(args, "description", "task"))
	state := strings.ToLower(first(fields, "status", "state"))
	if state == "" {
		state = "running"
	}
	if a.State == "" || !terminal(a.State) {
		a.State = state
	}
	a.Started = firstNonEmpty(a.Started, s.callTime[callID], ts)
	s.place(a, fields, text)
	if terminal(state) && a.Result == "" {
		a.Result = firstNonEmpty(first(fields, "result", "summary"), text)
	}
}

func (s *subagents) notification(text string, details json.RawMessage, ts string) {
	fields := obj(details)
	id := first(fields, "id", "agentId", "agent_id", "runId")
	if id == "" {
		if m := agentIDRE().FindStringSubmatch(text); m != nil {
			id = m[1]
		} else {
			return
		}
	}
	a := s.get(id)
	a.Type = firstNonEmpty(a.Type, first(fields, "type", "agentType", "agent"))
	a.Description = firstNonEmpty(a.Description, first(fields, "description"))
	if st := strings.ToLower(first(fields, "status", "state")); st != "" {
		a.State = st
	} else {
		a.State = "completed"
	}
	a.Started = firstNonEmpty(a.Started, ts)
	s.place(a, fields, text)
	if r := firstNonEmpty(first(fields, "result", "summary"), text); r != "" {
		a.Result = r
	}
}

func (s *subagents) record(data json.RawMessage, ts string) {
	fields := obj(data)
	id := first(fields, "id", "agentId", "agent_id", "runId")
	if id == "" {
		return
	}
	a := s.get(id)
	a.Type = firstNonEmpty(first(fields, "type", "agentType", "agent"), a.Type)
	a.Description = firstNonEmpty(first(fields, "description", "task"), a.Description)
	if st := strings.ToLower(first(fields, "status", "state")); st != "" {
		a.State = st
	}
	a.Started = firstNonEmpty(a.Started, first(fields, "startedAt", "started"), ts)
	s.place(a, fields, "")
	if r := first(fields, "result", "summary"); r != "" {
		a.Result = r
	}
}

// place sets a subagent's worktree and branch from its fields or text.
func (s *subagents) place(a *Subagent, fields map[string]any, text string) {
	a.Branch = firstNonEmpty(first(fields, "branch"), a.Branch)
	wt := first(fields, "worktree", "worktreePath", "cwd")
	if wt == "" || !strings.Contains(wt, "/worktrees/") {
		if m := worktreeRE().FindString(text); m != "" {
			wt = m
		}
	}
	if wt != "" {
		a.Worktree = wt
	}
	for _, w := range append(worktreeRE().FindAllString(text, -1), a.Worktree) {
		if strings.Contains(w, "/worktrees/") && !contains(s.worktrees, w) {
			s.worktrees = append(s.worktrees, w)
		}
	}
}

func (s *subagents) list() ([]Subagent, []string) {
	var out []Subagent
	for _, id := range s.order {
		a := *s.byID[id]
		a.Running = !terminal(a.State)
		out = append(out, a)
	}
	// RUNNING first; otherwise the order they appeared in.
	sort.SliceStable(out, func(i, j int) bool { return out[i].Running && !out[j].Running })
	wt := append([]string(nil), s.worktrees...)
	sort.Strings(wt)
	return out, wt
}

func terminal(state string) bool {
	switch state {
	case "completed", "complete", "done", "finished", "failed", "error", "errored", "cancelled", "canceled", "killed", "stopped", "succeeded", "success", "aborted":
		return true
	}
	return false
}

func obj(raw json.RawMessage) map[string]any {
	var m map[string]any
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &m)
	}
	return m
}

// first returns the first of the keys whose value is a string (or a
// number) in m.
func first(m map[string]any, keys ...string) string {
	for _, k := range keys {
		switch v := m[k].(type) {
		case string:
			if v != "" {
				return v
			}
		case float64:
			return strconv.FormatFloat(v, 'f', -1, 64)
		}
	}
	return ""
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
