// Package hooks is the engine host: it serves JSON-RPC over a private unix socket to pi-session's extension inside pi and routes each call to an engine.
package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// Handler answers one call. It returns the result (marshalled to JSON;
// return a Reply to send bulk bytes too) or an error (an *Error chooses
// the code). ctx ends at the request's deadline or when the caller gives
// up; a handler still running then is abandoned and its answer dropped.
type Handler func(ctx context.Context, r *Request) (any, error)

// Reply is a result with bulk bytes that travel raw after the JSON line.
type Reply struct {
	Result any
	Bulk   []byte
}

// Engine is a named set of methods, called as "<Name>.<method>", and the
// pi events the extension forwards to it: Hooks maps an event name (for
// example "tool_result") to one of the engine's method names.
type Engine struct {
	Name    string
	Methods map[string]Handler
	Hooks   map[string]string
}

// Request is one call as a handler sees it.
type Request struct {
	Method string
	Params json.RawMessage // null when absent
	Bulk   []byte          // the bytes that followed the request, if any
	Peer   *Peer           // who called: credentials and hello
	host   *Host
}

// Decode unmarshals the params into v; a failure is CodeInvalidParams.
func (r *Request) Decode(v any) error {
	if len(r.Params) == 0 {
		return nil
	}
	if err := json.Unmarshal(r.Params, v); err != nil {
		return Errorf(CodeInvalidParams, "hooks: %s: invalid params: %v", r.Method, err)
	}
	return nil
}

// Sessions is the host's cache of session files, shared by all engines.
func (r *Request) Sessions() *Sessions { return r.host.sessions }

// Log is the host's log, for what an engine should record there.
func (r *Request) Log() *slog.Logger { return r.host.log }

// Peer is the process at the other end of a connection.
type Peer struct {
	PID, UID, GID int // from the kernel (SO_PEERCRED), not from the peer
	Hello         Hello
	// Owned is true when PID is the pi process this host's pi-session
	// launched (see Config.Owns).
	Owned     bool
	Connected time.Time
}

// Hello is what the extension says about itself and its session first.
type Hello struct {
	Protocol    int    `json:"protocol"`
	Client      string `json:"client"`      // "extension", or a tool's name ("doctor")
	Extension   string `json:"extension"`   // the extension's version
	Pi          string `json:"pi"`          // pi's version
	PID         int    `json:"pid"`         // process.pid as pi sees it
	SessionID   string `json:"sessionId"`   // "" without a session
	SessionFile string `json:"sessionFile"` // may not exist yet: pi writes it lazily
	SessionName string `json:"sessionName"`
	Cwd         string `json:"cwd"`
	Role        string `json:"role"` // RoleMain or RoleChild
	Mode        string `json:"mode"` // tui, rpc, print or json
	Subagent    bool   `json:"subagent"`
	Headless    bool   `json:"headless"`
}

// Values of Hello.Role, the words of the status records (context-budget's
// "main/child role").
const (
	RoleMain  = "main"  // the session pi was started for, or switched to
	RoleChild = "child" // an SDK session bound in the same process while a main one is
	// rolePrimary is the word extensions before 0.2 sent for RoleMain;
	// hello reads it as RoleMain.
	rolePrimary = "primary"
	// Deprecated: RolePrimary is RoleMain.
	RolePrimary = RoleMain
)

// HelloResult is the host's answer to hello.
type HelloResult struct {
	Protocol  int                 `json:"protocol"`
	Version   string              `json:"version"` // pi-session's version
	Host      string              `json:"host"`    // "wrapper" or "serve"
	PID       int                 `json:"pid"`     // the host's pid
	Owned     bool                `json:"owned"`   // the caller is the pi this host launched
	StartedAt time.Time           `json:"startedAt"`
	Socket    string              `json:"socket"`
	Limits    Limits              `json:"limits"`
	Methods   []string            `json:"methods"`
	Hooks     map[string][]string `json:"hooks"` // pi event -> methods to call
}

