package supervisor

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pi-session/pi-session/marker"
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
// supervisor sees the stop), and exits the way pi exits. The variable
// PI_SESSION_WRAPPER_PID, when set, becomes the leader's pid, the leader
// being pi's parent, and PI_RELAUNCH_MARKER is named after it. If the
// supervisor dies, the leader hangs pi up (hangUp).
func RunLeader(args, env []string) int {
	report := os.NewFile(3, "leader-report")
	if len(args) == 0 {
		fmt.Fprintf(report, "err 64 no program to run\n")
		return 64
	}
	// pi gets a parent-death signal: keep the forking thread (see Run).
	runtime.LockOSThread()
	supervisor := os.Getppid()
	// Catch (not ignore) the signals the terminal or the supervisor may send
	// the leader: caught signals are reset to their defaults in pi.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
		syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU, syscall.SIGWINCH, syscall.SIGCONT)
	piPID := make(chan int, 1)
	go func() {
		pid, hungUp := 0, false
		for {
			select {
			case pid = <-piPID:
			case <-sigs:
			}
			// The supervisor's death arrives as SIGCONT (its parent-death
			// signal for the leader) and as the hangup of the PTY.
			if pid > 0 && !hungUp && os.Getppid() != supervisor {
				hungUp = true
				go hangUp(pid)
			}
		}
	}()
	pid, err := spawn(args[0], args, "", leaderChildEnv(env, os.Getpid()),
		[]*os.File{os.Stdin, os.Stdout, os.Stderr}, &syscall.SysProcAttr{Setpgid: true, Foreground: true, Ctty: 0, Pdeathsig: syscall.SIGKILL})
	if err != nil {
		se := err.(*StartError)
		fmt.Fprintf(report, "err %d %s\n", se.Code, strings.ReplaceAll(se.Err.Error(), "\n", " "))
		return se.Code
	}
	fmt.Fprintf(report, "pid %d\n", pid)
	report.Close()
	piPID <- pid
	sigs <- syscall.SIGCONT // look once: the supervisor may have died already
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
			// pi has stopped; the rest of its group (its tools' children,
			// say) got the same signal and stops as each is scheduled.
			// Wait for them, so that when the user's shell says Stopped
			// the whole group is.
			waitGroupStopped(pid, groupStopLimit)
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

// groupStopLimit bounds the wait for pi's whole group to stop: a member
// that ignores the stop (it handles SIGTSTP and goes on) must not hold
// the job control of the rest.
const groupStopLimit = 500 * time.Millisecond

// waitGroupStopped waits until every process of process group pgrp is
// stopped, exited or gone, for at most limit. It reads /proc; without it,
// it returns at once.
func waitGroupStopped(pgrp int, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for groupRunning(pgrp) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
}

// groupRunning says whether a process of group pgrp is neither stopped
// (T, t) nor dead (Z, X).
func groupRunning(pgrp int) bool {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	want := strconv.Itoa(pgrp)
	for _, e := range ents {
		name := e.Name()
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 3 || f[2] != want {
			continue
		}
		switch f[0] {
		case "T", "t", "Z", "X", "x":
		default:
			return true
		}
	}
	return false
}

// hangUpGrace is how long pi may take to end after the hangup that follows
// its supervisor's death, before it is killed.
const hangUpGrace = 3 * time.Second

// hangUp ends pi after its supervisor died: pi must not outlive it. pi's
// process group gets what a closing terminal sends (SIGHUP, and SIGCONT in
// case it is stopped), then SIGKILL if it is still there after
// hangUpGrace. The leader exits once pi has (RunLeader's wait).
func hangUp(pid int) {
	syscall.Kill(-pid, syscall.SIGHUP)
	syscall.Kill(-pid, syscall.SIGCONT)
	time.Sleep(hangUpGrace)
	syscall.Kill(-pid, syscall.SIGKILL)
}

// leaderChildEnv drops the leader marker and makes the leader pi's wrapper
// pid: PI_SESSION_WRAPPER_PID becomes the leader's pid, and the relaunch
// marker PI_RELAUNCH_MARKER, <dir>/<pid>-<launch id>.json, is named after
// it, so that basename(PI_RELAUNCH_MARKER) is
// $PI_SESSION_WRAPPER_PID-$PI_SESSION_LAUNCH_ID.json, as the ownership
// check of context-budget's relaunch markers has it.
func leaderChildEnv(env []string, self int) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		switch {
		case strings.HasPrefix(kv, leaderEnv+"="):
		case strings.HasPrefix(kv, marker.EnvWrapperPID+"="):
			out = append(out, marker.EnvWrapperPID+"="+strconv.Itoa(self))
		case strings.HasPrefix(kv, marker.EnvMarker+"="):
			path := strings.TrimPrefix(kv, marker.EnvMarker+"=")
			if _, id, ok := marker.ParseName(filepath.Base(path)); ok {
				path = marker.Path(filepath.Dir(path), self, id)
			}
			out = append(out, marker.EnvMarker+"="+path)
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
