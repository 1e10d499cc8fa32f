package hooks

import (
	"encoding/json"
	"fmt"
)

// Block is a content block of a tool result (pi's TextContent or
// ImageContent). On the wire a text block's text travels in the bulk
// bytes and the JSON says only its size: {"type":"text","bytes":N}; the
// extension's blocks.ts is the other side.
type Block struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"` // empty on the wire when Bytes is set
	Data     string `json:"data,omitempty"` // image, base64
	MimeType string `json:"mimeType,omitempty"`
	Bytes    *int   `json:"bytes,omitempty"` // text length in the bulk bytes
}

// ToolResult is a tool_result hook's params: the result pi is about to
// give the model, which an engine may replace (see ToolResultPatch).
type ToolResult struct {
	ToolName   string          `json:"toolName"`
	ToolCallID string          `json:"toolCallId"`
	Input      json.RawMessage `json:"input"`
	Content    []Block         `json:"content"`
	Details    json.RawMessage `json:"details"`
	IsError    bool            `json:"isError"`
}

// DecodeToolResult reads a tool_result hook's params and bulk bytes.
func DecodeToolResult(r *Request) (ToolResult, error) {
	var tr ToolResult
	if err := r.Decode(&tr); err != nil {
		return tr, err
	}
	blocks, err := UnpackBlocks(tr.Content, r.Bulk)
	if err != nil {
		return tr, Errorf(CodeInvalidParams, "%v", err)
	}
	tr.Content = blocks
	return tr, nil
}

// ToolResultPatch is a tool_result hook's answer: the fields to replace.
// Nil fields keep pi's. Notice, when set, is shown to the user (not the
// model) as a warning, whether or not anything is replaced.
type ToolResultPatch struct {
	Content []Block
	Details json.RawMessage
	IsError *bool
	Notice  string
}

// Reply encodes the patch for the wire, text in the bulk bytes.
func (p ToolResultPatch) Reply() Reply {
	out := struct {
		Content []Block         `json:"content,omitempty"`
		Details json.RawMessage `json:"details,omitempty"`
		IsError *bool           `json:"isError,omitempty"`
		Notice  string          `json:"notice,omitempty"`
	}{Details: p.Details, IsError: p.IsError, Notice: p.Notice}
	var bulk []byte
	if p.Content != nil {
		out.Content, bulk = PackBlocks(p.Content)
	}
	return Reply{Result: out, Bulk: bulk}
}

// PackBlocks moves the text of text blocks into one byte slice.
func PackBlocks(blocks []Block) ([]Block, []byte) {
	out := make([]Block, len(blocks))
	var bulk []byte
	for i, b := range blocks {
		if b.Type == "text" {
			n := len(b.Text)
			bulk = append(bulk, b.Text...)
			b.Text, b.Bytes = "", &n
		}
		out[i] = b
	}
	return out, bulk
}

// UnpackBlocks restores the text of text blocks from the bulk bytes. The
// sizes must account for every byte.
func UnpackBlocks(blocks []Block, bulk []byte) ([]Block, error) {
	out := make([]Block, len(blocks))
	pos := 0
	for i, b := range blocks {
		if b.Type == "text" && b.Bytes != nil {
			n := *b.Bytes
			if n < 0 || n > len(bulk)-pos {
				return nil, fmt.Errorf("hooks: text block %d claims %d bytes, %d are left", i, n, len(bulk)-pos)
			}
			b.Text, b.Bytes = string(bulk[pos:pos+n]), nil
			pos += n
		}
		out[i] = b
	}
	if pos != len(bulk) {
		return nil, fmt.Errorf("hooks: %d bulk bytes left after the text blocks", len(bulk)-pos)
	}
	return out, nil
}
