package supervisor

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// gone reports whether pid has ended: no such process, or a zombie nobody
// reaped yet (an orphan's new parent may not reap at once).
func gone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z' || s[i+2] == 'X'
	}
	return false
}

// waitGone waits until pid has ended; the deadline only bounds a failing
// test, nothing is timed.
func waitGone(t *testing.T, pid int, what string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !gone(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("%s (pid %d) still runs after its supervisor was killed", what, pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// readPID waits for the fake pi to write its pid.
func readPID(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(path); err == nil {
			pid, _ := strconv.Atoi(string(b))
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatal("the fake pi never wrote its pid")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestPiDiesWithItsSupervisor: kill -9 of a supervisor leaves no pi behind,
// on the plain path (no terminal: the kernel sends pi SIGTERM, as it
// happens with a pi that would ignore the hangup) and under a PTY (the
// session leader hangs pi up, and kills it if it will not go), pi running
// or stopped.
func TestPiDiesWithItsSupervisor(t *testing.T) {
	for _, tc := range []struct {
		name, behaviour string
		pty             bool
	}{
		{"plain", "polite", false},
		{"pty, pi ends on the hangup", "polite", true},
		{"pty, pi ignores hangups", "stubborn", true},
		{"pty, pi and the supervisor stopped", "stubborn_stop", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(self(t))
			pidFile := filepath.Join(t.TempDir(), "pi.pid")
			cmd.Env = append(os.Environ(), "FAKE_SUPERVISOR="+tc.behaviour, "FAKE_PID_FILE="+pidFile)
			if tc.pty {
				u := newUserTerm(t)
				cmd.Stdin, cmd.Stdout, cmd.Stderr = u.tty, u.tty, u.tty
				cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a job of its own, as from a shell
			} else {
				cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // no controlling terminal; stdin /dev/null
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			piPID := readPID(t, pidFile)
			if tc.behaviour == "stubborn_stop" {
				var ws syscall.WaitStatus
				if _, err := syscall.Wait4(cmd.Process.Pid, &ws, syscall.WUNTRACED, nil); err != nil || !ws.Stopped() {
					t.Fatalf("the supervisor did not stop with pi: %v %v", ws, err)
				}
			}
			if gone(piPID) {
				t.Fatalf("pi (pid %d) is not running before the kill", piPID)
			}
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			waitGone(t, piPID, "pi")
		})
	}
}
