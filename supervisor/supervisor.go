// Package supervisor runs pi as a child process, under a PTY when the user is at a terminal, and reports how it ended.
package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/pi-session/pi-session/clip"
	"golang.org/x/term"
)

// Launch describes one pi process to run.
type Launch struct {
	Path string   // the pi executable
	Args []string // pi's arguments, without argv[0]
	Dir  string   // working directory; "" for the current one
	Env  []string // the child's whole environment
	// Started, if set, is called once pi runs, with pi's pid and the pid
	// of pi's parent inside pi-session (the PTY session leader, or
	// pi-session itself without a PTY): the PI_SESSION_WRAPPER_PID pi sees,
	// which names its relaunch marker.
	Started func(pid, wrapperPID int)
	// Next, if set, is called once pi has ended, before the terminal is
	// restored: true says another launch follows at once (a relaunch).
	// Under a PTY the terminal then stays raw until that launch, and the
	// keys typed meanwhile (Ctrl+C among them) wait for its pi instead of
	// reaching pi-session's own process group as signals; Close restores
	// the terminal if no launch follows after all.
	Next func(Result) bool
}

// Result says how one launch ended.
type Result struct {
	PID         int            // pi's pid
	Code        int            // pi's exit status when Signal is 0
	Signal      syscall.Signal // the signal that killed pi, 0 if it exited
	CoreDumped  bool           // pi's death by Signal left a core dump
	Interrupted syscall.Signal // the first stop request (SIGTERM, SIGHUP, SIGQUIT) pi-session received, 0 if none
	// Early is the start of what pi wrote, at most EarlyBytes: its
	// terminal output under a PTY; without one its stderr, when
	// pi-session passes it on (see runPlain), else nothing. It says why a
	// pi that ends at start-up ended.
	Early []byte
}

// EarlyBytes bounds Result.Early.
const EarlyBytes = 4 << 10

// Status is the shell's view of the result: the code, or 128+n for signal n.
func (r Result) Status() int {
	if r.Signal != 0 {
		return 128 + int(r.Signal)
	}
	return r.Code
}

// StartError is a failure to start pi; Code is the exit status pi-session
// should use (127 not found, 126 not executable, 71 other).
type StartError struct {
	Code int
	Err  error
}

func (e *StartError) Error() string { return "supervisor: start pi: " + e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }

// LeaderSpec says how to start the PTY session leader: pi-session's own
// executable in leader mode (see RunLeader). Args includes argv[0].
type LeaderSpec struct {
	Path string
	Args []string
}

// Options configure a Supervisor.
type Options struct {
	Stdin, Stdout, Stderr *os.File
	// Leader starts the PTY session leader that gives pi job control
	// (Ctrl+Z). Without one, pi itself leads the PTY session and its
	// suspend requests are discarded by the kernel.
	Leader *LeaderSpec
}

// Supervisor runs launches one after another on the same terminal. Create it
// once per pi-session process and Close it on every exit path.
type Supervisor struct {
	opts        Options
	interactive bool // stdin and stdout are terminals: use a PTY
	ctty        bool // a controlling terminal exists (non-interactive signal policy)

	sigs        chan os.Signal
	interrupted atomic.Int32

	mu      sync.Mutex
	handler chan os.Signal // the running launch's signal channel, nil between launches
	saved   *term.State    // the user's terminal state before raw mode
	raw     bool
	held    bool // the last launch's Next said a launch follows: raw kept, input paused

	target   atomic.Pointer[os.File] // where keyboard input goes: the current PTY master
	copying  atomic.Int32            // the output copier holds bytes not yet written
	pumpOnce sync.Once

	input        sync.Mutex // held by the pump while it reads the keyboard
	inputPaused  bool       // the pump must not read (see pauseInput)
	inputResumed *sync.Cond // signalled when inputPaused turns false
}

// handled are the signals pi-session handles while it supervises. The
// job-control stops are left to the kernel's default action (pi-session
// stops with its job) where that is right: SIGTTIN and SIGTTOU under a PTY
// (they mean pi-session touched the terminal from the background), and all
// three without a PTY when the terminal stops pi's and pi-session's shared
// process group itself.
func handled(interactive, ctty bool) []os.Signal {
	sigs := []os.Signal{
		syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
		syscall.SIGCONT, syscall.SIGWINCH, syscall.SIGUSR1, syscall.SIGUSR2,
	}
	switch {
	case interactive:
		sigs = append(sigs, syscall.SIGTSTP)
	case !ctty:
		sigs = append(sigs, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU)
	}
	return sigs
}

// isStopRequest reports whether sig asks pi-session to stop: it is forwarded
// to pi and forbids any later relaunch.
func isStopRequest(sig os.Signal) bool {
	return sig == syscall.SIGTERM || sig == syscall.SIGHUP || sig == syscall.SIGQUIT
}

// New starts handling signals and returns a Supervisor. It decides once
// whether pi runs under a PTY: only when both stdin and stdout are terminals.
func New(opts Options) *Supervisor {
	s := &Supervisor{
		opts:        opts,
		interactive: term.IsTerminal(int(opts.Stdin.Fd())) && term.IsTerminal(int(opts.Stdout.Fd())),
		sigs:        make(chan os.Signal, 32),
	}
	s.inputResumed = sync.NewCond(&s.input)
	if !s.interactive {
		s.ctty = hasControllingTerminal()
	}
	signal.Notify(s.sigs, handled(s.interactive, s.ctty)...)
	go s.signalLoop()
	return s
}

