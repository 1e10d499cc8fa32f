package supervisor

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// userTerm is a PTY pair standing in for the user's terminal: the supervisor
// gets the tty end as stdin/stdout, the test types into and reads from the
// master end.
type userTerm struct {
	ptmx, tty *os.File
	mu        sync.Mutex
	out       bytes.Buffer
}

func newUserTerm(t *testing.T) *userTerm {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 24, Cols: 80}); err != nil {
		t.Fatal(err)
	}
	u := &userTerm{ptmx: ptmx, tty: tty}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			u.mu.Lock()
			u.out.Write(buf[:n])
			u.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { tty.Close(); ptmx.Close() })
	return u
}

func (u *userTerm) output() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.out.String()
}

// waitFor polls the terminal output for want; the deadline only bounds a
// failing test, nothing is timed.
func (u *userTerm) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(u.output(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("terminal never showed %q; it shows:\n%s", want, u.output())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func termios(t *testing.T, f *os.File) unix.Termios {
	t.Helper()
	tio, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	return *tio
}

// openFDs lists this process's open descriptors with their targets.
func openFDs(t *testing.T) map[string]string {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, e := range ents {
		target, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err != nil { // the descriptor ReadDir itself used, closed by now
			continue
		}
		m[e.Name()] = target
	}
	return m
}

// leaked reports descriptors open now that were not open before.
func leaked(before, after map[string]string) []string {
	var out []string
	for fd, target := range after {
		if before[fd] != target {
			out = append(out, fd+" -> "+target)
		}
	}
	return out
}

// children lists this process's child pids, zombies included.
func children(t *testing.T) []string {
	t.Helper()
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	var out []string
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		out = append(out, strings.Fields(string(b))...)
	}
	return out
}

func self(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

func leader(t *testing.T) *LeaderSpec {
	exe := self(t)
	return &LeaderSpec{Path: exe, Args: []string{exe}}
}

func fakeLaunch(t *testing.T, behaviour string, extraEnv ...string) Launch {
	env := append(os.Environ(), "FAKE_PI="+behaviour)
	return Launch{Path: self(t), Env: append(env, extraEnv...)}
}

// supervise runs one launch under a Supervisor on the user terminal u and
// checks what every launch must leave behind: the terminal as it was, no
// extra file descriptors, no children.
func supervise(t *testing.T, u *userTerm, l Launch, during func(started <-chan int)) (Result, error) {
	t.Helper()
	before := termios(t, u.tty)
	fds := openFDs(t)
	s := New(Options{Stdin: u.tty, Stdout: u.tty, Stderr: u.tty, Leader: leader(t)})
	if !s.Interactive() {
		t.Fatal("Supervisor on a PTY is not interactive")
	}
	started := make(chan int, 1)
	l.Started = func(pid, _ int) { started <- pid }
	done := make(chan struct{})
	if during != nil {
		go func() { defer close(done); during(started) }()
	} else {
		close(done)
	}
	res, err := s.Run(context.Background(), l)
	<-done
	s.Close()
	if after := termios(t, u.tty); after != before {
		t.Errorf("terminal state after Run differs from before:\n before %+v\n after  %+v", before, after)
	}
	if l := leaked(fds, openFDs(t)); len(l) != 0 {
		t.Errorf("file descriptors leaked by Run: %v", l)
	}
	if c := children(t); len(c) != 0 {
		t.Errorf("children left after Run: %v", c)
	}
	return res, err
}

func TestPTYExitStatus(t *testing.T) {
	tests := []struct {
		behaviour string
		code      int
		sig       syscall.Signal
		status    int
	}{
		{"exit_0", 0, 0, 0},
		{"exit_7", 7, 0, 7},
		{"die_TERM", 0, syscall.SIGTERM, 143},
		{"die_KILL", 0, syscall.SIGKILL, 137},
	}
	for _, tt := range tests {
		t.Run(tt.behaviour, func(t *testing.T) {
			u := newUserTerm(t)
			res, err := supervise(t, u, fakeLaunch(t, tt.behaviour), nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Code != tt.code || res.Signal != tt.sig || res.Status() != tt.status {
				t.Errorf("Run(%s) = code %d signal %v status %d; want %d %v %d",
					tt.behaviour, res.Code, res.Signal, res.Status(), tt.code, tt.sig, tt.status)
			}
			if res.Interrupted != 0 {
				t.Errorf("Interrupted = %v, want 0", res.Interrupted)
			}
		})
	}
	u := newUserTerm(t)
	if _, err := supervise(t, u, fakeLaunch(t, "exit_0"), nil); err != nil {
		t.Fatal(err)
	}
	u.waitFor(t, "fake pi ran")
}

// TestPTYSignalDeathRestore: pi killed by a signal cannot restore the
// terminal's modes or move below its screen; pi-session does, and leaves
// the alternate screen when pi was in it. A clean exit writes nothing.
func TestPTYSignalDeathRestore(t *testing.T) {
	for _, tt := range []struct {
		behaviour string
		want      string
	}{
		{"die_KILL", modeReset + "\x1b[999B\r\n"},
		{"alt_die_KILL", "in the alternate screen" + modeReset + "\x1b[?1049l\r\n"},
		{"exit_7", ""},
	} {
		u := newUserTerm(t)
		if _, err := supervise(t, u, fakeLaunch(t, tt.behaviour), nil); err != nil {
			t.Fatal(err)
		}
		out := u.output()
		if tt.want == "" {
			if strings.Contains(out, modeReset) {
				t.Errorf("%s: the terminal reset was written after a clean exit: %q", tt.behaviour, out)
			}
			continue
		}
		u.waitFor(t, tt.want)
		if !strings.HasSuffix(u.output(), tt.want) {
			t.Errorf("%s: output %q, want it to end with %q", tt.behaviour, u.output(), tt.want)
		}
	}
}

func TestAltScreen(t *testing.T) {
	for _, tt := range []struct {
		reads []string
		want  bool
	}{
		{[]string{"plain text"}, false},
		{[]string{"a\x1b[?1049hb"}, true},
		{[]string{"\x1b[?1049h", "x\x1b[?1049l"}, false},
		{[]string{"x\x1b[?10", "49h"}, true},
		{[]string{"\x1b", "[", "?", "1", "0", "4", "9", "h"}, true},
		{[]string{"\x1b[?1049", "h"}, true},
		{[]string{"\x1b[?1049h\x1b[?1049", "l tail"}, false},
		{[]string{"\x1b[?1049h", "\x1b[?1048l"}, true},
	} {
		var a altScreen
		for _, r := range tt.reads {
			a.scan([]byte(r))
		}
		if a.on != tt.want {
			t.Errorf("altScreen after reads %q = %v, want %v", tt.reads, a.on, tt.want)
		}
	}
}

func TestPTYNotFound(t *testing.T) {
	for _, withLeader := range []bool{true, false} {
		u := newUserTerm(t)
		s := New(Options{Stdin: u.tty, Stdout: u.tty, Stderr: u.tty})
		if withLeader {
			s.opts.Leader = leader(t)
		}
		before := termios(t, u.tty)
		_, err := s.Run(context.Background(), Launch{Path: "/nonexistent/pi", Env: os.Environ()})
		s.Close()
		var se *StartError
		if !errors.As(err, &se) || se.Code != 127 {
			t.Errorf("leader %v: Run(missing pi) error = %v, want a StartError with code 127", withLeader, err)
		}
		if termios(t, u.tty) != before {
			t.Errorf("leader %v: terminal not restored after a failed start", withLeader)
		}
		if c := children(t); len(c) != 0 {
			t.Errorf("children left: %v", c)
		}
	}
}

// TestPTYDescendantHoldsTerminal: a descendant of pi keeps the PTY open
// after pi exits; Run still returns (after a short grace for output).
func TestPTYDescendantHoldsTerminal(t *testing.T) {
	u := newUserTerm(t)
	res, err := supervise(t, u, fakeLaunch(t, "leave_child"), nil)
	if err != nil || res.Status() != 0 {
		t.Fatalf("Run = %+v, %v; want status 0", res, err)
	}
	u.waitFor(t, "child ")
	var child int
	for _, line := range strings.Split(u.output(), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "child "); ok {
			child, _ = strconv.Atoi(v)
		}
	}
	if child <= 0 {
		t.Fatalf("no child pid in %q", u.output())
	}
	syscall.Kill(child, syscall.SIGKILL)
}

func TestPTYSignalsForwarded(t *testing.T) {
	u := newUserTerm(t)
	res, err := supervise(t, u, fakeLaunch(t, "hang_until_signal"), func(started <-chan int) {
		<-started
		u.waitFor(t, "ready")
		for _, s := range []syscall.Signal{syscall.SIGINT, syscall.SIGUSR1, syscall.SIGTERM} {
			syscall.Kill(os.Getpid(), s)    // pi-session receives it ...
			u.waitFor(t, "got "+s.String()) // ... and pi sees it
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status() != 0 || res.Interrupted != syscall.SIGTERM {
		t.Errorf("Run = status %d interrupted %v; want 0 and SIGTERM", res.Status(), res.Interrupted)
	}
}

func TestPTYResize(t *testing.T) {
	u := newUserTerm(t)
	_, err := supervise(t, u, fakeLaunch(t, "size"), func(started <-chan int) {
		<-started
		u.waitFor(t, "size 24 80 <nil>")
		if err := pty.Setsize(u.ptmx, &pty.Winsize{Rows: 31, Cols: 101}); err != nil {
			t.Error(err)
		}
		syscall.Kill(os.Getpid(), syscall.SIGWINCH) // what the terminal does on resize
		u.waitFor(t, "size 31 101 <nil>")
		syscall.Kill(os.Getpid(), syscall.SIGTERM)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestPTYKeyboardAndRawMode(t *testing.T) {
	u := newUserTerm(t)
	res, err := supervise(t, u, fakeLaunch(t, "echo"), func(started <-chan int) {
		<-started
		u.waitFor(t, "ready")
		tio := termios(t, u.tty)
		if tio.Lflag&unix.ICANON != 0 || tio.Lflag&unix.ECHO != 0 {
			t.Errorf("user terminal is not raw while pi runs: lflag %#x", tio.Lflag)
		}
		u.ptmx.Write([]byte("hello\r"))
		u.waitFor(t, "echo:hello")
		u.ptmx.Write([]byte("quit\r"))
	})
	if err != nil || res.Status() != 0 {
		t.Fatalf("Run = %+v, %v; want status 0", res, err)
	}
}

// TestPTYRelaunchKeepsKeys: when a launch follows at once (Launch.Next),
// the terminal stays raw in between, and what the user types then (Ctrl+C
// included: raw, it is a key, not a signal to pi-session's group) reaches
// the next pi; Close restores the terminal. Without a launch to follow,
// Run restores it at once.
func TestPTYRelaunchKeepsKeys(t *testing.T) {
	u := newUserTerm(t)
	before := termios(t, u.tty)
	s := New(Options{Stdin: u.tty, Stdout: u.tty, Stderr: u.tty, Leader: leader(t)})
	first := fakeLaunch(t, "exit_0")
	first.Next = func(res Result) bool { return res.Status() == 0 }
	if res, err := s.Run(context.Background(), first); err != nil || res.Status() != 0 {
		t.Fatalf("first Run = %+v, %v", res, err)
	}
	if tio := termios(t, u.tty); tio.Lflag&(unix.ICANON|unix.ECHO|unix.ISIG) != 0 {
		t.Errorf("terminal not raw between a launch and the one that follows: lflag %#x", tio.Lflag)
	}
	u.ptmx.Write([]byte("hello\rquit\r"))
	second := fakeLaunch(t, "echo")
	second.Next = func(Result) bool { return true }
	res, err := s.Run(context.Background(), second)
	if err != nil || res.Status() != 0 {
		t.Fatalf("second Run = %+v, %v; output:\n%s", res, err, u.output())
	}
	u.waitFor(t, "echo:hello")
	// Ctrl+C typed in between reaches the next pi as it would have, had it
	// been typed once that pi runs: its terminal, not raw yet, signals it.
	u.ptmx.Write([]byte("\x03"))
	res, err = s.Run(context.Background(), fakeLaunch(t, "echo"))
	if err != nil || res.Signal != syscall.SIGINT {
		t.Errorf("third Run, after a Ctrl+C in between = %+v, %v; want death by SIGINT", res, err)
	}
	s.Close()
	if tio := termios(t, u.tty); tio != before {
		t.Errorf("terminal not restored by Close after a held launch")
	}

	s = New(Options{Stdin: u.tty, Stdout: u.tty, Stderr: u.tty, Leader: leader(t)})
	defer s.Close()
	last := fakeLaunch(t, "exit_0")
	last.Next = func(Result) bool { return false }
	if _, err := s.Run(context.Background(), last); err != nil {
		t.Fatal(err)
	}
	if tio := termios(t, u.tty); tio != before {
		t.Errorf("terminal not restored after a launch nothing follows")
	}
}

func TestPTYLeaderIsParentAndPiLeadsItsGroup(t *testing.T) {
	u := newUserTerm(t)
	var piPID int
	_, err := supervise(t, u, fakeLaunch(t, "env", "FAKE_ENV_KEYS=PI_SESSION_WRAPPER_PID", "PI_SESSION_WRAPPER_PID=1"), func(started <-chan int) {
		piPID = <-started
	})
	if err != nil {
		t.Fatal(err)
	}
	u.waitFor(t, "ppid=")
	out := u.output()
	var wrapper, ppid int
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "PI_SESSION_WRAPPER_PID="); ok {
			wrapper, _ = strconv.Atoi(v)
		}
		if v, ok := strings.CutPrefix(line, "ppid="); ok {
			ppid, _ = strconv.Atoi(v)
		}
	}
	if ppid == 0 || wrapper != ppid || ppid == os.Getpid() || ppid == piPID {
		t.Errorf("pi's parent %d, PI_SESSION_WRAPPER_PID %d (supervisor %d, pi %d); want the leader's pid in both", ppid, wrapper, os.Getpid(), piPID)
	}
}

// TestPTYJobControl runs a supervisor as a process of its own in its own
// process group, as a shell runs a job, with a TUI like pi's. Ctrl+Z stops
// pi's group; the supervisor must stop too with the terminal restored, pi's
// group must stay stopped while the supervisor is, and when the "shell"
// continues the supervisor, pi must be continued and redraw.
func TestPTYJobControl(t *testing.T) {
	u := newUserTerm(t)
	before := termios(t, u.tty)
	cmd := exec.Command(self(t))
	cmd.Env = append(os.Environ(), "FAKE_SUPERVISOR=tui")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = u.tty, u.tty, u.tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	u.waitFor(t, "tui ready")
	piPID := readyPID(t, u.output())
	t.Cleanup(func() { syscall.Kill(-piPID, syscall.SIGKILL) })
	u.ptmx.Write([]byte{0x1a}) // Ctrl+Z
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, syscall.WUNTRACED, nil); err != nil {
		t.Fatal(err)
	}
	if !ws.Stopped() {
		t.Fatalf("supervisor process ended (%v) instead of stopping with pi; output:\n%s", ws, u.output())
	}
	allStopped(t, piPID, "when the supervisor stopped")
	if after := termios(t, u.tty); after != before {
		t.Errorf("terminal not restored while suspended:\n before %+v\n after  %+v\noutput: %q", before, after, u.output())
	}
	allStopped(t, piPID, "after the terminal was checked")
	syscall.Kill(pid, syscall.SIGCONT) // the shell's fg
	u.waitFor(t, "redraw 1")
	u.ptmx.Write([]byte("q"))
	for {
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err != syscall.EINTR {
			break
		}
	}
	if !ws.Exited() || ws.ExitStatus() != 0 {
		t.Errorf("supervisor ended with %v, want exit 0; output:\n%s", ws, u.output())
	}
	if after := termios(t, u.tty); after != before {
		t.Errorf("terminal not restored after exit")
	}
}

// TestPTYJobControlOrphaned: started where no job-control shell could
// continue it (a session of its own, as a tmux pane's command), the
// supervisor does not stop on pi's Ctrl+Z: the kernel discards the stop of
// an orphaned group, and pi is continued at once and redraws.
func TestPTYJobControlOrphaned(t *testing.T) {
	u := newUserTerm(t)
	cmd := exec.Command(self(t))
	cmd.Env = append(os.Environ(), "FAKE_SUPERVISOR=tui")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = u.tty, u.tty, u.tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	u.waitFor(t, "tui ready")
	t.Cleanup(func() { syscall.Kill(-readyPID(t, u.output()), syscall.SIGKILL) })
	u.ptmx.Write([]byte{0x1a})
	u.waitFor(t, "redraw 1") // nobody sent SIGCONT: pi-session continued pi itself
	u.ptmx.Write([]byte("q"))
	var ws syscall.WaitStatus
	for {
		if _, err := syscall.Wait4(pid, &ws, syscall.WUNTRACED, nil); err != syscall.EINTR {
			break
		}
	}
	if !ws.Exited() || ws.ExitStatus() != 0 {
		t.Errorf("supervisor ended with %v, want exit 0 without ever stopping; output:\n%s", ws, u.output())
	}
}

func TestPlainPassthrough(t *testing.T) {
	for _, tt := range []struct {
		behaviour string
		status    int
		out       string
	}{
		{"exit_0", 0, "fake pi ran\n"},
		{"exit_7", 7, ""},
		{"die_TERM", 143, ""},
	} {
		stdin, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		r, w, _ := os.Pipe()
		fds := openFDs(t)
		s := New(Options{Stdin: stdin, Stdout: w, Stderr: w, Leader: leader(t)})
		if s.Interactive() {
			t.Fatal("Supervisor with a pipe for stdout is interactive")
		}
		res, err := s.Run(context.Background(), fakeLaunch(t, tt.behaviour))
		s.Close()
		w.Close()
		var got bytes.Buffer
		got.ReadFrom(r)
		r.Close()
		stdin.Close()
		if err != nil || res.Status() != tt.status || got.String() != tt.out {
			t.Errorf("plain %s = status %d, out %q, err %v; want %d, %q", tt.behaviour, res.Status(), got.String(), err, tt.status, tt.out)
		}
		if l := leaked(fds, openFDs(t)); len(l) != 0 {
			t.Errorf("plain %s: file descriptors leaked: %v", tt.behaviour, l)
		}
	}
}

// TestEarlyOutput: the start of what pi wrote is kept for a note on how
// it ended: under a PTY its output; without one its stderr, passed on
// byte for byte, when stderr is neither a terminal nor stdout's file (with
// 2>&1 pi writes to it directly, so the two streams keep their order).
func TestEarlyOutput(t *testing.T) {
	u := newUserTerm(t)
	res, err := supervise(t, u, fakeLaunch(t, "fail_flag"), nil)
	if err != nil || res.Status() != 1 || !strings.Contains(string(res.Early), "Error: Unknown option: --bogus") {
		t.Errorf("PTY: status %d, early %q, err %v; want 1 with pi's error", res.Status(), res.Early, err)
	}

	dir := t.TempDir()
	for _, tt := range []struct {
		name      string
		same      bool
		wantEarly string
	}{
		{"own files", false, "Error: Unknown option: --bogus\n"},
		{"stderr is stdout", true, ""},
	} {
		stdin, _ := os.Open(os.DevNull)
		outf, _ := os.Create(filepath.Join(dir, tt.name+".out"))
		errf := outf
		if !tt.same {
			errf, _ = os.Create(filepath.Join(dir, tt.name+".err"))
		}
		fds := openFDs(t)
		s := New(Options{Stdin: stdin, Stdout: outf, Stderr: errf})
		res, err := s.Run(context.Background(), fakeLaunch(t, "fail_flag"))
		s.Close()
		if l := leaked(fds, openFDs(t)); len(l) != 0 {
			t.Errorf("%s: file descriptors leaked: %v", tt.name, l)
		}
		stdin.Close()
		outf.Close()
		errf.Close()
		if err != nil || res.Status() != 1 || string(res.Early) != tt.wantEarly {
			t.Errorf("%s: status %d, early %q, err %v; want 1, %q", tt.name, res.Status(), res.Early, err, tt.wantEarly)
		}
		gotOut, _ := os.ReadFile(outf.Name())
		gotErr, _ := os.ReadFile(errf.Name())
		wantOut, wantErr := "to stdout first\n", "Error: Unknown option: --bogus\n"
		if tt.same {
			wantOut += wantErr
		}
		if string(gotOut) != wantOut || string(gotErr) != wantErr && !tt.same {
			t.Errorf("%s: stdout %q, stderr %q; want %q, %q", tt.name, gotOut, gotErr, wantOut, wantErr)
		}
	}
}

func TestPlainSignalForwarding(t *testing.T) {
	stdin, _ := os.Open(os.DevNull)
	defer stdin.Close()
	r, w, _ := os.Pipe()
	s := New(Options{Stdin: stdin, Stdout: w, Stderr: w})
	started := make(chan int, 1)
	l := fakeLaunch(t, "hang_until_signal")
	l.Started = func(pid, _ int) { started <- pid }
	go func() {
		<-started
		buf := make([]byte, 64)
		r.Read(buf) // "ready"
		syscall.Kill(os.Getpid(), syscall.SIGTERM)
	}()
	res, err := s.Run(context.Background(), l)
	s.Close()
	w.Close()
	r.Close()
	if err != nil || res.Status() != 0 || res.Interrupted != syscall.SIGTERM {
		t.Errorf("Run = %+v, %v; want status 0 with Interrupted SIGTERM", res, err)
	}
}

func TestProcStat(t *testing.T) {
	st, err := procStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if st.pgrp != syscall.Getpgrp() || st.session != mustSid() || st.ppid != os.Getppid() {
		t.Errorf("procStat = %+v, want ppid %d pgrp %d session %d", st, os.Getppid(), syscall.Getpgrp(), mustSid())
	}
	if _, err := procStat(1 << 30); err == nil {
		t.Error("procStat(no such pid) succeeded")
	}
}
