package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi-session/pi-session/pitest"
)

const seedMarkerExt = "e2e/testdata/seed-marker.ts"

type seedSeen struct {
	PID     int    `json:"pid"`
	PPID    int    `json:"ppid"`
	Wrapper string `json:"wrapper"`
	Marker  string `json:"marker"`
	Own     bool   `json:"own"`
}

func readSeedLog(t *testing.T, path string) []seedSeen {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the seed-style extension wrote nothing: %v", err)
	}
	var out []seedSeen
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var s seedSeen
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		out = append(out, s)
	}
	return out
}

// TestSeedMarkerWriterRelaunches: an extension written for the seed's
// wrapper checks from inside real pi that basename(PI_RELAUNCH_MARKER) is
// $PI_SESSION_WRAPPER_PID-$PI_SESSION_LAUNCH_ID.json and that
// PI_SESSION_WRAPPER_PID is its parent, then writes the marker itself;
// pi-session relaunches from it. Under a PTY (where pi's parent is the
// session leader) and without one.
func TestSeedMarkerWriterRelaunches(t *testing.T) {
	for _, path := range []string{"pty", "plain"} {
		t.Run(path, func(t *testing.T) {
			e := pitest.NewEnv(t)
			log := filepath.Join(e.Work, "..", "seed-marker.jsonl")
			handoff := filepath.Join(e.Work, "handoff.md")
			if err := os.WriteFile(handoff, []byte("# Handoff\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			e.Set("SEED_MARKER_LOG", log)
			e.Set("SEED_MARKER_HANDOFF", handoff)
			var out string
			if path == "pty" {
				tm := pitest.StartTerm(t, e.Command(pitest.Binary(t), e.PiArgs(seedMarkerExt)...))
				tm.WaitReady(1)
				tm.Submit("/quit")
				tm.WaitFor("pi-session: relaunching pi in ")
				tm.WaitFor("faux: continue from")
				tm.WaitReady(2)
				tm.Submit("/quit")
				if code := tm.Wait(); code != 0 {
					t.Errorf("exit status %d; screen:\n%s", code, tm.Screen())
				}
				out = tm.Screen()
			} else {
				b, err := e.Command(pitest.Binary(t), append(e.PiArgs(seedMarkerExt), "-p", "hello")...).CombinedOutput()
				if err != nil {
					t.Fatalf("pi-session -p: %v\n%s", err, b)
				}
				out = string(b)
				if !strings.Contains(out, "pi-session: relaunching pi in ") || !strings.Contains(out, "faux: continue from "+handoff) {
					t.Errorf("no relaunch from the extension's marker:\n%s", out)
				}
			}
			seen := readSeedLog(t, log)
			if len(seen) != 2 {
				t.Fatalf("the extension saw %d launches, want 2 (one relaunch):\n%+v\n%s", len(seen), seen, out)
			}
			for i, s := range seen {
				if !s.Own || strconv.Itoa(s.PPID) != s.Wrapper {
					t.Errorf("launch %d: the seed's ownership check failed inside pi: %+v", i+1, s)
				}
			}
			assertNoMarkers(t, e)
		})
	}
}

// statusOf returns the state `pi-session status` gives the record of
// process pid, or "" when none names it.
func statusOf(t *testing.T, e *pitest.Env, pid int) string {
	t.Helper()
	out, err := e.Command(pitest.Binary(t), "status", "--all", "--json").Output()
	if err != nil {
		t.Fatalf("pi-session status: %v\n%s", err, out)
	}
	var entries []struct {
		State  string `json:"state"`
		Record struct {
			PID int `json:"pid"`
		} `json:"record"`
	}
	if err := json.Unmarshal(out, &entries); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	for _, e := range entries {
		if e.Record.PID == pid {
			return e.State
		}
	}
	return ""
}

func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err == nil && !strings.Contains(string(b), ") Z ")
}

// TestPiDiesWithPiSession: kill -9 of pi-session leaves no pi running, with
// and without a terminal, and pi's status record never says "crashed" while
// pi goes on: it says "running" until pi is gone, then "crashed".
func TestPiDiesWithPiSession(t *testing.T) {
	for _, path := range []string{"plain", "pty"} {
		t.Run(path, func(t *testing.T) {
			e := pitest.NewEnv(t)
			e.Scenario(map[string]any{"steps": []map[string]any{{"tool": "bash", "args": map[string]any{"command": "sleep 120"}}}})
			var supervisor, pi int
			var kill func()
			if path == "pty" {
				tm := pitest.StartTerm(t, e.Command(pitest.Binary(t), e.PiArgs()...))
				tm.WaitReady(1)
				tm.Submit("go")
				supervisor = tm.Cmd.Process.Pid
				pi = findPi(t, supervisor)
				kill = func() { tm.Cmd.Process.Signal(syscall.SIGKILL); tm.Wait() }
			} else {
				cmd := e.Command(pitest.Binary(t), append(e.PiArgs(), "-p", "go")...)
				cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // no terminal at all
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				supervisor = cmd.Process.Pid
				deadline := time.Now().Add(30 * time.Second)
				for pi == 0 {
					if kids := childPIDs(supervisor); len(kids) > 0 {
						pi = kids[0]
					} else if time.Now().After(deadline) {
						t.Fatal("no pi under pi-session")
					}
					time.Sleep(10 * time.Millisecond)
				}
				kill = func() { cmd.Process.Signal(syscall.SIGKILL); cmd.Wait() }
			}
			// pi said hello: its record says running.
			deadline := time.Now().Add(60 * time.Second)
			for statusOf(t, e, pi) != "running" {
				if time.Now().After(deadline) {
					t.Fatalf("pi (pid %d) never got a running status record", pi)
				}
				time.Sleep(50 * time.Millisecond)
			}
			// pi's bash tool is running `sleep 120` by now (or soon).
			var tools []int
			for deadline := time.Now().Add(30 * time.Second); len(tools) == 0; {
				tools = descendants(pi)
				if time.Now().After(deadline) {
					t.Fatal("pi's bash tool never started")
				}
				time.Sleep(20 * time.Millisecond)
			}
			kill()
			polls := 0
			for deadline := time.Now().Add(30 * time.Second); ; polls++ {
				piAlive := alive(pi)
				state := statusOf(t, e, pi)
				if state == "crashed" && alive(pi) {
					t.Fatalf("status says crashed while pi (pid %d) still runs", pi)
				}
				if state != "running" && state != "crashed" {
					t.Fatalf("status says %q for pi (pid %d), want running, then crashed", state, pi)
				}
				if !piAlive && state == "crashed" {
					break
				}
				if time.Now().After(deadline) {
					syscall.Kill(pi, syscall.SIGKILL)
					t.Fatalf("pi (pid %d) still runs %s after pi-session was killed (status %q)", pi, "30s", state)
				}
				time.Sleep(20 * time.Millisecond)
			}
			// pi ended as on a stop request: it ended its tool's processes.
			for _, p := range tools {
				waitGone(t, p, "a process of pi's bash tool")
			}
			t.Logf("%s: pi and its %d tool processes gone after pi-session's kill -9; status polled %d times, then crashed", path, len(tools), polls+1)
		})
	}
}

// descendants lists pid's descendants.
func descendants(pid int) []int {
	var out []int
	for _, c := range childPIDs(pid) {
		out = append(out, c)
		out = append(out, descendants(c)...)
	}
	return out
}

// TestShortPrintRunGetsARecord: a short -p run with no tool call ends
// before the extension connects; its pi still gets a status record (the
// supervisor's own, as pi never said hello), ended, with its exit status.
func TestShortPrintRunGetsARecord(t *testing.T) {
	e := pitest.NewEnv(t)
	out, err := e.Command(pitest.Binary(t), append(e.PiArgs(), "-p", "hello")...).CombinedOutput()
	if err != nil {
		t.Fatalf("pi-session -p: %v\n%s", err, out)
	}
	reqs := e.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model requests, want 1\n%s", len(reqs), out)
	}
	if got := statusOf(t, e, reqs[0].PID); got != "exited" {
		b, _ := e.Command(pitest.Binary(t), "status", "--all").CombinedOutput()
		t.Errorf("pi (pid %d) has status %q, want an ended record:\n%s", reqs[0].PID, got, b)
	}
}
