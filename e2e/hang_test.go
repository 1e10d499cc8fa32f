package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pi-session/pi-session/hooks"
	"github.com/pi-session/pi-session/pitest"
)

// The engine host stopped (SIGSTOP, as a host blocked on a slow disk would
// be) while pi works: prompts go on at their normal pace without it, the
// user is told once, the extension moves to a fresh host, and when the
// stopped one is continued nothing it was sent is applied. Each test
// loops the race: the host stops between two prompts, then at varying
// moments inside one. Durations are logged, never asserted.

// hangScenario: every prompt runs one bash call whose output (6 KB of
// random text, above the offload threshold set here, different each time)
// the offload engine stores behind a handle, then answers. Results that
// stay inline while a host is stuck keep the session small, and no
// automatic relay starts a run of its own between two prompts.
func hangScenario(t *testing.T, e *pitest.Env) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(e.Work, ".pi"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.Work, ".pi", "context-engineer.json"), []byte(`{"readOffloadThreshold": 1024}`), 0o644); err != nil {
		t.Fatal(err)
	}
	writeRelayConfig(t, e, `{"auto": {"onInput": false, "beforeExpiry": false}}`)
	e.Scenario(map[string]any{"repeat": true, "steps": []map[string]any{
		{"tool": "bash", "args": map[string]any{"command": "head -c 4500 /dev/urandom | base64 -w 100"}},
		{"text": "done"},
	}})
}

// stopHost stops pid after delay (at once for 0) and waits until it is
// stopped.
func stopHost(t *testing.T, pid int, delay time.Duration) chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(delay)
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Errorf("SIGSTOP %d: %v", pid, err)
			return
		}
		for i := 0; i < 1000 && procState(pid) != "T"; i++ {
			time.Sleep(time.Millisecond)
		}
	}()
	return done
}

// procState is the state letter of /proc/<pid>/stat ("T": stopped).
func procState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// engineNotices are the notices from index from on that are not
// /pi-session's own report.
func engineNotices(rpc *pitest.RPC, from int) []string {
	var out []string
	for _, n := range rpc.Notices(from) {
		if !strings.Contains(n, "\n  versions ") {
			out = append(out, n)
		}
	}
	return out
}

