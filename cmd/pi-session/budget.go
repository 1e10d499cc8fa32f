package main

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/pi-session/pi-session/budget"
	"github.com/pi-session/pi-session/hooks"
	"github.com/pi-session/pi-session/session"
	"github.com/pi-session/pi-session/supervisor"
)

// budgetEngine serves the budget engine on the engine host. Under the
// wrapper its fallback arms the relaunch through the engine set's
// relauncher; under serve there is none.
type budgetEngine struct {
	eng        *budget.Engine
	relauncher *supervisor.Relauncher
	sessions   sync.Once // the engine reads session files through the host's cache
}

func newBudgetEngine(inv *invocation, relauncher *supervisor.Relauncher) *budgetEngine {
	b := &budgetEngine{relauncher: relauncher}
	eng, err := budget.New(budget.Options{Getenv: inv.env.Get, Git: true})
	if err != nil {
		return b // the engine answers every call with this error
	}
	b.eng = eng
	return b
}

func (b *budgetEngine) close() {
	if b.eng != nil {
		b.eng.Close()
	}
}

// peer is the caller as the budget sees it.
func (b *budgetEngine) peer(r *hooks.Request) (budget.Peer, budget.ArmFunc) {
	h := r.Peer.Hello
	p := budget.Peer{SessionID: h.SessionID, SessionFile: h.SessionFile, SessionName: h.SessionName, Cwd: h.Cwd,
		Subagent: h.Subagent || h.Role == hooks.RoleChild, Mode: h.Mode}
	if b.relauncher == nil || !r.Peer.Owned || h.Role != hooks.RoleMain || h.Subagent || h.Mode == "rpc" {
		return p, nil
	}
	p.Wrapper = true
	peer := r.Peer
	return p, func(handoff, launchPrompt string) (string, error) {
		ap := supervisor.ArmParams{Handoff: handoff, Cwd: h.Cwd}
		if launchPrompt != "" {
			ap.LaunchPrompt = &launchPrompt
		}
		if h.SessionFile != "" {
			sf := h.SessionFile
			ap.SessionFile = &sf
		}
		res, err := b.relauncher.ArmFor(peer, ap)
		return res.Marker, err
	}
}

// engine is the host's "budget" engine.
func (b *budgetEngine) engine() hooks.Engine {
	m := map[string]hooks.Handler{
		"start":      b.handle(b.start),
		"input":      b.handle(b.input),
		"agentStart": b.handle(b.agentStart),
		"turnEnd": b.handle(decoded(func(ctx context.Context, p budget.Peer, arm budget.ArmFunc, q budget.TurnEndParams) any {
			return b.eng.TurnEnd(ctx, p, arm, q)
		})),
		"toolCall": b.handle(decoded(func(ctx context.Context, p budget.Peer, arm budget.ArmFunc, q budget.ToolCallParams) any {
			return b.eng.ToolCall(p, arm, q)
		})),
		"toolDone": b.handle(b.toolDone),
		"handoff":  b.handle(b.handoff),
		"handoffOutcome": b.handle(decoded(func(ctx context.Context, p budget.Peer, arm budget.ArmFunc, q struct {
			ToolCallID string `json:"toolCallId"`
		}) any {
			return b.eng.HandoffOutcome(p, arm, q.ToolCallID)
		})),
		"manual":  b.handle(b.manual),
		"settle":  b.handle(b.settle),
		"settled": b.handle(b.settled),
		"compaction": b.handle(decoded(func(ctx context.Context, p budget.Peer, arm budget.ArmFunc, q budget.CompactionParams) any {
			return b.eng.Compaction(p, arm, q)
		})),
		"compactResult": b.handle(decoded(func(ctx context.Context, p budget.Peer, arm budget.ArmFunc, q budget.CompactResultParams) any {
			return b.eng.CompactResult(p, arm, q)
		})),
		"overflow": b.handle(decoded(func(ctx context.Context, p budget.Peer, arm budget.ArmFunc, q budget.OverflowParams) any {
			return b.eng.Overflow(p, arm, q)
		})),
	}
	return hooks.Engine{Name: "budget", Methods: m}
}

type budgetHandler func(ctx context.Context, r *hooks.Request, p budget.Peer, arm budget.ArmFunc) (any, error)

