package pitest

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// Term is a process running on a PTY the test owns, like a user's terminal:
// the test types into it and reads the screen's text.
type Term struct {
	t       testing.TB
	Cmd     *exec.Cmd
	ptmx    *os.File
	tty     *os.File
	mu      sync.Mutex
	out     bytes.Buffer
	done    chan struct{}
	waitErr error
	Before  unix.Termios // the terminal's state before the process started
}

// StartTerm starts cmd with a new 40x120 PTY as stdin, stdout and stderr.
// The PTY is not the process's controlling terminal, as for a program a
// shell runs in the background of its own terminal; pi-session only needs
// it to be a terminal.
func StartTerm(t testing.TB, cmd *exec.Cmd) *Term {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 40, Cols: 120}); err != nil {
		t.Fatal(err)
	}
	tio, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tm := &Term{t: t, Cmd: cmd, ptmx: ptmx, tty: tty, done: make(chan struct{}), Before: *tio}
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := ptmx.Read(buf)
			tm.mu.Lock()
			tm.out.Write(buf[:n])
			tm.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() {
		tm.waitErr = cmd.Wait()
		close(tm.done)
	}()
	t.Cleanup(func() {
		select {
		case <-tm.done:
		default:
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-tm.done
		}
		tty.Close()
		ptmx.Close()
	})
	return tm
}

var ansi = regexp.MustCompile(`\x1b\[[0-9;?<>=!]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[PX^_][^\x1b]*\x1b\\|\x1b[@-Z\\-_]|[\x00-\x08\x0b-\x1f\x7f]`)

// PlainText removes terminal control sequences and control characters.
func PlainText(b []byte) string { return ansi.ReplaceAllString(string(b), "") }

// Screen is everything the process has written, as plain text.
func (tm *Term) Screen() string {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return PlainText(tm.out.Bytes())
}

// Raw is everything the process has written, control sequences included.
func (tm *Term) Raw() string {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return tm.out.String()
}

// WaitFor waits until the screen text contains want. The deadline only
// bounds a failing test.
func (tm *Term) WaitFor(want string) {
	tm.t.Helper()
	tm.WaitForCount(want, 1)
}

// WaitForFlat waits until the screen text, every run of white space taken
// as one space, contains want taken the same way: a line the screen wrapped
// at a word's end still matches.
func (tm *Term) WaitForFlat(want string) {
	tm.t.Helper()
	flat := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	want = flat(want)
	deadline := time.Now().Add(90 * time.Second)
	for !strings.Contains(flat(tm.Screen()), want) {
		select {
		case <-tm.done:
			if strings.Contains(flat(tm.Screen()), want) {
				return
			}
			tm.t.Fatalf("process exited (%v) before the screen showed %q; screen:\n%s", tm.waitErr, want, tm.Screen())
		default:
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("screen never showed %q; screen:\n%s", want, tm.Screen())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// WaitForCount waits until want appears n times on the screen.
func (tm *Term) WaitForCount(want string, n int) {
	tm.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for strings.Count(tm.Screen(), want) < n {
		select {
		case <-tm.done:
			if strings.Count(tm.Screen(), want) >= n {
				return
			}
			tm.t.Fatalf("process exited (%v) before the screen showed %q %d times; screen:\n%s", tm.waitErr, want, n, tm.Screen())
		default:
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("screen never showed %q %d times; screen:\n%s", want, n, tm.Screen())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// WaitReady waits until the n-th pi on this terminal lists its extensions:
// pi does that after it starts accepting prompts (before, Enter only says
// "Startup is still in progress").
func (tm *Term) WaitReady(n int) {
	tm.t.Helper()
	tm.WaitForCount("[Extensions]", n)
}

// Type sends keys as the user's terminal would.
func (tm *Term) Type(s string) {
	tm.t.Helper()
	if _, err := tm.ptmx.Write([]byte(s)); err != nil {
		tm.t.Fatal(err)
	}
}

// Submit types a line into pi's editor and presses Enter.
func (tm *Term) Submit(line string) {
	tm.t.Helper()
	tm.Type(line)
	time.Sleep(50 * time.Millisecond) // let the editor take the text before Enter
	tm.Type("\r")
}

// Wait waits for the process to exit and returns its exit status (128+n
// for death by signal n).
func (tm *Term) Wait() int {
	tm.t.Helper()
	select {
	case <-tm.done:
	case <-time.After(90 * time.Second):
		tm.t.Fatalf("process did not exit; screen:\n%s", tm.Screen())
	}
	ps := tm.Cmd.ProcessState
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// Termios is the terminal's current state.
func (tm *Term) Termios() unix.Termios {
	tm.t.Helper()
	tio, err := unix.IoctlGetTermios(int(tm.tty.Fd()), unix.TCGETS)
	if err != nil {
		tm.t.Fatal(err)
	}
	return *tio
}
