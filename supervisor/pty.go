package supervisor

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// drainGrace is how long output keeps flowing to the terminal after pi
// exits, for descendants that still hold the PTY open.
const drainGrace = 200 * time.Millisecond

// runPTY runs one launch under a fresh PTY: pi (or its session leader) is
// the session leader of the PTY, the user's terminal is raw while it runs,
// and bytes, window size and signals are relayed.
func (s *Supervisor) runPTY(ctx context.Context, l Launch, sigs <-chan os.Signal) (Result, error) {
	ptmx, tty, err := openPTY()
	if err != nil {
		return Result{}, &StartError{Code: 71, Err: fmt.Errorf("open a pty: %w", err)}
	}
	defer ptmx.Close()
	_ = copySize(s.opts.Stdin, ptmx) // a terminal without a size keeps the default

	if err := s.makeRaw(); err != nil {
		tty.Close()
		return Result{}, &StartError{Code: 71, Err: err}
	}
	defer s.restoreTerminal()
	leader, report, err := s.startLeader(l, tty)
	tty.Close()
	if err != nil {
		return Result{}, err
	}
	piPID := leader
	if report != nil {
		piPID, err = readLeaderReport(report)
		if err != nil {
			// The leader failed to start pi and exits with the code it reported.
			var ws syscall.WaitStatus
			syscall.Wait4(leader, &ws, 0, nil)
			return Result{}, err
		}
	}
	if l.Started != nil {
		l.Started(piPID, leader)
	}

	s.target.Store(ptmx)
	defer s.target.Store(nil)
	s.pumpOnce.Do(func() { go s.pump() })
	out, err := s.startOutput(ptmx)
	if err != nil {
		syscall.Kill(-piPID, syscall.SIGHUP)
		return Result{PID: piPID}, &StartError{Code: 71, Err: err}
	}

	statuses := make(chan syscall.WaitStatus, 4)
	waitErr := make(chan error, 1)
	go waitLoop(leader, syscall.WUNTRACED|syscall.WCONTINUED, statuses, waitErr)

	for {
		select {
		case sig := <-sigs:
			s.relayPTY(sig.(syscall.Signal), ptmx, leader, piPID)
		case ws := <-statuses:
			if ws.Stopped() {
				s.suspend(ptmx, leader, piPID)
				continue
			}
			if ws.Continued() {
				continue
			}
			out.drain()
			return resultOf(piPID, ws), nil
		case err := <-waitErr:
			out.drain()
			return Result{PID: piPID}, err
		case <-ctx.Done():
			syscall.Kill(-piPID, syscall.SIGTERM)
			ctx = context.Background() // forward once, then wait for the exit
		}
	}
}

// openPTY opens a PTY pair whose master is in non-blocking mode and
// registered with Go's poller, so reads honour deadlines and Close
// interrupts them. (pty.Open leaves the master blocking: it calls Fd.)
func openPTY() (ptmx, tty *os.File, err error) {
	m, tty, err := pty.Open()
	if err != nil {
		return nil, nil, err
	}
	fd, err := unix.FcntlInt(m.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	m.Close()
	if err == nil {
		err = unix.SetNonblock(fd, true)
	}
	if err != nil {
		tty.Close()
		return nil, nil, err
	}
	return os.NewFile(uintptr(fd), "/dev/ptmx"), tty, nil
}

// startLeader starts the process that leads the PTY session: the leader,
// which starts pi in its own foreground process group and reports pi's pid
// on the returned pipe, or pi itself when no leader is configured.
func (s *Supervisor) startLeader(l Launch, tty *os.File) (pid int, report *os.File, err error) {
	path, argv, env := l.Path, append([]string{l.Path}, l.Args...), l.Env
	files := []*os.File{tty, tty, tty}
	if s.opts.Leader != nil {
		r, w, err := os.Pipe()
		if err != nil {
			return 0, nil, &StartError{Code: 71, Err: err}
		}
		defer w.Close()
		path = s.opts.Leader.Path
		argv = append(append([]string{}, s.opts.Leader.Args...), argv...)
		env = append(append([]string{}, env...), leaderEnv+"=1")
		files = append(files, w)
		report = r
	}
	// If pi-session dies, its child hears of it: the leader gets SIGCONT,
	// which also wakes it when pi and it are stopped (Ctrl+Z), and hangs pi
	// up (see RunLeader); pi without a leader is killed.
	death := syscall.SIGKILL
	if s.opts.Leader != nil {
		death = syscall.SIGCONT
	}
	pid, err = spawn(path, argv, l.Dir, env, files, &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0, Pdeathsig: death})
	if err != nil {
		if report != nil {
			report.Close()
		}
		return 0, nil, err
	}
	return pid, report, nil
}

