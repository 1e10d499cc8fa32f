package budget

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/pi-session/pi-session/hostproc"
)

// Resume check limits: the result fits in 4 KiB with its label and exit
// status; 30 s, then the process group is killed; at most 1 s to drain.
const (
	ResumeBytes   = 4 << 10
	ResumeTimeout = 30 * time.Second
	ResumeDrain   = time.Second
)

// ResumeCommand is the trusted resume check for a session: a nonempty
// PI_RESUME_CHECK, else the configuration's entry for the session name.
func ResumeCommand(getenv func(string) string, c Config, sessionName string) string {
	if v := getenv("PI_RESUME_CHECK"); v != "" {
		return v
	}
	if sessionName != "" {
		return c.ResumeChecks[sessionName]
	}
	return ""
}

// capped keeps the first max bytes written and counts the rest.
type capped struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	max   int
	extra int
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	room := c.max - c.buf.Len()
	if room > 0 {
		c.buf.Write(p[:min(room, len(p))])
	}
	if len(p) > room {
		c.extra += len(p) - max(room, 0)
	}
	return len(p), nil
}

// RunResumeCheck runs command with bash -c in dir, in its own process
// group, whose leader (hostproc.GroupScript) kills the whole group when
// the host dies: nothing of the check outlives the host. Output (stdout
// and stderr together) is capped; after timeout the group is killed; after
// the direct child exits (or is killed), the pipes get at most drain to
// deliver the rest, so descendants holding them cannot hang the check. A
// failure is reported, never returned.
func RunResumeCheck(ctx context.Context, command, dir string, timeout, drain time.Duration) ResumeResult {
	res := ResumeResult{Label: command}
	out := &capped{max: ResumeBytes - 256 - min(len(command), 1024)}
	cmd := exec.Command("bash", "-c", hostproc.GroupScript, "pi-session-resume-check", command)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = drain
	// The parent-death signal follows the thread that forks: this
	// goroutine keeps it until the check has exited.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	hostproc.Tie(cmd, syscall.SIGTERM)
	if err := cmd.Start(); err != nil {
		res.Error = err.Error()
		res.ExitCode = -1
		return res
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var err error
	select {
	case err = <-done:
	case <-timer.C:
		res.TimedOut = true
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		err = <-done
	case <-ctx.Done():
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		err = <-done
		res.Error = "cancelled"
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		res.ExitCode = ee.ExitCode()
	case errors.Is(err, exec.ErrWaitDelay):
		// the child exited; a descendant kept the pipes open past the drain
	default:
		res.ExitCode = -1
		if res.Error == "" {
			res.Error = err.Error()
		}
	}
	if cmd.ProcessState != nil && !res.TimedOut {
		res.ExitCode = cmd.ProcessState.ExitCode()
	}
	out.mu.Lock()
	res.Output = out.buf.String()
	res.Truncated = out.extra > 0
	out.mu.Unlock()
	return res
}
