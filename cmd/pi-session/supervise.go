package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pi-session/pi-session/hooks"
	"github.com/pi-session/pi-session/marker"
	"github.com/pi-session/pi-session/owndir"
	"github.com/pi-session/pi-session/paths"
	"github.com/pi-session/pi-session/relaunch"
	"github.com/pi-session/pi-session/status"
	"github.com/pi-session/pi-session/supervisor"
	"golang.org/x/sys/unix"
)

// supervise runs pi with args until it exits without a valid relaunch
// marker, relaunching it in between. It returns pi-session's exit status.
func supervise(ctx context.Context, inv *invocation, args []string) int {
	limit, err := relaunchLimit(inv.env)
	if err != nil {
		return inv.errorf(exitConfig, "%v", err)
	}
	pi, err := findPi(inv.env)
	if err != nil {
		var pe *piError
		errors.As(err, &pe)
		return inv.errorf(pe.code, "%s", pe.msg)
	}
	markerDir := paths.MarkerDir(inv.env.Get)
	// Every directory pi and pi-session write into is checked at once, so
	// that one message names every setting a read-only HOME needs.
	unwritable := unwritableDirs(inv.env)
	if err := os.MkdirAll(markerDir, 0o700); err != nil {
		if !slices.ContainsFunc(unwritable, func(p dirProblem) bool { return p.dir == markerDir }) {
			unwritable = append(unwritable, dirProblem{writeDirs(inv.env)[1], err})
		}
		return inv.errorf(exitCantCreate, "%s", dirsFix(unwritable))
	}
	exe, err := os.Executable()
	if err != nil {
		return inv.errorf(exitOSErr, "cannot find pi-session's own executable: %v", err)
	}
	relocated := relaunch.Relocate(args, workingDir(inv.env), isFile)
	mode := relaunch.Mode(relaunch.Parse(args))

	sup := supervisor.New(supervisor.Options{
		Stdin: inv.stdin, Stdout: inv.files.stdout, Stderr: inv.files.stderr,
		Leader: &supervisor.LeaderSpec{Path: exe, Args: []string{inv.argv0}},
	})
	defer sup.Close()
	if len(unwritable) > 0 {
		sup.Notice("%s", dirsFix(unwritable))
	}
	if err := marker.CheckDir(markerDir); err != nil {
		sup.Notice("relaunch is off: %v", strings.TrimPrefix(err.Error(), "marker: "))
	} else if w, _ := owndir.Check(markerDir, 1); w != "" {
		sup.Notice("%s", w) // a link: markers are written where it leads
	}
	if w, err := owndir.Check(status.StoreFromEnv(inv.env.Get).Dir(), 2); err != nil {
		sup.Notice("status records are not written: %v", strings.TrimPrefix(err.Error(), "owndir: "))
	} else if w != "" {
		sup.Notice("%s", w)
	}

	// The engine host serves every launch; pi's extension finds it through
	// PI_SESSION_SOCKET. Without it pi still runs, as without pi-session's
	// engines.
	relauncher := &supervisor.Relauncher{}
	var hostEnv []string
	engines := newEngineSet(inv, relauncher)
	defer engines.close()
	h, err := startHost(inv, hostSpec{mode: "wrapper", owns: relauncher.Owns, marker: relauncher.Marker, continues: relauncher.ContinuationFor,
		engines: engines.list(), closed: engines.closed})
	if err != nil {
		sup.Notice("engine host unavailable, pi runs without pi-session's engines: %v", err)
	} else {
		defer h.close()
		go h.Serve(ctx)
		hostEnv = append(hostEnv, hooks.EnvSocket+"="+h.Path())
		// A stand-in host, should this one stop answering, is this binary.
		if _, set := inv.env.Lookup(envBin); !set {
			hostEnv = append(hostEnv, envBin+"="+exe)
		}
	}
	extArgs, err := extensionArgs(inv.env, args)
	if err != nil {
		sup.Notice("cannot pass pi-session's extension to pi, pi runs without it: %v", err)
	}

	store := status.StoreFromEnv(inv.env.Get)
	var history []time.Time
	launchArgs, dir := args, ""
	var chain chainLink        // where the next launch sits in the chain of relaunches
	var relaunched *relaunchOf // what the current launch continues; nil for the first
	for {
		launchID, err := marker.NewLaunchID()
		if err != nil {
			return inv.errorf(exitOSErr, "%v", err)
		}
		// The marker is named after pi's parent, the PI_SESSION_WRAPPER_PID
		// pi sees: pi-session without a PTY, its session leader with one
		// (which renames both variables for pi, see supervisor.RunLeader).
		markerPath := marker.Path(markerDir, os.Getpid(), launchID)
		var piID status.Identity
		res, err := sup.Run(ctx, supervisor.Launch{
			Path: pi,
			Args: append(slices.Clone(extArgs), launchArgs...),
			Dir:  dir,
			Env: inv.env.With(append([]string{
				marker.EnvWrapper + "=1",
				marker.EnvWrapperPID + "=" + strconv.Itoa(os.Getpid()),
				marker.EnvLaunchID + "=" + launchID,
				marker.EnvMarker + "=" + markerPath,
			}, hostEnv...)...),
			Started: func(pid, wrapperPID int) {
				markerPath = marker.Path(markerDir, wrapperPID, launchID)
				relauncher.Arm(pid, marker.Assignment{Path: markerPath, LaunchID: launchID, WrapperPID: wrapperPID})
				id, idErr := status.Identify(pid)
				if idErr != nil {
					id = status.Identity{PID: pid}
				}
				piID = id
			},
			// A clean exit with a marker is about to be relaunched (the
			// whole decision follows): the terminal stays raw for the
			// fresh pi, and a Ctrl+C typed meanwhile goes to it.
			Next: func(res supervisor.Result) bool {
				_, err := os.Lstat(markerPath)
				return err == nil && res.Status() == 0 && res.Interrupted == 0 && limit > 0
			},
		})
		armedBy := relauncher.ArmedBy()
		relauncher.Disarm()
		if err != nil {
			var se *supervisor.StartError
			if errors.As(err, &se) {
				return inv.errorf(se.Code, "cannot start %s: %v", pi, se.Err)
			}
			return inv.errorf(exitInternal, "%v", err)
		}
		cwd := dir
		if cwd == "" {
			cwd = workingDir(inv.env)
		}
		var sessions []string
		if h != nil {
			sessions = h.sessionsOf(res.PID)
		}
		for _, err := range recordEnd(store, endedLaunch{launchID: launchID, pi: piID, cwd: cwd, marker: markerPath, mode: mode,
			sessions: sessions, chain: chain, res: res}) {
			if h != nil {
				h.log.Warn("status record not written at pi's end", "pid", res.PID, "err", err)
			}
		}
		if len(sessions) == 0 && chain.continues != "" {
			linkChain(store, chain.continues, "launch-"+launchID)
		}
		if res.Signal != 0 {
			sup.Notice("%s", killedLine(res))
		}
		if relaunched != nil {
			if why := cutShort(res, len(sessions) > 0); why != "" {
				sup.Notice("the relaunch was cut short: %s; the handoff it continues from is kept: %s", why, relaunched.handoff)
				sup.Notice("to continue from it, run: %s", continueCommand(inv.argv0, exe, relaunched.dir, relaunched.argv))
			}
		}
		exit := relaunch.Exit{Code: res.Code, Signal: res.Signal}
		now := time.Now()
		observed := relaunch.Inspect(markerPath, exit, res.Interrupted, relaunch.OS{})
		d := relaunch.Decide(relaunch.Input{
			Observed: observed,
			LaunchID: launchID,
			Args:     relocated,
			Mode:     mode,
			Now:      now,
			History:  history,
			Limit:    limit,
		})
		if d.Message != "" {
			sup.Notice("%s", d.Message)
		}
		if !d.Relaunch {
			if d.Reason != relaunch.NoMarker {
				if err := keepWhy(markerPath, d, now); err != nil && h != nil {
					h.log.Warn("reason of a retained marker not written", "marker", markerPath, "err", err)
				}
			}
			return exitStatus(res)
		}
		if err := os.Remove(markerPath); err != nil {
			sup.Notice("cannot remove the used marker %s: %v", markerPath, err)
		}
		history = append(history, now)
		launchArgs, dir = d.Argv, d.Dir
		relaunched = &relaunchOf{argv: d.Argv, dir: d.Dir, handoff: observed.Marker.Handoff}
		chain = nextLink(store, chain, armedBy, sessions, launchID)
		// The relaunched pi learns what it continues from here, from the
		// marker pi-session checked, not from its prompt (see pins.go).
		relauncher.Continue(&supervisor.Continuation{SessionFile: ptrString(observed.Marker.SessionFile), Handoff: observed.Marker.Handoff,
			Session: chain.continues, HandoffsBefore: chain.handoffsBefore})
	}
}

