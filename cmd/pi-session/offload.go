package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/pi-session/pi-session/clip"
	"github.com/pi-session/pi-session/hooks"
	"github.com/pi-session/pi-session/offload"
)

// offloadEngines serves the offload engine on the engine host: one
// offload.Engine per workspace (the cwd a session says hello with), opened
// on first use and shared by that workspace's sessions.
type offloadEngines struct {
	mu    sync.Mutex
	byDir map[string]*workspaceEngine
}

type workspaceEngine struct {
	*offload.Engine
	methods map[string]func(context.Context, json.RawMessage) (any, error)
}

func newOffloadEngines() *offloadEngines {
	return &offloadEngines{byDir: map[string]*workspaceEngine{}}
}

// get returns the engine of the caller's workspace.
func (o *offloadEngines) get(r *hooks.Request) (*workspaceEngine, error) {
	dir := r.Peer.Hello.Cwd
	if !filepath.IsAbs(dir) {
		return nil, hooks.Errorf(hooks.CodeInvalidParams, "offload: the session's cwd %q is not an absolute path", clip.Echo(dir))
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if e := o.byDir[dir]; e != nil {
		return e, nil
	}
	e, err := offload.New(offload.Options{Workspace: dir, Log: r.Log().With("engine", "offload")})
	if err != nil {
		return nil, err
	}
	we := &workspaceEngine{Engine: e, methods: e.Methods()}
	o.byDir[dir] = we
	return we, nil
}

// close releases every workspace's store.
func (o *offloadEngines) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for dir, e := range o.byDir {
		e.Close()
		delete(o.byDir, dir)
	}
}

// engine is the host's "offload" engine: the tool_result and turn_start
// hooks, and the methods behind ctx_read, ctx_summarize, ctx_offload and /ce.
func (o *offloadEngines) engine() hooks.Engine {
	m := map[string]hooks.Handler{"toolResult": o.toolResult}
	for _, name := range []string{"turnStart", "read", "summarize", "offload", "search", "status", "trace", "settings", "clear", "start"} {
		m[name] = o.forward(name)
	}
	return hooks.Engine{
		Name:    "offload",
		Methods: m,
		Hooks:   map[string]string{"tool_result": "toolResult", "turn_start": "turnStart"},
	}
}

// forward calls an offload method with the caller's session id added to
// its params. Its errors are meant for the model (a bad handle, a bad
// regex): they go back with their text.
func (o *offloadEngines) forward(name string) hooks.Handler {
	return func(ctx context.Context, r *hooks.Request) (any, error) {
		e, err := o.get(r)
		if err != nil {
			return nil, err
		}
		params := map[string]json.RawMessage{}
		if len(r.Params) > 0 && string(r.Params) != "null" {
			if err := json.Unmarshal(r.Params, &params); err != nil {
				return nil, hooks.Errorf(hooks.CodeInvalidParams, "offload.%s: params: %v", name, err)
			}
		}
		params["sessionId"], _ = json.Marshal(r.Peer.Hello.SessionID)
		raw, _ := json.Marshal(params)
		return e.methods[name](ctx, raw)
	}
}

// toolResultParams is the tool_result hook as the extension sends it.
type toolResultParams struct {
	hooks.ToolResult
	ParentToolCallID string `json:"parentToolCallId"`
	TurnIndex        int    `json:"turnIndex"`
	CtxReadActive    bool   `json:"ctxReadActive"`
}

// toolResult decides what the model sees of a tool result. Text arrives as
// bulk bytes and is handed to the engine without a copy. A kept result
// answers null (pi's own result stands), or only a notice for the user
// when storing failed.
func (o *offloadEngines) toolResult(ctx context.Context, r *hooks.Request) (any, error) {
	e, err := o.get(r)
	if err != nil {
		return nil, err
	}
	var p toolResultParams
	if err := r.Decode(&p); err != nil {
		return nil, err
	}
	blocks := make([]offload.ContentBlock, len(p.Content))
	texts := make([][]byte, len(p.Content))
	pos := 0
	for i, b := range p.Content {
		blocks[i].Type = b.Type
		if b.Type != "text" {
			continue
		}
		if b.Bytes == nil {
			blocks[i].Text = b.Text
			texts[i] = []byte(b.Text)
			continue
		}
		n := *b.Bytes
		if n < 0 || n > len(r.Bulk)-pos {
			return nil, hooks.Errorf(hooks.CodeInvalidParams, "offload.toolResult: text block %d claims %d bytes, %d are left", i, n, len(r.Bulk)-pos)
		}
		texts[i] = r.Bulk[pos : pos+n : pos+n]
		blocks[i].Raw = texts[i]
		pos += n
	}
	if pos != len(r.Bulk) {
		return nil, hooks.Errorf(hooks.CodeInvalidParams, "offload.toolResult: %d bulk bytes left after the text blocks", len(r.Bulk)-pos)
	}
	rep, err := e.ToolResult(ctx, offload.ToolResultRequest{
		SessionID:        r.Peer.Hello.SessionID,
		TurnIndex:        p.TurnIndex,
		ToolName:         p.ToolName,
		ToolCallID:       p.ToolCallID,
		Input:            p.Input,
		Content:          blocks,
		Details:          p.Details,
		IsError:          p.IsError,
		ParentToolCallID: p.ParentToolCallID,
		CtxReadActive:    p.CtxReadActive,
	})
	if err != nil {
		return nil, err
	}
	if rep.Action != "replace" {
		if rep.Notice != "" {
			return hooks.ToolResultPatch{Notice: rep.Notice}.Reply(), nil
		}
		return nil, nil
	}
	out := make([]hooks.Block, 0, len(rep.Content))
	for _, b := range rep.Content {
		if b.Type != "original" {
			out = append(out, hooks.Block{Type: "text", Text: b.Text})
			continue
		}
		if b.Index == nil || *b.Index < 0 || *b.Index >= len(p.Content) {
			return nil, fmt.Errorf("offload.toolResult: the engine kept block %v of %d", b.Index, len(p.Content))
		}
		orig := p.Content[*b.Index]
		orig.Bytes = nil
		if orig.Type == "text" {
			orig.Text = string(texts[*b.Index])
		}
		out = append(out, orig)
	}
	return hooks.ToolResultPatch{Content: out}.Reply(), nil
}