// decoded is a handler whose params decode into Q.
func decoded[Q any](fn func(ctx context.Context, p budget.Peer, arm budget.ArmFunc, q Q) any) budgetHandler {
	return func(ctx context.Context, r *hooks.Request, p budget.Peer, arm budget.ArmFunc) (any, error) {
		var q Q
		if err := r.Decode(&q); err != nil {
			return nil, err
		}
		return fn(ctx, p, arm, q), nil
	}
}

func (b *budgetEngine) handle(fn budgetHandler) hooks.Handler {
	return func(ctx context.Context, r *hooks.Request) (any, error) {
		if b.eng == nil {
			return nil, hooks.Errorf(hooks.CodeEngine, "budget: the engine could not open its logs")
		}
		if r.Peer.Hello.SessionID == "" {
			return nil, hooks.Errorf(hooks.CodeInvalidParams, "budget: %s: no session in hello", r.Method)
		}
		// A session may come to this host in the middle (the host that
		// served it died): every call, not only start, can read its file.
		b.sessions.Do(func() { b.eng.SetSessions(sessionReader(r)) })
		p, arm := b.peer(r)
		return fn(ctx, r, p, arm)
	}
}

// sessionReader reads session files through the host's cache.
func sessionReader(r *hooks.Request) budget.SessionReader {
	cache := r.Sessions()
	return func(path string, fn func(*session.File) error) error { return cache.With(path, fn) }
}

func (b *budgetEngine) start(ctx context.Context, r *hooks.Request, p budget.Peer, arm budget.ArmFunc) (any, error) {
	var q budget.StartParams
	if err := r.Decode(&q); err != nil {
		return nil, err
	}
	b.eng.SetSessions(sessionReader(r))
	return b.eng.Start(p, arm, q), nil
}

func (b *budgetEngine) input(ctx context.Context, r *hooks.Request, p budget.Peer, arm budget.ArmFunc) (any, error) {
	var q budget.InputParams
	if err := r.Decode(&q); err != nil {
		return nil, err
	}
	compact, v := b.eng.Input(p, arm, q)
	return map[string]any{"compact": compact, "view": v}, nil
}

// closed is a connection's end. After a bye the session's uncommitted
// handoff, if any, is discarded (pi is shutting down) and the session
// forgotten; a connection lost without one keeps the session's state for
// the extension's reconnection.
func (b *budgetEngine) closed(p *hooks.Peer, clean bool) {
	if clean && b.eng != nil && p.Hello.SessionID != "" {
		b.eng.End(p.Hello.SessionID)
	}
}

func (b *budgetEngine) agentStart(ctx context.Context, r *hooks.Request, p budget.Peer, arm budget.ArmFunc) (any, error) {
	var q budget.AgentStartParams
	if err := r.Decode(&q); err != nil {
		return nil, err
	}
	return b.eng.AgentStart(p, arm, q), nil
}

func (b *budgetEngine) toolDone(ctx context.Context, r *hooks.Request, p budget.Peer, arm budget.ArmFunc) (any, error) {
	var q struct {
		ToolName string `json:"toolName"`
	}
	if err := r.Decode(&q); err != nil {
		return nil, err
	}
	return b.eng.ToolDone(p, arm, q.ToolName), nil
}

func (b *budgetEngine) handoff(ctx context.Context, r *hooks.Request, p budget.Peer, arm budget.ArmFunc) (any, error) {
	var q struct {
		budget.HandoffParams
		Args json.RawMessage `json:"args"`
	}
	if err := r.Decode(&q); err != nil {
		return nil, err
	}
	q.HandoffParams.Args = q.Args
	return b.eng.Handoff(ctx, p, arm, q.HandoffParams), nil
}

func (b *budgetEngine) manual(ctx context.Context, r *hooks.Request, p budget.Peer, arm budget.ArmFunc) (any, error) {
	var q struct {
		Instructions string `json:"instructions"`
	}
	if err := r.Decode(&q); err != nil {
		return nil, err
	}
	req, v := b.eng.Manual(p, arm, q.Instructions)
	return map[string]any{"request": req, "view": v}, nil
}

func (b *budgetEngine) settle(ctx context.Context, r *hooks.Request, p budget.Peer, arm budget.ArmFunc) (any, error) {
	var q struct {
		PendingWork int `json:"pendingWork"`
	}
	if err := r.Decode(&q); err != nil {
		return nil, err
	}
	return b.eng.Settle(p, arm, q.PendingWork), nil
}

func (b *budgetEngine) settled(ctx context.Context, r *hooks.Request, p budget.Peer, arm budget.ArmFunc) (any, error) {
	return b.eng.Settled(ctx, p, arm), nil
}
