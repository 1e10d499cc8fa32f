package supervisor

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// leaderEnv marks a pi-session process started as a PTY session leader.
const leaderEnv = "_PI_SESSION_LEADER"

// IsLeader reports whether an environment marks this process as a PTY
// session leader started by a Supervisor.
func IsLeader(env []string) bool {
	for _, kv := range env {
		if kv == leaderEnv+"=1" {
			return true
		}
	}
	return false
}

// RunLeader is the PTY session leader: pi-session starts its own executable
// in this mode as the first process on a new PTY. It starts pi (args[0] with
// args[1:]) in a new foreground process group, so pi's process group has a
// parent in the same session and the kernel honours pi's own Ctrl+Z. It
// reports pi's pid on fd 3, stops itself whenever pi stops (so the
// supervisor sees the stop), and exits the way pi exits. The variable PI_SESSION_WRAPPER_PID, when set, becomes the
// leader's pid: the leader is pi's parent.
func RunLeader(args, env []string) int {
	report := os.NewFile(3, "leader-report")
	if len(args) == 0 {
		fmt.Fprintf(report, "err 64 no program to run\n")
		return 64
	}
	// Catch (not ignore) the signals the terminal or the supervisor may send
	// the leader: caught signals are reset to their defaults in pi.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
		syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU, syscall.SIGWINCH)
	go func() {
		for range sigs {
		}
	}()
	pid, err := spawn(args[0], args, "", leaderChildEnv(env, os.Getpid()),
		[]*os.File{os.Stdin, os.Stdout, os.Stderr}, &syscall.SysProcAttr{Setpgid: true, Foreground: true, Ctty: 0})
	if err != nil {
		se := err.(*StartError)
		fmt.Fprintf(report, "err %d %s\n", se.Code, strings.ReplaceAll(se.Err.Error(), "\n", " "))
		return se.Code
	}
	fmt.Fprintf(report, "pid %d\n", pid)
	report.Close()
	for {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(pid, &ws, syscall.WUNTRACED|syscall.WCONTINUED, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return 71
		}
		switch {
		case ws.Stopped():
			// Report pi's stop the only way wait4 shows it to the
			// supervisor: stop too. Nothing else may follow here: kill
			// may return before the stop takes hold, and pi stays stopped
			// until the supervisor has stopped its whole job and been
			// continued; the supervisor continues pi and the leader.
			syscall.Kill(os.Getpid(), syscall.SIGSTOP)
		case ws.Exited():
			return ws.ExitStatus()
		case ws.Signaled():
			return reraise(ws.Signal())
		}
	}
}

// leaderChildEnv drops the leader marker and makes the leader pi's wrapper pid.
func leaderChildEnv(env []string, self int) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		switch {
		case strings.HasPrefix(kv, leaderEnv+"="):
		case strings.HasPrefix(kv, "PI_SESSION_WRAPPER_PID="):
			out = append(out, "PI_SESSION_WRAPPER_PID="+strconv.Itoa(self))
		default:
			out = append(out, kv)
		}
	}
	return out
}

// reraise dies of sig, so the supervisor sees the same death as pi's. Core
// dumps are switched off first: pi's dump, if any, is the one that matters.
func reraise(sig syscall.Signal) int {
	_ = unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{})
	signal.Reset(sig)
	syscall.Kill(os.Getpid(), sig)
	time.Sleep(time.Second)
	return 128 + int(sig)
}
