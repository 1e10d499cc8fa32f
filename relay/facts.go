package relay

import (
	"bytes"
	"encoding/json"
	"regexp"
	"sort"
	"strconv"
	"strings"

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
	Earlier     []string
	Constraints []Constraint
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

// view is one branch as the model sees it: the projection of the whole
// branch (not only the part after the latest compaction) with context_edit
// applied, and the entries of the current context.
type view struct {
	branch  []*session.Entry
	index   map[string]int // entry id -> position in branch
	msgs    []session.Message
	context map[string]bool // entry ids in the current context
}

func newView(branch []*session.Entry) *view {
	v := &view{branch: branch, index: make(map[string]int, len(branch)), context: map[string]bool{}}
	noCompactions := make([]*session.Entry, 0, len(branch))
	for i, e := range branch {
		v.index[e.ID] = i
		if e.Type != "compaction" {
			noCompactions = append(noCompactions, e)
		}
	}
	// Without its compactions, the branch projects whole, every edit applied.
	v.msgs = session.Project(noCompactions)
	for _, e := range session.ContextEntries(branch) {
		v.context[e.ID] = true
	}
	return v
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
	for i := len(v.msgs) - 1; i >= 0; i-- {
		if v.msgs[i].Role == "user" && v.context[v.msgs[i].EntryID] {
			last = i
			break
		}
	}
	if last < 0 {
		return piFirstKept
	}
	id := v.msgs[last].EntryID
	chars := 0
	for _, m := range v.msgs[last:] {
		chars += m.Tokens() * 4
	}
	piAt, ok := v.index[piFirstKept]
	if chars > tailMaxChars && ok && piAt > v.index[id] {
		return piFirstKept
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
	keptAt, ok := v.index[keptFrom]
	if !ok {
		keptAt = len(branch)
	}
	for _, e := range branch[:keptAt] {
		if v.context[e.ID] && e.Type != "compaction" {
			f.Leaving++
		}
		if e.Type == "compaction" {
			if d := session.Member(e.Raw, "details"); d != nil {
				if r := session.Member(d, "relay"); string(r) == "true" {
					f.Relays++
				}
			}
		}
	}
	var users []UserText
	var answers []session.Message
	subs := newSubagents()
	files := map[string]*FileChange{}
	var order []string
	byEntry := map[string][]session.Message{}
	for _, m := range v.msgs {
		byEntry[m.EntryID] = append(byEntry[m.EntryID], m)
	}
	// One pass in branch order, so a later record of a subagent wins.
	for at, e := range branch {
		if e.Type == "custom" {
			// subagents:record entries are extension state, not messages.
			if ct, _ := session.MemberString(e.Raw, "customType"); ct == "subagents:record" {
				subs.record(session.Member(e.Raw, "data"), e.Timestamp)
			}
			continue
		}
		for _, m := range byEntry[e.ID] {
			switch m.Role {
			case "user":
				ut := string(text(session.Member(m.Raw, "content"), 0))
				users = append(users, UserText{EntryID: m.EntryID, Text: ut})
				if at >= keptAt {
					continue
				}
				if v.context[m.EntryID] {
					f.Instructions = append(f.Instructions, Instruction{EntryID: m.EntryID, Time: minute(e.Timestamp), Text: ut})
				} else {
					f.Earlier = append(f.Earlier, ut)
				}
			case "assistant":
				if at < keptAt && bytes.Contains(m.Raw, []byte(`"text"`)) {
					answers = append(answers, m)
				}
				if !bytes.Contains(m.Raw, []byte(`"toolCall"`)) {
					continue
				}
				for _, c := range toolCalls(m) {
					name := strings.ToLower(c.Name)
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
					order = appendMoved(order, p)
				}
			case "toolResult":
				name, _ := session.MemberString(m.Raw, "toolName")
				if !isAgentTool(name) {
					continue
				}
				a, err := m.Decode()
				if err != nil {
					continue
				}
				subs.launchResult(a.ToolCallID, contentText(a.Content), a.Details, e.Timestamp)
			case "custom":
				ct, _ := session.MemberString(m.Raw, "customType")
				if ct != "subagent-notification" {
					continue
				}
				a, err := m.Decode()
				if err != nil {
					continue
				}
				subs.notification(contentText(a.Content), session.Member(m.Raw, "details"), e.Timestamp)
			}
		}
	}
	// The final answer: the last assistant text before the kept part.
	for i := len(answers) - 1; i >= 0; i-- {
		a, err := answers[i].Decode()
		if err != nil || a.StopReason == "aborted" || a.StopReason == "error" {
			continue
		}
		if t := strings.TrimSpace(a.Content.Text("\n")); t != "" {
			f.Answer, f.AnswerEntry = t, answers[i].EntryID
			break
		}
	}
	f.Constraints = ExtractConstraints(users)
	f.Subagents, f.Worktrees = subs.list()
	for i := len(order) - 1; i >= 0; i-- {
		f.Files = append(f.Files, *files[order[i]])
	}
	return f
}

// toolCall is one toolCall block of an assistant message.
type toolCall struct {
	ID, Name  string
	Arguments json.RawMessage
}

// toolCalls returns the tool calls of an assistant message. pi writes a
// block's type first, so the blocks are found without decoding the text
// around them; a message where that does not hold is decoded whole.
func toolCalls(m session.Message) []toolCall {
	content := session.Member(m.Raw, "content")
	marker := []byte(`{"type":"toolCall"`)
	var out []toolCall
	for i := 0; ; {
		j := bytes.Index(content[i:], marker)
		if j < 0 {
			break
		}
		block := content[i+j:]
		id, _ := session.MemberString(block, "id")
		name, _ := session.MemberString(block, "name")
		out = append(out, toolCall{ID: id, Name: name, Arguments: session.Member(block, "arguments")})
		i += j + len(marker)
	}
	if len(out) == bytes.Count(content, []byte(`"toolCall"`)) {
		return out
	}
	a, err := m.Decode()
	if err != nil {
		return nil
	}
	out = out[:0]
	for _, b := range a.Content.Blocks {
		if b.Type == "toolCall" {
			out = append(out, toolCall{ID: b.ID, Name: b.Name, Arguments: b.Arguments})
		}
	}
	return out
}

// appendMoved appends p, removing an earlier occurrence: the order of last
// change.
func appendMoved(order []string, p string) []string {
	for i, q := range order {
		if q == p {
			order = append(order[:i], order[i+1:]...)
			break
		}
	}
	return append(order, p)
}

func contentText(c session.Content) string {
	var parts []string
	for _, b := range c.Blocks {
		switch b.Type {
		case "text":
			parts = append(parts, b.Text)
		case "image":
			parts = append(parts, "[image]")
		}
	}
	return strings.Join(parts, "\n")
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

var worktreeRE = regexp.MustCompile(`(?:/[A-Za-z0-9._@+~-]+)+/worktrees/[A-Za-z0-9._@+-]+`)

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

var agentIDRE = regexp.MustCompile(`(?i)\b(?:agent[ _-]?id|id)\s*[:=]\s*["']?([A-Za-z0-9._-]{3,64})`)

func (s *subagents) launchResult(callID, text string, details json.RawMessage, ts string) {
	fields := obj(details)
	args := obj(s.calls[callID])
	id := first(fields, "id", "agentId", "agent_id", "runId")
	if id == "" {
		if m := agentIDRE.FindStringSubmatch(text); m != nil {
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
		if m := agentIDRE.FindStringSubmatch(text); m != nil {
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
		if m := worktreeRE.FindString(text); m != "" {
			wt = m
		}
	}
	if wt != "" {
		a.Worktree = wt
	}
	for _, w := range append(worktreeRE.FindAllString(text, -1), a.Worktree) {
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
