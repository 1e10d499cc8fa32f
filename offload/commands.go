package offload

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/pi-session/pi-session/clip"
)

// SearchRequest searches every stored payload of the workspace (for the
// relay engine's recall).
type SearchRequest struct {
	Query      json.RawMessage `json:"query"` // a string or an array of strings (any matches)
	Regex      bool            `json:"regex"`
	IgnoreCase bool            `json:"ignoreCase"`
	SessionID  string          `json:"sessionId,omitempty"` // only payloads stored by this session
	MaxResults int             `json:"maxResults"`          // default 20, at most 500
	PerHandle  int             `json:"perHandle"`           // default 3
}

// SearchHit is one matching line of a stored payload.
type SearchHit struct {
	Handle string `json:"handle"`
	Offset int64  `json:"offset"` // byte offset of the line
	Line   int64  `json:"line"`
	Text   string `json:"text"` // the line, at most 300 bytes
}

// SearchPayload is one payload with matches.
type SearchPayload struct {
	Handle  string `json:"handle"`
	Source  string `json:"source,omitempty"`
	Session string `json:"session,omitempty"`
	Stored  string `json:"stored"`
	Bytes   int64  `json:"bytes"`
	Matches int    `json:"matches"` // matching lines in the payload
}

// SearchResult lists the hits, newest payloads first.
type SearchResult struct {
	Hits     []SearchHit     `json:"hits"`
	Payloads []SearchPayload `json:"payloads"`
	Searched int             `json:"searched"`
}

// Search scans stored payloads for lines matching a literal or regex query.
func (e *Engine) Search(ctx context.Context, req SearchRequest) (SearchResult, error) {
	var res SearchResult
	args, _ := json.Marshal(map[string]any{"id": placeholderHandle, "query": req.Query, "regex": req.Regex, "ignoreCase": req.IgnoreCase})
	a, err := ParseReadArgs(args)
	if err != nil {
		return res, err
	}
	if a.Query == nil {
		return res, argErr("query", "is required: a string or an array of strings")
	}
	max := req.MaxResults
	if max <= 0 {
		max = 20
	}
	max = min(max, 500)
	per := req.PerHandle
	if per <= 0 {
		per = 3
	}
	cfg, _ := e.cfg.get()
	s, err := e.openStore()
	if err != nil {
		return res, err
	}
	entries, err := s.Entries()
	if err != nil {
		return res, err
	}
	for _, ent := range entries {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if req.SessionID != "" && ent.Session != req.SessionID {
			continue
		}
		blob, err := s.Open(ent.Handle, cfg.TTL())
		if err != nil {
			continue // expired or removed meanwhile
		}
		m, err := queryMatcher(a.Query, a.Regex, a.IgnoreCase)
		if err != nil {
			blob.Close()
			return res, err
		}
		res.Searched++
		d := blob.Data
		n, from := 0, 0
		var line int64 = 1
		lineFrom := 0
		for from <= len(d) {
			st, en, _, ok := m.next(d, from)
			if !ok {
				break
			}
			n++
			if n <= per && len(res.Hits) < max {
				line += int64(countNL(d[lineFrom:st]))
				lineFrom = st
				res.Hits = append(res.Hits, SearchHit{Handle: ent.Handle, Offset: int64(st), Line: line, Text: cutText(string(trimCR(d[st:en])), 300)})
			}
			from = en + 1
		}
		blob.Close()
		if n > 0 {
			res.Payloads = append(res.Payloads, SearchPayload{Handle: ent.Handle, Source: ent.Source, Session: ent.Session,
				Stored: time.UnixMilli(ent.Time).UTC().Format(time.RFC3339), Bytes: ent.Size, Matches: n})
		}
	}
	return res, nil
}

func countNL(b []byte) int {
	n := 0
	for _, c := range b {
		if c == '\n' {
			n++
		}
	}
	return n
}

// StatusRequest asks for /ce status; All covers every session of the
// workspace.
type StatusRequest struct {
	SessionID string `json:"sessionId"`
	All       bool   `json:"all"`
}

// StoreFigures describe the store.
type StoreFigures struct {
	Entries  int   `json:"entries"`
	Bytes    int64 `json:"bytes"`
	MaxBytes int64 `json:"maxBytes"`
	TTLMs    int64 `json:"ttlMs"`
}

// StoredResult is one payload /ce status lists: where a full output is.
type StoredResult struct {
	Handle string `json:"handle"`
	Source string `json:"source,omitempty"`
	Bytes  int64  `json:"bytes"`
	Stored string `json:"stored"`
	// Full is the tool's own full-output file it was copied from; FullGone:
	// that file is no longer there (the store keeps its copy).
	Full     string `json:"full,omitempty"`
	FullGone bool   `json:"fullGone,omitempty"`
}

