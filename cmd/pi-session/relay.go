package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pi-session/pi-session/hooks"
	"github.com/pi-session/pi-session/jsonpos"
	"github.com/pi-session/pi-session/offload"
	"github.com/pi-session/pi-session/paths"
	"github.com/pi-session/pi-session/regfile"
	"github.com/pi-session/pi-session/relay"
	"github.com/pi-session/pi-session/session"
)

// relayHost serves the relay engine on the engine host: notes for /relay
// and the automatic triggers, recall, and the relay log.
type relayHost struct {
	agentDir string
	eng      *relay.Engine

	mu   sync.Mutex
	cfgs map[string]relayConfig // by session id, read at session_start
}

type relayConfig struct {
	Config   relay.Config `json:"config"`
	Warnings []string     `json:"warnings"`
	Path     string       `json:"path"`
	Notice   string       `json:"notice,omitempty"` // the warnings as said at the start, as for every configuration file
}

func newRelayHost(inv *invocation) *relayHost {
	agentDir := paths.AgentDir(inv.env.Get)
	return &relayHost{
		agentDir: agentDir,
		eng:      relay.New(relay.Options{AgentDir: agentDir, Payloads: offloadPayloads()}),
		cfgs:     map[string]relayConfig{},
	}
}

func (h *relayHost) close() { h.eng.Close() }

// engine is the host's "relay" engine.
func (h *relayHost) engine() hooks.Engine {
	return hooks.Engine{
		Name: "relay",
		Methods: map[string]hooks.Handler{
			"config":  h.config,
			"note":    h.note,
			"discard": h.discard,
			"recall":  h.recall,
			"warm":    h.warm,
			"log":     h.log,
		},
	}
}

// main refuses sessions relay does not serve: subagents and headless runs.
func main_(p *hooks.Peer) error {
	if p.Hello.Subagent || p.Hello.Headless {
		return hooks.Errorf(hooks.CodeRefused, "relay: only main sessions relay (this one is %s)", map[bool]string{true: "a subagent", false: "headless"}[p.Hello.Subagent])
	}
	return nil
}

// config reads <agentDir>/context-relay.json for the session (at its
// session_start) and keeps it for the session's relays.
func (h *relayHost) config(ctx context.Context, r *hooks.Request) (any, error) {
	path := relay.ConfigPath(h.agentDir)
	c, warn := relay.LoadConfig(path)
	if w, err := h.eng.CheckDir(r.Peer.Hello.SessionID); err != nil {
		warn = append(warn, fmt.Sprintf("relays fail and notes are not read until this is fixed: %s", strings.TrimPrefix(err.Error(), "owndir: ")))
	} else if w != "" {
		warn = append(warn, w)
	}
	rc := relayConfig{Config: c, Warnings: warn, Path: path, Notice: jsonpos.Notice(warn, "", "/pi-session lists them")}
	h.mu.Lock()
	h.cfgs[r.Peer.Hello.SessionID] = rc
	h.mu.Unlock()
	// A resumed session with compactions: index what left its context now,
	// so that the first recall does not wait for it.
	if main_(r.Peer) == nil {
		h.eng.Warm(r.Sessions().With, r.Peer.Hello.SessionFile)
	}
	return rc, nil
}

// warm brings the session's recall index up to date in the background
// (after a compaction).
func (h *relayHost) warm(ctx context.Context, r *hooks.Request) (any, error) {
	if err := main_(r.Peer); err != nil {
		return nil, err
	}
	h.eng.Warm(r.Sessions().With, r.Peer.Hello.SessionFile)
	return nil, nil
}

func (h *relayHost) cfg(sessionID string) relay.Config {
	h.mu.Lock()
	rc, ok := h.cfgs[sessionID]
	h.mu.Unlock()
	if ok {
		return rc.Config
	}
	c, _ := relay.LoadConfig(relay.ConfigPath(h.agentDir))
	return c
}

func (h *relayHost) note(ctx context.Context, r *hooks.Request) (any, error) {
	if err := main_(r.Peer); err != nil {
		return nil, err
	}
	var req relay.NoteRequest
	if err := r.Decode(&req); err != nil {
		return nil, err
	}
	hl := r.Peer.Hello
	req.SessionID, req.SessionFile, req.Cwd = hl.SessionID, hl.SessionFile, hl.Cwd
	if req.SessionFile == "" {
		return nil, errors.New("relay: this session has no file yet")
	}
	return h.eng.Note(ctx, r.Sessions().With, h.cfg(hl.SessionID), req)
}

