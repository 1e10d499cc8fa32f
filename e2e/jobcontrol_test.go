package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pi-session/pi-session/pitest"
)

// tmuxShell is an interactive bash in a tmux server of the test's own: a
// real terminal with a screen, as a user has.
type tmuxShell struct {
	t    *testing.T
	sock string
}

func startTmuxShell(t *testing.T, e *pitest.Env) *tmuxShell {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("the job-control test needs tmux: %v", err)
	}
	dir := filepath.Dir(e.Agent)
	// A launcher, so the shell gets exactly the test environment.
	var b strings.Builder
	b.WriteString("#!/bin/sh\nexec env -i")
	for _, kv := range append(e.Environ(), "PS1=$ ", "INPUTRC=/dev/null") {
		b.WriteString(" '" + strings.ReplaceAll(kv, "'", `'\''`) + "'")
	}
	b.WriteString(" bash --norc --noprofile -i\n")
	launcher := filepath.Join(dir, "shell.sh")
	if err := os.WriteFile(launcher, []byte(b.String()), 0o700); err != nil {
		t.Fatal(err)
	}
	sh := &tmuxShell{t: t, sock: filepath.Join(dir, "tmux.sock")}
	t.Cleanup(func() { exec.Command("tmux", "-S", sh.sock, "kill-server").Run() })
	if out, err := exec.Command("tmux", "-S", sh.sock, "-f", "/dev/null", "new-session", "-d", "-x", "120", "-y", "40", "-c", e.Work, launcher).CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	return sh
}

func (sh *tmuxShell) keys(keys ...string) {
	sh.t.Helper()
	if out, err := exec.Command("tmux", append([]string{"-S", sh.sock, "send-keys"}, keys...)...).CombinedOutput(); err != nil {
		sh.t.Fatalf("tmux send-keys %q: %v\n%s", keys, err, out)
	}
}

// screen is what the terminal shows now.
func (sh *tmuxShell) screen() string {
	sh.t.Helper()
	out, err := exec.Command("tmux", "-S", sh.sock, "capture-pane", "-p").Output()
	if err != nil {
		sh.t.Fatalf("tmux capture-pane: %v", err)
	}
	return string(out)
}

// history is everything the terminal showed, scrolled off lines included.
func (sh *tmuxShell) history() string {
	out, _ := exec.Command("tmux", "-S", sh.sock, "capture-pane", "-p", "-S", "-", "-E", "-").Output()
	return string(out)
}

// waitScreen waits until ok accepts the screen; the deadline only bounds a
// failing test.
func (sh *tmuxShell) waitScreen(what string, ok func(screen string) bool) string {
	sh.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		s := sh.screen()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			sh.t.Fatalf("the screen never showed %s; it shows:\n%s", what, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (sh *tmuxShell) waitHistory(want string, n int) {
	sh.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for strings.Count(sh.history(), want) < n {
		if time.Now().After(deadline) {
			sh.t.Fatalf("the terminal never showed %q %d times; it showed:\n%s", want, n, sh.history())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// piUnder finds pi among the descendants of pid: the process whose parent
// is pi-session's PTY session leader.
func piUnder(t *testing.T, pid int) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		queue := []int{pid}
		for len(queue) > 0 {
			p := queue[0]
			queue = queue[1:]
			kids := childPIDs(p)
			if env, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/environ"); err == nil && bytes.Contains(env, []byte("_PI_SESSION_LEADER=1\x00")) && len(kids) > 0 {
				return kids[0]
			}
			queue = append(queue, kids...)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pi under process %d", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func checkStopped(t *testing.T, pi int, when string) {
	t.Helper()
	g := pitest.GroupStates(pi)
	if len(g) == 0 {
		t.Fatalf("%s: pi's process group %d is empty", when, pi)
	}
	for pid, st := range g {
		if st != "T" {
			t.Fatalf("%s: process %d of pi's group is in state %s, want T (stopped); group %v", when, pid, st, g)
		}
	}
}

// TestTUISuspend is Ctrl+Z with real pi in a real terminal: bash in tmux
// runs pi-session directly and under make. Ctrl+Z must stop the job with
// pi's whole process group staying stopped, and after fg pi must have
// redrawn the whole screen: none of the shell's lines left on it.
func TestTUISuspend(t *testing.T) {
	for _, wrap := range []string{"direct", "make"} {
		t.Run(wrap, func(t *testing.T) {
			e := pitest.NewEnv(t)
			cmdline := pitest.Binary(t) + " " + strings.Join(e.PiArgs(), " ")
			command := "pi"
			if wrap == "make" {
				mk := filepath.Join(e.Work, "Makefile")
				if err := os.WriteFile(mk, []byte("pi:\n\t"+cmdline+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				command = "make -s pi"
			}
			sh := startTmuxShell(t, e)
			sh.keys("alias pi='"+cmdline+"'", "Enter")
			sh.keys(command, "Enter")
			sh.waitScreen("pi ready", func(s string) bool { return strings.Contains(s, "[Extensions]") })
			out, err := exec.Command("tmux", "-S", sh.sock, "display", "-p", "#{pane_pid}").Output()
			if err != nil {
				t.Fatal(err)
			}
			bash, _ := strconv.Atoi(strings.TrimSpace(string(out)))
			pi := piUnder(t, bash)
			sh.keys("hello from the shell test")
			time.Sleep(50 * time.Millisecond) // let the editor take the text before Enter, as pitest's Submit
			sh.keys("Enter")
			sh.waitScreen("the answer", func(s string) bool { return strings.Contains(s, "faux: hello from the shell test") })
			for i := 1; i <= 3; i++ {
				sh.keys("C-z")
				sh.waitHistory("Stopped", i)
				checkStopped(t, pi, fmt.Sprintf("try %d, when bash said Stopped", i))
				sh.keys(fmt.Sprintf("echo $((200000+%d))", i), "Enter")
				sh.waitHistory(strconv.Itoa(200000+i), 1)
				checkStopped(t, pi, fmt.Sprintf("try %d, after another command", i))
				sh.keys("fg", "Enter")
				sh.waitScreen("pi redrawn, without the shell's lines", func(s string) bool {
					return strings.Contains(s, "faux: hello from the shell test") && strings.Contains(s, "[Extensions]") &&
						!strings.Contains(s, "Stopped") && !strings.Contains(s, "$ fg") && !strings.Contains(s, strconv.Itoa(200000+i))
				})
			}
			sh.keys("/quit", "Enter")
			for deadline := time.Now().Add(90 * time.Second); len(childPIDs(bash)) > 0; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("pi-session did not exit after /quit; screen:\n%s", sh.screen())
				}
			}
			sh.keys("echo status=$?", "Enter")
			sh.waitHistory("status=0", 1)
		})
	}
}