// maxStatusResults bounds the stored results /ce status lists.
const maxStatusResults = 5

// SessionFigures are one session's figures in /ce status --all.
type SessionFigures struct {
	SessionID string  `json:"sessionId"`
	Figures   Figures `json:"figures"`
}

// StatusResult is /ce status: a text to show and its figures.
type StatusResult struct {
	Text     string           `json:"text"`
	Figures  Figures          `json:"figures"`
	Sessions []SessionFigures `json:"sessions,omitempty"`
	Store    StoreFigures     `json:"store"`
	// Results are the newest stored results of the session (of every
	// session with All), at most maxStatusResults; MoreResults counts the
	// others.
	Results     []StoredResult `json:"results,omitempty"`
	MoreResults int            `json:"moreResults,omitempty"`
	BadEvents   int            `json:"badEvents,omitempty"`
	// MoreSessions counts the sessions past the first maxStatusSessions,
	// which Sessions leaves out.
	MoreSessions int `json:"moreSessions,omitempty"`
}

// maxStatusSessions bounds the sessions /ce status --all lists one by one.
const maxStatusSessions = 100

// storeFigures describes the store, and lists the newest results stored
// by session ("": by any).
func (e *Engine) storeFigures(cfg Config, session string) (StoreFigures, []StoredResult, int) {
	sf := StoreFigures{MaxBytes: cfg.StoreMaxBytes, TTLMs: cfg.StoreTTLMs}
	if _, err := os.Stat(e.storeDir); err != nil {
		return sf, nil, 0 // nothing stored yet: do not create the store to say so
	}
	s, err := e.openStore()
	if err != nil {
		return sf, nil, 0
	}
	es, err := s.Entries()
	if err != nil {
		return sf, nil, 0
	}
	var list []StoredResult
	more := 0
	for _, en := range es { // newest first
		sf.Entries++
		sf.Bytes += en.Size
		if en.Pending || session != "" && en.Session != session {
			continue
		}
		if len(list) == maxStatusResults {
			more++
			continue
		}
		r := StoredResult{Handle: en.Handle, Source: en.Source, Bytes: en.Size, Stored: time.UnixMilli(en.Time).UTC().Format(time.RFC3339), Full: en.Full}
		if en.Full != "" {
			if _, err := os.Lstat(en.Full); err != nil {
				r.FullGone = true
			}
		}
		list = append(list, r)
	}
	return sf, list, more
}

// renderResults lists where the full outputs are.
func renderResults(b *strings.Builder, list []StoredResult, more int) {
	if len(list) == 0 {
		return
	}
	b.WriteString("Where the full outputs are (the model reads them with ctx_read and the handle):\n")
	for _, r := range list {
		fmt.Fprintf(b, "  %s: %s, %s (%s)", r.Handle, orDefault(clip.Echo(r.Source), "stored"), count64(r.Bytes, "byte", "bytes"), humanBytes(r.Bytes))
		if r.Full != "" {
			fmt.Fprintf(b, "; the tool's full-output file: %s", clip.Echo(r.Full))
			if r.FullGone {
				b.WriteString(" (gone now; the handle keeps the copy)")
			}
		}
		b.WriteByte('\n')
	}
	if more > 0 {
		fmt.Fprintf(b, "  ... %s more\n", count(more, "result", "results"))
	}
}

