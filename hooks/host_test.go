package hooks

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// logBuffer collects a host's log lines for a test.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// startHost runs a host on a socket in a fresh directory until the test ends.
func startHost(t *testing.T, cfg Config, engines ...Engine) (*Host, *logBuffer) {
	t.Helper()
	if cfg.Path == "" {
		cfg.Path = filepath.Join(shortTempDir(t), "h.sock")
	}
	logs := &logBuffer{}
	cfg.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	h, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range engines {
		if err := h.Register(e); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- h.Serve(context.Background()) }()
	t.Cleanup(func() {
		h.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return h, logs
}

// shortTempDir is a temporary directory with a path short enough for a
// socket address, whatever the test's name.
func shortTempDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "hk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func dial(t *testing.T, h *Host) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, h.Path(), Hello{Client: "test", SessionID: "s1", Role: rolePrimary, Mode: "print"}) // an older extension's word

	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// rawConn is a connection that writes and reads lines by hand.
type rawConn struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

func dialRaw(t *testing.T, h *Host) *rawConn {
	t.Helper()
	c, err := net.Dial("unix", h.Path())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(30 * time.Second)) // bounds a failing test only
	return &rawConn{t: t, c: c, r: bufio.NewReader(c)}
}

func (rc *rawConn) send(s string) {
	rc.t.Helper()
	if _, err := rc.c.Write([]byte(s)); err != nil {
		rc.t.Fatal(err)
	}
}

func (rc *rawConn) recv() map[string]any {
	rc.t.Helper()
	line, err := rc.r.ReadBytes('\n')
	if err != nil {
		rc.t.Fatalf("read: %v (got %q)", err, line)
	}
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		rc.t.Fatalf("answer %q: %v", line, err)
	}
	return m
}

func (rc *rawConn) hello() {
	rc.t.Helper()
	rc.send(`{"jsonrpc":"2.0","id":0,"method":"hello","params":{"protocol":1,"client":"raw"}}` + "\n")
	if m := rc.recv(); m["error"] != nil {
		rc.t.Fatalf("hello: %v", m["error"])
	}
}

func errCode(m map[string]any) int {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return int(c)
}

func errMessage(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	s, _ := e["message"].(string)
	return s
}

func codeOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

var echo = Engine{Name: "test", Methods: map[string]Handler{
	"echo": func(ctx context.Context, r *Request) (any, error) {
		return Reply{Result: json.RawMessage(orNull(r.Params)), Bulk: r.Bulk}, nil
	},
	"fail": func(ctx context.Context, r *Request) (any, error) {
		return nil, errors.New("test: failed on purpose")
	},
	"panic": func(ctx context.Context, r *Request) (any, error) {
		panic("engine bug")
	},
	"block": func(ctx context.Context, r *Request) (any, error) {
		select {} // ignores its context: the host must answer anyway
	},
	"wait": func(ctx context.Context, r *Request) (any, error) {
		<-ctx.Done() // gives up with its context, racing the deadline's answer
		return nil, ctx.Err()
	},
	"peer": func(ctx context.Context, r *Request) (any, error) {
		return r.Peer, nil
	},
	"big": func(ctx context.Context, r *Request) (any, error) {
		var p struct{ N int }
		if err := r.Decode(&p); err != nil {
			return nil, err
		}
		return strings.Repeat("x", p.N), nil
	},
}}

func orNull(b []byte) []byte {
	if len(b) == 0 {
		return []byte("null")
	}
	return b
}

