package supervisor

import (
	"context"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// runPlain runs one launch with the inherited stdin, stdout and stderr and no
// PTY, so pi's output streams stay byte for byte what pi writes.
//
// Signals: with a controlling terminal, pi shares pi-session's process group
// so it can read the terminal and gets Ctrl+C, Ctrl+\ and Ctrl+Z from the
// kernel directly; pi-session forwards only what a terminal never sends
// (SIGTERM, SIGHUP, SIGUSR1, SIGUSR2), so nothing arrives twice. Without one
// (CI, services), pi gets its own process group and every signal is forwarded
// to that group.
//
// pi must not outlive pi-session: if pi-session dies (kill -9, a crash),
// the kernel sends pi SIGTERM (its parent-death signal), on which pi stops
// the processes its tools started, ends its session and exits, so nothing
// writes on after the caller saw pi-session's exit status. (SIGKILL would
// be surer against a pi that ignores SIGTERM, which pi 1.6 does not, but
// would leave pi's tool processes running on their own.)
//
// pi's stderr goes through pi-session, which keeps its start (Result.Early)
// and passes every byte on, when that changes nothing pi or the reader
// can see: only when stderr is not a terminal (pi would see a pipe) and
// not the file stdout is (the order of the two streams would change).
func (s *Supervisor) runPlain(ctx context.Context, l Launch, sigs <-chan os.Signal) (Result, error) {
	ownGroup := !s.ctty
	files := []*os.File{s.opts.Stdin, s.opts.Stdout, s.opts.Stderr}
	var tee *stderrTee
	if passable(s.opts.Stdout, s.opts.Stderr) {
		if r, w, err := os.Pipe(); err == nil {
			files[2] = w
			tee = startTee(r, s.opts.Stderr)
		}
	}
	pid, err := spawn(l.Path, append([]string{l.Path}, l.Args...), l.Dir, l.Env,
		files, &syscall.SysProcAttr{Setpgid: ownGroup, Pdeathsig: syscall.SIGTERM})
	if tee != nil {
		files[2].Close() // pi holds its own copy
	}
	if err != nil {
		return Result{}, err
	}
	if l.Started != nil {
		l.Started(pid, os.Getpid())
	}
	statuses := make(chan syscall.WaitStatus, 4)
	waitErr := make(chan error, 1)
	go waitLoop(pid, 0, statuses, waitErr)
	for {
		select {
		case sig := <-sigs:
			sn := sig.(syscall.Signal)
			switch {
			case ownGroup && sn != syscall.SIGWINCH:
				syscall.Kill(-pid, sn)
			case sn == syscall.SIGTERM || sn == syscall.SIGHUP || sn == syscall.SIGUSR1 || sn == syscall.SIGUSR2:
				syscall.Kill(pid, sn)
			}
		case ws := <-statuses:
			res := resultOf(pid, ws)
			if tee != nil {
				res.Early = tee.early(drainGrace)
			}
			return res, nil
		case err := <-waitErr:
			return Result{PID: pid}, err
		case <-ctx.Done():
			syscall.Kill(pid, syscall.SIGTERM)
			ctx = context.Background()
		}
	}
}

// passable reports whether pi's stderr can go through pi-session unseen:
// it is not a terminal and not the file stdout is.
func passable(stdout, stderr *os.File) bool {
	if term.IsTerminal(int(stderr.Fd())) {
		return false
	}
	var o, e unix.Stat_t
	if unix.Fstat(int(stdout.Fd()), &o) != nil || unix.Fstat(int(stderr.Fd()), &e) != nil {
		return false
	}
	return o.Dev != e.Dev || o.Ino != e.Ino
}

// stderrTee copies pi's stderr from a pipe to pi-session's, keeping the
// first EarlyBytes. It copies until every writer has closed the pipe (pi,
// and descendants that outlive it), for as long as pi-session runs.
type stderrTee struct {
	mu    sync.Mutex
	start []byte
	done  chan struct{}
}

func startTee(r *os.File, w *os.File) *stderrTee {
	t := &stderrTee{done: make(chan struct{})}
	go func() {
		defer close(t.done)
		defer r.Close()
		buf := make([]byte, 32<<10)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				t.mu.Lock()
				if len(t.start) < EarlyBytes {
					t.start = append(t.start, buf[:min(n, EarlyBytes-len(t.start))]...)
				}
				t.mu.Unlock()
				w.Write(buf[:n])
			}
			if err != nil {
				return
			}
		}
	}()
	return t
}

// early returns the start of pi's stderr once the pipe is closed, or
// after grace when a descendant still holds it open.
func (t *stderrTee) early(grace time.Duration) []byte {
	select {
	case <-t.done:
	case <-time.After(grace):
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]byte(nil), t.start...)
}
