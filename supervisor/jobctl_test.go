package supervisor

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/pi-session/pi-session/pitest"
)

func TestOrphaned(t *testing.T) {
	// A shell (pid 10, group 10, session 10) runs a job in group 20.
	shell := proc{pid: 10, ppid: 5, pgrp: 10, session: 10}
	job := proc{pid: 20, ppid: 10, pgrp: 20, session: 10}
	wrapped := proc{pid: 21, ppid: 20, pgrp: 20, session: 10}
	tests := []struct {
		name  string
		procs []proc
		want  bool
	}{
		{"a job of a shell", []proc{shell, job}, false},
		{"a wrapper's child in the job", []proc{shell, job, wrapped}, false},
		{"the job's parent is gone", []proc{{pid: 20, ppid: 1, pgrp: 20, session: 10}}, true},
		{"the parent is in another session", []proc{{pid: 10, ppid: 5, pgrp: 10, session: 9}, job}, true},
		{"the parent is in the same group", []proc{{pid: 10, ppid: 1, pgrp: 20, session: 10}, {pid: 20, ppid: 10, pgrp: 20, session: 10}}, true},
		{"only a zombie links the group to the shell", []proc{shell, {pid: 20, ppid: 10, pgrp: 20, session: 10, zombie: true}}, true},
		{"the parent is not in the table", []proc{job}, true},
	}
	for _, tt := range tests {
		if got := orphaned(20, tt.procs); got != tt.want {
			t.Errorf("orphaned(20, %s) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// allStopped fails unless every process of pi's group (pi and the child it
// started) is stopped.
func allStopped(t *testing.T, piPID int, when string) {
	t.Helper()
	g := pitest.GroupStates(piPID)
	if len(g) < 2 {
		t.Fatalf("%s: pi's process group %d has %v, want pi and its child", when, piPID, g)
	}
	for pid, state := range g {
		if state != "T" {
			t.Fatalf("%s: process %d of pi's group is in state %s, want T (stopped); group: %v", when, pid, state, g)
		}
	}
}

// readyPID reads pi's pid from the fake TUI's "tui ready pid=N" line.
func readyPID(t *testing.T, out string) int {
	t.Helper()
	_, rest, ok := strings.Cut(out, "tui ready pid=")
	if !ok {
		t.Fatalf("no \"tui ready\" line in %q", out)
	}
	pid, err := strconv.Atoi(strings.Fields(rest)[0])
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// shellTerm is an interactive bash on a PTY of its own, which is its
// controlling terminal: the shell a user types into.
type shellTerm struct {
	cmd  *exec.Cmd
	ptmx *os.File
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
}

func startShell(t *testing.T, dir string) *shellTerm {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatalf("the job-control test needs bash: %v", err)
	}
	cmd := exec.Command(bash, "--norc", "--noprofile", "-i")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TERM=dumb", "PS1=$ ", "INPUTRC=/dev/null"}
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 24, Cols: 200})
	if err != nil {
		t.Fatal(err)
	}
	sh := &shellTerm{cmd: cmd, ptmx: ptmx, done: make(chan struct{})}
	go func() {
		defer close(sh.done)
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			sh.mu.Lock()
			sh.out.Write(buf[:n])
			sh.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		ptmx.Close()
	})
	return sh
}

func (sh *shellTerm) output() string {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.out.String()
}

func (sh *shellTerm) typ(s string) { sh.ptmx.Write([]byte(s)) }

// waitCount waits until want has appeared n times; the deadline only bounds
// a failing test.
func (sh *shellTerm) waitCount(t *testing.T, want string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for strings.Count(sh.output(), want) < n {
		if time.Now().After(deadline) {
			procs := sh.processes()
			out := sh.output()
			t.Fatalf("the shell never showed %q %d times; the last output:\n%q\nprocesses:\n%s", want, n, out[max(0, len(out)-600):], procs)
		}
		time.Sleep(time.Millisecond)
	}
}

// processes lists the processes of the shell's session and of the
// sessions of its descendants, for failure messages.
func (sh *shellTerm) processes() string {
	out, _ := exec.Command("ps", "-e", "-o", "pid,ppid,pgid,sid,stat,wchan:24,args").Output()
	var b strings.Builder
	for i, line := range strings.Split(string(out), "\n") {
		if i == 0 || strings.Contains(line, ".test") || strings.Contains(line, "make") || strings.Contains(line, "bash") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// waitJobs runs "jobs" until it shows want. (How bash names a stop signal
// depends on its environment: "Stopped (tty output)" for SIGTTOU in one,
// plain "Stopped" in another.)
func (sh *shellTerm) waitJobs(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for n := 1; ; n++ {
		sh.typ("jobs\r")
		sh.waitCount(t, "$ jobs", n)
		sh.typ("echo jobs-done\r")
		sh.waitCount(t, "\njobs-done", n)
		if strings.Contains(sh.output(), want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("jobs never said %q; the last output:\n%q", want, sh.output())
		}
	}
}

// waitIdle waits until the shell has no children left: the job ended.
func (sh *shellTerm) waitIdle(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", sh.cmd.Process.Pid, sh.cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		if len(bytes.TrimSpace(b)) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the shell's job never ended (children %s); the last output:\n%q", b, sh.output())
		}
		time.Sleep(time.Millisecond)
	}
}