// Interactive reports whether launches run under a PTY.
func (s *Supervisor) Interactive() bool { return s.interactive }

// Interrupted returns the first stop request received so far, or 0.
func (s *Supervisor) Interrupted() syscall.Signal { return syscall.Signal(s.interrupted.Load()) }

func (s *Supervisor) signalLoop() {
	defer s.rescue()
	for sig := range s.sigs {
		if isStopRequest(sig) {
			s.interrupted.CompareAndSwap(0, int32(sig.(syscall.Signal)))
		}
		s.mu.Lock()
		h := s.handler
		s.mu.Unlock()
		if h != nil {
			select {
			case h <- sig:
			default: // the launch is gone or flooded; a later signal will do
			}
		}
	}
}

// Run starts one pi and waits until it ends, forwarding signals and, under a
// PTY, the terminal's bytes and size. The terminal is back in its original
// state when Run returns.
func (s *Supervisor) Run(ctx context.Context, l Launch) (Result, error) {
	h := make(chan os.Signal, 64)
	s.mu.Lock()
	s.handler = h
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.handler = nil
		s.mu.Unlock()
	}()
	// pi (or its session leader) is started with a parent-death signal,
	// which the kernel sends when the thread that forked it ends, not the
	// process: keep this goroutine on its thread until the child is gone,
	// so no other goroutine can lock that thread and end it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var res Result
	var err error
	if s.interactive {
		res, err = s.runPTY(ctx, l, h)
	} else {
		res, err = s.runPlain(ctx, l, h)
	}
	res.Interrupted = s.Interrupted()
	return res, err
}

// Close restores the terminal and stops signal handling. Safe to call twice.
func (s *Supervisor) Close() {
	s.restoreTerminal()
	signal.Stop(s.sigs)
}

// Notice prints one line for the user on stderr, prefixed "pi-session: ",
// its text written out by clip.Visible (a handoff path or a reason from a
// marker file cannot reach the terminal raw).
func (s *Supervisor) Notice(format string, args ...any) {
	line := "pi-session: " + clip.Visible(fmt.Sprintf(format, args...)) + "\n"
	s.mu.Lock()
	raw := s.raw
	s.mu.Unlock()
	if raw {
		line = "\r" + line[:len(line)-1] + "\r\n"
	}
	fmt.Fprint(s.opts.Stderr, line)
}

// rescue restores the terminal if a goroutine panics, then lets it crash.
func (s *Supervisor) rescue() {
	if r := recover(); r != nil {
		s.restoreTerminal()
		panic(r)
	}
}

// makeRaw puts the user's terminal in raw mode, remembering the original
// state the first time.
func (s *Supervisor) makeRaw() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	fd := int(s.opts.Stdin.Fd())
	st, err := term.MakeRaw(fd)
	if err != nil {
		return fmt.Errorf("supervisor: raw mode: %w", err)
	}
	if s.saved == nil {
		s.saved = st
	}
	s.raw = true
	return nil
}

// restoreTerminal puts the user's terminal back as it was before raw mode,
// unless another job holds the terminal now: its state is that job's.
func (s *Supervisor) restoreTerminal() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.saved != nil && s.raw && foreground(s.opts.Stdin) {
		_ = term.Restore(int(s.opts.Stdin.Fd()), s.saved)
	}
	s.raw = false
}

// hasControllingTerminal reports whether this process has a controlling
// terminal, whose keys (Ctrl+C, Ctrl+\, Ctrl+Z) signal the foreground group.
func hasControllingTerminal() bool {
	f, err := os.OpenFile("/dev/tty", os.O_RDONLY|syscall.O_NOCTTY, 0)
	if err != nil {
		return false
	}
	f.Close()
	return true
}

// startError classifies an exec failure into pi-session's exit codes.
func startError(err error) error {
	code := 71
	switch {
	case errors.Is(err, os.ErrNotExist), errors.Is(err, syscall.ENOENT):
		code = 127
	case errors.Is(err, os.ErrPermission), errors.Is(err, syscall.EACCES), errors.Is(err, syscall.ENOEXEC):
		code = 126
	}
	return &StartError{Code: code, Err: err}
}

// spawn starts path with argv, dir, env and the given files as its first
// descriptors. It uses syscall.ForkExec, not os/exec: pi-session reaps its
// children with wait4 itself, and os/exec's first start forks a probe child
// to test pidfd support, which shows in pi-session's start-up time.
func spawn(path string, argv []string, dir string, env []string, files []*os.File, sys *syscall.SysProcAttr) (int, error) {
	fds := make([]uintptr, len(files))
	for i, f := range files {
		fds[i] = f.Fd()
	}
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{Dir: dir, Env: env, Files: fds, Sys: sys})
	if err != nil {
		return 0, startError(&os.PathError{Op: "fork/exec", Path: path, Err: err})
	}
	return pid, nil
}

// waitLoop reaps pid with wait4 and sends every status change; it ends after
// the exit status.
func waitLoop(pid int, options int, out chan<- syscall.WaitStatus, errc chan<- error) {
	for {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(pid, &ws, options, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			errc <- fmt.Errorf("supervisor: wait for %d: %w", pid, err)
			return
		}
		out <- ws
		if ws.Exited() || ws.Signaled() {
			return
		}
	}
}

// resultOf converts a final wait status.
func resultOf(pid int, ws syscall.WaitStatus) Result {
	if ws.Signaled() {
		return Result{PID: pid, Signal: ws.Signal(), CoreDumped: ws.CoreDump()}
	}
	return Result{PID: pid, Code: ws.ExitStatus()}
}
