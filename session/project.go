package session

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// Message is one message of the context pi builds for the model, in pi's
// own form (an AgentMessage), with the entry it comes from.
type Message struct {
	// EntryID is the id of the entry the message comes from. A compaction
	// entry gives two messages: its system checkpoint and its summary.
	EntryID string
	// Role is the AgentMessage role: "system", "user", "assistant",
	// "toolResult", "bashExecution", "custom", "branchSummary" or
	// "compactionSummary" (or whatever unknown role a file holds).
	Role string
	// Raw is the AgentMessage as JSON. For message entries it is the stored
	// message (shared with Entry.Raw, do not modify it); other messages are
	// built the way pi builds them.
	Raw json.RawMessage

	src *Entry // the message entry Raw is stored in, unchanged; caches Tokens
}

// The texts pi wraps summaries in when it sends them to the model
// (COMPACTION_SUMMARY_PREFIX/SUFFIX and BRANCH_SUMMARY_PREFIX/SUFFIX in pi's
// core/messages.js).
const (
	CompactionSummaryPrefix = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
	CompactionSummarySuffix = "\n</summary>"
	BranchSummaryPrefix     = "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
	BranchSummarySuffix     = "</summary>"
)

// ContextEntries returns the entries of branch that make up the model
// context, as pi's buildContextEntries does: without a compaction, the whole
// branch; otherwise the latest compaction first, then the entries from its
// firstKeptEntryId up to it (system messages left out, as the compaction
// carries their replay), then everything after it. A retain-none compaction
// names itself as firstKeptEntryId, so nothing before it is kept.
func ContextEntries(branch []*Entry) []*Entry {
	var compaction *Entry
	for _, e := range branch {
		if e.Type == "compaction" {
			compaction = e
		}
	}
	if compaction == nil {
		return branch
	}
	at := -1
	for i, e := range branch {
		if e.ID == compaction.ID {
			at = i
			break
		}
	}
	firstKept := memberSpan(compaction.Raw, "firstKeptEntryId")
	kept := false
	out := []*Entry{compaction}
	for _, e := range branch[:at] {
		if firstKept.isString(compaction.Raw) && e.ID == firstKept.str(compaction.Raw) {
			kept = true
		}
		if kept && !(e.Type == "message" && e.Role == "system") {
			out = append(out, e)
		}
	}
	return append(out, branch[at+1:]...)
}

// Project returns the messages pi builds for the model from branch (a path
// from [File.Branch]): pi's buildSessionProjection. Compaction is applied as
// in [ContextEntries]; the latest context_edit for each entry in that range
// replaces the entry's content or, with a null replacement, drops it;
// custom_message, branch_summary and compaction entries become the messages
// pi makes of them; entries that are not part of the context (labels,
// model changes, custom entries, ...) give nothing.
func Project(branch []*Entry) []Message {
	msgs, _ := projectEntries(branch)
	return msgs
}

// projected is one context entry with the messages it contributes.
type projected struct {
	entry    *Entry
	messages []Message
}

// projectEntries is pi's buildSessionProjection: the messages, and the
// context entries with the messages each contributes.
func projectEntries(branch []*Entry) ([]Message, []projected) {
	entries := ContextEntries(branch)
	edits := make(map[string]*Entry)
	for _, e := range entries {
		if e.Type == "context_edit" {
			if t := memberSpan(e.Raw, "targetId"); t.isString(e.Raw) {
				edits[t.str(e.Raw)] = e
			}
		}
	}
	msgs := make([]Message, 0, len(entries))
	bounds := make([]int, len(entries)+1)
	for i, e := range entries {
		bounds[i] = len(msgs)
		// An older compaction kept inside the range contributes nothing.
		if e.Type == "compaction" && i > 0 {
			continue
		}
		n := len(msgs)
		msgs = appendEntryMessages(msgs, e)
		if edit := edits[e.ID]; edit != nil {
			msgs = append(msgs[:n], applyEdit(msgs[n:], edit)...)
		}
	}
	bounds[len(entries)] = len(msgs)
	out := make([]projected, len(entries))
	for i, e := range entries {
		out[i] = projected{entry: e, messages: msgs[bounds[i]:bounds[i+1]:bounds[i+1]]}
	}
	return msgs, out
}

// Settings are the model and thinking level in effect at the end of a branch.
type Settings struct {
	Provider      string // "" if the branch names no model
	ModelID       string
	ThinkingLevel string // "off" if the branch sets none
}

