package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/pi-session/pi-session/hooks"
	"github.com/pi-session/pi-session/paths"
	"github.com/pi-session/pi-session/rotate"
	"github.com/pi-session/pi-session/status"
	"github.com/pi-session/pi-session/supervisor"
	"golang.org/x/sys/unix"
)

const serveUsage = `usage: pi-session serve [--pid PID]

Runs pi-session's engine host without supervising pi. pi-session's
extension starts it by itself under plain pi (when PI_SESSION_SOCKET is
not set); there is no need to run it by hand. It listens on a private unix
socket, prints one line {"socket": ..., "pid": ..., "version": ...,
"protocol": ...} on stdout, and runs until process PID (default: its
parent, the pi that started it) exits, or until SIGTERM or SIGINT; a
PID that is not running is a usage error (64).
Its log is <agent dir>/pi-session/host.jsonl.
`

// cmdServe runs the engine host for one plain pi.
func cmdServe(ctx context.Context, inv *invocation) int {
	fs := newFlagSet("serve")
	pid := intFlag(fs, "pid", os.Getppid(), 1, math.MaxInt32) // pid_t
	args, code, done := parseFlags(inv, fs, inv.args, serveUsage)
	if done {
		return code
	}
	if len(args) > 0 || *pid <= 0 {
		return inv.errorf(exitUsage, "serve takes only --pid PID (see pi-session serve --help)")
	}
	if err := unix.Kill(*pid, 0); errors.Is(err, unix.ESRCH) {
		return inv.errorf(exitUsage, "serve: --pid %d: no such process; give the pid of a running pi (see pi-session serve --help)", *pid)
	}
	// The pi that started us may close our stdout and stderr once it has
	// read the first line: a write there must not kill the host.
	signal.Ignore(syscall.SIGPIPE)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(sigs)
	go func() {
		select {
		case sig := <-sigs:
			cancel(fmt.Errorf("received %v", sig))
		case <-ctx.Done():
		}
	}()
	if err := watchPID(*pid, func() { cancel(fmt.Errorf("process %d exited", *pid)) }); err != nil {
		return inv.errorf(exitOSErr, "serve: %v", err)
	}
	engines := newEngineSet(inv, nil)
	defer engines.close()
	h, err := startHost(inv, hostSpec{mode: "serve", engines: engines.list(), closed: engines.closed})
	if err != nil {
		return inv.errorf(exitOSErr, "serve: %v", err)
	}
	defer h.close()
	ready, _ := json.Marshal(map[string]any{"socket": h.Path(), "pid": os.Getpid(), "version": Version(), "protocol": hooks.Protocol})
	fmt.Fprintf(inv.stdout, "%s\n", ready)
	if err := h.Serve(ctx); err != nil {
		h.log.Error("serve", "err", err)
		return inv.errorf(exitOSErr, "serve: %v", err)
	}
	h.log.Info("host stopped", "reason", context.Cause(ctx).Error())
	return 0
}

// watchPID calls gone once process pid has exited (at once if it is not
// running). It uses a pidfd, which cannot confuse pid with a later process
// of the same number, and falls back to polling where there is none.
func watchPID(pid int, gone func()) error {
	fd, err := unix.PidfdOpen(pid, 0)
	switch {
	case err == nil:
		go func() {
			defer unix.Close(fd)
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			for {
				n, err := unix.Poll(fds, -1)
				if err == unix.EINTR {
					continue
				}
				if err != nil || n > 0 {
					gone()
					return
				}
			}
		}()
		return nil
	case errors.Is(err, unix.ESRCH):
		gone()
		return nil
	case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EPERM):
		go func() {
			for unix.Kill(pid, 0) != unix.ESRCH {
				time.Sleep(time.Second)
			}
			gone()
		}()
		return nil
	}
	return fmt.Errorf("watch pid %d: %w", pid, err)
}

// hostSpec says what kind of host to start.
type hostSpec struct {
	mode    string             // "wrapper" or "serve"
	owns    func(pid int) bool // the pi this pi-session launched; nil for serve
	marker  func(pid int) string
	engines []hooks.Engine
	closed  func(p *hooks.Peer, clean bool) // a connection closed (engineSet.closed)
	// continues is what a session continues after a relaunch
	// (Relauncher.ContinuationFor); nil for serve.
	continues func(p *hooks.Peer) (supervisor.Continuation, bool)
}

// host is a running engine host with its log and status records.
type host struct {
	*hooks.Host
	log   *slog.Logger
	logf  *rotate.Log
	store *status.Store
	prune sync.Once

	mu       sync.Mutex
	ids      map[int]status.Identity // process identities, from the first hello
	sessions map[int][]string        // sessions each process recorded
}

func (h *host) close() {
	h.Host.Close()
	h.logf.Close()
}

