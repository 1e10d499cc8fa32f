package supervisor

import (
	"context"
	"os"
	"syscall"
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
func (s *Supervisor) runPlain(ctx context.Context, l Launch, sigs <-chan os.Signal) (Result, error) {
	ownGroup := !s.ctty
	pid, err := spawn(l.Path, append([]string{l.Path}, l.Args...), l.Dir, l.Env,
		[]*os.File{s.opts.Stdin, s.opts.Stdout, s.opts.Stderr}, &syscall.SysProcAttr{Setpgid: ownGroup, Pdeathsig: syscall.SIGTERM})
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
			return resultOf(pid, ws), nil
		case err := <-waitErr:
			return Result{PID: pid}, err
		case <-ctx.Done():
			syscall.Kill(pid, syscall.SIGTERM)
			ctx = context.Background()
		}
	}
}
