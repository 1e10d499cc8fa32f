// Package relaunch decides whether pi-session starts a fresh pi after pi exits, and with which arguments.
package relaunch

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/pi-session/pi-session/marker"
	"github.com/pi-session/pi-session/regfile"
)

// Window is the rolling period of the relaunch budget.
const Window = time.Hour

// DefaultLimit is the default number of relaunches allowed per Window.
const DefaultLimit = 5

// Exit is how one pi process ended.
type Exit struct {
	Code   int            // exit status; meaningless when Signal != 0
	Signal syscall.Signal // the signal that killed pi, 0 if it exited
}

// Status is the conventional shell status: the exit code, or 128+n for death by signal n.
func (e Exit) Status() int {
	if e.Signal != 0 {
		return 128 + int(e.Signal)
	}
	return e.Code
}

// Observed is what the supervisor saw of one launch, gathered by Inspect.
type Observed struct {
	Exit        Exit
	Interrupted syscall.Signal // a stop request (SIGTERM, SIGHUP, SIGQUIT) pi-session received, 0 if none
	MarkerPath  string
	Marker      marker.Marker
	MarkerErr   error // nil when the marker parsed; fs.ErrNotExist when there is none
	// Checks of the marker's paths; nil when fine. Only meaningful when MarkerErr is nil.
	CwdErr, HandoffErr, LaunchPromptErr error
}

// Input is everything Decide needs; it holds no I/O.
type Input struct {
	Observed
	LaunchID string      // the launch id this launch was given
	Args     []string    // the user's original pi arguments
	Mode     string      // pi's mode from Mode(Parse(Args))
	Now      time.Time   // the decision time
	History  []time.Time // earlier relaunches by this wrapper invocation
	Limit    int         // relaunches allowed per Window
}

// Reason says why pi-session did not relaunch.
type Reason int

// Stop reasons, in the order Decide checks them.
const (
	NoMarker    Reason = iota // pi wrote no marker: an ordinary exit, nothing to say
	Interrupted               // pi-session received a stop request
	Signaled                  // pi died of a signal
	NonZero                   // pi exited non-zero
	Invalid                   // the marker could not be read or parsed
	Untrusted                 // the marker or its directory could have been written by someone else
	Foreign                   // the marker names another launch
	BadCwd                    // the marker's cwd is not an existing absolute directory
	BadHandoff                // the handoff is not an existing readable regular file
	BadPrompt                 // the launch prompt is not an existing readable regular file
	RPCMode                   // pi ran in RPC mode, where the client owns reconnection
	Budget                    // the rolling-hour budget is exhausted
)

// Decision is the outcome for one exit: a relaunch, or a stop with a reason.
type Decision struct {
	Relaunch bool
	Argv     []string // pi's arguments for the relaunch
	Dir      string   // the working directory for the relaunch
	Reason   Reason   // why not, when !Relaunch
	Message  string   // one line for the user; empty for NoMarker
	Why      string   // the reason in Message, without "not relaunching: " and the marker's path
}

// String is a short name of the reason, e.g. "signaled".
func (r Reason) String() string {
	names := [...]string{"no-marker", "interrupted", "signaled", "nonzero", "invalid", "untrusted",
		"foreign", "bad-cwd", "bad-handoff", "bad-prompt", "rpc-mode", "budget"}
	if int(r) >= 0 && int(r) < len(names) {
		return names[r]
	}
	return fmt.Sprintf("reason-%d", int(r))
}

