package e2e

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pi-session/pi-session/pitest"
	"golang.org/x/sys/unix"
)

// TestTUIRelaunchCtrlC: Ctrl+C pressed as a /handoff relaunch starts the
// fresh pi reaches that pi, as it would a moment later, and kills it while
// it starts (before pi reads the keyboard itself, its terminal turns
// Ctrl+C into SIGINT). pi-session says the relaunch was cut short, keeps
// the handoff, prints the command that continues from it, exits 130 with
// the terminal restored, and records the launch as interrupted, continuing
// the session that handed off. The printed command, run as printed,
// continues from the handoff. Two moments: typed as soon as pi-session says
// it relaunches (the keys wait for the fresh pi), and once the fresh pi's
// process runs with its terminal not raw yet (a try where pi was quicker is
// a miss, counted: Ctrl+C is then pi's own key, as always).
func TestTUIRelaunchCtrlC(t *testing.T) {
	hits := map[string]int{}
	for i, when := range []string{"announced", "started", "started"} {
		if ctrlCTry(t, when, i == 0) {
			hits[when]++
		}
	}
	t.Logf("tries that hit the start-up window: %v", hits)
	if hits["announced"] != 1 {
		t.Errorf("Ctrl+C typed once pi-session said it relaunches did not kill the fresh pi")
	}
	if hits["started"] == 0 {
		t.Errorf("Ctrl+C typed while the fresh pi started never reached it (0 of 2 tries)")
	}
}

// ctrlCTry runs one relaunch and types Ctrl+C at the given moment; it
// reports whether the fresh pi died of it (else the test quits it). With
// runCommand, it runs the command pi-session printed.
func ctrlCTry(t *testing.T, when string, runCommand bool) bool {
	t.Helper()
	e := pitest.NewEnv(t)
	e.Scenario(map[string]any{"steps": []map[string]any{
		{"tool": "context_handoff", "args": map[string]any{"goal": "keep going", "next_step": "continue", "facts": "none"}},
		{"text": "handed off"},
		{"text": "faux: ${lastUser}"},
	}})
	bin := pitest.Binary(t)
	tm := pitest.StartTerm(t, e.Command(bin, e.PiArgs()...))
	tm.WaitReady(1)
	first := findPi(t, tm.Cmd.Process.Pid)
	tm.Submit("/handoff keep going")
	switch when {
	case "announced":
		tm.WaitFor("pi-session: relaunching pi in ")
		tm.Type("\x03")
	case "started":
		fresh := freshPi(t, tm, first)
		if !cooked(fresh) {
			t.Logf("%s: the fresh pi (pid %d) had its terminal raw already: a miss", when, fresh)
			return missed(t, tm)
		}
		tm.Type("\x03")
	}
	shown := strings.Count(tm.Screen(), "[Extensions]") // pi may draw its header more than once
	done := make(chan int, 1)
	go func() { done <- tm.Wait() }()
	var code int
	for waiting := true; waiting; {
		select {
		case code = <-done:
			waiting = false
		case <-time.After(20 * time.Millisecond):
			if strings.Count(tm.Screen(), "[Extensions]") > shown {
				t.Logf("%s: the fresh pi took Ctrl+C as its own key: a miss", when)
				tm.Submit("/quit")
				<-done
				return false
			}
		}
	}
	screen := tm.Screen()
	if code != 130 {
		t.Fatalf("%s: exit status %d, want 130; screen:\n%s", when, code, screen)
	}
	m := regexp.MustCompile(`pi-session: the relaunch was cut short: the fresh pi was interrupted \(SIGINT\)( before its session started)?; the handoff it continues from is kept: (/\S+\.md)\n`).FindStringSubmatch(screen)
	if m == nil {
		t.Fatalf("%s: no cut-short line; screen:\n%s", when, screen)
	}
	handoff := m[2]
	if m[1] == "" {
		t.Logf("%s: pi's extension had said hello when Ctrl+C killed it", when)
	}
	if _, err := os.Stat(handoff); err != nil {
		t.Errorf("%s: the handoff is not kept: %v", when, err)
	}
	c := regexp.MustCompile(`pi-session: to continue from it, run: (cd .*)\n`).FindStringSubmatch(screen)
	if c == nil || !strings.Contains(c[1], "'continue from "+handoff+"'") || !strings.Contains(c[1], bin) {
		t.Fatalf("%s: no command that continues from %s; screen:\n%s", when, handoff, screen)
	}
	if tm.Termios() != tm.Before {
		t.Errorf("%s: terminal state not restored", when)
	}
	out, err := e.Command(bin, "status", "--all").CombinedOutput()
	if err != nil || !regexp.MustCompile(`(?m)^launch-[0-9a-f]{32}  interrupted  `).Match(out) ||
		!regexp.MustCompile(`(?m)^  chain    continues [0-9a-f-]{36}$`).Match(out) ||
		!regexp.MustCompile(`(?m)^  chain    continued by launch-[0-9a-f]{32} \(relaunched from its last handoff\)$`).Match(out) {
		t.Errorf("%s: status --all (%v):\n%s", when, err, out)
	}
	if !runCommand {
		return true
	}
	// The command, as printed, continues from the handoff.
	again := pitest.StartTerm(t, e.Command("bash", "-c", c[1]))
	again.WaitForCount("faux: continue from", 1)
	again.WaitReady(1)
	if reqs := e.Requests(); lastUser(reqs) != "continue from "+handoff {
		t.Errorf("%s: the printed command's first request = %q, want \"continue from %s\"", when, lastUser(reqs), handoff)
	}
	again.Submit("/quit")
	if code := again.Wait(); code != 0 {
		t.Errorf("%s: the printed command exited %d; screen:\n%s", when, code, again.Screen())
	}
	return true
}

// freshPi waits for the pi a relaunch starts (not first) and returns its pid.
func freshPi(t *testing.T, tm *pitest.Term, first int) int {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		for _, leader := range childPIDs(tm.Cmd.Process.Pid) {
			for _, pi := range childPIDs(leader) {
				if pi != first {
					return pi
				}
			}
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("no fresh pi after /handoff; screen:\n%s", tm.Screen())
	return 0
}

// cooked reports whether pid's terminal still turns Ctrl+C into SIGINT.
func cooked(pid int) bool {
	f, err := os.OpenFile("/proc/"+strconv.Itoa(pid)+"/fd/0", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	tio, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil && tio.Lflag&unix.ISIG != 0
}

// missed quits the relaunched pi of a try that did not hit the window.
func missed(t *testing.T, tm *pitest.Term) bool {
	tm.WaitReady(2)
	tm.Submit("/quit")
	tm.Wait()
	return false
}
