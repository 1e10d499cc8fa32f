package pitest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// RPC is a pi running in RPC mode (--mode rpc): the test writes commands to
// its stdin and reads the records it writes on stdout.
type RPC struct {
	t       testing.TB
	Cmd     *exec.Cmd
	stdin   io.WriteCloser
	stderr  bytes.Buffer
	mu      sync.Mutex
	records []Record
	changed chan struct{} // closed and replaced on each new record
	done    chan struct{}
	waitErr error
	n       int
}

// Record is one line pi wrote on stdout in RPC mode.
type Record map[string]any

// Str returns a string member, "" when absent.
func (r Record) Str(key string) string {
	s, _ := r[key].(string)
	return s
}

// IsNotify reports whether r is an extension's ctx.ui.notify call.
func (r Record) IsNotify() bool {
	return r.Str("type") == "extension_ui_request" && r.Str("method") == "notify"
}

// IsStatus reports whether r sets the footer status key to a text
// containing text ("" matches any text, and a cleared status).
func (r Record) IsStatus(key, text string) bool {
	return r.Str("type") == "extension_ui_request" && r.Str("method") == "setStatus" &&
		r.Str("statusKey") == key && strings.Contains(r.Str("statusText"), text)
}

// StartRPC starts cmd (a pi, or pi-session, with --mode rpc among its
// arguments). The process is killed when the test ends if still running.
func StartRPC(t testing.TB, cmd *exec.Cmd) *RPC {
	t.Helper()
	r := &RPC{t: t, Cmd: cmd, changed: make(chan struct{}), done: make(chan struct{})}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	// Our own pipe rather than StdoutPipe: the cleanup can close its read
	// end, which ends the reader even while a process that escaped the
	// killed group (pi in its own group under the wrapper) still holds the
	// write end.
	stdout, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = w
	r.stdin = stdin
	cmd.Stderr = &lockedWriter{mu: &r.mu, w: &r.stderr}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	w.Close()
	if err != nil {
		stdout.Close()
		t.Fatal(err)
	}
	go func() {
		defer stdout.Close()
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<30)
		for sc.Scan() {
			var rec Record
			if json.Unmarshal(sc.Bytes(), &rec) != nil {
				rec = Record{"type": "unparsed", "line": sc.Text()}
			}
			r.mu.Lock()
			r.records = append(r.records, rec)
			close(r.changed)
			r.changed = make(chan struct{})
			r.mu.Unlock()
		}
		r.waitErr = cmd.Wait()
		close(r.done)
	}()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			select {
			case <-r.done:
			case <-time.After(10 * time.Second):
				t.Logf("pitest: a process outside the killed group still holds the RPC output; closing it")
				stdout.Close()
				<-r.done
			}
		}
	})
	return r
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Stderr is what the process wrote on stderr so far.
func (r *RPC) Stderr() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stderr.String()
}

// Mark is the number of records so far; WaitFrom(Mark(), ...) waits for a
// later one.
func (r *RPC) Mark() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.records)
}

// Records returns the records from index from on.
func (r *RPC) Records(from int) []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Record(nil), r.records[from:]...)
}

// WaitFrom waits for a record at index from or later that matches, and
// returns it with its index. The deadline only bounds a failing test.
func (r *RPC) WaitFrom(from int, what string, match func(Record) bool) (Record, int) {
	r.t.Helper()
	deadline := time.After(90 * time.Second)
	for {
		r.mu.Lock()
		for i := from; i < len(r.records); i++ {
			if match(r.records[i]) {
				rec := r.records[i]
				r.mu.Unlock()
				return rec, i
			}
		}
		from = len(r.records)
		changed := r.changed
		r.mu.Unlock()
		select {
		case <-changed:
		case <-r.done:
			r.mu.Lock()
			n := len(r.records)
			r.mu.Unlock()
			if from >= n {
				r.t.Fatalf("pi exited (%v) before %s; stderr:\n%s", r.waitErr, what, r.Stderr())
			}
		case <-deadline:
			r.t.Fatalf("no record: %s; stderr:\n%s\nrecords:\n%s", what, r.Stderr(), r.dump())
		}
	}
}

func (r *RPC) dump() string {
	var b strings.Builder
	for _, rec := range r.Records(0) {
		line, _ := json.Marshal(rec)
		if len(line) > 300 {
			line = append(line[:300], "..."...)
		}
		fmt.Fprintf(&b, "%s\n", line)
	}
	return b.String()
}

// Send writes one command; it returns the id it gave the command.
func (r *RPC) Send(cmd map[string]any) string {
	r.t.Helper()
	r.n++
	id := fmt.Sprintf("t%d", r.n)
	cmd["id"] = id
	line, _ := json.Marshal(cmd)
	if _, err := r.stdin.Write(append(line, '\n')); err != nil {
		r.t.Fatalf("write to pi: %v", err)
	}
	return id
}

// Prompt sends a prompt and waits until pi is done with it: the response
// for a command or a handled prompt, else agent_settled. It returns the
// index of the first record after the prompt was sent.
func (r *RPC) Prompt(message string) int {
	r.t.Helper()
	mark := r.Mark()
	id := r.Send(map[string]any{"type": "prompt", "message": message})
	resp, i := r.WaitFrom(mark, "the response to prompt "+message, func(rec Record) bool {
		return rec.Str("type") == "response" && rec.Str("id") == id
	})
	if ok, _ := resp["success"].(bool); !ok {
		r.t.Fatalf("prompt %q failed: %v", message, resp)
	}
	data, _ := resp["data"].(map[string]any)
	if d, _ := data["disposition"].(string); d == "started" || d == "queued" {
		r.WaitFrom(i, "agent_settled after prompt "+message, func(rec Record) bool { return rec.Str("type") == "agent_settled" })
	}
	return mark
}

// Notices returns the texts of the notify calls from index from on.
func (r *RPC) Notices(from int) []string {
	var out []string
	for _, rec := range r.Records(from) {
		if rec.IsNotify() {
			out = append(out, rec.Str("message"))
		}
	}
	return out
}

// Close closes pi's stdin, which ends RPC mode, and returns the exit status.
func (r *RPC) Close() int {
	r.t.Helper()
	r.stdin.Close()
	select {
	case <-r.done:
	case <-time.After(90 * time.Second):
		r.t.Fatalf("pi did not exit after its stdin closed; stderr:\n%s", r.Stderr())
	}
	return r.Cmd.ProcessState.ExitCode()
}