// Limits are the host's message limits.
type Limits struct {
	MaxMessage   int   `json:"maxMessage"`
	MaxBulk      int64 `json:"maxBulk"`
	MaxTimeoutMs int64 `json:"maxTimeoutMs"`
}

// Config configures a Host. Zero fields take the defaults.
type Config struct {
	Path        string        // socket path (see SocketPath); required
	Version     string        // pi-session's version, reported in hello
	Mode        string        // "wrapper" or "serve", reported in hello
	MaxMessage  int           // longest JSON line; default DefaultMaxMessage
	MaxBulk     int64         // most bulk bytes per message; default DefaultMaxBulk
	Timeout     time.Duration // deadline of a request that names none; default DefaultTimeout
	MaxTimeout  time.Duration // longest deadline a request may ask for; default DefaultMaxTimeout
	MaxInFlight int           // concurrent requests per connection; default DefaultMaxInFlight
	Logger      *slog.Logger  // default: discard
	// Owns reports whether pid is the pi process this host's pi-session
	// launched; nil means none is.
	Owns func(pid int) bool
	// OnHello runs after each successful hello, OnClose when a connection
	// that said hello ends; clean is true when it said bye first.
	OnHello func(p *Peer)
	OnClose func(p *Peer, clean bool)
}

// Defaults of Config's zero fields.
const (
	DefaultMaxMessage  = 4 << 20
	DefaultMaxBulk     = 128 << 20
	DefaultTimeout     = 10 * time.Second
	DefaultMaxTimeout  = 5 * time.Minute
	DefaultMaxInFlight = 64
)

// Host accepts connections on a unix socket and routes calls to engines.
type Host struct {
	cfg      Config
	ln       *net.UnixListener
	log      *slog.Logger
	sessions *Sessions
	started  time.Time
	uid      int

	mu      sync.RWMutex
	methods map[string]Handler
	hooks   map[string][]string
	conns   map[*conn]struct{}
	closed  bool
	wg      sync.WaitGroup
}

