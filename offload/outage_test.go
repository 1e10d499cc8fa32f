package offload

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// setFileSizeLimit makes writes past n bytes of any file fail with EFBIG,
// as a full disk makes them fail with ENOSPC (the Go runtime ignores
// SIGXFSZ); 0 lifts the limit. It changes the whole process, so only the
// "outage" child uses it.
func setFileSizeLimit(n uint64) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		return err
	}
	lim.Cur = lim.Max
	if n > 0 {
		lim.Cur = n
	}
	return syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim)
}

// outageCall is what the outage child reports of one tool result.
type outageCall struct {
	Session, Action, Reason, Notice string
}

// outageChild runs the outage scenario in the workspace OFFLOAD_STORE:
// four results while files cannot grow past 64 KiB, one after the limit
// is lifted, one more under the limit; it prints one outageCall per line,
// then the engine's log as a JSON string.
func outageChild() error {
	ws := os.Getenv("OFFLOAD_STORE")
	var logged bytes.Buffer
	e, err := New(Options{Workspace: ws, Log: slog.New(slog.NewTextHandler(&logged, nil))})
	if err != nil {
		return err
	}
	defer e.Close()
	big := buildLog(4000) // ~230 KB
	out := json.NewEncoder(os.Stdout)
	for i, step := range []struct {
		session string
		limit   uint64
	}{{"s1", 64 << 10}, {"s1", 64 << 10}, {"s2", 64 << 10}, {"s1", 64 << 10}, {"s1", 0}, {"s1", 64 << 10}} {
		if err := setFileSizeLimit(step.limit); err != nil {
			return err
		}
		req := tr("bash", text(big+strings.Repeat("x", i)))
		req.SessionID = step.session
		rep, err := e.ToolResult(context.Background(), req)
		if err != nil {
			return err
		}
		out.Encode(outageCall{step.session, rep.Action, rep.Reason, rep.Notice})
	}
	setFileSizeLimit(0)
	return out.Encode(logged.String())
}

// A store that cannot write keeps results inline; each session is told
// once per outage, the engine logs the error once, and storing resumes
// (and a new outage is told again) by itself.
func TestStoreOutage(t *testing.T) {
	ws := t.TempDir()
	cmd := startChild(t, "OFFLOAD_CHILD=outage", "OFFLOAD_STORE="+ws)
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("outage child: %v\n%s", err, raw)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	var calls []outageCall
	for i := 0; i < 6; i++ {
		var c outageCall
		if err := dec.Decode(&c); err != nil {
			t.Fatalf("outage child printed %s: %v", raw, err)
		}
		calls = append(calls, c)
	}
	var logged string
	dec.Decode(&logged)
	for i, want := range []struct {
		action string
		notice bool
	}{{"keep", true}, {"keep", false}, {"keep", true}, {"keep", false}, {"replace", false}, {"keep", true}} {
		c := calls[i]
		if c.Action != want.action || (c.Notice != "") != want.notice || c.Action == "keep" && c.Reason != KeepStoreFailed {
			t.Errorf("call %d (%s): %s %q, notice %q; want %s with a notice: %v", i, c.Session, c.Action, c.Reason, c.Notice, want.action, want.notice)
		}
	}
	if n := calls[0].Notice; !strings.Contains(n, filepath.Join(ws, ".pi", "context-store")) || !strings.Contains(n, "file too large") {
		t.Errorf("the notice names neither the store nor the error: %q", n)
	}
	for _, want := range []string{"offload store failed", "offload store works again"} {
		if n := strings.Count(logged, want); n != map[string]int{"offload store failed": 2, "offload store works again": 1}[want] {
			t.Errorf("log lines %q: %d, want one per outage:\n%s", want, n, logged)
		}
	}
	if !strings.Contains(logged, "file too large") {
		t.Errorf("the log does not record the error:\n%s", logged)
	}
	if left, _ := filepath.Glob(filepath.Join(ws, ".pi", "context-store", "blobs", ".tmp-*")); len(left) > 0 {
		t.Errorf("failed writes left temporary blobs: %v", left)
	}
	e, err := New(Options{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	events, _, _ := e.tel.events()
	classes := map[string]int{}
	for _, ev := range events {
		if ev.Reason == KeepStoreFailed {
			classes[ev.Error]++
		}
	}
	if classes["file-too-large"] != 5 {
		t.Errorf("store failures in the telemetry by class: %v, want 5 file-too-large", classes)
	}
}