// Decide is the relaunch decision: relaunch only for exit 0 plus a valid
// marker this launch owns, within the rolling-hour budget. Everything else
// stops and keeps the marker as evidence.
func Decide(in Input) Decision {
	stop := func(r Reason, format string, args ...any) Decision {
		why := fmt.Sprintf(format, args...)
		return Decision{Reason: r, Why: why, Message: "not relaunching: " + why + "; marker kept at " + in.MarkerPath}
	}
	if errors.Is(in.MarkerErr, fs.ErrNotExist) {
		return Decision{Reason: NoMarker}
	}
	if in.Interrupted != 0 {
		return stop(Interrupted, "pi-session received %s, which is not a relaunch authorization", signalName(in.Interrupted))
	}
	if in.Exit.Signal != 0 {
		return stop(Signaled, "pi died by %s (status %d), which is not a relaunch authorization", signalName(in.Exit.Signal), in.Exit.Status())
	}
	if in.Exit.Code != 0 {
		return stop(NonZero, "pi exited with status %d", in.Exit.Code)
	}
	if errors.Is(in.MarkerErr, marker.ErrUntrusted) {
		return stop(Untrusted, "untrusted %v", strings.TrimPrefix(in.MarkerErr.Error(), "marker: "))
	}
	if in.MarkerErr != nil {
		return stop(Invalid, "invalid %v", in.MarkerErr)
	}
	m := in.Marker
	if m.LaunchID != "" && m.LaunchID != in.LaunchID {
		return stop(Foreign, "the marker was written for launch %s, not this launch %s", m.LaunchID, in.LaunchID)
	}
	if in.CwdErr != nil {
		return stop(BadCwd, "marker cwd %q is not an existing absolute directory: %v", m.Cwd, in.CwdErr)
	}
	if in.HandoffErr != nil {
		return stop(BadHandoff, "handoff %q is not a readable regular file: %v", m.Handoff, in.HandoffErr)
	}
	if in.LaunchPromptErr != nil {
		return stop(BadPrompt, "launch prompt %q is not a readable regular file: %v", *m.LaunchPrompt, in.LaunchPromptErr)
	}
	if in.Mode == "rpc" {
		return stop(RPCMode, "pi ran with --mode rpc, where the RPC client continues from %s itself", m.Handoff)
	}
	if n, next := used(in.History, in.Now); n >= in.Limit {
		if in.Limit == 0 {
			return stop(Budget, "relaunching is off (PI_SESSION_MAX_RELAUNCHES_PER_HOUR=0)")
		}
		what := "relaunches in the last hour reach"
		if n == 1 {
			what = "relaunch in the last hour reaches"
		}
		return stop(Budget, "%d %s the limit of %d (PI_SESSION_MAX_RELAUNCHES_PER_HOUR); the next is allowed at %s",
			n, what, in.Limit, next.Local().Format("15:04:05"))
	}
	return Decision{
		Relaunch: true,
		Argv:     Argv(in.Args, m.LaunchPrompt, m.Handoff),
		Dir:      m.Cwd,
		Message:  "relaunching pi in " + m.Cwd + " to continue from " + m.Handoff,
	}
}

// used counts the relaunches within the Window before now, and says when the
// oldest of them leaves the window.
func used(history []time.Time, now time.Time) (n int, next time.Time) {
	for _, t := range history {
		if now.Sub(t) < Window && !t.After(now) {
			if n == 0 || t.Before(next) {
				next = t
			}
			n++
		}
	}
	return n, next.Add(Window)
}

func signalName(s syscall.Signal) string {
	names := map[syscall.Signal]string{
		syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT",
		syscall.SIGKILL: "SIGKILL", syscall.SIGTERM: "SIGTERM", syscall.SIGSEGV: "SIGSEGV",
		syscall.SIGABRT: "SIGABRT", syscall.SIGPIPE: "SIGPIPE", syscall.SIGUSR1: "SIGUSR1",
		syscall.SIGUSR2: "SIGUSR2", syscall.SIGBUS: "SIGBUS",
	}
	if n, ok := names[s]; ok {
		return n
	}
	return fmt.Sprintf("signal %d", int(s))
}

// Checker answers questions about files for Inspect; the os-backed one is
// the default, tests may replace it.
type Checker interface {
	Stat(path string) (fs.FileInfo, error)
	Readable(path string) error
}

// Inspect reads the marker at path and checks the paths it names. It is the
// I/O half of the decision; Decide is the pure half.
func Inspect(path string, exit Exit, interrupted syscall.Signal, c Checker) Observed {
	o := Observed{Exit: exit, Interrupted: interrupted, MarkerPath: path}
	o.Marker, o.MarkerErr = marker.Read(path)
	if o.MarkerErr != nil {
		return o
	}
	m := o.Marker
	o.CwdErr = checkDir(c, m.Cwd)
	o.HandoffErr = checkFile(c, m.Handoff)
	if m.LaunchPrompt != nil {
		o.LaunchPromptErr = checkFile(c, *m.LaunchPrompt)
	}
	return o
}

func checkDir(c Checker, p string) error {
	if !filepath.IsAbs(p) {
		return errors.New("not an absolute path")
	}
	fi, err := c.Stat(p)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return errors.New("not a directory")
	}
	return nil
}

func checkFile(c Checker, p string) error {
	if !filepath.IsAbs(p) {
		return errors.New("not an absolute path")
	}
	fi, err := c.Stat(p)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s, not a regular file", regfile.Kind(fi.Mode()))
	}
	return c.Readable(p)
}