// Status computes /ce status from the telemetry log.
func (e *Engine) Status(ctx context.Context, req StatusRequest) (StatusResult, error) {
	var res StatusResult
	if err := ctx.Err(); err != nil {
		return res, err
	}
	events, bad, err := e.tel.events()
	if err != nil {
		return res, err
	}
	cfg, _ := e.cfg.get()
	res.BadEvents = bad.N
	session := req.SessionID
	if req.All {
		session = ""
	}
	res.Figures = Tally(events, session)
	res.Store, res.Results, res.MoreResults = e.storeFigures(cfg, session)
	var b strings.Builder
	if req.All {
		ids := map[string]bool{}
		for _, ev := range events {
			if ev.Session != "" {
				ids[ev.Session] = true
			}
		}
		var list []string
		for id := range ids {
			list = append(list, id)
		}
		sort.Strings(list)
		for _, id := range list {
			if len(res.Sessions) == maxStatusSessions {
				res.MoreSessions++
				continue
			}
			res.Sessions = append(res.Sessions, SessionFigures{SessionID: clip.Echo(id), Figures: Tally(events, id)})
		}
		if len(list) == 1 {
			b.WriteString("Context Engineer, the 1 recorded session of this workspace\n")
		} else {
			fmt.Fprintf(&b, "Context Engineer, all %d recorded sessions of this workspace\n", len(list))
		}
	} else {
		fmt.Fprintf(&b, "Context Engineer, this session\n")
	}
	if !cfg.Enabled {
		b.WriteString("(disabled in .pi/context-engineer.json)\n")
	}
	renderFigures(&b, res.Figures)
	renderResults(&b, res.Results, res.MoreResults)
	if req.All && len(res.Sessions) > 1 {
		b.WriteString("By session:\n")
		for _, s := range res.Sessions {
			fmt.Fprintf(&b, "  %s: %s kept out, %s tokens saved\n", s.SessionID, count(s.Figures.Offloads, "result", "results"), grouped(s.Figures.NetTokensSaved))
		}
		if res.MoreSessions > 0 {
			fmt.Fprintf(&b, "  ... %s more\n", count(res.MoreSessions, "session", "sessions"))
		}
	}
	fmt.Fprintf(&b, "Store (.pi/context-store): %s, %s of %s; each kept %s after it was stored\n", count(res.Store.Entries, "result", "results"), humanBytes(res.Store.Bytes), humanBytes(res.Store.MaxBytes), days(time.Duration(res.Store.TTLMs)*time.Millisecond))
	if bad.N > 0 {
		fmt.Fprintf(&b, "(%s skipped; the first: %s)\n", count(bad.N, "unreadable telemetry line", "unreadable telemetry lines"), bad.First)
	}
	b.WriteString("Token figures are estimates, not billing data.")
	res.Text = capText(b.String(), maxCommandBytes)
	return res, nil
}

// TraceRequest asks for the latest events.
type TraceRequest struct {
	SessionID string `json:"sessionId"`
	All       bool   `json:"all"`
	Limit     int    `json:"limit"` // default 20
}

// TraceResult is /ce trace.
type TraceResult struct {
	Text   string  `json:"text"`
	Events []Event `json:"events"`
}

// Trace lists the latest events of the session (or of every session).
func (e *Engine) Trace(ctx context.Context, req TraceRequest) (TraceResult, error) {
	var res TraceResult
	if err := ctx.Err(); err != nil {
		return res, err
	}
	events, _, err := e.tel.events()
	if err != nil {
		return res, err
	}
	limit := req.Limit
	if limit <= 0 {
		limit = 20
	}
	limit = min(limit, maxTraceEvents)
	for i := len(events) - 1; i >= 0 && len(res.Events) < limit; i-- {
		if req.All || events[i].Session == req.SessionID {
			res.Events = append(res.Events, events[i])
		}
	}
	for i, j := 0, len(res.Events)-1; i < j; i, j = i+1, j-1 {
		res.Events[i], res.Events[j] = res.Events[j], res.Events[i]
	}
	var b strings.Builder
	if len(res.Events) == 0 {
		b.WriteString("No events recorded yet.")
	}
	for _, ev := range res.Events {
		b.WriteString(traceLine(ev))
		b.WriteByte('\n')
	}
	res.Text = capText(strings.TrimRight(b.String(), "\n"), maxCommandBytes)
	return res, nil
}

// maxTraceEvents bounds /ce trace n.
const maxTraceEvents = 200

func traceLine(ev Event) string {
	ts := ev.Time
	if t, err := time.Parse(time.RFC3339Nano, ev.Time); err == nil {
		ts = t.Local().Format("15:04:05")
	}
	var parts []string
	add := func(f string, a ...any) { parts = append(parts, fmt.Sprintf(f, a...)) }
	add("%s %s", ts, ev.Type)
	if ev.Tool != "" {
		add("tool=%s", ev.Tool)
	}
	if ev.Strategy != "" {
		add("strategy=%s", ev.Strategy)
	}
	if ev.Reason != "" {
		add("reason=%q", ev.Reason)
	}
	if ev.Shape != "" {
		add("shape=%s", ev.Shape)
	}
	if ev.Mode != "" {
		add("mode=%s", ev.Mode)
	}
	if ev.OriginalBytes > 0 {
		add("%s->%s", humanBytes(ev.OriginalBytes), humanBytes(ev.VisibleBytes))
	}
	if ev.ReturnedBytes > 0 {
		add("returned=%s", humanBytes(ev.ReturnedBytes))
	}
	if ev.StoredBytes > 0 && ev.Type == "store" {
		add("stored=%s", humanBytes(ev.StoredBytes))
	}
	if ev.Matches != nil {
		add("matches=%d", *ev.Matches)
	}
	for _, f := range []struct {
		on   bool
		name string
	}{{ev.Repeat, "repeat"}, {ev.Dedup, "dedup"}, {ev.InProgram, "in-program"}, {ev.FromZero, "from-0"}} {
		if f.on {
			parts = append(parts, f.name)
		}
	}
	if ev.Artifact != "" {
		add("artifact=%s", ev.Artifact)
	}
	if ev.Error != "" {
		add("error=%s", ev.Error)
	}
	if ev.HandleFP != "" {
		add("handle#%s", ev.HandleFP[:8])
	}
	return strings.Join(parts, " ")
}