func (h *relayHost) discard(ctx context.Context, r *hooks.Request) (any, error) {
	var p struct {
		Token string `json:"token"`
	}
	if err := r.Decode(&p); err != nil {
		return nil, err
	}
	return map[string]bool{"removed": h.eng.Discard(p.Token)}, nil
}

func (h *relayHost) recall(ctx context.Context, r *hooks.Request) (any, error) {
	var p struct {
		LeafID string          `json:"leafId"`
		Args   json.RawMessage `json:"args"`
	}
	if err := r.Decode(&p); err != nil {
		return nil, err
	}
	hl := r.Peer.Hello
	text, err := h.eng.Recall(ctx, r.Sessions().With, relay.RecallRequest{
		SessionID: hl.SessionID, SessionFile: hl.SessionFile, Cwd: hl.Cwd, LeafID: p.LeafID, Args: p.Args,
	})
	if err != nil {
		return nil, err
	}
	return map[string]string{"text": text}, nil
}

func (h *relayHost) log(ctx context.Context, r *hooks.Request) (any, error) {
	var l relay.LogEntry
	if err := r.Decode(&l); err != nil {
		return nil, err
	}
	l.SessionID = r.Peer.Hello.SessionID
	l.At = time.Now().UTC().Format(time.RFC3339Nano)
	// A line that cannot be written is lost, not an error of the relay:
	// the session is told once (warning), the host's log each time.
	warning, err := h.eng.Log(l)
	if err != nil {
		r.Log().Warn("relay log line lost", "session", l.SessionID, "err", err)
	}
	if warning != "" {
		return map[string]string{"warning": warning}, nil
	}
	return nil, nil
}

// offloadPayloads reads the offload store of a workspace for recall: the
// payloads stored by one session. A workspace without a store has none;
// nothing is created.
func offloadPayloads() relay.Payloads {
	return func(ctx context.Context, cwd, sessionID string, fn func(handle, source string, size int64, data []byte) error) error {
		if cwd == "" || sessionID == "" || !filepath.IsAbs(cwd) {
			return nil
		}
		dir := filepath.Join(cwd, ".pi", "context-store")
		if _, err := os.Stat(filepath.Join(dir, "index.jsonl")); err != nil {
			return nil
		}
		// The store's own retention: payloads older than storeTtlMs are
		// gone for ctx_read, so recall does not offer them either.
		cfg := offload.DefaultConfig()
		if data, err := regfile.Read(offload.ConfigPath(cwd), 1<<20); err == nil {
			cfg, _ = offload.ParseConfig(offload.ConfigPath(cwd), data)
		}
		ttl := cfg.TTL()
		s, err := offload.OpenStore(dir, time.Now)
		if err != nil {
			return err
		}
		defer s.Close()
		entries, err := s.Entries()
		if err != nil {
			return err
		}
		for _, e := range entries {
			if e.Session != sessionID {
				continue
			}
			b, err := s.Open(e.Handle, ttl)
			if err != nil {
				continue // expired or removed meanwhile
			}
			err = fn(e.Handle, e.Source, e.Size, b.Data)
			b.Close()
			if err != nil {
				return nil
			}
		}
		return nil
	}
}

// openOnce reads the session file at path once for the command line,
// printing its diagnostics (line and field) on stderr, and returns a
// Reader that hands out that File for path (other files, ancestors, are
// opened when asked for).
func openOnce(inv *invocation, path string) (*session.File, relay.Reader, error) {
	f, err := session.Open(path)
	if err != nil {
		return nil, nil, err
	}
	for _, d := range f.Diagnostics {
		fmt.Fprintf(inv.stderr, "pi-session: %v\n", d)
	}
	read := func(p string, fn func(*session.File) error) error {
		if p == path {
			return fn(f)
		}
		g, err := session.Open(p)
		if err != nil {
			return err
		}
		return fn(g)
	}
	return f, read, nil
}

func init() {
	engineCommands["relay"] = engineCommand{
		help:  relayUsage,
		about: "the handoff note /relay would write for a session",
		run:   cmdEngineRelay,
	}
	engineCommands["recall"] = engineCommand{
		help:  recallUsage,
		about: "what recall would answer for a query (or --entry ID)",
		run:   cmdEngineRecall,
	}
}

const relayUsage = `usage: pi-session engine relay [--leaf ID] [--first-kept ID] SESSION_FILE

Prints the handoff note /relay would make of the session file's branch
ending at --leaf (default: the last entry), as the model would see it.
Nothing is written. The configuration is <agent dir>/context-relay.json,
where the agent dir is PI_CODING_AGENT_DIR, else the one the session file
is kept in (<agent dir>/sessions/<cwd>/...), else ~/.pi/agent.
--first-kept is pi's own cut point, used when the part from the last user
message on is over tailMaxChars (default: none).
`