// readLeaderReport reads the leader's one line: "pid N" once pi runs, or
// "err CODE message" when pi could not start.
func readLeaderReport(r *os.File) (int, error) {
	defer r.Close()
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		return 0, &StartError{Code: 71, Err: fmt.Errorf("the pty session leader ended before starting pi")}
	}
	line = strings.TrimSpace(line)
	if rest, ok := strings.CutPrefix(line, "pid "); ok {
		pid, err := strconv.Atoi(rest)
		if err == nil && pid > 0 {
			return pid, nil
		}
	}
	if rest, ok := strings.CutPrefix(line, "err "); ok {
		codeStr, msg, _ := strings.Cut(rest, " ")
		code, err := strconv.Atoi(codeStr)
		if err != nil {
			code = 71
		}
		return 0, &StartError{Code: code, Err: errors.New(msg)}
	}
	return 0, &StartError{Code: 71, Err: fmt.Errorf("the pty session leader said %q", line)}
}

// relayPTY handles one signal received while pi runs under the PTY.
func (s *Supervisor) relayPTY(sig syscall.Signal, ptmx *os.File, leader, piPID int) {
	switch sig {
	case syscall.SIGWINCH:
		_ = copySize(s.opts.Stdin, ptmx) // the kernel signals pi's foreground group
	case syscall.SIGCONT:
		s.resume(ptmx, leader, piPID)
	default:
		// INT, TERM, HUP, QUIT, USR1, USR2 and the job-control stops go to
		// pi's process group; a stop of pi comes back as a stop of the leader.
		syscall.Kill(-piPID, sig)
	}
}

// suspend follows pi into the background: pi stopped (Ctrl+Z or a stop
// signal), so pi-session restores the terminal and stops too, the way the
// shell expects of a job. The SIGCONT that ends the stop arrives as a signal
// and resumes pi (relayPTY); kill returns before the stop is certain to have
// happened, so nothing else may follow it here. When nothing could continue
// pi-session (its process group is orphaned, e.g. it is a tmux pane's
// command), it resumes pi at once instead of hanging.
func (s *Supervisor) suspend(ptmx *os.File, leader, piPID int) {
	if !canStop() {
		s.resume(ptmx, leader, piPID)
		return
	}
	s.flushOutput(ptmx)
	s.restoreTerminal()
	syscall.Kill(os.Getpid(), syscall.SIGSTOP)
}

