package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi-session/pi-session/pitest"
)

// killCheck is the resume check of TestHandoffHostKilled: it records its
// start (its pid and its child's), runs for a while with a child of its
// own, and records its end.
const killCheck = `d="$KILL_CHECK_DIR"
k=$(( $(ls "$d" | grep -c '^start-') + 1 ))
sleep 0.6 &
echo "$$ $!" > "$d/start-$k"
wait
echo end > "$d/end-$k"
echo resume check ok
`

// killTry is what one try of TestHandoffHostKilled saw.
type killTry struct {
	delay    time.Duration
	during   string // what ran when the host died: check 1 (before the write), check 2 (in the commit), or neither
	complete bool   // the handoff's document was on disk
	reset    bool   // the next request was the handoff
	told     string // what the model was told by context_handoff
	notices  []string
	orphans  int // processes of the resume check alive after the host died
}

// TestHandoffHostKilled: the engine host (pi-session serve under plain pi)
// is killed at points spread over a context_handoff in enforce mode, with
// a resume check configured: during the check before the handoff is
// written, around the writing, during the check of the commit at the end
// of the turn. Each try must end one of two ways: the handoff was
// complete, and the context resets to it; or it was not, and the model is
// told that nothing was written and to call context_handoff again. The
// user is told which. No process of the resume check outlives the host.
// HANDOFF_KILL_TRIES sets the number of tries (default 8).
func TestHandoffHostKilled(t *testing.T) {
	tries := 8
	if n, err := strconv.Atoi(os.Getenv("HANDOFF_KILL_TRIES")); err == nil && n > 0 {
		tries = n
	}
	const span = 1500 * time.Millisecond // both checks and the writing between them
	var results []killTry
	for i := 0; i < tries; i++ {
		delay := span * time.Duration(i) / time.Duration(max(tries-1, 1))
		r := handoffKillTry(t, delay)
		results = append(results, r)
		t.Logf("try %d: killed %v after the first check started, during %s: complete %v, reset %v, orphans %d; told %q; notices %q",
			i, delay, r.during, r.complete, r.reset, r.orphans, r.told, r.notices)
	}
	var silent, wrong, untold, userUntold, orphaned, duringCheck int
	for _, r := range results {
		// A host that died before the commit: the user hears of the handoff.
		if r.during != "neither" && !slices.ContainsFunc(r.notices, func(n string) bool { return strings.Contains(n, "handoff") }) {
			userUntold++
		}
		switch {
		case r.complete && !r.reset && !strings.Contains(r.told, "again"):
			silent++ // written, never reset, and nobody says so
		case !r.complete && r.reset:
			wrong++
		case !r.reset && !strings.Contains(r.told, "context_handoff again"):
			untold++
		}
		if r.during != "neither" {
			duringCheck++
			if r.orphans > 0 {
				orphaned++
			}
		}
	}
	t.Logf("%d kills during context_handoff: %d complete but never reset with nothing said, %d reset without a handoff, %d not reset and the model not told to call again, %d of %d kills before the commit not told to the user as a handoff's fate; %d of them left the resume check's processes running",
		tries, silent, wrong, untold, userUntold, duringCheck, orphaned)
	if silent+wrong+untold+userUntold+orphaned > 0 {
		t.Errorf("%d tries complete but not reset, %d reset without a handoff, %d not told to call again, %d with the user not told, %d left the resume check running", silent, wrong, untold, userUntold, orphaned)
	}
}

func handoffKillTry(t *testing.T, delay time.Duration) killTry {
	e := pitest.NewEnv(t)
	checkDir := filepath.Join(e.Work, "..", "check")
	os.MkdirAll(checkDir, 0o700)
	script := filepath.Join(e.Work, "..", "check.sh")
	os.WriteFile(script, []byte(killCheck), 0o700)
	e.Set("KILL_CHECK_DIR", checkDir)
	e.Set("PI_RESUME_CHECK", "bash "+script)
	if err := os.WriteFile(filepath.Join(e.Agent, "context-budget.json"), []byte(`{"mode":"enforce"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	e.Scenario(map[string]any{"steps": []map[string]any{
		{"tool": "context_handoff", "args": map[string]any{"goal": "ship the parser", "next_step": "run the tests", "facts": "the lexer is done"}},
		{"text": "after the handoff"},
	}})
	pi, args := relayPiArgs(t, e)
	rpc := pitest.StartRPC(t, e.Command(pi, args...))
	host := hostPID(t, rpc, "serve")

	mark := rpc.Mark()
	rpc.Send(map[string]any{"type": "prompt", "message": "write a handoff now"})
	waitFile(t, filepath.Join(checkDir, "start-1"))
	time.Sleep(delay)
	running := map[string]bool{}
	for k := 1; k <= 2; k++ {
		_, started := os.Stat(filepath.Join(checkDir, fmt.Sprintf("start-%d", k)))
		_, ended := os.Stat(filepath.Join(checkDir, fmt.Sprintf("end-%d", k)))
		running[strconv.Itoa(k)] = started == nil && ended != nil
	}
	if err := syscall.Kill(host, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, host, "the killed host")
	r := killTry{delay: delay, during: "neither"}
	time.Sleep(200 * time.Millisecond)
	for _, k := range []string{"1", "2"} {
		if !running[k] {
			continue
		}
		r.during = "check " + k
		b, _ := os.ReadFile(filepath.Join(checkDir, "start-"+k))
		for _, f := range strings.Fields(string(b)) {
			if pid, _ := strconv.Atoi(f); pid > 0 && processAlive(pid) {
				r.orphans++
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	rpc.WaitFrom(mark, "agent_settled", func(rec pitest.Record) bool { return rec.Str("type") == "agent_settled" })
	docs, _ := filepath.Glob(filepath.Join(e.Work, ".ai-work", "handoffs", "*-1.md"))
	r.complete = len(docs) == 1
	for _, rec := range rpc.Records(mark) {
		if rec.Str("type") == "tool_execution_end" && rec.Str("toolName") == "context_handoff" {
			b, _ := json.Marshal(rec["result"])
			r.told = string(b)
		}
	}
	r.notices = rpc.Notices(mark)
	if reqs := e.Requests(); len(reqs) >= 2 {
		msgs := nonSystem(reqs[1])
		r.reset = len(msgs) > 0 && strings.Contains(msgs[0].Text(), "# Handoff ")
	}
	rpc.Close()
	return r
}

// processAlive reports whether pid runs (a zombie has exited).
func processAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