func cmdEngineRelay(ctx context.Context, inv *invocation) int {
	fs := newFlagSet("engine relay")
	leaf := fs.String("leaf", "", "the leaf entry id")
	firstKept := fs.String("first-kept", "", "pi's cut point")
	rest, code, done := parseFlags(inv, fs, inv.args, relayUsage)
	if done {
		return code
	}
	if len(rest) != 1 {
		return inv.errorf(exitUsage, "engine relay: want one SESSION_FILE, got %d arguments (see pi-session engine relay --help)", len(rest))
	}
	path := rest[0]
	agentDir := paths.SessionAgentDir(inv.env.Get, path)
	cfg, warn := relay.LoadConfig(relay.ConfigPath(agentDir))
	for _, w := range warn {
		fmt.Fprintf(inv.stderr, "pi-session: warning: %s\n", w)
	}
	if !cfg.Enabled {
		fmt.Fprintf(inv.stderr, "pi-session: %s says \"enabled\": false, so pi has no /relay (and no recall); this is the note it would make\n", relay.ConfigPath(agentDir))
	}
	f, read, err := openOnce(inv, path)
	if err != nil {
		return inv.errorf(1, "engine relay: %v", err)
	}
	if f.Header == nil {
		return inv.errorf(1, "engine relay: %s: %v", path, session.ErrNoHeader)
	}
	// The note names the file /relay would store it in.
	eng := relay.New(relay.Options{AgentDir: agentDir})
	n := relay.PeekNumber(eng.Dir(f.Header.ID))
	notePath := filepath.Join(eng.Dir(f.Header.ID), strconv.Itoa(n)+".md")
	p, err := relay.Compose(ctx, read, relay.RunGit, path, *leaf, *firstKept, 0, cfg, n, notePath)
	if err != nil {
		return inv.errorf(1, "engine relay: %v", err)
	}
	printDoc(inv.stdout, p.Text)
	fmt.Fprintf(inv.stderr, "pi-session: note of %d characters; the context would keep %s on\n", len([]rune(p.Text)), p.KeptFrom)
	return 0
}

const recallUsage = `usage: pi-session engine recall [--limit N] [--entry ID [--offset N]] [--lineage] SESSION_FILE [QUERY...]

Prints what the recall tool would answer in the session: a search of the
entries that left the context on the branch ending at the file's last entry
(and the session's offloaded tool results), or with --entry one entry's
text (note:<n> for a handoff note, from the agent dir's context-relay/:
PI_CODING_AGENT_DIR, else the one the session file is kept in, else
~/.pi/agent). Nothing is written.
--limit N is the number of results, 1 to 30 (default 8); --offset N the
character of the entry to start from, 0 or more (default 0).
`

func cmdEngineRecall(ctx context.Context, inv *invocation) int {
	fs := newFlagSet("engine recall")
	limit := intFlag(fs, "limit", relay.DefaultLimit, 1, relay.MaxLimit)
	entry := fs.String("entry", "", "an entry id, or note:<n>")
	offset := intFlag(fs, "offset", 0, 0, math.MaxInt)
	lineage := fs.Bool("lineage", false, "search ancestor sessions too")
	rest, code, done := parseFlags(inv, fs, inv.args, recallUsage)
	if done {
		return code
	}
	if len(rest) == 0 || (*entry == "" && len(rest) < 2) {
		return inv.errorf(exitUsage, "engine recall: want SESSION_FILE and a QUERY (or --entry ID) (see pi-session engine recall --help)")
	}
	path := rest[0]
	args := map[string]any{"limit": *limit, "offset": *offset}
	if *entry != "" {
		args["entryId"] = *entry
	} else {
		q := ""
		for i, w := range rest[1:] {
			if i > 0 {
				q += " "
			}
			q += w
		}
		args["query"] = q
	}
	if *lineage {
		args["scope"] = "lineage"
	}
	raw, _ := json.Marshal(args)
	f, read, err := openOnce(inv, path)
	if err != nil {
		return inv.errorf(1, "engine recall: %v", err)
	}
	var sessionID, cwd string
	if f.Header != nil {
		sessionID, cwd = f.Header.ID, f.Header.Cwd
	}
	eng := relay.New(relay.Options{AgentDir: paths.SessionAgentDir(inv.env.Get, path), Payloads: offloadPayloads()})
	text, err := eng.Recall(ctx, read, relay.RecallRequest{SessionID: sessionID, SessionFile: path, Cwd: cwd, Args: raw})
	if err != nil {
		return inv.errorf(1, "engine recall: %v", err)
	}
	fmt.Fprintln(inv.stdout, text)
	return 0
}