// SettingsResult is /ce settings.
type SettingsResult struct {
	Text     string   `json:"text"`
	Path     string   `json:"path"`
	Config   Config   `json:"config"`
	Warnings []string `json:"warnings"`
	// NotifyOnStart repeats config.notifyOnStart for the extension.
	NotifyOnStart bool `json:"notifyOnStart"`
}

// Settings reports the effective configuration and its warnings.
func (e *Engine) Settings(ctx context.Context) (SettingsResult, error) {
	var res SettingsResult
	if err := ctx.Err(); err != nil {
		return res, err
	}
	cfg, warnings := e.cfg.get()
	res.Path, res.Config, res.Warnings, res.NotifyOnStart = e.cfg.path, cfg, append([]string{}, warnings...), cfg.NotifyOnStart
	var b strings.Builder
	fmt.Fprintf(&b, "Context Engineer settings (%s):\n", e.cfg.path)
	values, _ := json.Marshal(cfg)
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(values))
	dec.UseNumber()
	dec.Decode(&m)
	for _, o := range ConfigOptions {
		mark := ""
		if fmt.Sprint(m[o.Name]) != fmt.Sprint(o.Default) {
			mark = " (set)"
		}
		fmt.Fprintf(&b, "  %s: %v%s\n", o.Name, m[o.Name], mark)
	}
	if len(warnings) == 0 {
		b.WriteString("No warnings.")
	} else {
		b.WriteString("Warnings:\n")
		for _, w := range warnings {
			fmt.Fprintf(&b, "  - %s\n", w)
		}
	}
	res.Text = capText(strings.TrimRight(b.String(), "\n"), maxCommandBytes)
	return res, nil
}

// StartResult is what the extension shows when a session starts: Notice
// (info, only with notifyOnStart) says the engine is on and what it does;
// Warning lists the configuration's first warnings.
type StartResult struct {
	Notice  string `json:"notice,omitempty"`
	Warning string `json:"warning,omitempty"`
}

// startWarnings is how many configuration warnings the start notice names.
const startWarnings = 3

// Start is the engine's word when a session starts (notifyOnStart).
func (e *Engine) Start(ctx context.Context) (StartResult, error) {
	var res StartResult
	if err := ctx.Err(); err != nil {
		return res, err
	}
	cfg, warnings := e.cfg.get()
	if cfg.NotifyOnStart {
		if cfg.Enabled {
			res.Notice = fmt.Sprintf("Context Engineer is on: tool results over %s go to .pi/context-store and the model reads them back with ctx_read; /ce status shows what that saved.", humanBytes(cfg.ReadOffloadThreshold))
		} else {
			res.Notice = "Context Engineer is off (\"enabled\": false in .pi/context-engineer.json): tool results reach the model as they are."
		}
	}
	if len(warnings) > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "Context Engineer: %d warning", len(warnings))
		if len(warnings) > 1 {
			b.WriteString("s")
		}
		b.WriteString(" in the configuration; the defaults stand for those settings:")
		for i, w := range warnings {
			if i == startWarnings {
				fmt.Fprintf(&b, "\n  ... %d more: /ce settings lists them all", len(warnings)-startWarnings)
				break
			}
			fmt.Fprintf(&b, "\n  %s", w)
		}
		res.Warning = capText(b.String(), maxCommandBytes)
	}
	return res, nil
}

// ClearRequest is /ce clear; Store also removes every stored payload.
type ClearRequest struct {
	Store bool `json:"store"`
}

// ClearResult says what /ce clear removed.
type ClearResult struct {
	Text            string `json:"text"`
	TelemetryFiles  int    `json:"telemetryFiles"`
	PayloadsRemoved int    `json:"payloadsRemoved"`
}

// Clear removes the telemetry (and, with Store, the payloads).
func (e *Engine) Clear(ctx context.Context, req ClearRequest) (ClearResult, error) {
	var res ClearResult
	if err := ctx.Err(); err != nil {
		return res, err
	}
	n, err := e.tel.clear()
	res.TelemetryFiles = n
	if err != nil {
		return res, err
	}
	res.Text = fmt.Sprintf("Cleared the telemetry (%s).", count(n, "file", "files"))
	if req.Store {
		s, err := e.openStore()
		if err != nil {
			return res, err
		}
		if res.PayloadsRemoved, err = s.Clear(); err != nil {
			return res, err
		}
		res.Text += fmt.Sprintf(" Removed %s.", count(res.PayloadsRemoved, "stored result", "stored results"))
	}
	return res, nil
}
