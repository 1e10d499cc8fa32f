package offload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/pi-session/pi-session/clip"
)

// ReadRequest is a ctx_read call: the model's arguments and where it runs.
type ReadRequest struct {
	SessionID string `json:"sessionId"`
	// InProgram: the call comes from a program (a parentToolCallId such as
	// fabric_exec's): its result is program data, up to 512 KB, with no
	// header in the text.
	InProgram bool            `json:"inProgram"`
	Args      json.RawMessage `json:"args"`
}

// errorClass names an error for telemetry.
func errorClass(err error) string {
	switch {
	case errors.Is(err, ErrNotFound):
		return "not-found"
	case errors.Is(err, ErrExpired):
		return "expired"
	case errors.Is(err, ErrBadRegex):
		return "regex"
	case errors.Is(err, ErrBadJSONPath):
		return "jsonpath"
	case errors.Is(err, ErrBadArgument):
		return "argument"
	}
	return "internal"
}

// handleError turns a store error into a tool error naming the id argument.
func handleError(err error) error {
	switch {
	case errors.Is(err, ErrNotFound):
		return fmt.Errorf("%w; check the id against the offload notice (ids are ce_ followed by 24 hex digits; the store keeps this workspace's payloads)", err)
	case errors.Is(err, ErrExpired):
		return fmt.Errorf("%w; the payload is gone, run the tool again if you need it", err)
	}
	return err
}

// Read serves ctx_read. Errors wrap ErrBadArgument (an *ArgError naming the
// argument), ErrBadRegex, ErrBadJSONPath, ErrNotFound or ErrExpired, and
// are meant for the model as tool errors.
func (e *Engine) Read(ctx context.Context, req ReadRequest) (ReadResult, error) {
	if err := ctx.Err(); err != nil {
		return ReadResult{}, err
	}
	a, err := ParseReadArgs(req.Args)
	if err != nil {
		e.record(Event{Session: req.SessionID, Type: "read-error", InProgram: req.InProgram, Error: errorClass(err)})
		return ReadResult{}, err
	}
	res, err := e.read(a, req.InProgram)
	ev := Event{Session: req.SessionID, Type: "read", Mode: a.Mode(), InProgram: req.InProgram, HandleFP: HandleFP(a.ID)}
	if err != nil {
		ev.Type, ev.Error = "read-error", errorClass(err)
		e.record(ev)
		return ReadResult{}, err
	}
	cfg, _ := e.cfg.get()
	res.Text = capText(res.Text, answerCap(cfg.ReadOffloadThreshold, req.InProgram))
	res.Details.Result.JSONPath = clip.Echo(res.Details.Result.JSONPath)
	ev.ReturnedBytes = int64(len(res.Text))
	ev.FromZero = a.Mode() == "range" && a.Offset == 0
	if req.InProgram {
		e.noteProgramRead(req.SessionID, a.ID)
	}
	if res.Details.Result.TotalMatches != nil {
		ev.Matches = ptr(*res.Details.Result.TotalMatches)
	}
	e.record(ev)
	return res, nil
}

func (e *Engine) read(a ReadArgs, inProgram bool) (ReadResult, error) {
	cfg, _ := e.cfg.get()
	s, err := e.openStore()
	if err != nil {
		return ReadResult{}, err
	}
	blob, err := s.Open(a.ID, cfg.TTL())
	if err != nil {
		return ReadResult{}, handleError(err)
	}
	defer blob.Close()
	budget := pageBudget(cfg.ReadOffloadThreshold, inProgram)
	switch a.Mode() {
	case "query":
		return readQuery(a.ID, blob.Data, a, budget, inProgram)
	case "section":
		return readSection(a.ID, blob.Data, a, budget, inProgram)
	case "jsonPath":
		return readJSONPath(a.ID, blob.Data, a, budget, inProgram)
	}
	return readRange(a.ID, blob.Data, a, budget, inProgram)
}

