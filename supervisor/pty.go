package supervisor

import (
	"bufio"
	"bytes"
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

	s.awaitForeground() // started in the background ("pi &"): stop until "fg"
	if err := s.makeRaw(); err != nil {
		tty.Close()
		s.release()
		return Result{}, &StartError{Code: 71, Err: err}
	}
	hold := false
	defer func() {
		if !hold {
			s.release()
			s.restoreTerminal()
		}
	}()
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
	s.release() // keys typed since the last launch ended go to this pi
	s.pumpOnce.Do(func() {
		// The descriptor is taken here, not in the goroutine: the pump
		// outlives Run, and its *os.File may be closed by then (tests).
		fd := int(s.opts.Stdin.Fd())
		go s.pump(fd)
	})
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
			s.relayPTY(sig.(syscall.Signal), ptmx, piPID)
		case ws := <-statuses:
			if ws.Stopped() {
				s.suspend(ptmx)
				s.resume(ptmx, leader, piPID)
				continue
			}
			if ws.Continued() {
				continue
			}
			out.drain()
			if ws.Signaled() {
				s.resetModes(out.altScreen)
			}
			res := resultOf(piPID, ws)
			res.Early = out.early
			if l.Next != nil && l.Next(res) {
				hold = true
				s.holdInput()
			}
			return res, nil
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
func (s *Supervisor) relayPTY(sig syscall.Signal, ptmx *os.File, piPID int) {
	switch sig {
	case syscall.SIGWINCH:
		_ = copySize(s.opts.Stdin, ptmx) // the kernel signals pi's foreground group
	case syscall.SIGCONT:
		// pi-session was continued without having stopped for pi (the
		// continue that ends a suspend is handled there): it may have been
		// stopped behind its back (SIGSTOP), with the terminal changed
		// meanwhile. Take the terminal back; pi, if it is stopped, is
		// continued only by resume, after the job has stopped as a whole.
		if foreground(s.opts.Stdin) {
			_ = s.makeRaw()
		}
		_ = copySize(s.opts.Stdin, ptmx)
	default:
		// INT, TERM, HUP, QUIT, USR1, USR2 and SIGTSTP go to pi's process
		// group; a stop of pi comes back as a stop of the leader.
		syscall.Kill(-piPID, sig)
	}
}

// suspend follows pi into the background, as a job does for a shell: pi
// stopped (Ctrl+Z or a stop signal) and nothing continues it until
// pi-session's whole job has stopped and been continued. pi-session
// restores the terminal, stops its process group (a wrapper such as make
// included) and itself, and returns once continued in the foreground. When
// nothing could continue pi-session (its process group is orphaned, e.g. it
// is a tmux pane's command), the kernel discards the stop and suspend
// returns at once, so pi resumes instead of hanging.
func (s *Supervisor) suspend(ptmx *os.File) {
	s.pauseInput()
	defer s.resumeInput()
	s.flushOutput(ptmx)
	s.restoreTerminal()
	stopJob(syscall.SIGTSTP)
	s.awaitForeground()
}

// awaitForeground stops pi-session's job until the shell puts it in the
// foreground of the terminal (after "bg", or when started with "&"), as
// any program that needs the terminal is stopped by SIGTTOU. It gives up
// when the group is orphaned, since no shell would ever do that.
func (s *Supervisor) awaitForeground() {
	for tries := 0; !foreground(s.opts.Stdin); tries++ {
		if tries > 0 && orphanedGroup() {
			return
		}
		stopJob(syscall.SIGTTOU)
	}
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
// the leader and pi's process group. pi redraws its screen on SIGCONT; a
// SIGWINCH after it makes programs that redraw only on a size change (an
// editor pi started, say) repaint as well.
func (s *Supervisor) resume(ptmx *os.File, leader, piPID int) {
	if foreground(s.opts.Stdin) {
		_ = s.makeRaw()
	}
	_ = copySize(s.opts.Stdin, ptmx)
	syscall.Kill(leader, syscall.SIGCONT)
	syscall.Kill(-piPID, syscall.SIGCONT)
	syscall.Kill(-piPID, syscall.SIGWINCH)
}

// pump copies the user's keyboard to the current PTY for the life of the
// process; between a launch and the one that follows at once
// (Launch.Next) it is held (holdInput), and input arriving between other
// launches is dropped. It reads only what
// the terminal has queued (poll, TIOCINQ, read), so that it never waits
// inside read: a paused pump (see pauseInput) takes nothing from the
// terminal, which then belongs to the shell.
func (s *Supervisor) pump(fd int) {
	defer s.rescue()
	buf := make([]byte, 32<<10)
	for {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, -1); err != nil && err != unix.EINTR {
			return
		}
		s.input.Lock()
		for s.inputPaused {
			s.inputResumed.Wait()
		}
		n, err := unix.IoctlGetInt(fd, unix.TIOCINQ)
		if err == nil && n == 0 && fds[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) == 0 {
			s.input.Unlock() // taken by someone else, or nothing yet
			continue
		}
		n, err = unix.Read(fd, buf[:max(1, min(n, len(buf)))])
		s.input.Unlock()
		if n > 0 {
			if t := s.target.Load(); t != nil {
				t.Write(buf[:n])
			}
		}
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		if err != nil || n == 0 {
			return
		}
	}
}

// pauseInput stops the pump from reading the keyboard, and returns once no
// read is in progress. While pi-session's job is stopping, the shell may
// already own the terminal (it reports a job stopped as soon as one of its
// processes, make say, has stopped); the keys typed then are the shell's.
func (s *Supervisor) pauseInput() {
	s.input.Lock()
	s.inputPaused = true
	s.input.Unlock()
}

// holdInput keeps the keyboard's bytes in the terminal for the launch
// that follows (see Launch.Next): the pump takes nothing until release.
func (s *Supervisor) holdInput() {
	s.pauseInput()
	s.mu.Lock()
	s.held = true
	s.mu.Unlock()
}

// release ends a hold: the pump reads the keyboard again.
func (s *Supervisor) release() {
	s.mu.Lock()
	held := s.held
	s.held = false
	s.mu.Unlock()
	if held {
		s.resumeInput()
	}
}

// resumeInput lets the pump read the keyboard again.
func (s *Supervisor) resumeInput() {
	s.input.Lock()
	s.inputPaused = false
	s.inputResumed.Broadcast()
	s.input.Unlock()
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
	altScreen    altScreen // read after done
	early        []byte    // the first EarlyBytes of the output; read after done
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
			o.altScreen.scan(buf[:n])
			if len(o.early) < EarlyBytes {
				o.early = append(o.early, buf[:min(n, EarlyBytes-len(o.early))]...)
			}
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

// altScreen follows pi's switches to and from the terminal's alternate
// screen ("\x1b[?1049h" and "l"), also when a read splits the sequence.
type altScreen struct {
	on   bool
	tail []byte // the last bytes seen, shorter than the sequence
}

const altScreenSeq = "\x1b[?1049"

func (a *altScreen) scan(b []byte) {
	if len(a.tail) > 0 {
		a.find(append(a.tail, b[:min(len(b), len(altScreenSeq))]...))
	}
	a.find(b)
	if len(b) >= len(altScreenSeq) {
		a.tail = append(a.tail[:0], b[len(b)-len(altScreenSeq):]...)
	} else {
		a.tail = append(a.tail, b...)
		a.tail = a.tail[max(0, len(a.tail)-len(altScreenSeq)):]
	}
}

// find sets on from each complete sequence in b, in order.
func (a *altScreen) find(b []byte) {
	for {
		i := bytes.Index(b, []byte(altScreenSeq))
		if i < 0 || i+len(altScreenSeq) >= len(b) {
			return
		}
		b = b[i+len(altScreenSeq):]
		switch b[0] {
		case 'h':
			a.on = true
		case 'l':
			a.on = false
		}
	}
}

// modeReset turns off the terminal modes pi switches on (synchronized
// output, mouse reports, bracketed paste, the kitty keyboard protocol,
// modifyOtherKeys, colour-scheme reports) and shows the cursor with autowrap
// on, as pi itself does on every exit it lives through.
const modeReset = "\x1b[?2026l\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?2004l" +
	"\x1b[<u\x1b[>4;0m\x1b[?2031l\x1b[?7h\x1b[?25h"

// resetModes restores the terminal after pi died by a signal and could not
// do it itself: its modes off, the alternate screen left, and the cursor
// on a fresh line below pi's last screen, so what follows (pi-session's
// line, the shell's prompt) does not land inside it.
func (s *Supervisor) resetModes(a altScreen) {
	seq := modeReset
	if a.on {
		seq += "\x1b[?1049l\r\n" // back where pi started
	} else {
		seq += "\x1b[999B\r\n" // below pi's screen, which ends at the bottom at most
	}
	s.opts.Stdout.WriteString(seq)
}