// startHost listens on this process's socket (see hooks.SocketPath) with
// the given engines. It writes a status record for each session at hello
// and marks it ended when the session says bye; the first session also
// starts one background pruning pass of old records.
func startHost(inv *invocation, spec hostSpec) (*host, error) {
	path, err := hooks.SocketPath(inv.env.Get, os.Getpid())
	if err != nil {
		return nil, err
	}
	logf, err := rotate.New(hostLogPath(inv.env.Get), rotate.Policy{MaxBytes: 5 << 20, Keep: 3})
	if err != nil {
		return nil, err
	}
	h := &host{logf: logf, store: status.StoreFromEnv(inv.env.Get)}
	h.log = slog.New(slog.NewJSONHandler(logWriter{logf}, nil)).With("hostPid", os.Getpid(), "mode", spec.mode)
	hh, err := hooks.Listen(hooks.Config{
		Path: path, Version: Version(), Mode: spec.mode, Logger: h.log, Owns: spec.owns,
		OnHello: func(p *hooks.Peer) { h.hello(p, spec) },
		OnClose: func(p *hooks.Peer, clean bool) {
			h.closed(p, clean)
			if spec.closed != nil {
				spec.closed(p, clean)
			}
		},
	})
	if err != nil {
		logf.Close()
		return nil, err
	}
	h.Host = hh
	for _, e := range spec.engines {
		if err := hh.Register(e); err != nil {
			h.close()
			return nil, err
		}
	}
	h.log.Info("host started", "socket", path, "version", Version())
	return h, nil
}

// hostLogPath is the engine host's log: <agentDir>/pi-session/host.jsonl.
func hostLogPath(getenv paths.Getenv) string {
	return filepath.Join(paths.AgentDir(getenv), "pi-session", "host.jsonl")
}

// hello records the session's status: who runs it and where. The record
// is replaced only when this session's process owns it (status.Update): a
// record of another live process, one naming another session, or a corrupt
// one is left alone, with a line in the host log.
func (h *host) hello(p *hooks.Peer, spec hostSpec) {
	hl := p.Hello
	if hl.Client != "extension" || !status.ValidSessionID(hl.SessionID) {
		return
	}
	self := h.identify(p.PID)
	err := h.store.Update(hl.SessionID, self, func(r *status.Record) {
		r.SessionFile, r.Cwd = hl.SessionFile, hl.Cwd
		r.Role = status.RoleMain
		if hl.Role == hooks.RoleChild {
			r.Role = status.RoleChild
		}
		r.WrapperOwned, r.RelaunchMarker = p.Owned, ""
		if p.Owned && spec.marker != nil {
			r.RelaunchMarker = spec.marker(p.PID)
		}
		r.Version = Version()
		r.SetProcess(self)
		r.EndedAt, r.UpdatedAt, r.ExitStatus = nil, time.Time{}, nil
		r.EndedBy, r.ExitSignal, r.ExitNote = "", "", ""
		if c, ok := continuation(p, spec); ok {
			r.Continues, r.HandoffsBefore = c.Session, c.HandoffsBefore
		}
		if r.Extra == nil {
			r.Extra = map[string]json.RawMessage{}
		}
		r.Extra["piMode"], _ = json.Marshal(hl.Mode)
	})
	if err != nil {
		h.log.Warn("status record not written", "session", hl.SessionID, "pid", p.PID, "err", err)
	} else {
		h.said(p.PID, hl.SessionID)
		if c, ok := continuation(p, spec); ok && c.Session != "" && c.Session != hl.SessionID {
			linkChain(h.store, c.Session, hl.SessionID)
		}
	}
	h.prune.Do(func() {
		go func() {
			rep, err := h.store.Prune(status.PruneOptions{Current: hl.SessionID})
			if err != nil {
				h.log.Warn("prune", "err", err)
				return
			}
			h.log.Info("prune", "examined", rep.Examined, "removed", len(rep.Removed), "skipped", rep.Skipped)
		}()
	})
}

// continuation is what the session of p continues after a relaunch.
func continuation(p *hooks.Peer, spec hostSpec) (supervisor.Continuation, bool) {
	if spec.continues == nil {
		return supervisor.Continuation{}, false
	}
	return spec.continues(p)
}

// identify returns the identity of process pid, remembered from its first
// hello (its start time does not change; a pid reused later is another
// process, which says hello again after the first closed).
func (h *host) identify(pid int) status.Identity {
	h.mu.Lock()
	defer h.mu.Unlock()
	if id, ok := h.ids[pid]; ok {
		return id
	}
	id, err := status.Identify(pid)
	if err != nil {
		id = status.Identity{PID: pid}
	}
	if h.ids == nil {
		h.ids = map[int]status.Identity{}
	}
	h.ids[pid] = id
	return id
}

// said notes that process pid wrote the record of session id.
func (h *host) said(pid int, id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sessions == nil {
		h.sessions = map[int][]string{}
	}
	if !slices.Contains(h.sessions[pid], id) {
		h.sessions[pid] = append(h.sessions[pid], id)
	}
}

// sessionsOf returns the sessions process pid wrote records for, and
// forgets them and its identity: the process has exited.
func (h *host) sessionsOf(pid int) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	ids := h.sessions[pid]
	delete(h.sessions, pid)
	delete(h.ids, pid)
	return ids
}

// closed marks a session that said bye as ended, if its record is its
// process's.
func (h *host) closed(p *hooks.Peer, clean bool) {
	hl := p.Hello
	if !clean || hl.Client != "extension" || !status.ValidSessionID(hl.SessionID) {
		return
	}
	if err := h.store.End(hl.SessionID, h.identify(p.PID), time.Now()); err != nil {
		h.log.Warn("status record not ended", "session", hl.SessionID, "pid", p.PID, "err", err)
	}
}

// logWriter appends each slog line to a rotating log.
type logWriter struct{ l *rotate.Log }

func (w logWriter) Write(p []byte) (int, error) {
	if err := w.l.Append(p); err != nil {
		return 0, err
	}
	return len(p), nil
}