// CurrentSettings returns the model and thinking level in effect at the end
// of branch, as pi's getSessionContextSettings finds them: the last
// model_change entry or assistant message names the model, the last
// thinking_level_change entry the level.
func CurrentSettings(branch []*Entry) Settings {
	s := Settings{ThinkingLevel: "off"}
	model, level := false, false
	for i := len(branch) - 1; i >= 0 && !(model && level); i-- {
		e := branch[i]
		switch {
		case e.Type == "thinking_level_change" && !level:
			level = true
			s.ThinkingLevel = memberSpan(e.Raw, "thinkingLevel").str(e.Raw)
		case e.Type == "model_change" && !model:
			model = true
			s.Provider = memberSpan(e.Raw, "provider").str(e.Raw)
			s.ModelID = memberSpan(e.Raw, "modelId").str(e.Raw)
		case e.Type == "message" && e.Role == "assistant" && !model:
			model = true
			m := e.Raw[e.msg.start:e.msg.end]
			s.Provider = memberSpan(m, "provider").str(m)
			s.ModelID = memberSpan(m, "model").str(m)
		}
	}
	return s
}

// appendEntryMessages appends the messages of e: pi's
// sessionEntryToContextMessages.
func appendEntryMessages(dst []Message, e *Entry) []Message {
	raw := e.Raw
	switch e.Type {
	case "message":
		msg := Message{EntryID: e.ID, Role: e.Role, Raw: raw[e.msg.start:e.msg.end:e.msg.end], src: e}
		if e.nullContent {
			switch e.Role {
			case "system":
				msg.Raw, msg.src = withMember(msg.Raw, "content", []byte(`""`)), nil
			case "user", "assistant", "toolResult":
				msg.Raw, msg.src = withMember(msg.Raw, "content", []byte(`[]`)), nil
			}
		}
		return append(dst, msg)
	case "custom_message":
		var o object
		o.str("role", "custom")
		if s := memberSpan(raw, "customType"); s.ok() {
			o.raw("customType", raw[s.start:s.end])
		}
		if s := memberSpan(raw, "content"); s.ok() && !s.isNull(raw) {
			o.raw("content", raw[s.start:s.end])
		} else {
			o.raw("content", []byte(`[]`))
		}
		if s := memberSpan(raw, "display"); s.ok() {
			o.raw("display", raw[s.start:s.end])
		}
		if s := memberSpan(raw, "details"); s.ok() {
			o.raw("details", raw[s.start:s.end])
		}
		o.raw("timestamp", jsTime(e.Timestamp))
		return append(dst, Message{EntryID: e.ID, Role: "custom", Raw: o.bytes()})
	case "branch_summary":
		s := memberSpan(raw, "summary")
		if !s.isString(raw) || s.end-s.start == 2 {
			return dst
		}
		var o object
		o.str("role", "branchSummary")
		o.raw("summary", raw[s.start:s.end])
		if f := memberSpan(raw, "fromId"); f.ok() {
			o.raw("fromId", raw[f.start:f.end])
		}
		o.raw("timestamp", jsTime(e.Timestamp))
		return append(dst, Message{EntryID: e.ID, Role: "branchSummary", Raw: o.bytes()})
	case "compaction":
		var o object
		o.str("role", "compactionSummary")
		if s := memberSpan(raw, "summary"); s.ok() {
			o.raw("summary", raw[s.start:s.end])
		}
		if s := memberSpan(raw, "tokensBefore"); s.ok() {
			o.raw("tokensBefore", raw[s.start:s.end])
		}
		o.raw("timestamp", jsTime(e.Timestamp))
		summary := Message{EntryID: e.ID, Role: "compactionSummary", Raw: o.bytes()}
		if s := memberSpan(raw, "systemMessage"); s.isObject(raw) {
			sys := raw[s.start:s.end:s.end]
			return append(dst, Message{EntryID: e.ID, Role: memberSpan(sys, "role").str(sys), Raw: sys}, summary)
		}
		return append(dst, summary)
	}
	return dst
}

// applyEdit is pi's projectContextEntry for an entry with a context edit.
func applyEdit(msgs []Message, edit *Entry) []Message {
	rep := memberSpan(edit.Raw, "replacement")
	if !rep.isObject(edit.Raw) {
		return nil // null: the entry leaves the context
	}
	repRaw := edit.Raw[rep.start:rep.end]
	c := memberSpan(repRaw, "content")
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		out[i] = m
		out[i].src = nil
		switch m.Role {
		case "user", "assistant", "toolResult", "custom":
		default:
			continue
		}
		if !c.ok() {
			// {...message, content: undefined} loses its content.
			out[i].Raw = withoutMember(m.Raw, "content")
			continue
		}
		content := repRaw[c.start:c.end]
		if (m.Role == "assistant" || m.Role == "toolResult") && c.isString(repRaw) {
			var o object
			o.str("type", "text")
			o.raw("text", content)
			content = append(append([]byte{'['}, o.bytes()...), ']')
		}
		out[i].Raw = withMember(m.Raw, "content", content)
	}
	return out
}