// relaunchOf is what a relaunched pi was started with.
type relaunchOf struct {
	argv    []string // pi's arguments (without pi-session's extension)
	dir     string
	handoff string
}

// cutShort says how a relaunched pi ended before it could continue from
// its handoff, "" when it did not: interrupted (Ctrl+C, which kills pi
// while it starts, before it reads the keyboard itself) or killed at any
// time, or failed before its session started (said: its extension said
// hello).
func cutShort(res supervisor.Result, said bool) string {
	by, sig := howEnded(res)
	var what string
	switch {
	case by == status.EndInterrupt:
		what = "the fresh pi was interrupted (" + sig + ")"
	case by == status.EndSignal:
		what = "the fresh pi was killed (" + sig + ")"
	case res.Code != 0 && !said:
		what = "the fresh pi exited with status " + strconv.Itoa(res.Code)
	default:
		return ""
	}
	if !said {
		what += " before its session started"
	}
	return what
}

// continueCommand is the shell command that does what the relaunch would
// have: pi-session (by the name it was run as, when that is looked up on
// PATH; else its own path, absolute) with the relaunch's arguments, in
// its directory.
func continueCommand(argv0, exe, dir string, argv []string) string {
	bin := argv0
	if strings.Contains(argv0, "/") || argv0 == "" {
		bin = exe
	}
	words := []string{shellQuote(bin)}
	for _, a := range argv {
		words = append(words, shellQuote(a))
	}
	return "cd " + shellQuote(dir) + " && " + strings.Join(words, " ")
}