// untilStuckNotice waits for the notice that the host stopped answering,
// running a prompt now and then: a stopped host is found by a call that
// waits on it, and on a loaded machine the prompts of the round may have
// gone by while an engine was held back for being slow.
func untilStuckNotice(t *testing.T, rpc *pitest.RPC, from int, name string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for i := 0; ; i++ {
		for _, n := range rpc.Notices(from) {
			if strings.Contains(n, "stopped answering") {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no notice that the host stopped answering; notices: %q", name, rpc.Notices(from))
		}
		time.Sleep(300 * time.Millisecond)
		if i%3 == 2 {
			rpc.Prompt(fmt.Sprintf("%s, waiting for the notice, %d", name, i))
		}
	}
}

// checkOneNotice: of the notices from index from on, exactly one says the
// host stopped answering or is unreachable. A slow engine's notice (a live
// host's call that waited out its deadline on a loaded machine, at most
// one in 5 minutes) is logged, not counted.
func checkOneNotice(t *testing.T, rpc *pitest.RPC, from int, name string) {
	t.Helper()
	var outage, other []string
	for _, n := range engineNotices(rpc, from) {
		if strings.Contains(n, "pi continues without it") {
			outage = append(outage, n)
		} else {
			other = append(other, n)
		}
	}
	if len(outage) != 1 {
		t.Errorf("%s: %d notices of the host, want exactly one: %q", name, len(outage), outage)
	}
	for _, n := range other {
		if !strings.Contains(n, "did not answer within") {
			t.Errorf("%s: an unexpected notice: %q", name, n)
		} else {
			t.Logf("%s: a slow engine's notice too: %q", name, n)
		}
	}
}

// otherHost runs /pi-session until it reports a host of the given kind
// other than pid, and returns its pid.
func otherHost(t *testing.T, rpc *pitest.RPC, kind string, pid int) int {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if got := hostPID(t, rpc, kind); got != pid {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("/pi-session still reports the %s host %d", kind, pid)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

var lateRow = regexp.MustCompile(`late +(\d+) calls? waited out (?:its|their) deadline.*?, (\d+) went on at once; (\d+) hosts? left`)

// lateCounts reads /pi-session's late row: calls that waited out their
// deadline, calls that went on at once, hosts left.
func lateCounts(t *testing.T, rpc *pitest.RPC) (waited, skipped, left int, row string) {
	t.Helper()
	mark := rpc.Prompt("/pi-session")
	rec, _ := rpc.WaitFrom(mark, "the /pi-session report", func(r pitest.Record) bool {
		return r.IsNotify() && strings.HasPrefix(r.Str("message"), "pi-session: ")
	})
	m := lateRow.FindStringSubmatch(rec.Str("message"))
	if m == nil {
		return 0, 0, 0, ""
	}
	w, _ := strconv.Atoi(m[1])
	s, _ := strconv.Atoi(m[2])
	l, _ := strconv.Atoi(m[3])
	return w, s, l, m[0]
}

// lastToolResultOffloaded says whether the model's last request carries its
// last tool result behind a handle.
func lastToolResultOffloaded(t *testing.T, e *pitest.Env) bool {
	t.Helper()
	reqs := e.Requests()
	return strings.Contains(lastToolResult(t, reqs[len(reqs)-1]), "stored as ce_")
}

// offloadsAgain runs prompts until the engine offloads a tool result again
// (at most 20 s: on a loaded machine a call to a host just found or just
// continued may wait out its deadline, and its engine is then held back
// for 5 s), and fails the test if it never does.
func offloadsAgain(t *testing.T, rpc *pitest.RPC, e *pitest.Env, name string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; ; i++ {
		rpc.Prompt(fmt.Sprintf("%s, prompt %d", name, i))
		if lastToolResultOffloaded(t, e) {
			if i > 0 {
				t.Logf("%s: offloaded again after %d prompts", name, i+1)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s: no tool result offloaded in %d prompts", name, i+1)
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// prompts runs n prompts and returns how long each took.
func prompts(rpc *pitest.RPC, n int, name string) []time.Duration {
	var out []time.Duration
	for i := 0; i < n; i++ {
		t0 := time.Now()
		rpc.Prompt(fmt.Sprintf("%s, prompt %d", name, i))
		out = append(out, time.Since(t0).Round(time.Millisecond))
	}
	return out
}

// roundDelay is when, into the first prompt of round r, the host stops:
// round 0 stops it between prompts, the others at moments that vary.
func roundDelay(r int) time.Duration {
	if r == 0 {
		return 0
	}
	return time.Duration(3+(r*11)%40) * time.Millisecond
}

// TestHungServe: under plain pi the extension's own pi-session serve is
// stopped; the extension ends it and starts a fresh one.
func TestHungServe(t *testing.T) {
	e := pitest.NewEnv(t)
	e.Set("PI_SESSION_BIN", pitest.Binary(t))
	hangScenario(t, e)
	rpc := pitest.StartRPC(t, e.Command(filepath.Join(pitest.ToolsBin(t), "pi"), append(e.PiArgs("extension"), "--mode", "rpc")...))
	host := hostPID(t, rpc, "serve")
	t.Logf("host up: prompts took %v", prompts(rpc, 3, "warm"))
	const rounds = 6
	for r := 0; r < rounds; r++ {
		mark := rpc.Mark()
		var stopped chan struct{}
		if d := roundDelay(r); d == 0 {
			<-stopHost(t, host, 0)
		} else {
			stopped = stopHost(t, host, d)
		}
		took := prompts(rpc, 4, fmt.Sprintf("round %d", r))
		if stopped != nil {
			<-stopped
		}
		t.Logf("round %d: host %d stopped %v into the round; prompts took %v", r, host, roundDelay(r), took)
		untilStuckNotice(t, rpc, mark, fmt.Sprintf("round %d", r))
		next := otherHost(t, rpc, "serve", host)
		waitGone(t, host, "the stopped serve, ended by the extension that started it")
		offloadsAgain(t, rpc, e, fmt.Sprintf("round %d, on the fresh host", r))
		checkOneNotice(t, rpc, mark, fmt.Sprintf("round %d", r))
		host = next
	}
	waited, skipped, left, row := lateCounts(t, rpc)
	t.Logf("after %d rounds: %s", rounds, row)
	if left != rounds {
		t.Errorf("hosts left = %d, want %d: %s", left, rounds, row)
	}
	// Only calls already in flight when the host stopped wait out their
	// deadline (pi runs at most a hook, a background turn record and a
	// turn start at once); every later one goes on at once.
	if waited < rounds || waited > 3*rounds {
		t.Errorf("%d calls waited out their deadline in %d rounds (%d went on at once), want 1 to 3 a round: %s", waited, rounds, skipped, row)
	}
	if code := rpc.Close(); code != 0 {
		t.Errorf("pi exit status %d; stderr:\n%s", code, rpc.Stderr())
	}
	waitGone(t, host, "the last serve after pi exited")
}

// TestHungWrapper: under pi-session the wrapper, which hosts the engines,
// is stopped; a pi-session serve stands in, and when the wrapper is
// continued the extension goes back to it and ends the stand-in. What the
// stopped wrapper was sent is never applied: no tool result it stored
// after it was continued became a handle the model did not see.
func TestHungWrapper(t *testing.T) {
	e := pitest.NewEnv(t)
	hangScenario(t, e)
	rpc := pitest.StartRPC(t, e.Command(pitest.Binary(t), append(e.PiArgs(), "--mode", "rpc")...))
	wrapper := rpc.Cmd.Process.Pid
	if got := hostPID(t, rpc, "wrapper"); got != wrapper {
		t.Fatalf("/pi-session reports the wrapper's host as pid %d, want %d", got, wrapper)
	}
	t.Logf("host up: prompts took %v", prompts(rpc, 3, "warm"))
	const rounds = 4
	for r := 0; r < rounds; r++ {
		mark := rpc.Mark()
		var stopped chan struct{}
		if d := roundDelay(r); d == 0 {
			<-stopHost(t, wrapper, 0)
		} else {
			stopped = stopHost(t, wrapper, d)
		}
		took := prompts(rpc, 4, fmt.Sprintf("round %d", r))
		if stopped != nil {
			<-stopped
		}
		t.Logf("round %d: wrapper stopped %v into the round; prompts took %v", r, roundDelay(r), took)
		untilStuckNotice(t, rpc, mark, fmt.Sprintf("round %d", r))
		standIn := otherHost(t, rpc, "serve", 0)
		offloadsAgain(t, rpc, e, fmt.Sprintf("round %d, on the stand-in", r))
		if err := syscall.Kill(wrapper, syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		if got := hostPID(t, rpc, "wrapper"); got != wrapper {
			t.Fatalf("round %d: back on host %d, want the wrapper %d", r, got, wrapper)
		}
		waitGone(t, standIn, "the stand-in serve once the wrapper answers again")
		took = prompts(rpc, 2, fmt.Sprintf("round %d, back on the wrapper", r))
		t.Logf("round %d: back on the wrapper, prompts took %v", r, took)
		offloadsAgain(t, rpc, e, fmt.Sprintf("round %d, back on the wrapper", r))
		checkOneNotice(t, rpc, mark, fmt.Sprintf("round %d", r))
	}
	waited, skipped, left, row := lateCounts(t, rpc)
	t.Logf("after %d rounds: %s", rounds, row)
	if left != rounds {
		t.Errorf("hosts left = %d, want %d: %s", left, rounds, row)
	}
	if waited < rounds || waited > 3*rounds {
		t.Errorf("%d calls waited out their deadline in %d rounds (%d went on at once), want 1 to 3 a round: %s", waited, rounds, skipped, row)
	}
	if code := rpc.Close(); code != 0 {
		t.Errorf("pi exit status %d; stderr:\n%s", code, rpc.Stderr())
	}

	// Nothing applied twice: every handle the store holds for the model
	// reached the model, and each tool call got one result.
	seen := map[string]bool{}
	reqs := e.Requests()
	for _, h := range handleRE.FindAllString(string(mustRead(t, e.Log)), -1) {
		seen[h] = true
	}
	var unseen []string
	for _, h := range confirmedHandles(t, filepath.Join(e.Work, ".pi", "context-store", "index.jsonl")) {
		if !seen[h] {
			unseen = append(unseen, h)
		}
	}
	if len(unseen) > 0 {
		t.Errorf("the store holds %d handles no model request carried (stored by a host pi had gone on without): %v", len(unseen), unseen)
	}
	results := map[string]int{}
	for _, m := range reqs[len(reqs)-1].Decoded() {
		if m.Role == "toolResult" {
			results[m.Text()]++ // random output, or a notice naming its own handle: each one differs
		}
	}
	for text, n := range results {
		if n > 1 {
			t.Errorf("one tool result reached the model %d times: %.80q", n, text)
		}
	}
	// The calls queued in the stopped wrapper were answered, not run, once
	// it was continued (round 0 stopped it between prompts, so its first
	// call queued unread).
	dropped := 0
	for _, l := range hostLog(t, e) {
		if l.HostPid == wrapper && l.Msg == "request after its deadline, not run" {
			dropped++
		}
	}
	t.Logf("requests the continued wrapper dropped unrun: %d", dropped)
	if dropped == 0 {
		t.Errorf("the continued wrapper logged no request dropped after its deadline")
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// confirmedHandles are the handles of the offload store's index that were
// handed out (put records not pending).
func confirmedHandles(t *testing.T, index string) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(strings.NewReader(string(mustRead(t, index))))
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var r struct {
			Op      string `json:"op"`
			Handle  string `json:"h"`
			Pending bool   `json:"pending"`
		}
		if json.Unmarshal(sc.Bytes(), &r) == nil && r.Op == "put" && !r.Pending && !slices.Contains(out, r.Handle) {
			out = append(out, r.Handle)
		}
	}
	return out
}

type hostLine struct {
	Msg     string `json:"msg"`
	HostPid int    `json:"hostPid"`
}

// hostLog reads the engine hosts' log, <agent dir>/pi-session/host.jsonl.
func hostLog(t *testing.T, e *pitest.Env) []hostLine {
	t.Helper()
	var out []hostLine
	for _, l := range strings.Split(string(mustRead(t, filepath.Join(e.Agent, "pi-session", "host.jsonl"))), "\n") {
		var h hostLine
		if json.Unmarshal([]byte(l), &h) == nil {
			out = append(out, h)
		}
	}
	return out
}

// TestSlowEngine: an engine that stops answering on a host that still
// answers (a host blocked on a slow disk: its other goroutines run on).
// The first call waits out its deadline, pi goes on, the user is told
// once, and the engine's next calls go on without it instead of each
// waiting; the host is not left.
func TestSlowEngine(t *testing.T) {
	e := pitest.NewEnv(t)
	dir, err := os.MkdirTemp("", "se")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "h.sock")
	release := make(chan struct{})
	var mu sync.Mutex
	calls := 0
	stuck := hooks.Engine{Name: "disk", Hooks: map[string]string{"tool_result": "toolResult"}, Methods: map[string]hooks.Handler{
		"toolResult": func(ctx context.Context, r *hooks.Request) (any, error) {
			mu.Lock()
			calls++
			mu.Unlock()
			<-release // a write that does not come back
			return nil, nil
		},
	}}
	h, err := hooks.Listen(hooks.Config{Path: sock, Mode: "serve"})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	defer close(release)
	if err := h.Register(stuck); err != nil {
		t.Fatal(err)
	}
	go h.Serve(context.Background())
	e.Set(hooks.EnvSocket, sock)
	e.Scenario(map[string]any{"repeat": true, "steps": []map[string]any{
		{"tool": "bash", "args": map[string]any{"command": "echo result-of-the-tool"}},
		{"text": "saw: ${lastToolResult}"},
	}})
	rpc := pitest.StartRPC(t, e.Command(filepath.Join(pitest.ToolsBin(t), "pi"), append(e.PiArgs("extension"), "--mode", "rpc")...))
	rpc.WaitFrom(0, "connected", func(r pitest.Record) bool {
		return r.IsStatus("pi-session", "pi-session") && !r.IsStatus("pi-session", "offline")
	})
	mark := rpc.Mark()
	took := prompts(rpc, 6, "slow disk")
	t.Logf("prompts with the engine stuck took %v", took)
	reqs := e.Requests()
	results := 0
	for _, m := range reqs[len(reqs)-1].Decoded() {
		if m.Role != "toolResult" {
			continue
		}
		results++
		if m.Text() != "result-of-the-tool\n" {
			t.Errorf("the model saw %q, want the tool's own result", m.Text())
		}
	}
	if results != 6 {
		t.Errorf("the model saw %d tool results, want 6", results)
	}
	rpc.WaitFrom(mark, "the notice about the slow engine", func(r pitest.Record) bool {
		return r.IsNotify() && strings.Contains(r.Str("message"), "did not answer within")
	})
	waited, skipped, left, row := lateCounts(t, rpc)
	mu.Lock()
	t.Logf("%s; the engine got %d calls", row, calls)
	mu.Unlock()
	if left != 0 {
		t.Errorf("a host that answers was left: %s", row)
	}
	// Six prompts in well under the 5 s the engine is held back: one
	// call waits out its deadline (two, should the prompts take longer).
	if waited < 1 || waited > 2 || skipped < 4 {
		t.Errorf("%d calls waited out their deadline and %d went on at once over 6 prompts, want 1 (or 2) and the rest: %s", waited, skipped, row)
	}
	if n := engineNotices(rpc, mark); len(n) != 1 {
		t.Errorf("%d notices, want exactly one: %q", len(n), n)
	}
	if code := rpc.Close(); code != 0 {
		t.Errorf("pi exit status %d; stderr:\n%s", code, rpc.Stderr())
	}
}
