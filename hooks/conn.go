package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"sync"
	"time"

	"github.com/pi-session/pi-session/clip"
)

// writeTimeout bounds one write to a peer that stopped reading.
const writeTimeout = 30 * time.Second

// conn is one accepted connection.
type conn struct {
	h    *Host
	c    *net.UnixConn
	peer *Peer

	ctx    context.Context // ends with the connection
	cancel context.CancelFunc
	slots  chan struct{} // one per request in flight

	wmu sync.Mutex // serializes frames on the wire

	mu       sync.Mutex
	hello    bool
	bye      bool
	inflight map[string]context.CancelFunc // by raw id, for rpc.cancel
}

func newConn(h *Host, c *net.UnixConn, peer *Peer) *conn {
	ctx, cancel := context.WithCancel(context.Background())
	return &conn{h: h, c: c, peer: peer, ctx: ctx, cancel: cancel,
		slots: make(chan struct{}, h.cfg.MaxInFlight), inflight: map[string]context.CancelFunc{}}
}

func (cn *conn) close() {
	cn.cancel()
	cn.c.Close()
}

// serve reads frames until the peer goes away and answers each.
func (cn *conn) serve() {
	defer func() {
		cn.close()
		cn.mu.Lock()
		said, clean := cn.hello, cn.bye
		cn.mu.Unlock()
		if said && cn.h.cfg.OnClose != nil {
			cn.h.cfg.OnClose(cn.peer, clean)
		}
	}()
	fr := newFrameReader(cn.c, cn.h.cfg.MaxMessage, cn.h.cfg.MaxBulk)
	for {
		f, err := fr.next()
		if f.err != nil {
			cn.h.log.Warn("bad message", "peerPid", cn.peer.PID, "code", f.err.Code, "err", f.err.Message)
			cn.reply(f.id, nil, f.err) // JSON-RPC: id null when it could not be read
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				cn.h.log.Info("connection ended", "peerPid", cn.peer.PID, "err", err)
			}
			return
		}
		if f.err != nil {
			continue
		}
		if !f.msg.isRequest() {
			continue // responses: the host asks nothing of its peers yet
		}
		if !cn.builtin(&f) {
			cn.dispatch(f)
		}
	}
}

// builtin handles the host's own methods in order, on the reading
// goroutine; it reports whether f was one.
func (cn *conn) builtin(f *frame) bool {
	m := &f.msg
	switch m.Method {
	case "hello":
		if cn.late(m) {
			return true
		}
		cn.doHello(m)
	case "bye":
		cn.mu.Lock()
		cn.bye = true
		cn.mu.Unlock()
		if !m.isNotification() {
			cn.reply(m.ID, struct{}{}, nil)
		}
	case "ping":
		if !m.isNotification() {
			cn.reply(m.ID, struct{}{}, nil)
		}
	case "rpc.cancel":
		var p struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(m.Params, &p) == nil && p.ID != nil {
			cn.mu.Lock()
			if cancel := cn.inflight[string(p.ID)]; cancel != nil {
				cancel()
			}
			cn.mu.Unlock()
		}
	default:
		return false
	}
	return true
}

func (cn *conn) doHello(m *message) {
	var hello Hello
	if err := json.Unmarshal(m.Params, &hello); err != nil || m.Params == nil {
		cn.reply(m.ID, nil, Errorf(CodeInvalidParams, "hooks: hello needs an object with the protocol version"))
		return
	}
	if hello.Protocol != Protocol {
		e := Errorf(CodeVersion, "hooks: protocol version mismatch: the extension speaks %d, pi-session %s speaks %d; use the extension bundled with this pi-session (pi-session setup updates an installed copy)", hello.Protocol, cn.h.cfg.Version, Protocol)
		e.Data = map[string]any{"protocol": Protocol, "version": cn.h.cfg.Version}
		cn.h.log.Warn("protocol mismatch", "peerPid", cn.peer.PID, "protocol", hello.Protocol)
		cn.reply(m.ID, nil, e)
		return
	}
	if hello.Role == rolePrimary {
		hello.Role = RoleMain
	}
	cn.mu.Lock()
	again := cn.hello
	if !again {
		cn.hello = true
		cn.peer.Hello = hello
	}
	cn.mu.Unlock()
	if again {
		cn.reply(m.ID, nil, Errorf(CodeInvalidRequest, "hooks: hello was already said on this connection"))
		return
	}
	cn.h.log.Info("hello", "peerPid", cn.peer.PID, "client", hello.Client, "session", hello.SessionID, "role", hello.Role, "mode", hello.Mode, "owned", cn.peer.Owned)
	if cn.h.cfg.OnHello != nil {
		cn.h.cfg.OnHello(cn.peer)
	}
	cn.reply(m.ID, cn.h.helloResult(cn.peer), nil)
}

