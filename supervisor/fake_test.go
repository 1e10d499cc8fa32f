package supervisor

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/pi-session/pi-session/marker"
	"golang.org/x/term"
)

// The test binary doubles as the fake pi and as the PTY session leader.
// FAKE_PI names the behaviour; see fakePi.
func TestMain(m *testing.M) {
	if IsLeader(os.Environ()) {
		os.Exit(RunLeader(os.Args[1:], os.Environ()))
	}
	if b := os.Getenv("FAKE_PI"); b != "" {
		os.Exit(fakePi(b))
	}
	if os.Getenv("FAKE_SUPERVISOR") != "" {
		os.Exit(fakeSupervisor())
	}
	os.Exit(m.Run())
}

func fakePi(behaviour string) int {
	out := os.Stdout
	switch behaviour {
	case "exit_0":
		fmt.Fprintln(out, "fake pi ran")
		return 0
	case "exit_7":
		return 7
	case "fail_flag":
		// Like pi given a flag it does not know: a line on each stream.
		fmt.Fprintln(out, "to stdout first")
		fmt.Fprintln(os.Stderr, "Error: Unknown option: --bogus")
		return 1
	case "env":
		for _, k := range strings.Split(os.Getenv("FAKE_ENV_KEYS"), ",") {
			fmt.Fprintf(out, "%s=%s\n", k, os.Getenv(k))
		}
		fmt.Fprintf(out, "ppid=%d\n", os.Getppid())
		return 0
	case "alt_die_KILL":
		// Like pi's alternate-screen mode, killed before it could leave it.
		fmt.Fprint(out, "\x1b[?1049hin the alternate screen")
		signal.Reset(syscall.SIGKILL)
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		time.Sleep(10 * time.Second)
		return 99
	case "die_TERM", "die_KILL":
		sig := syscall.SIGTERM
		if behaviour == "die_KILL" {
			sig = syscall.SIGKILL
		}
		signal.Reset(sig)
		syscall.Kill(os.Getpid(), sig)
		time.Sleep(10 * time.Second)
		return 99
	case "hang_until_signal":
		// Like pi's TUI: catch TERM/HUP/INT, say which arrived, exit 0 on TERM/HUP.
		sigs := make(chan os.Signal, 4)
		signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGUSR1)
		fmt.Fprintln(out, "ready")
		for s := range sigs {
			fmt.Fprintf(out, "got %v\n", s)
			if s == syscall.SIGTERM || s == syscall.SIGHUP {
				return 0
			}
		}
	case "size":
		// Report the terminal size at start and after each SIGWINCH.
		sigs := make(chan os.Signal, 4)
		signal.Notify(sigs, syscall.SIGWINCH, syscall.SIGTERM)
		report := func() {
			r, c, err := pty.Getsize(os.Stdin)
			fmt.Fprintf(out, "size %d %d %v\n", r, c, err)
		}
		report()
		for s := range sigs {
			if s == syscall.SIGTERM {
				return 0
			}
			report()
		}
	case "echo":
		// Read lines from the terminal and echo them, until "quit".
		fmt.Fprintln(out, "ready")
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			fmt.Fprintf(out, "echo:%s\n", sc.Text())
			if sc.Text() == "quit" {
				return 0
			}
		}
		return 3
	case "leave_child":
		// Leave a descendant that keeps the terminal open after pi exits.
		exe, _ := os.Executable()
		c := exec.Command(exe)
		c.Env = append(os.Environ(), "FAKE_PI=linger")
		c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
		if err := c.Start(); err != nil {
			fmt.Fprintln(out, err)
			return 4
		}
		fmt.Fprintf(out, "child %d\n", c.Process.Pid)
		return 0
	case "linger":
		signal.Ignore(syscall.SIGHUP)
		time.Sleep(30 * time.Second)
		return 0
	case "tui":
		return fakeTUI()
	case "sleeper":
		// A process pi started in its group (a tool's command): it lives
		// until killed. Like a program that tidies up before it stops
		// (vim, less), it takes a moment between SIGTSTP and its stop, so
		// the job-control tests see whether the leader waits for the whole
		// group to stop.
		signal.Ignore(syscall.SIGHUP)
		tstp := make(chan os.Signal, 1)
		signal.Notify(tstp, syscall.SIGTSTP)
		go func() {
			for range tstp {
				time.Sleep(30 * time.Millisecond)
				syscall.Kill(os.Getpid(), syscall.SIGSTOP)
			}
		}()
		time.Sleep(10 * time.Minute)
		return 0
	case "burn":
		// Load for job-control tests: one core busy until killed.
		for x := 0; ; x++ {
			if x == -1 {
				return 0
			}
		}
	case "assignment":
		// What an extension written for the seed's wrapper checks before it
		// writes its relaunch marker.
		a, err := marker.AssignmentFromEnv(os.Getenv, os.Getppid())
		fmt.Fprintf(out, "ppid=%d wrapper=%s base=%s\n", os.Getppid(), os.Getenv(marker.EnvWrapperPID), filepath.Base(os.Getenv(marker.EnvMarker)))
		if err != nil {
			fmt.Fprintf(out, "assignment refused: %v\n", err)
			return 1
		}
		fmt.Fprintf(out, "assignment ok %s\n", a.Path)
		return 0
	case "stubborn", "stubborn_stop":
		// Say its pid, ignore hangups and stop requests, and wait; with
		// _stop, first stop like pi's Ctrl+Z.
		signal.Ignore(syscall.SIGHUP, syscall.SIGTERM, syscall.SIGINT)
		tellPID()
		if behaviour == "stubborn_stop" {
			syscall.Kill(0, syscall.SIGTSTP)
		}
		time.Sleep(60 * time.Second)
		return 0
	case "polite":
		// Say its pid and end on a hangup or SIGTERM, as pi does.
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGHUP, syscall.SIGTERM)
		tellPID()
		select {
		case <-sigs:
			return 129
		case <-time.After(60 * time.Second):
			return 0
		}
	case "pgrp":
		fmt.Fprintf(out, "pgrp=%d pid=%d sid=%d\n", syscall.Getpgrp(), os.Getpid(), mustSid())
		return 0
	}
	fmt.Fprintf(os.Stderr, "fake pi: unknown behaviour %q\n", behaviour)
	return 2
}

