package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"
)

// Client is the Go side of a connection to a host: what pi-session's own
// tools (doctor), tests and benchmarks use. The extension has its own
// client in TypeScript (extension/src/client.ts) speaking the same
// protocol. A Client is safe for concurrent use.
type Client struct {
	c     *net.UnixConn
	Hello HelloResult

	wmu  sync.Mutex
	mu   sync.Mutex
	next int64
	wait map[string]chan response
	err  error // why the connection ended
	done chan struct{}
}

type response struct {
	result json.RawMessage
	bulk   []byte
	err    *Error
}

// ErrClosed is returned for calls on a connection that ended.
var ErrClosed = errors.New("hooks: connection closed")

// Dial connects to the host at path and says hello. A host speaking
// another protocol version gives an *Error with CodeVersion.
func Dial(ctx context.Context, path string, hello Hello) (*Client, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("hooks: dial: %w", err)
	}
	cl := &Client{c: c.(*net.UnixConn), wait: map[string]chan response{}, done: make(chan struct{})}
	go cl.read()
	if hello.Protocol == 0 {
		hello.Protocol = Protocol
	}
	res, _, err := cl.Call(ctx, "hello", hello, nil)
	if err == nil {
		err = json.Unmarshal(res, &cl.Hello)
	}
	if err == nil && cl.Hello.Protocol != Protocol {
		err = Errorf(CodeVersion, "hooks: protocol version mismatch: the host speaks %d, this client %d", cl.Hello.Protocol, Protocol)
	}
	if err != nil {
		cl.Close()
		return nil, err
	}
	return cl, nil
}

// Call sends a request and waits for its answer. The request carries
// ctx's deadline as timeoutMs and deadline. An error from the host is an *Error.
func (cl *Client) Call(ctx context.Context, method string, params any, bulk []byte) (json.RawMessage, []byte, error) {
	raw, err := marshalParams(params)
	if err != nil {
		return nil, nil, err
	}
	cl.mu.Lock()
	if cl.err != nil {
		err := cl.err
		cl.mu.Unlock()
		return nil, nil, err
	}
	cl.next++
	id := strconv.FormatInt(cl.next, 10)
	ch := make(chan response, 1)
	cl.wait[id] = ch
	cl.mu.Unlock()
	m := &message{ID: json.RawMessage(id), Method: method, Params: raw}
	if dl, ok := ctx.Deadline(); ok {
		m.TimeoutMs = max(1, time.Until(dl).Milliseconds())
		m.Deadline = dl.UnixMilli()
	}
	cl.wmu.Lock()
	err = writeFrame(cl.c, m, bulk)
	cl.wmu.Unlock()
	if err != nil {
		cl.forget(id)
		// A host that refuses the connection says why before closing it.
		select {
		case <-cl.done:
			var e *Error
			if errors.As(cl.closeErr(), &e) {
				return nil, nil, e
			}
		case <-time.After(time.Second):
		}
		return nil, nil, fmt.Errorf("hooks: send %s: %w", method, err)
	}
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, nil, r.err
		}
		return r.result, r.bulk, nil
	case <-cl.done:
		return nil, nil, cl.closeErr()
	case <-ctx.Done():
		cl.forget(id)
		cl.Notify("rpc.cancel", map[string]json.RawMessage{"id": json.RawMessage(id)})
		return nil, nil, fmt.Errorf("hooks: %s: %w", method, ctx.Err())
	}
}

// Notify sends a notification, which gets no answer.
func (cl *Client) Notify(method string, params any) error {
	raw, err := marshalParams(params)
	if err != nil {
		return err
	}
	cl.wmu.Lock()
	defer cl.wmu.Unlock()
	return writeFrame(cl.c, &message{Method: method, Params: raw}, nil)
}

func marshalParams(params any) (json.RawMessage, error) {
	if params == nil {
		return nil, nil
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("hooks: encode params: %w", err)
	}
	return raw, nil
}

func (cl *Client) closeErr() error {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.err
}

func (cl *Client) forget(id string) {
	cl.mu.Lock()
	delete(cl.wait, id)
	cl.mu.Unlock()
}

// Close ends the connection (without bye: see Bye).
func (cl *Client) Close() error {
	err := cl.c.Close()
	<-cl.done
	return err
}

// Bye tells the host the session ends cleanly, then closes.
func (cl *Client) Bye(ctx context.Context) error {
	_, _, err := cl.Call(ctx, "bye", nil, nil)
	cl.Close()
	return err
}

// Done is closed when the connection has ended.
func (cl *Client) Done() <-chan struct{} { return cl.done }

func (cl *Client) read() {
	fr := newFrameReader(cl.c, 1<<30, 1<<40)
	var err error
	var refused *Error
	for {
		var f frame
		f, err = fr.next()
		if err != nil {
			break
		}
		if f.err != nil || f.msg.isRequest() {
			continue
		}
		if f.msg.Error != nil && string(f.msg.ID) == "null" {
			refused = f.msg.Error // the host refuses the connection
			continue
		}
		cl.mu.Lock()
		ch := cl.wait[string(f.msg.ID)]
		delete(cl.wait, string(f.msg.ID))
		cl.mu.Unlock()
		if ch != nil {
			ch <- response{result: f.msg.Result, bulk: f.bulk, err: f.msg.Error}
		}
	}
	cl.mu.Lock()
	if cl.err == nil {
		cl.err = fmt.Errorf("%w: %v", ErrClosed, err)
		if refused != nil {
			cl.err = refused
		}
	}
	cl.mu.Unlock()
	close(cl.done)
}
