package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"testing"
	"time"

	"github.com/pi-session/pi-session/status"
)

// runCaptured runs pi-session in-process and returns its exit status,
// stdout and stderr.
func runCaptured(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	dir := t.TempDir()
	stdout, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	defer stdout.Close()
	stderr, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	code := run(context.Background(), append([]string{"pi-session"}, args...), env, nil, stdout, stderr)
	out, _ := os.ReadFile(stdout.Name())
	errOut, _ := os.ReadFile(stderr.Name())
	return code, string(out), string(errOut)
}

// A session whose recorded process is this very process is running; the
// testscripts cannot record a live process's start time, so this does.
func TestStatusShowsRunningSession(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("process start times come from /proc, which only Linux has")
	}
	state := t.TempDir()
	id, err := status.Identify(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	tokens := int64(1234)
	r := &status.Record{SessionID: "live-1", Cwd: "/w", Tokens: &tokens, EffectiveMode: "enforce"}
	r.SetProcess(id)
	if err := status.NewStore(state).Write(r); err != nil {
		t.Fatal(err)
	}
	env := []string{"PI_CONTEXT_BUDGET_STATE_DIR=" + state, "HOME=" + t.TempDir()}

	code, out, errOut := runCaptured(t, env, "status")
	want := regexp.MustCompile(`(?m)^live-1  running  pid \d+  updated \d+s ago, started \d+[smhd] ago\n  cwd      /w\n  tokens   1234\n  mode     enforce\n`)
	if code != 0 || !want.MatchString(out) {
		t.Errorf("status = %d\n%s%s\nwant a running entry matching %s", code, out, errOut, want)
	}

	code, out, errOut = runCaptured(t, env, "status", "--json", "live")
	var entries []struct {
		SessionID string         `json:"sessionId"`
		State     status.State   `json:"state"`
		Record    *status.Record `json:"record"`
	}
	if err := json.Unmarshal([]byte(out), &entries); err != nil || code != 0 {
		t.Fatalf("status --json = %d, %v\n%s%s", code, err, out, errOut)
	}
	if len(entries) != 1 || entries[0].State != status.Running || entries[0].Record.PID != os.Getpid() {
		t.Errorf("status --json = %+v, want live-1 running with this pid", entries)
	}

	// A live session is never pruned, however old its record.
	monthAgo := time.Now().Add(-30 * 24 * time.Hour)
	if err := os.Chtimes(filepath.Join(state, "status", "live-1.json"), monthAgo, monthAgo); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runCaptured(t, env, "prune", "--verbose")
	want = regexp.MustCompile(`(?m)^removed 0 of 1 record examined .*\nkept 1:\n  keep     live-1\.json: its pid is alive$`)
	if code != 0 || !want.MatchString(out) {
		t.Errorf("prune = %d\n%s\nwant a match for %s", code, out, want)
	}
}