// dispatch runs an engine method on its own goroutine, under the request's
// deadline. It waits for a free slot first, so a peer with too many calls
// in flight stops being read.
func (cn *conn) dispatch(f frame) {
	m := f.msg
	cn.mu.Lock()
	said := cn.hello
	cn.mu.Unlock()
	if !said {
		cn.reply(m.ID, nil, Errorf(CodeHelloFirst, "hooks: say hello before calling %s", clip.Echo(m.Method)))
		return
	}
	fn := cn.h.handler(m.Method)
	if fn == nil {
		cn.reply(m.ID, nil, Errorf(CodeMethodNotFound, "hooks: no method %s", clip.Echo(m.Method)))
		return
	}
	select {
	case cn.slots <- struct{}{}:
	case <-cn.ctx.Done():
		return
	}
	if cn.late(&m) {
		<-cn.slots
		return
	}
	timeout := cn.h.cfg.Timeout
	if m.TimeoutMs > 0 {
		timeout = min(time.Duration(m.TimeoutMs)*time.Millisecond, cn.h.cfg.MaxTimeout)
	}
	if m.Deadline > 0 {
		timeout = min(timeout, time.Until(time.UnixMilli(m.Deadline)))
	}
	ctx, cancel := context.WithTimeout(cn.ctx, timeout)
	key := string(m.ID)
	if m.ID != nil {
		cn.mu.Lock()
		cn.inflight[key] = cancel
		cn.mu.Unlock()
	}
	req := &Request{Method: m.Method, Params: m.Params, Bulk: f.bulk, Peer: cn.peer, host: cn.h}
	// Exactly one answer: the handler's, or the deadline's if it comes
	// first. A handler past its deadline runs on, unanswered and without
	// its slot.
	var once sync.Once
	answer := func(res any, err error) {
		once.Do(func() {
			<-cn.slots
			if m.ID != nil {
				cn.mu.Lock()
				delete(cn.inflight, key)
				cn.mu.Unlock()
			}
			if !m.isNotification() && cn.ctx.Err() == nil {
				cn.reply(m.ID, res, err)
			}
		})
	}
	go func() {
		defer cancel()
		stop := context.AfterFunc(ctx, func() { answer(nil, cn.expired(ctx, req, timeout)) })
		defer stop()
		res, err := cn.call(ctx, fn, req)
		if err != nil && ctx.Err() != nil {
			// The handler gave up because its context ended (it returned
			// ctx.Err(), say) before the deadline's own answer ran: the
			// caller gets the deadline's error either way.
			res, err = nil, cn.expired(ctx, req, timeout)
		}
		answer(res, err)
		if len(req.Bulk) >= releaseBulk {
			// The bulk bytes are garbage now. Left to the collector, they
			// would still be resident when the next large request's
			// buffer is allocated (two 100 MB results in a row peaked at
			// 209 MiB); given back at once, the peak stays one payload.
			req.Bulk = nil
			debug.FreeOSMemory()
		}
	}()
}

// late answers a request read after its caller's deadline with
// CodeDeadline, without running it, and reports whether it was one: the
// caller has gone on without the answer, so running it now would apply
// its effects twice or where nobody expects them.
func (cn *conn) late(m *message) bool {
	if m.Deadline <= 0 {
		return false
	}
	over := time.Since(time.UnixMilli(m.Deadline))
	if over < 0 {
		return false
	}
	cn.h.log.Warn("request after its deadline, not run", "method", m.Method, "peerPid", cn.peer.PID, "late", over.Round(time.Millisecond).String())
	if !m.isNotification() {
		cn.reply(m.ID, nil, &Error{Code: CodeDeadline, Message: fmt.Sprintf("hooks: %s arrived %s after its caller's deadline; not run", clip.Echo(m.Method), over.Round(time.Millisecond)),
			Data: map[string]any{"lateMs": over.Milliseconds()}})
	}
	return true
}

// releaseBulk is the bulk size from which the host gives the memory back
// to the system once the request is answered.
const releaseBulk = 8 << 20

// call runs the handler, turning a panic into an error.
func (cn *conn) call(ctx context.Context, fn Handler, req *Request) (res any, err error) {
	defer func() {
		if p := recover(); p != nil {
			cn.h.log.Error("engine panic", "method", req.Method, "peerPid", req.Peer.PID, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			res, err = nil, Errorf(CodeInternal, "hooks: %s panicked: %v", req.Method, p)
		}
	}()
	return fn(ctx, req)
}

// expired is the answer to a request whose context ended before its handler.
func (cn *conn) expired(ctx context.Context, req *Request, timeout time.Duration) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		cn.h.log.Warn("deadline exceeded", "method", req.Method, "peerPid", req.Peer.PID, "timeout", timeout)
		return &Error{Code: CodeDeadline, Message: fmt.Sprintf("hooks: %s did not answer within its deadline of %s", req.Method, timeout),
			Data: map[string]any{"timeoutMs": timeout.Milliseconds()}}
	}
	return Errorf(CodeCancelled, "hooks: %s was cancelled", req.Method)
}

// reply sends a result or an error for id.
func (cn *conn) reply(id json.RawMessage, res any, err error) {
	if id == nil {
		id = json.RawMessage("null")
	}
	m := &message{ID: id}
	var bulk []byte
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			e = &Error{Code: CodeEngine, Message: err.Error()}
		}
		m.Error = e
	} else {
		if r, ok := res.(Reply); ok {
			res, bulk = r.Result, r.Bulk
		}
		if res == nil {
			res = struct{}{}
		}
		b, jerr := json.Marshal(res)
		switch {
		case jerr != nil:
			m.Error, bulk = Errorf(CodeInternal, "hooks: encode the result: %v", jerr), nil
		case len(b) > cn.h.cfg.MaxMessage:
			m.Error, bulk = Errorf(CodeTooLarge, "hooks: result of %d bytes exceeds the limit of %d bytes (maxMessage); engines send large results as bulk bytes", len(b), cn.h.cfg.MaxMessage), nil
		default:
			m.Result = b
		}
	}
	cn.wmu.Lock()
	defer cn.wmu.Unlock()
	cn.c.SetWriteDeadline(time.Now().Add(writeTimeout))
	if werr := writeFrame(cn.c, m, bulk); werr != nil && cn.ctx.Err() == nil {
		cn.h.log.Info("write failed", "peerPid", cn.peer.PID, "err", werr)
		cn.close()
	}
}