// tellPID writes the fake pi's pid to FAKE_PID_FILE, atomically.
func tellPID() {
	path := os.Getenv("FAKE_PID_FILE")
	os.WriteFile(path+".tmp", []byte(strconv.Itoa(os.Getpid())), 0o600)
	os.Rename(path+".tmp", path)
}

func mustSid() int {
	sid, _, _ := syscall.RawSyscall(syscall.SYS_GETSID, 0, 0, 0)
	return int(sid)
}

// fakeSupervisor runs one supervised launch of the fake pi named by
// FAKE_SUPERVISOR on its own stdin/stdout, as pi-session would, and exits
// with pi's status. Tests start it as a separate process when they need a
// process of its own (job control).
func fakeSupervisor() int {
	exe, _ := os.Executable()
	s := New(Options{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		Leader: &LeaderSpec{Path: exe, Args: []string{exe}}})
	defer s.Close()
	env := append(os.Environ(), "FAKE_PI="+os.Getenv("FAKE_SUPERVISOR"), "FAKE_SUPERVISOR=")
	res, err := s.Run(context.Background(), Launch{Path: exe, Env: env})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 70
	}
	return res.Status()
}

// fakeTUI behaves like pi's TUI for job control: the terminal in raw mode;
// Ctrl+Z restores it, registers a one-off SIGCONT handler and stops pi's
// process group (pi's handleCtrlZ); on SIGCONT it takes the terminal again
// and redraws the whole screen; "q" quits. A child in pi's process group
// stands for the commands pi's tools start.
func fakeTUI() int {
	out := os.Stdout
	exe, _ := os.Executable()
	child := exec.Command(exe)
	child.Env = append(os.Environ(), "FAKE_PI=sleeper")
	if err := child.Start(); err != nil {
		fmt.Fprintln(out, err)
		return 4
	}
	defer child.Process.Kill()
	st, err := term.MakeRaw(0)
	if err != nil {
		fmt.Fprintln(out, err)
		return 4
	}
	fmt.Fprintf(out, "tui ready pid=%d child=%d\r\n", os.Getpid(), child.Process.Pid)
	buf := make([]byte, 1)
	for n := 1; ; {
		if _, err := os.Stdin.Read(buf); err != nil {
			return 3
		}
		switch buf[0] {
		case 0x1a:
			term.Restore(0, st)
			cont := make(chan os.Signal, 1)
			signal.Notify(cont, syscall.SIGCONT)
			fmt.Fprintf(out, "suspending %d\n", n)
			syscall.Kill(0, syscall.SIGTSTP)
			<-cont
			signal.Stop(cont)
			st, _ = term.MakeRaw(0)
			fmt.Fprintf(out, "\x1b[2J\x1b[Hredraw %d\r\n", n)
			n++
		case 'q':
			term.Restore(0, st)
			return 0
		}
	}
}