// shellQuote quotes s for a POSIX shell, only when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:@,+%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// exitStatus is pi-session's status for a final launch: pi's own, except
// that a stop request pi-session received turns a clean exit into 128+n.
func exitStatus(res supervisor.Result) int {
	if s := res.Status(); s != 0 || res.Interrupted == 0 {
		return s
	}
	return exitSignalBase + int(res.Interrupted)
}

// killedLine is what pi-session says when pi died by a signal, after the
// terminal is restored, as a shell reports a job killed by a signal.
func killedLine(res supervisor.Result) string {
	what := unix.SignalName(res.Signal)
	if what == "" {
		what = "signal " + strconv.Itoa(int(res.Signal))
	}
	if res.CoreDumped {
		what += ", core dumped"
	}
	return "pi was killed (" + what + ")"
}

// relaunchLimit reads PI_SESSION_MAX_RELAUNCHES_PER_HOUR.
func relaunchLimit(env *environ) (int, error) {
	v, ok := env.Lookup("PI_SESSION_MAX_RELAUNCHES_PER_HOUR")
	if !ok || v == "" {
		return relaunch.DefaultLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("PI_SESSION_MAX_RELAUNCHES_PER_HOUR=%q is not a whole number >= 0 (default %d; 0 turns relaunch off)", v, relaunch.DefaultLimit)
	}
	return n, nil
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// ptrString is *p, or "" for nil.
func ptrString(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