// jsTime is `new Date(ts).getTime()` as JSON: milliseconds, or null when
// the timestamp does not parse.
func jsTime(ts string) []byte {
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		if t, err = time.Parse("2006-01-02", ts); err != nil {
			return []byte("null")
		}
	}
	return strconv.AppendInt(nil, t.UnixMilli(), 10)
}

// LLM returns the message as pi hands it to the provider (pi's
// convertToLlm): bash executions, custom messages and summaries become user
// messages, system, user, assistant and tool result messages stay as they
// are. ok is false for messages pi leaves out (a bash execution excluded
// from the context, or an unknown role).
func (m Message) LLM() (raw json.RawMessage, ok bool) {
	ts := memberSpan(m.Raw, "timestamp")
	user := func(content []byte) json.RawMessage {
		var o object
		o.str("role", "user")
		o.raw("content", content)
		if ts.ok() {
			o.raw("timestamp", m.Raw[ts.start:ts.end])
		}
		return o.bytes()
	}
	text := func(s string) []byte {
		var o object
		o.str("type", "text")
		o.str("text", s)
		return append(append([]byte{'['}, o.bytes()...), ']')
	}
	switch m.Role {
	case "system", "user", "assistant", "toolResult":
		return m.Raw, true
	case "custom":
		c := memberSpan(m.Raw, "content")
		switch {
		case c.isString(m.Raw):
			return user(text(c.str(m.Raw))), true
		case c.ok():
			return user(m.Raw[c.start:c.end]), true
		}
		var o object
		o.str("role", "user")
		if ts.ok() {
			o.raw("timestamp", m.Raw[ts.start:ts.end])
		}
		return o.bytes(), true
	case "branchSummary":
		return user(text(BranchSummaryPrefix + memberSpan(m.Raw, "summary").str(m.Raw) + BranchSummarySuffix)), true
	case "compactionSummary":
		return user(text(CompactionSummaryPrefix + memberSpan(m.Raw, "summary").str(m.Raw) + CompactionSummarySuffix)), true
	case "bashExecution":
		if truthy(m.Raw, memberSpan(m.Raw, "excludeFromContext")) {
			return nil, false
		}
		return user(text(bashExecutionText(m.Raw))), true
	}
	return nil, false
}

// LLMMessages converts a projection to what the provider receives (pi's
// convertToLlm), dropping the messages pi leaves out.
func LLMMessages(msgs []Message) []json.RawMessage {
	out := make([]json.RawMessage, 0, len(msgs))
	for _, m := range msgs {
		if raw, ok := m.LLM(); ok {
			out = append(out, raw)
		}
	}
	return out
}

// bashExecutionText is pi's bashExecutionToText.
func bashExecutionText(raw []byte) string {
	get := func(key string) span { return memberSpan(raw, key) }
	var b strings.Builder
	b.WriteString("Ran `" + jsString(raw, get("command")) + "`\n")
	if out := get("output"); truthy(raw, out) {
		b.WriteString("```\n" + jsString(raw, out) + "\n```")
	} else {
		b.WriteString("(no output)")
	}
	code := get("exitCode")
	switch {
	case truthy(raw, get("cancelled")):
		b.WriteString("\n\n(command cancelled)")
	case code.ok() && !code.isNull(raw) && !(code.isNumber(raw) && isZeroNumber(raw[code.start:code.end])):
		b.WriteString("\n\nCommand exited with code " + jsString(raw, code))
	}
	if path := get("fullOutputPath"); truthy(raw, get("truncated")) && truthy(raw, path) {
		b.WriteString("\n\n[Output truncated. Full output: " + jsString(raw, path) + "]")
	}
	return b.String()
}

// truthy is JavaScript truthiness of a JSON value (absent is undefined).
func truthy(raw []byte, s span) bool {
	if !s.ok() {
		return false
	}
	switch v := raw[s.start:s.end]; v[0] {
	case 'n', 'f':
		return false
	case '"':
		return len(v) > 2
	case '{', '[', 't':
		return true
	default:
		return !isZeroNumber(v)
	}
}

// jsString is `${value}` for a JSON value: strings as they are, numbers in
// JavaScript's notation, other values as their JSON text.
func jsString(raw []byte, s span) string {
	switch {
	case !s.ok():
		return "undefined"
	case s.isString(raw):
		return s.str(raw)
	case s.isNumber(raw):
		f, err := strconv.ParseFloat(string(raw[s.start:s.end]), 64)
		if err == nil {
			return jsNumber(f)
		}
	}
	return string(raw[s.start:s.end])
}