// SummarizeRequest is a ctx_summarize call.
type SummarizeRequest struct {
	SessionID string          `json:"sessionId"`
	InProgram bool            `json:"inProgram"`
	Args      json.RawMessage `json:"args"`
}

// SummarizeResult is what ctx_summarize returns.
type SummarizeResult struct {
	Text    string `json:"text"`
	Details struct {
		ID        string `json:"id,omitempty"`
		Mode      string `json:"mode"`
		Bytes     int64  `json:"bytes"`
		MaxTokens int    `json:"maxTokens"`
	} `json:"details"`
}

// Summarize serves ctx_summarize: a deterministic summary of a stored
// payload or of inline text.
func (e *Engine) Summarize(ctx context.Context, req SummarizeRequest) (SummarizeResult, error) {
	var res SummarizeResult
	if err := ctx.Err(); err != nil {
		return res, err
	}
	a, err := ParseSummarizeArgs(req.Args)
	if err != nil {
		return res, err
	}
	cfg, _ := e.cfg.get()
	data := bytesOf(a.Text)
	if a.ID != "" {
		s, err := e.openStore()
		if err != nil {
			return res, err
		}
		blob, err := s.Open(a.ID, cfg.TTL())
		if err != nil {
			return res, handleError(err)
		}
		defer blob.Close()
		data = blob.Data
	}
	max := a.MaxTokens * bytesPerToken
	if !req.InProgram {
		max = min(max, pageBudget(cfg.ReadOffloadThreshold, false))
	}
	res.Text = capText(summarize(data, a.Mode, max), answerCap(cfg.ReadOffloadThreshold, req.InProgram))
	res.Details.ID, res.Details.Mode, res.Details.Bytes, res.Details.MaxTokens = a.ID, a.Mode, int64(len(data)), a.MaxTokens
	ev := Event{Session: req.SessionID, Type: "summarize", Mode: a.Mode, InProgram: req.InProgram, ReturnedBytes: int64(len(res.Text))}
	if a.ID != "" {
		ev.HandleFP = HandleFP(a.ID)
		if req.InProgram {
			e.noteProgramRead(req.SessionID, a.ID)
		}
	}
	e.record(ev)
	return res, nil
}

// OffloadRequest is a ctx_offload call: {key, source, data}.
type OffloadRequest struct {
	SessionID string          `json:"sessionId"`
	Args      json.RawMessage `json:"args"`
}

// OffloadResult is what ctx_offload returns.
type OffloadResult struct {
	Text    string `json:"text"`
	Details struct {
		ID     string `json:"id"`
		Bytes  int64  `json:"bytes"`
		Key    string `json:"key,omitempty"`
		Source string `json:"source,omitempty"`
		Dedup  bool   `json:"dedup"`
	} `json:"details"`
}

// Offload serves ctx_offload: it stores data on purpose and returns its
// handle. Data that is not a string is stored as its JSON text.
func (e *Engine) Offload(ctx context.Context, req OffloadRequest) (OffloadResult, error) {
	var res OffloadResult
	if err := ctx.Err(); err != nil {
		return res, err
	}
	m, err := object(req.Args)
	if err != nil {
		return res, err
	}
	if err := unknownArgs(m, "key", "source", "data"); err != nil {
		return res, err
	}
	key, _, err := getString(m, "key", false)
	if err != nil {
		return res, err
	}
	source, _, err := getString(m, "source", false)
	if err != nil {
		return res, err
	}
	if len(key) > 200 || len(source) > 200 {
		return res, argErr("key", "key and source are labels of at most 200 bytes")
	}
	raw, ok := m["data"]
	if !ok || isNull(raw) {
		return res, argErr("data", "is required: the text (or JSON value) to store")
	}
	var data []byte
	var str string
	kind := "text"
	if json.Unmarshal(raw, &str) == nil {
		data = bytesOf(str)
	} else {
		data, kind = raw, "json"
	}
	cfg, _ := e.cfg.get()
	s, err := e.openStore()
	if err != nil {
		return res, err
	}
	ent, dedup, err := s.Put(data, Meta{Kind: kind, Source: source, Key: key, Session: req.SessionID, Pending: true}, limits(cfg))
	if err == nil {
		err = s.Confirm(ent.Handle) // the answer hands the handle out
	}
	if err != nil {
		return res, err
	}
	res.Details.ID, res.Details.Bytes, res.Details.Key, res.Details.Source, res.Details.Dedup = ent.Handle, ent.Size, key, source, dedup
	res.Text = capText(fmt.Sprintf("Stored %d bytes as %s; read it with ctx_read({\"id\":%q, ...}).", ent.Size, ent.Handle, ent.Handle), answerCap(cfg.ReadOffloadThreshold, false))
	e.record(Event{Session: req.SessionID, Type: "store", StoredBytes: ent.Size, HandleFP: HandleFP(ent.Handle), Dedup: dedup, Shape: kind})
	return res, nil
}