// Listen creates the host's socket (see listen for how an existing file is
// treated), removes the files dead hosts left beside it, and registers the
// built-in engine "session". Call Serve to
// accept connections and Close to stop.
func Listen(cfg Config) (*Host, error) {
	if cfg.Path == "" {
		return nil, errors.New("hooks: no socket path")
	}
	if cfg.MaxMessage <= 0 {
		cfg.MaxMessage = DefaultMaxMessage
	}
	if cfg.MaxBulk <= 0 {
		cfg.MaxBulk = DefaultMaxBulk
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxTimeout <= 0 {
		cfg.MaxTimeout = DefaultMaxTimeout
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = DefaultMaxInFlight
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ln, err := listen(cfg.Path)
	if err != nil {
		return nil, err
	}
	sweep(cfg.Path)
	h := &Host{
		cfg: cfg, ln: ln, log: cfg.Logger, sessions: NewSessions(8),
		started: time.Now(), uid: os.Getuid(),
		methods: map[string]Handler{}, hooks: map[string][]string{}, conns: map[*conn]struct{}{},
	}
	if err := h.Register(SessionEngine()); err != nil {
		ln.Close()
		return nil, err
	}
	return h, nil
}

// Path is the socket's path.
func (h *Host) Path() string { return h.cfg.Path }

// Register adds an engine's methods and hooks. Names are one word without
// dots; registering a name twice is an error.
func (h *Host) Register(e Engine) error {
	if e.Name == "" || strings.ContainsAny(e.Name, ". ") || reserved[e.Name] {
		return fmt.Errorf("hooks: invalid engine name %q", e.Name)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for name := range e.Methods {
		if name == "" || strings.ContainsAny(name, ". ") {
			return fmt.Errorf("hooks: invalid method name %q in engine %s", name, e.Name)
		}
		if _, dup := h.methods[e.Name+"."+name]; dup {
			return fmt.Errorf("hooks: %s.%s is registered already", e.Name, name)
		}
	}
	for event, name := range e.Hooks {
		if e.Methods[name] == nil {
			return fmt.Errorf("hooks: engine %s hooks %s to %q, which it does not have", e.Name, event, name)
		}
	}
	for name, fn := range e.Methods {
		h.methods[e.Name+"."+name] = fn
	}
	for event, name := range e.Hooks {
		h.hooks[event] = append(h.hooks[event], e.Name+"."+name)
	}
	return nil
}

// reserved names are the host's own methods.
var reserved = map[string]bool{"hello": true, "bye": true, "ping": true, "rpc": true}

func (h *Host) handler(method string) Handler {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.methods[method]
}

// Serve accepts connections until ctx ends or Close is called. It returns
// nil after Close or a cancelled ctx.
func (h *Host) Serve(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { h.Close() })
	defer stop()
	for {
		c, err := h.ln.AcceptUnix()
		if err != nil {
			h.mu.RLock()
			closed := h.closed
			h.mu.RUnlock()
			if closed {
				return h.Close() // waits for the connections to end
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("hooks: accept: %w", err)
		}
		h.accept(c)
	}
}

// accept checks the peer and starts serving the connection.
func (h *Host) accept(c *net.UnixConn) {
	cred, err := peerCred(c)
	if err != nil {
		h.log.Warn("refused connection", "err", err)
		c.Close()
		return
	}
	if int(cred.Uid) != h.uid {
		h.log.Warn("refused connection from another user", "peerUid", cred.Uid, "peerPid", cred.Pid, "uid", h.uid)
		refusal := &message{ID: json.RawMessage("null"), Error: Errorf(CodeRefused, "hooks: uid %d may not use the engine host of uid %d", cred.Uid, h.uid)}
		c.SetWriteDeadline(time.Now().Add(time.Second))
		writeFrame(c, refusal, nil)
		c.Close()
		return
	}
	peer := &Peer{PID: int(cred.Pid), UID: int(cred.Uid), GID: int(cred.Gid), Connected: time.Now()}
	if h.cfg.Owns != nil {
		peer.Owned = h.cfg.Owns(peer.PID)
	}
	cn := newConn(h, c, peer)
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		c.Close()
		return
	}
	h.conns[cn] = struct{}{}
	h.wg.Add(1)
	h.mu.Unlock()
	go func() {
		defer h.wg.Done()
		cn.serve()
		h.mu.Lock()
		delete(h.conns, cn)
		h.mu.Unlock()
	}()
}

// Close stops accepting, ends every connection, waits for their readers
// (and OnClose) and removes the socket file. Handlers still running are
// abandoned. Every call waits until the host is closed.
func (h *Host) Close() error {
	h.mu.Lock()
	var err error
	if !h.closed {
		h.closed = true
		err = h.ln.Close()
		for c := range h.conns {
			c.close()
		}
	}
	h.mu.Unlock()
	h.wg.Wait()
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("hooks: close: %w", err)
	}
	return nil
}

// helloResult is the host's answer to a peer's hello.
func (h *Host) helloResult(p *Peer) HelloResult {
	h.mu.RLock()
	defer h.mu.RUnlock()
	methods := make([]string, 0, len(h.methods))
	for m := range h.methods {
		methods = append(methods, m)
	}
	slices.Sort(methods)
	hooks := make(map[string][]string, len(h.hooks))
	for ev, ms := range h.hooks {
		hooks[ev] = slices.Clone(ms)
	}
	return HelloResult{
		Protocol: Protocol, Version: h.cfg.Version, Host: h.cfg.Mode, PID: os.Getpid(),
		Owned: p.Owned, StartedAt: h.started.UTC(), Socket: h.cfg.Path,
		Limits:  Limits{MaxMessage: h.cfg.MaxMessage, MaxBulk: h.cfg.MaxBulk, MaxTimeoutMs: h.cfg.MaxTimeout.Milliseconds()},
		Methods: methods, Hooks: hooks,
	}
}