func TestCallAndBulk(t *testing.T) {
	h, _ := startHost(t, Config{Version: "v-test", Mode: "serve"}, echo)
	c := dial(t, h)
	if c.Hello.Version != "v-test" || c.Hello.Host != "serve" || c.Hello.Protocol != Protocol {
		t.Errorf("hello result = %+v", c.Hello)
	}
	bulk := bytes.Repeat([]byte("\x00\n\xff{\"x\"}"), 1000)
	res, got, err := c.Call(context.Background(), "test.echo", map[string]int{"a": 1}, bulk)
	if err != nil {
		t.Fatal(err)
	}
	if string(res) != `{"a":1}` || !bytes.Equal(got, bulk) {
		t.Errorf("echo = %s, %d bulk bytes (equal %v)", res, len(got), bytes.Equal(got, bulk))
	}
	var p Peer
	res, _, err = c.Call(context.Background(), "test.peer", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	json.Unmarshal(res, &p)
	if p.PID != os.Getpid() || p.UID != os.Getuid() || p.Hello.SessionID != "s1" {
		t.Errorf("peer = %+v, want this process (pid %d uid %d) and its hello", p, os.Getpid(), os.Getuid())
	}
	if p.Hello.Role != RoleMain { // dial says "primary", the older word
		t.Errorf("peer role = %q, want %q", p.Hello.Role, RoleMain)
	}
}

func TestErrors(t *testing.T) {
	h, logs := startHost(t, Config{}, echo)
	c := dial(t, h)
	for _, tc := range []struct {
		method string
		want   int
	}{
		{"test.fail", CodeEngine},
		{"test.panic", CodeInternal},
		{"test.nothing", CodeMethodNotFound},
		{"nothing", CodeMethodNotFound},
	} {
		_, _, err := c.Call(context.Background(), tc.method, nil, nil)
		if got := codeOf(err); got != tc.want {
			t.Errorf("Call(%s) = %v (code %d), want code %d", tc.method, err, got, tc.want)
		}
	}
	// The connection survives the panic.
	if _, _, err := c.Call(context.Background(), "test.echo", nil, nil); err != nil {
		t.Errorf("call after a panic: %v", err)
	}
	if !strings.Contains(logs.String(), `"msg":"engine panic"`) || !strings.Contains(logs.String(), "engine bug") {
		t.Errorf("panic not logged:\n%s", logs)
	}
}

func TestHelloFirstAndVersion(t *testing.T) {
	h, _ := startHost(t, Config{Version: "v9"}, echo)
	rc := dialRaw(t, h)
	rc.send(`{"jsonrpc":"2.0","id":1,"method":"test.echo"}` + "\n")
	if m := rc.recv(); errCode(m) != CodeHelloFirst {
		t.Errorf("call before hello = %v, want code %d", m, CodeHelloFirst)
	}
	rc.send(`{"jsonrpc":"2.0","id":2,"method":"hello","params":{"protocol":99}}` + "\n")
	m := rc.recv()
	if errCode(m) != CodeVersion || !strings.Contains(errMessage(m), "extension speaks 99") || !strings.Contains(errMessage(m), "v9 speaks 1") {
		t.Errorf("hello with protocol 99 = %v, want a version error naming both", m)
	}
	rc.hello()
	rc.send(`{"jsonrpc":"2.0","id":3,"method":"hello","params":{"protocol":1}}` + "\n")
	if m := rc.recv(); errCode(m) != CodeInvalidRequest {
		t.Errorf("second hello = %v, want code %d", m, CodeInvalidRequest)
	}
}

func TestClientVersionMismatch(t *testing.T) {
	// A host that answers hello with another protocol: the client refuses it.
	dir := shortTempDir(t)
	ln, err := net.Listen("unix", filepath.Join(dir, "old.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		bufio.NewReader(c).ReadBytes('\n')
		fmt.Fprintf(c, `{"jsonrpc":"2.0","id":1,"result":{"protocol":2}}`+"\n")
		c.Read(make([]byte, 1))
	}()
	_, err = Dial(context.Background(), filepath.Join(dir, "old.sock"), Hello{})
	if codeOf(err) != CodeVersion || !strings.Contains(err.Error(), "host speaks 2") {
		t.Errorf("Dial to a protocol 2 host = %v, want a version error", err)
	}
}

func TestOversize(t *testing.T) {
	h, _ := startHost(t, Config{MaxMessage: 1024, MaxBulk: 4096}, echo)
	rc := dialRaw(t, h)
	rc.hello()
	big := strings.Repeat("x", 5000)
	rc.send(`{"jsonrpc":"2.0","id":7,"method":"test.echo","params":{"s":"` + big + `"}}` + "\n")
	m := rc.recv()
	if errCode(m) != CodeTooLarge || m["id"] != float64(7) || !strings.Contains(errMessage(m), "limit of 1024 bytes (maxMessage)") {
		t.Errorf("oversized line = %v, want code %d for id 7 naming maxMessage", m, CodeTooLarge)
	}
	rc.send(`{"jsonrpc":"2.0","id":8,"method":"test.echo","bulk":5000}` + "\n" + big)
	m = rc.recv()
	if errCode(m) != CodeTooLarge || m["id"] != float64(8) || !strings.Contains(errMessage(m), "limit of 4096 bytes (maxBulk)") {
		t.Errorf("oversized bulk = %v, want code %d for id 8 naming maxBulk", m, CodeTooLarge)
	}
	// The stream is still in step.
	rc.send(`{"jsonrpc":"2.0","id":9,"method":"test.echo","params":{"ok":true}}` + "\n")
	if m := rc.recv(); m["id"] != float64(9) || m["error"] != nil {
		t.Errorf("call after oversized ones = %v", m)
	}
	// A result over the limit is an error too, not a hang.
	c := dial(t, h)
	_, _, err := c.Call(context.Background(), "test.big", map[string]int{"n": 2000}, nil)
	if codeOf(err) != CodeTooLarge || !strings.Contains(err.Error(), "limit of 1024 bytes") {
		t.Errorf("result of 2000 bytes = %v, want code %d", err, CodeTooLarge)
	}
}

func TestBadLines(t *testing.T) {
	h, _ := startHost(t, Config{}, echo)
	rc := dialRaw(t, h)
	rc.hello()
	for _, tc := range []struct {
		line string
		code int
		id   any
	}{
		{`not json`, CodeParse, nil},
		{`{"jsonrpc":"1.0","id":3,"method":"test.echo"}`, CodeInvalidRequest, float64(3)},
		{`{"jsonrpc":"2.0","id":4,"method":5}`, CodeInvalidRequest, float64(4)},
		{`{"jsonrpc":"2.0","id":5,"method":"test.echo","params":"x"}`, CodeInvalidRequest, float64(5)},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"test.echo"}`, CodeInvalidRequest, nil},
	} {
		rc.send(tc.line + "\n\n")
		m := rc.recv()
		if errCode(m) != tc.code || m["id"] != tc.id {
			t.Errorf("%s -> %v, want code %d id %v", tc.line, m, tc.code, tc.id)
		}
	}
	rc.send(`{"jsonrpc":"2.0","id":6,"method":"ping"}` + "\n")
	if m := rc.recv(); m["id"] != float64(6) || m["error"] != nil {
		t.Errorf("ping after bad lines = %v", m)
	}
}

func TestDeadline(t *testing.T) {
	h, logs := startHost(t, Config{}, echo)
	c := dial(t, h)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc := dialRaw(t, h)
	rc.hello()
	rc.send(`{"jsonrpc":"2.0","id":1,"method":"test.block","timeoutMs":20}` + "\n")
	m := rc.recv()
	if errCode(m) != CodeDeadline || !strings.Contains(errMessage(m), "deadline of 20ms") {
		t.Errorf("blocked call = %v, want code %d naming the deadline", m, CodeDeadline)
	}
	if !strings.Contains(logs.String(), "deadline exceeded") {
		t.Errorf("expiry not logged:\n%s", logs)
	}
	// The client gives up by itself at its own deadline and cancels.
	short, cancelShort := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancelShort()
	_, _, err := c.Call(short, "test.block", nil, nil)
	if !errors.Is(err, context.DeadlineExceeded) && codeOf(err) != CodeDeadline {
		t.Errorf("client call past its deadline = %v", err)
	}
	if _, _, err := c.Call(ctx, "ping", nil, nil); err != nil {
		t.Errorf("ping after expired calls: %v", err)
	}
}

// TestLateRequestNotRun: a request read after its deadline (a host that
// was stopped reads what queued up meanwhile) is answered CodeDeadline and
// never reaches its engine, a hello after its deadline is not said (no
// OnHello: no status record), and a request whose deadline is still ahead
// runs under the nearer of its two deadlines.
func TestLateRequestNotRun(t *testing.T) {
	var mu sync.Mutex
	var ran []string
	hellos := 0
	count := Engine{Name: "count", Methods: map[string]Handler{
		"effect": func(ctx context.Context, r *Request) (any, error) {
			var p struct{ N string }
			r.Decode(&p)
			mu.Lock()
			ran = append(ran, p.N)
			mu.Unlock()
			return struct{}{}, nil
		},
		"block": func(ctx context.Context, r *Request) (any, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		},
	}}
	h, logs := startHost(t, Config{OnHello: func(*Peer) { mu.Lock(); hellos++; mu.Unlock() }}, count)
	past := time.Now().Add(-time.Second).UnixMilli()
	ahead := time.Now().Add(time.Minute).UnixMilli()

	rc := dialRaw(t, h)
	rc.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":0,"method":"hello","params":{"protocol":1,"client":"raw"},"deadline":%d}`+"\n", past))
	if m := rc.recv(); errCode(m) != CodeDeadline || !strings.Contains(errMessage(m), "hello arrived") {
		t.Errorf("hello after its deadline = %v, want code %d", m, CodeDeadline)
	}
	rc.send(`{"jsonrpc":"2.0","id":1,"method":"count.effect","params":{"n":"after a late hello"}}` + "\n")
	if m := rc.recv(); errCode(m) != CodeHelloFirst {
		t.Errorf("a call after a late hello = %v, want code %d: the late hello was said", m, CodeHelloFirst)
	}

	rc = dialRaw(t, h)
	rc.hello()
	for i, line := range []string{
		fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"count.effect","params":{"n":"late"},"timeoutMs":5000,"deadline":%d}`, past),
		fmt.Sprintf(`{"jsonrpc":"2.0","method":"count.effect","params":{"n":"late notification"},"deadline":%d}`, past),
		fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"method":"count.effect","params":{"n":"in time"},"timeoutMs":5000,"deadline":%d}`, ahead),
		`{"jsonrpc":"2.0","id":4,"method":"count.effect","params":{"n":"no deadline"}}`,
	} {
		rc.send(line + "\n")
		if i == 1 {
			continue // a notification gets no answer
		}
		m := rc.recv()
		if want := i < 1; (errCode(m) == CodeDeadline) != want {
			t.Errorf("%s -> %v; want a deadline error: %v", line, m, want)
		}
	}
	mu.Lock()
	if d := cmp.Diff([]string{"in time", "no deadline"}, ran); d != "" {
		t.Errorf("engine calls (-want +got):\n%s", d)
	}
	if hellos != 1 {
		t.Errorf("OnHello ran %d times, want 1 (the late hello must not count)", hellos)
	}
	mu.Unlock()
	if n := strings.Count(logs.String(), "request after its deadline, not run"); n != 3 {
		t.Errorf("%d late requests logged, want 3:\n%s", n, logs)
	}

	// The nearer deadline wins: 30 ms from now, though timeoutMs says 60 s.
	soon := time.Now().Add(30 * time.Millisecond).UnixMilli()
	rc.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":5,"method":"count.block","timeoutMs":60000,"deadline":%d}`+"\n", soon))
	if m := rc.recv(); errCode(m) != CodeDeadline {
		t.Errorf("a call past its deadline member = %v, want code %d", m, CodeDeadline)
	}
}

