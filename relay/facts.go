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
	// Earlier are the user messages before that boundary, oldest first:
	// condensed to one line.
	Earlier []string
	// Pins are the rules the user pinned with /pin on this branch, in
	// the order pinned: verbatim, first in the note, never cut.
	Pins []string
	// Constraints are the user's standing rules, current and
	// superseded, oldest first.
	Constraints []rules.Rule
	// Task is the first user message of the branch (the task statement)
	// when it left the context, and its entry; "" when it is still in
	// the kept part.
	Task      string
	TaskEntry string
	TaskTime  string
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
}

// Instruction is one user message.
type Instruction struct {
	EntryID string
	Time    string // "2006-01-02 15:04", from the entry
	Text    string
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
}

func newView(branch []*session.Entry) *view {
	v := &view{branch: branch, edits: map[string]*session.Entry{}}
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
	var users []rules.Message
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
			ut := string(text(content, 0))
			users = append(users, rules.Message{EntryID: e.ID, Text: ut})
			if len(users) == 1 && at < keptAt {
				f.Task, f.TaskEntry, f.TaskTime = ut, e.ID, minute(e.Timestamp)
			}
			if at >= keptAt {
				continue
			}
			if v.context[at] {
				f.Instructions = append(f.Instructions, Instruction{EntryID: e.ID, Time: minute(e.Timestamp), Text: ut})
			} else if e.ID != f.TaskEntry {
				// The task statement has its own section.
				f.Earlier = append(f.Earlier, ut)
			}
		case "assistant":
			if !bytes.Contains(content, []byte(`"toolCall"`)) {
				continue
			}
			for _, c := range toolCalls(content) {
				name := strings.ToLower(c.Name)
				if name == "bash" {
					if cmd, _ := session.MemberString(c.Arguments, "command"); cmd != "" {
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
			if cmd := firstString(msg, "command"); cmd != "" {
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
			subs.launchResult(firstString(msg, "toolCallId"), string(text(content, 0)), session.Member(msg, "details"), e.Timestamp)
		case "custom":
			holder := e.Raw
			if e.Type == "message" {
				holder = e.Message()
			}
			if firstString(holder, "customType") != "subagent-notification" {
				continue
			}
			subs.notification(string(text(content, 0)), session.Member(holder, "details"), e.Timestamp)
		}
	}
	f.Answer, f.AnswerEntry = v.answer(keptAt)
	f.Constraints = rules.Extract(users)
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
		if t, _, _ := session.TextBlocks(content, "\n", len(content)); strings.TrimSpace(t) != "" {
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