// Methods maps the host's method names (the engine host prefixes them with
// "offload.") to handlers taking the JSON params and returning a value to
// encode as the result.
func (e *Engine) Methods() map[string]func(context.Context, json.RawMessage) (any, error) {
	decode := func(params json.RawMessage, v any) error {
		if len(params) == 0 {
			return nil
		}
		if err := json.Unmarshal(params, v); err != nil {
			return fmt.Errorf("offload: params: %w", err)
		}
		return nil
	}
	methods := map[string]func(context.Context, json.RawMessage) (any, error){
		"toolResult": func(ctx context.Context, p json.RawMessage) (any, error) {
			var req ToolResultRequest
			if err := decode(p, &req); err != nil {
				return nil, err
			}
			return e.ToolResult(ctx, req)
		},
		"turnStart": func(ctx context.Context, p json.RawMessage) (any, error) {
			var req struct {
				SessionID string `json:"sessionId"`
				TurnIndex int    `json:"turnIndex"`
			}
			if err := decode(p, &req); err != nil {
				return nil, err
			}
			return struct{}{}, e.TurnStart(ctx, req.SessionID, req.TurnIndex)
		},
		"read": func(ctx context.Context, p json.RawMessage) (any, error) {
			var req ReadRequest
			if err := decode(p, &req); err != nil {
				return nil, err
			}
			return e.Read(ctx, req)
		},
		"summarize": func(ctx context.Context, p json.RawMessage) (any, error) {
			var req SummarizeRequest
			if err := decode(p, &req); err != nil {
				return nil, err
			}
			return e.Summarize(ctx, req)
		},
		"offload": func(ctx context.Context, p json.RawMessage) (any, error) {
			var req OffloadRequest
			if err := decode(p, &req); err != nil {
				return nil, err
			}
			return e.Offload(ctx, req)
		},
		"search": func(ctx context.Context, p json.RawMessage) (any, error) {
			var req SearchRequest
			if err := decode(p, &req); err != nil {
				return nil, err
			}
			return e.Search(ctx, req)
		},
		"status": func(ctx context.Context, p json.RawMessage) (any, error) {
			var req StatusRequest
			if err := decode(p, &req); err != nil {
				return nil, err
			}
			return e.Status(ctx, req)
		},
		"trace": func(ctx context.Context, p json.RawMessage) (any, error) {
			var req TraceRequest
			if err := decode(p, &req); err != nil {
				return nil, err
			}
			return e.Trace(ctx, req)
		},
		"start": func(ctx context.Context, p json.RawMessage) (any, error) {
			return e.Start(ctx)
		},
		"settings": func(ctx context.Context, p json.RawMessage) (any, error) {
			return e.Settings(ctx)
		},
		"clear": func(ctx context.Context, p json.RawMessage) (any, error) {
			var req ClearRequest
			if err := decode(p, &req); err != nil {
				return nil, err
			}
			return e.Clear(ctx, req)
		},
	}
	for name, fn := range methods {
		methods[name] = func(ctx context.Context, p json.RawMessage) (any, error) {
			res, err := fn(ctx, p)
			return res, capError(err)
		}
	}
	return methods
}