// TestDeadlineRace: a handler that returns ctx.Err() as its deadline
// passes races the host's own deadline answer; the caller must get the
// deadline's error whichever goroutine answers first (under load the
// handler's "context deadline exceeded" used to win as an engine error).
func TestDeadlineRace(t *testing.T) {
	h, _ := startHost(t, Config{}, echo)
	rc := dialRaw(t, h)
	rc.hello()
	const n = 300
	for i := 1; i <= n; i++ {
		rc.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"test.wait","timeoutMs":1}`+"\n", i))
	}
	for i := 0; i < n; i++ {
		if m := rc.recv(); errCode(m) != CodeDeadline {
			t.Fatalf("answer %d of %d = %v, want code %d", i+1, n, m, CodeDeadline)
		}
	}
}

func TestConcurrent(t *testing.T) {
	const n = 16
	arrived := make(chan struct{}, n)
	release := make(chan struct{})
	barrier := Engine{Name: "barrier", Methods: map[string]Handler{
		"wait": func(ctx context.Context, r *Request) (any, error) {
			arrived <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			var p struct{ N int }
			r.Decode(&p)
			return p.N, nil
		},
	}}
	h, _ := startHost(t, Config{}, barrier)
	c := dial(t, h)
	go func() {
		for i := 0; i < n; i++ {
			<-arrived
		}
		close(release) // all n are in flight at once on one connection
	}()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, _, err := c.Call(ctx, "barrier.wait", map[string]int{"N": i}, nil)
			if err == nil && string(res) != fmt.Sprint(i) {
				err = fmt.Errorf("answer %s, want %d", res, i)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("call %d: %v", i, err)
		}
	}
}

func TestOnHelloAndClose(t *testing.T) {
	type event struct {
		Kind, Session string
		Clean         bool
	}
	events := make(chan event, 4)
	h, _ := startHost(t, Config{
		OnHello: func(p *Peer) { events <- event{"hello", p.Hello.SessionID, false} },
		OnClose: func(p *Peer, clean bool) { events <- event{"close", p.Hello.SessionID, clean} },
	})
	var got []event
	c := dial(t, h)
	if err := c.Bye(context.Background()); err != nil {
		t.Fatal(err)
	}
	got = append(got, <-events, <-events)
	c2 := dial(t, h)
	c2.Close()
	got = append(got, <-events, <-events)
	want := []event{{"hello", "s1", false}, {"close", "s1", true}, {"hello", "s1", false}, {"close", "s1", false}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
}

func TestRegister(t *testing.T) {
	h, _ := startHost(t, Config{})
	ok := func(context.Context, *Request) (any, error) { return nil, nil }
	for _, tc := range []struct {
		e    Engine
		fail bool
	}{
		{Engine{Name: "offload", Methods: map[string]Handler{"put": ok}, Hooks: map[string]string{"tool_result": "put"}}, false},
		{Engine{Name: "offload", Methods: map[string]Handler{"put": ok}}, true},
		{Engine{Name: "a.b", Methods: map[string]Handler{"x": ok}}, true},
		{Engine{Name: "hello"}, true},
		{Engine{Name: "c", Methods: map[string]Handler{"x.y": ok}}, true},
		{Engine{Name: "d", Methods: map[string]Handler{"x": ok}, Hooks: map[string]string{"tool_call": "y"}}, true},
	} {
		if err := h.Register(tc.e); (err != nil) != tc.fail {
			t.Errorf("Register(%s) = %v, want failure %v", tc.e.Name, err, tc.fail)
		}
	}
	c := dial(t, h)
	if d := cmp.Diff(map[string][]string{"tool_result": {"offload.put"}}, c.Hello.Hooks); d != "" {
		t.Errorf("hello hooks (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"offload.put", "session.describe"}, c.Hello.Methods); d != "" {
		t.Errorf("hello methods (-want +got):\n%s", d)
	}
}

func TestListenStaleAndLive(t *testing.T) {
	dir := shortTempDir(t)
	path := filepath.Join(dir, "s.sock")
	// A dead host's socket file: listening fd closed, file left behind.
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("stale socket file missing: %v", err)
	}
	h, err := Listen(Config{Path: path})
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	defer h.Close()
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode = %v, %v; want 0600", fi.Mode(), err)
	}
	// A live one is refused and left alone.
	go h.Serve(context.Background())
	if _, err := Listen(Config{Path: path}); !errors.Is(err, ErrLive) {
		t.Errorf("Listen over a live socket = %v, want ErrLive", err)
	}
	c := dial(t, h)
	if _, _, err := c.Call(context.Background(), "ping", nil, nil); err != nil {
		t.Errorf("the live host stopped answering: %v", err)
	}
	// A regular file is not ours to remove.
	file := filepath.Join(dir, "f.sock")
	os.WriteFile(file, nil, 0o600)
	if _, err := Listen(Config{Path: file}); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("Listen over a regular file = %v", err)
	}
	h.Close()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("socket file after Close: %v, want removed", err)
	}
}

// TestPeerUIDRefused connects from a process running as uid 65534 (nobody):
// the host must refuse it before any method runs.
func TestPeerUIDRefused(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skipf("connecting as another user needs root (uid %d); TestPeerUIDMismatch covers the refusal", os.Getuid())
	}
	dir := shortTempDir(t)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	h, logs := startHost(t, Config{Path: filepath.Join(dir, "h.sock")}, echo)
	// Let the other user reach the socket, so that only the peer check stands in the way.
	if err := os.Chmod(h.Path(), 0o666); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "hooks.test")
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestPeerUIDChild$")
	cmd.Env = append(os.Environ(), "HOOKS_TEST_DIAL="+h.Path())
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child as uid 65534: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), fmt.Sprintf("refused: code %d", CodeRefused)) {
		t.Errorf("the other user's connection was not refused:\n%s", out)
	}
	if !strings.Contains(logs.String(), `"peerUid":65534`) {
		t.Errorf("refusal not logged:\n%s", logs)
	}
}

// TestPeerUIDMismatch checks the refusal path without privileges: a host
// that belongs to another uid refuses this process's connection.
func TestPeerUIDMismatch(t *testing.T) {
	logs := &logBuffer{}
	h, err := Listen(Config{Path: filepath.Join(shortTempDir(t), "h.sock"), Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	h.uid = os.Getuid() + 1 // before Serve: the host now belongs to someone else
	done := make(chan error, 1)
	go func() { done <- h.Serve(context.Background()) }()
	defer func() {
		h.Close()
		<-done
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = Dial(ctx, h.Path(), Hello{Client: "intruder"})
	if err == nil || codeOf(err) != CodeRefused {
		t.Fatalf("Dial to another uid's host = %v, want code %d", err, CodeRefused)
	}
	if !strings.Contains(logs.String(), fmt.Sprintf(`"peerUid":%d`, os.Getuid())) {
		t.Errorf("refusal not logged:\n%s", logs)
	}
}

// TestPeerUIDChild is the other user's side of TestPeerUIDRefused.
func TestPeerUIDChild(t *testing.T) {
	path := os.Getenv("HOOKS_TEST_DIAL")
	if path == "" {
		t.Skip("runs only as TestPeerUIDRefused's child")
	}
	fmt.Printf("running as uid %d\n", os.Getuid())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Dial(ctx, path, Hello{Client: "intruder"})
	if err == nil {
		_, _, err := c.Call(ctx, "test.echo", nil, nil)
		fmt.Printf("accepted: hello passed, echo: %v\n", err)
		return
	}
	fmt.Printf("refused: code %d: %v\n", codeOf(err), err)
}

func TestSocketPath(t *testing.T) {
	base := shortTempDir(t)
	long := filepath.Join(base, strings.Repeat("d", 120))
	env := func(kv map[string]string) func(string) string {
		return func(k string) string { return kv[k] }
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"xdg", map[string]string{"XDG_RUNTIME_DIR": base + "/run", "PI_CODING_AGENT_DIR": base + "/agent"}, base + "/run/pi-session/42.sock"},
		{"agent", map[string]string{"PI_CODING_AGENT_DIR": base + "/agent"}, base + "/agent/pi-session/run/42.sock"},
		{"long agent dir", map[string]string{"PI_CODING_AGENT_DIR": long, "TMPDIR": base}, fmt.Sprintf("%s/pi-session-%d/42.sock", base, os.Getuid())},
		{"relative xdg", map[string]string{"XDG_RUNTIME_DIR": "run", "PI_CODING_AGENT_DIR": base + "/agent"}, base + "/agent/pi-session/run/42.sock"},
	} {
		got, err := SocketPath(env(tc.env), 42)
		if err != nil || got != tc.want {
			t.Errorf("%s: SocketPath = %q, %v; want %q", tc.name, got, err, tc.want)
			continue
		}
		fi, err := os.Lstat(filepath.Dir(got))
		if err != nil || fi.Mode().Perm() != 0o700 || !fi.IsDir() {
			t.Errorf("%s: directory %s mode %v, %v; want a 0700 directory", tc.name, filepath.Dir(got), fi.Mode(), err)
		}
	}
	// A directory that is not the user's own is skipped for a fresh private one.
	tmp := filepath.Join(base, "tmp")
	theirs := filepath.Join(tmp, fmt.Sprintf("pi-session-%d", os.Getuid()))
	os.MkdirAll(theirs, 0o777)
	if os.Getuid() == 0 {
		os.Chown(theirs, 65534, 65534)
	} else {
		os.Remove(theirs)
		os.Symlink(base, theirs) // a symbolic link is not a real directory
	}
	got, err := SocketPath(env(map[string]string{"PI_CODING_AGENT_DIR": long, "TMPDIR": tmp}), 42)
	if err != nil || filepath.Dir(got) == theirs || !strings.HasPrefix(got, tmp+"/pi-session-") {
		t.Errorf("SocketPath with a foreign %s = %q, %v; want a fresh private directory in %s", theirs, got, err, tmp)
	}
}

func TestSweep(t *testing.T) {
	dir := shortTempDir(t)
	dead := filepath.Join(dir, "2147483646.sock") // above any pid_max: never a live process
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: dead, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	alive := filepath.Join(dir, fmt.Sprintf("%d.sock", os.Getppid())) // a live pid: kept, whatever the file
	os.WriteFile(alive, nil, 0o600)
	other := filepath.Join(dir, "notes.txt")
	os.WriteFile(other, nil, 0o600)
	startHost(t, Config{Path: filepath.Join(dir, "1.sock")})
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("a dead host's socket was kept: %v", err)
	}
	for _, p := range []string{alive, other} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
}