// flushOutput waits until what pi wrote before it stopped (its terminal
// restore sequences) has reached the user's terminal: nothing readable in
// the PTY and nothing in the copier's hands for quietFor in a row, since the
// kernel moves written bytes to the master side asynchronously. It gives up
// after drainGrace.
func (s *Supervisor) flushOutput(ptmx *os.File) {
	const quietFor = 10 * time.Millisecond
	deadline := time.Now().Add(drainGrace)
	quietSince := time.Now()
	for now := time.Now(); now.Before(deadline); now = time.Now() {
		var n int
		err := control(ptmx, func(fd int) (err error) {
			n, err = unix.IoctlGetInt(fd, unix.TIOCINQ)
			return err
		})
		if err != nil {
			return
		}
		if n > 0 || s.copying.Load() != 0 {
			quietSince = now
		} else if now.Sub(quietSince) >= quietFor {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// control runs fn on f's descriptor without f.Fd(), which would switch a
// pollable file (the PTY master) to blocking mode and disable its deadlines.
func control(f *os.File, fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// copySize copies the window size of terminal from to terminal to.
func copySize(from, to *os.File) error {
	var ws *unix.Winsize
	err := control(from, func(fd int) (err error) {
		ws, err = unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ)
		return err
	})
	if err != nil {
		return err
	}
	return control(to, func(fd int) error { return unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, ws) })
}

// resume puts the terminal back in raw mode, copies its size, and continues
// the leader and pi.
func (s *Supervisor) resume(ptmx *os.File, leader, piPID int) {
	_ = s.makeRaw()
	_ = copySize(s.opts.Stdin, ptmx)
	syscall.Kill(leader, syscall.SIGCONT)
	syscall.Kill(-piPID, syscall.SIGCONT)
}

// canStop reports whether stopping this process hands control back to a job
// control shell: the parent is in the same session but another process group.
func canStop() bool {
	self, err1 := procStat(os.Getpid())
	parent, err2 := procStat(os.Getppid())
	if err1 != nil || err2 != nil {
		return false
	}
	return parent.session == self.session && parent.pgrp != self.pgrp
}

type statFields struct{ pgrp, session int }

// procStat reads the process group and session from /proc/<pid>/stat.
func procStat(pid int) (statFields, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return statFields{}, err
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return statFields{}, fmt.Errorf("supervisor: malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:])) // state ppid pgrp session ...
	if len(f) < 4 {
		return statFields{}, fmt.Errorf("supervisor: short /proc/%d/stat", pid)
	}
	pgrp, err1 := strconv.Atoi(f[2])
	sess, err2 := strconv.Atoi(f[3])
	if err1 != nil || err2 != nil {
		return statFields{}, fmt.Errorf("supervisor: malformed /proc/%d/stat", pid)
	}
	return statFields{pgrp: pgrp, session: sess}, nil
}

// pump copies the user's keyboard to the current PTY for the life of the
// process; input arriving between launches is dropped.
func (s *Supervisor) pump() {
	defer s.rescue()
	buf := make([]byte, 32<<10)
	for {
		n, err := s.opts.Stdin.Read(buf)
		if n > 0 {
			if t := s.target.Load(); t != nil {
				t.Write(buf[:n])
			}
		}
		if err != nil {
			return
		}
	}
}

// output copies pi's output from the PTY master to the user's terminal
// with poll(2) and read(2) on the raw descriptor, as script(1) does; Go's
// poller would add a park and a wakeup for every 4 KiB the terminal layer
// hands out. A pipe interrupts the poll when the copy must be cut off.
type output struct {
	s            *Supervisor
	ptmx         *os.File
	wakeR, wakeW *os.File
	done         chan struct{}
}

// startOutput starts copying ptmx to the user's terminal until the PTY
// reports end of output or the copy is cut off by drain.
func (s *Supervisor) startOutput(ptmx *os.File) (*output, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	o := &output{s: s, ptmx: ptmx, wakeR: r, wakeW: w, done: make(chan struct{})}
	go o.copy()
	return o, nil
}

func (o *output) copy() {
	defer close(o.done)
	defer o.s.rescue()
	var fd, wake int
	_ = control(o.ptmx, func(f int) error { fd = f; return nil })
	_ = control(o.wakeR, func(f int) error { wake = f; return nil })
	buf := make([]byte, 64<<10)
	var werr error
	for {
		n, err := unix.Read(fd, buf)
		if n > 0 && werr == nil {
			o.s.copying.Add(1)
			_, werr = o.s.opts.Stdout.Write(buf[:n])
			o.s.copying.Add(-1)
		}
		switch {
		case err == unix.EINTR:
		case err == unix.EAGAIN:
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(wake), Events: unix.POLLIN}}
			if _, err := unix.Poll(fds, -1); err != nil && err != unix.EINTR {
				return
			}
			if fds[1].Revents != 0 {
				return
			}
		case err != nil, n == 0:
			return // EIO: every holder of the PTY's other end has closed it
		}
	}
}

// drain lets the last output reach the terminal: it waits for the PTY to
// report end of output (all holders of its other end closed), or at most
// drainGrace, then cuts the copy off.
func (o *output) drain() {
	select {
	case <-o.done:
	case <-time.After(drainGrace):
		o.wakeW.Write([]byte{0})
		<-o.done
	}
	o.wakeR.Close()
	o.wakeW.Close()
}