// startLoad keeps every core busy with sibling processes until the test ends.
func startLoad(t *testing.T) {
	for range runtime.NumCPU() {
		c := exec.Command(self(t))
		c.Env = append(os.Environ(), "FAKE_PI=burn")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	}
}

// TestJobControlUnderShell is Ctrl+Z as a user meets it: an interactive
// bash runs pi-session (a supervisor with the fake TUI as pi) directly and
// under make, whose process group then holds make too. 100 times in a row,
// under load: Ctrl+Z must stop the job (bash says "Stopped"), every process
// of pi's group must be stopped and still be after another command, and
// after fg pi must redraw its screen.
func TestJobControlUnderShell(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatalf("the job-control test runs pi-session under make: %v", err)
	}
	startLoad(t)
	dir := t.TempDir()
	run := "FAKE_SUPERVISOR=tui " + self(t)
	mk := filepath.Join(dir, "Makefile")
	if err := os.WriteFile(mk, []byte("pi:\n\t"+run+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, command string }{
		{"direct", "pi"},
		{"make", "make -s -f " + mk + " pi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sh := startShell(t, dir)
			sh.typ("alias pi='" + run + "'\r")
			sh.typ(tc.command + "\r")
			sh.waitCount(t, "tui ready", 1)
			piPID := readyPID(t, sh.output())
			t.Cleanup(func() { syscall.Kill(-piPID, syscall.SIGKILL) })
			const tries = 100
			for i := 1; i <= tries; i++ {
				sh.typ("\x1a") // Ctrl+Z
				sh.waitCount(t, "Stopped", i)
				allStopped(t, piPID, fmt.Sprintf("try %d, when the shell said Stopped", i))
				sh.typ(fmt.Sprintf("echo $((100000+%d))\r", i)) // a round trip through the shell
				sh.waitCount(t, strconv.Itoa(100000+i), 1)
				allStopped(t, piPID, fmt.Sprintf("try %d, after another command", i))
				sh.typ("fg\r")
				sh.waitCount(t, fmt.Sprintf("\x1b[2J\x1b[Hredraw %d\r\n", i), 1)
			}
			// bg: pi needs the terminal, so the job stops again at once
			// and pi's group stays stopped.
			sh.typ("\x1a")
			sh.waitCount(t, "Stopped", tries+1)
			sh.typ("bg\r")
			sh.waitJobs(t, "Stopped ")
			allStopped(t, piPID, "after bg")
			sh.typ("fg\r")
			sh.waitCount(t, fmt.Sprintf("redraw %d", tries+1), 1)
			sh.typ("q")
			sh.waitIdle(t)
			sh.typ("echo exit=$?\r")
			sh.waitCount(t, "exit=0", 1)
			if strings.Contains(sh.output(), "redraw "+strconv.Itoa(tries+2)) {
				t.Errorf("pi redrew without a Ctrl+Z: a SIGCONT reached it while it ran")
			}
		})
	}
}

// TestJobControlBackgroundStart: "pi &" from an interactive bash stops
// before taking the terminal (as pi itself does), and fg starts it.
func TestJobControlBackgroundStart(t *testing.T) {
	dir := t.TempDir()
	sh := startShell(t, dir)
	sh.typ("FAKE_SUPERVISOR=tui " + self(t) + " &\r")
	sh.waitJobs(t, "Stopped ")
	if strings.Contains(sh.output(), "tui ready") {
		t.Fatalf("pi started while pi-session was in the background:\n%q", sh.output())
	}
	sh.typ("fg\r")
	sh.waitCount(t, "tui ready", 1)
	t.Cleanup(func() { syscall.Kill(-readyPID(t, sh.output()), syscall.SIGKILL) })
	sh.typ("q")
	sh.waitIdle(t)
}
