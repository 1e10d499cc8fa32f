package session

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/pi-session/pi-session/clip"
)

// Payload is the type-specific part of an entry, decoded by [Entry.Decode]:
// one of *MessageEntry, *ModelChangeEntry, *ThinkingLevelChangeEntry,
// *UsageEntry, *CompactionEntry, *ContextEditEntry, *BranchSummaryEntry,
// *CustomEntry, *CustomMessageEntry, *LabelEntry, *SessionInfoEntry, or
// *UnknownEntry for a type this package does not know.
type Payload interface{ payload() }

// MessageEntry holds an AgentMessage.
type MessageEntry struct {
	Message AgentMessage `json:"message"`
}

// ModelChangeEntry records a model switch.
type ModelChangeEntry struct {
	Provider string `json:"provider"`
	ModelID  string `json:"modelId"`
}

// ThinkingLevelChangeEntry records a thinking level switch.
type ThinkingLevelChangeEntry struct {
	ThinkingLevel string `json:"thinkingLevel"`
}

// UsageEntry records model usage outside assistant messages (e.g. cache warming).
type UsageEntry struct {
	Kind     string `json:"kind"`
	Provider string `json:"provider"`
	Model    string `json:"model"`
	Usage    Usage  `json:"usage"`
	Note     string `json:"note,omitempty"`
}

// CompactionEntry replaces the context before FirstKeptEntryID with Summary.
// FirstKeptEntryID equal to the entry's own id keeps nothing (retain-none).
type CompactionEntry struct {
	Summary          string          `json:"summary"`
	FirstKeptEntryID string          `json:"firstKeptEntryId"`
	TokensBefore     int             `json:"tokensBefore"`
	Details          json.RawMessage `json:"details,omitempty"`
	Usage            *Usage          `json:"usage,omitempty"`
	FromHook         bool            `json:"fromHook,omitempty"`
	SystemMessage    *AgentMessage   `json:"systemMessage,omitempty"`
}

// ContextEditEntry edits the model context contribution of TargetID:
// Replacement nil drops it, otherwise its content is replaced.
type ContextEditEntry struct {
	TargetID    string       `json:"targetId"`
	Replacement *Replacement `json:"replacement"`
}

// Replacement is the new content of a context edit.
type Replacement struct {
	Content Content `json:"content"`
}

// BranchSummaryEntry summarizes the branch left at FromID.
type BranchSummaryEntry struct {
	FromID   string          `json:"fromId"`
	Summary  string          `json:"summary"`
	Details  json.RawMessage `json:"details,omitempty"`
	Usage    *Usage          `json:"usage,omitempty"`
	FromHook bool            `json:"fromHook,omitempty"`
}

// CustomEntry is extension state; it never reaches the model.
type CustomEntry struct {
	CustomType string          `json:"customType"`
	Data       json.RawMessage `json:"data,omitempty"`
}

// CustomMessageEntry is an extension message that enters the context as a
// user message.
type CustomMessageEntry struct {
	CustomType string          `json:"customType"`
	Content    Content         `json:"content"`
	Display    bool            `json:"display"`
	Details    json.RawMessage `json:"details,omitempty"`
}

// LabelEntry sets (or, with Label nil or empty, clears) a bookmark on TargetID.
type LabelEntry struct {
	TargetID string  `json:"targetId"`
	Label    *string `json:"label"`
}

// SessionInfoEntry names the session.
type SessionInfoEntry struct {
	Name string `json:"name"`
}

// UnknownEntry is an entry of a type this package does not know; Raw is the
// whole entry.
type UnknownEntry struct {
	Raw json.RawMessage
}

func (*MessageEntry) payload()             {}
func (*ModelChangeEntry) payload()         {}
func (*ThinkingLevelChangeEntry) payload() {}
func (*UsageEntry) payload()               {}
func (*CompactionEntry) payload()          {}
func (*ContextEditEntry) payload()         {}
func (*BranchSummaryEntry) payload()       {}
func (*CustomEntry) payload()              {}
func (*CustomMessageEntry) payload()       {}
func (*LabelEntry) payload()               {}
func (*SessionInfoEntry) payload()         {}
func (*UnknownEntry) payload()             {}

// Decode decodes the type-specific members of the entry.
func (e *Entry) Decode() (Payload, error) {
	var p Payload
	switch e.Type {
	case "message":
		p = new(MessageEntry)
	case "model_change":
		p = new(ModelChangeEntry)
	case "thinking_level_change":
		p = new(ThinkingLevelChangeEntry)
	case "usage":
		p = new(UsageEntry)
	case "compaction":
		p = new(CompactionEntry)
	case "context_edit":
		p = new(ContextEditEntry)
	case "branch_summary":
		p = new(BranchSummaryEntry)
	case "custom":
		p = new(CustomEntry)
	case "custom_message":
		p = new(CustomMessageEntry)
	case "label":
		p = new(LabelEntry)
	case "session_info":
		p = new(SessionInfoEntry)
	default:
		return &UnknownEntry{Raw: e.Raw}, nil
	}
	if err := json.Unmarshal(e.Raw, p); err != nil {
		return nil, fmt.Errorf("session: line %d: decode %s entry: %w", e.Line, e.Type, err)
	}
	if m, ok := p.(*MessageEntry); ok {
		m.Message.Raw = e.Raw[e.msg.start:e.msg.end:e.msg.end]
	}
	return p, nil
}

