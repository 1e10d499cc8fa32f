package supervisor

import (
	"context"
	"os"
	"sync"

	"github.com/pi-session/pi-session/hooks"
	"github.com/pi-session/pi-session/marker"
	"github.com/pi-session/pi-session/relaunch"
)

// Relauncher is the engine "supervisor": its method armRelaunch writes the
// relaunch marker of the current launch, on request of the pi process
// that launch started (the peer pid the kernel reports for the socket,
// not anything the caller says) from that process's main session. A
// pi started from pi's bash tool, or an SDK child session, cannot arm it.
type Relauncher struct {
	mu  sync.Mutex
	pid int
	a   marker.Assignment

	next    *Continuation // what the next launch continues from
	cont    *Continuation // what the current launch continues from
	bound   string        // the session the current launch's continuation went to
	armedBy string        // the session that armed the current launch's marker
}

// Continuation is what a relaunched pi continues from: the previous
// session file (as its marker named it; "" when it named none) and the
// handoff, both from the marker pi-session relaunched from.
type Continuation struct {
	SessionFile string `json:"sessionFile"`
	Handoff     string `json:"handoff"`
	// Session is the session id that armed the relaunch ("" when another
	// tool wrote the marker), and HandoffsBefore the handoffs of the chain
	// up to it, the one continued from included: for status records.
	Session        string `json:"-"`
	HandoffsBefore int    `json:"-"`
}

// Arm makes pid, the pi of the launch a, the one process allowed to arm
// a's marker. Call it from Launch.Started. The continuation given to
// Continue before goes to this launch.
func (r *Relauncher) Arm(pid int, a marker.Assignment) {
	r.mu.Lock()
	r.pid, r.a = pid, a
	r.cont, r.next, r.bound, r.armedBy = r.next, nil, "", ""
	r.mu.Unlock()
}

// ArmedBy is the session id that armed the current launch's marker
// through ArmFor, "" when none did. Call it before Disarm.
func (r *Relauncher) ArmedBy() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.armedBy
}

// Continue says what the next launch continues from: a relaunch's marker
// (nil for a launch that continues nothing).
func (r *Relauncher) Continue(c *Continuation) {
	r.mu.Lock()
	r.next = c
	r.mu.Unlock()
}

// ContinuationFor is what peer's session continues from: only for the pi
// of the current launch, which was a relaunch, from its main session, and
// only for the first session that asks (the one pi starts with; a session
// the user switches to later continues nothing).
func (r *Relauncher) ContinuationFor(peer *hooks.Peer) (Continuation, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cont == nil || peer.PID == 0 || peer.PID != r.pid || peer.Hello.Role != hooks.RoleMain || peer.Hello.SessionID == "" {
		return Continuation{}, false
	}
	if r.bound == "" {
		r.bound = peer.Hello.SessionID
	}
	if r.bound != peer.Hello.SessionID {
		return Continuation{}, false
	}
	return *r.cont, true
}

// Disarm forgets the launch once its pi has exited.
func (r *Relauncher) Disarm() { r.Arm(0, marker.Assignment{}) }

// Owns reports whether pid is the pi of the current launch.
func (r *Relauncher) Owns(pid int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return pid != 0 && pid == r.pid
}

// ArmParams are supervisor.armRelaunch's params: the marker's content.
// Cwd defaults to the session's cwd from hello.
type ArmParams struct {
	Handoff      string  `json:"handoff"`
	LaunchPrompt *string `json:"launchPrompt"`
	Cwd          string  `json:"cwd"`
	SessionFile  *string `json:"sessionFile"`
}

// ArmResult is supervisor.armRelaunch's answer.
type ArmResult struct {
	Marker string `json:"marker"`
}

// Engine returns the engine to register on the host.
func (r *Relauncher) Engine() hooks.Engine {
	return hooks.Engine{Name: "supervisor", Methods: map[string]hooks.Handler{"armRelaunch": r.armRelaunch}}
}

func (r *Relauncher) armRelaunch(ctx context.Context, req *hooks.Request) (any, error) {
	var p ArmParams
	if err := req.Decode(&p); err != nil {
		return nil, err
	}
	return r.ArmFor(req.Peer, p)
}

// ArmFor writes the marker for peer, under the same rules as the
// armRelaunch method: for engines of the same host (the budget's fallback).
func (r *Relauncher) ArmFor(peer *hooks.Peer, p ArmParams) (ArmResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.pid == 0:
		return ArmResult{}, hooks.Errorf(hooks.CodeRefused, "supervisor: no pi is running under this pi-session")
	case peer.PID != r.pid:
		return ArmResult{}, hooks.Errorf(hooks.CodeRefused, "supervisor: process %d is not the pi this pi-session launched (pid %d); only that pi can arm its relaunch", peer.PID, r.pid)
	case peer.Hello.Role != hooks.RoleMain:
		return ArmResult{}, hooks.Errorf(hooks.CodeRefused, "supervisor: only pi's main session can arm a relaunch, not an SDK child session (role %q)", peer.Hello.Role)
	}
	if p.Cwd == "" {
		p.Cwd = peer.Hello.Cwd
	}
	m := marker.Marker{Cwd: p.Cwd, LaunchPrompt: p.LaunchPrompt, Handoff: p.Handoff, SessionFile: p.SessionFile}
	if err := marker.WriteAssigned(r.a, m); err != nil {
		return ArmResult{}, err
	}
	// Check it the way the relaunch will, so a marker that cannot work is
	// refused now, while the model can still fix it.
	o := relaunch.Inspect(r.a.Path, relaunch.Exit{}, 0, relaunch.OS{})
	for _, c := range []struct {
		what string
		err  error
	}{{"marker", o.MarkerErr}, {"cwd", o.CwdErr}, {"handoff", o.HandoffErr}, {"launchPrompt", o.LaunchPromptErr}} {
		if c.err != nil {
			os.Remove(r.a.Path)
			return ArmResult{}, hooks.Errorf(hooks.CodeInvalidParams, "supervisor: %s: %v", c.what, c.err)
		}
	}
	r.armedBy = peer.Hello.SessionID
	return ArmResult{Marker: r.a.Path}, nil
}

// Marker returns the marker path of the launch whose pi is pid, "" when
// pid is not the pi of the current launch.
func (r *Relauncher) Marker(pid int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if pid == 0 || pid != r.pid {
		return ""
	}
	return r.a.Path
}