// AgentMessage is a decoded message. Which members are set depends on Role;
// Raw keeps the message as JSON.
type AgentMessage struct {
	Role      string  `json:"role"`
	Content   Content `json:"content"`
	Timestamp int64   `json:"timestamp"`

	// assistant
	API          string `json:"api,omitempty"`
	Provider     string `json:"provider,omitempty"`
	Model        string `json:"model,omitempty"`
	Usage        *Usage `json:"usage,omitempty"`
	StopReason   string `json:"stopReason,omitempty"`
	ErrorMessage string `json:"errorMessage,omitempty"`

	// toolResult
	ToolCallID string          `json:"toolCallId,omitempty"`
	ToolName   string          `json:"toolName,omitempty"`
	IsError    bool            `json:"isError,omitempty"`
	Details    json.RawMessage `json:"details,omitempty"`

	// system
	Sections     map[string]*string `json:"sections,omitempty"`
	ToolsAdded   []json.RawMessage  `json:"toolsAdded,omitempty"`
	ToolsRemoved []struct {
		Name string `json:"name"`
	} `json:"toolsRemoved,omitempty"`

	// bashExecution
	Command            string `json:"command,omitempty"`
	Output             string `json:"output,omitempty"`
	ExitCode           *int   `json:"exitCode,omitempty"`
	Cancelled          bool   `json:"cancelled,omitempty"`
	Truncated          bool   `json:"truncated,omitempty"`
	FullOutputPath     string `json:"fullOutputPath,omitempty"`
	ExcludeFromContext bool   `json:"excludeFromContext,omitempty"`

	// custom
	CustomType string `json:"customType,omitempty"`
	Display    bool   `json:"display,omitempty"`

	// branchSummary, compactionSummary
	Summary      string `json:"summary,omitempty"`
	TokensBefore int    `json:"tokensBefore,omitempty"`
	FromID       string `json:"fromId,omitempty"`

	Raw json.RawMessage `json:"-"`
}

// Decode decodes the message.
func (m Message) Decode() (*AgentMessage, error) {
	a := &AgentMessage{Raw: m.Raw}
	if err := json.Unmarshal(m.Raw, a); err != nil {
		return nil, fmt.Errorf("session: decode %s message of entry %q: %w", clip.Echo(m.Role), clip.Echo(m.EntryID), err)
	}
	return a, nil
}

// Content is message content: pi allows a plain string where content
// blocks are expected. A string decodes to one text block with String set.
type Content struct {
	Blocks []Block
	String bool // the content was a plain string
}

// Text joins the text blocks with sep.
func (c Content) Text(sep string) string {
	var b bytes.Buffer
	n := 0
	for _, blk := range c.Blocks {
		if blk.Type == "text" {
			if n > 0 {
				b.WriteString(sep)
			}
			n++
			b.WriteString(blk.Text)
		}
	}
	return b.String()
}

// UnmarshalJSON accepts a string or an array of blocks (null is empty).
func (c *Content) UnmarshalJSON(b []byte) error {
	*c = Content{}
	switch {
	case bytes.Equal(b, []byte("null")):
		return nil
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*c = Content{Blocks: []Block{{Type: "text", Text: s}}, String: true}
		return nil
	}
	return json.Unmarshal(b, &c.Blocks)
}

// MarshalJSON writes the content back in its original form.
func (c Content) MarshalJSON() ([]byte, error) {
	if c.String && len(c.Blocks) == 1 {
		return json.Marshal(c.Blocks[0].Text)
	}
	if c.Blocks == nil {
		return []byte("[]"), nil
	}
	return json.Marshal(c.Blocks)
}

// Block is a content block: text, thinking, toolCall or image.
type Block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`      // text
	Thinking  string          `json:"thinking,omitempty"`  // thinking
	ID        string          `json:"id,omitempty"`        // toolCall
	Name      string          `json:"name,omitempty"`      // toolCall
	Arguments json.RawMessage `json:"arguments,omitempty"` // toolCall
	Data      string          `json:"data,omitempty"`      // image, base64
	MimeType  string          `json:"mimeType,omitempty"`  // image
}

// Usage is token usage reported by a model.
type Usage struct {
	Input        int  `json:"input"`
	Output       int  `json:"output"`
	CacheRead    int  `json:"cacheRead"`
	CacheWrite   int  `json:"cacheWrite"`
	CacheWrite1h int  `json:"cacheWrite1h,omitempty"`
	Reasoning    int  `json:"reasoning,omitempty"`
	TotalTokens  int  `json:"totalTokens"`
	Cost         Cost `json:"cost"`
}

// Cost is the price of a Usage, in dollars.
type Cost struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cacheRead"`
	CacheWrite float64 `json:"cacheWrite"`
	Total      float64 `json:"total"`
}
