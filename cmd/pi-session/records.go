package main

import (
	"encoding/json"
	"time"

	"github.com/pi-session/pi-session/status"
	"github.com/pi-session/pi-session/supervisor"
)

// endedLaunch is what the supervisor knows of a launch whose pi exited.
type endedLaunch struct {
	launchID string
	pi       status.Identity // pi's process, from the moment it started
	cwd      string
	marker   string // the relaunch marker path of the launch
	mode     string // pi's mode from its arguments
	res      supervisor.Result
}

// recordEnd gives every supervised pi a status record with its end. The
// sessions pi said hello for get pi's exit status, and an end time when pi
// exited 0 without saying bye; a record another live process took over
// meanwhile is left alone (status.Update). A pi that never said hello (its
// extension did not connect, as in a -p run that ends before it does, or
// no extension at all) gets a record of the supervisor's own,
// launch-<launch id>, since its session id is unknown. An end by a signal
// or a non-zero status without a bye leaves the end time out: crashed.
func recordEnd(h *host, store *status.Store, l endedLaunch) []error {
	exit := l.res.Status()
	clean := l.res.Signal == 0 && l.res.Code == 0
	now := time.Now().UTC()
	var sessions []string
	if h != nil {
		sessions = h.sessionsOf(l.pi.PID)
	}
	var errs []error
	for _, id := range sessions {
		err := store.Update(id, l.pi, func(r *status.Record) {
			r.ExitStatus = &exit
			if r.EndedAt == nil && clean {
				r.EndedAt = &now
			}
			r.UpdatedAt = now
		})
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(sessions) > 0 {
		return errs
	}
	err := store.Update("launch-"+l.launchID, l.pi, func(r *status.Record) {
		r.Source, r.Cwd, r.Role = "supervisor", l.cwd, status.RoleMain
		r.WrapperOwned, r.RelaunchMarker, r.Version = true, l.marker, Version()
		r.SetProcess(l.pi)
		r.ExitStatus, r.UpdatedAt = &exit, now
		if clean {
			r.EndedAt = &now
		}
		if r.Extra == nil {
			r.Extra = map[string]json.RawMessage{}
		}
		r.Extra["piMode"], _ = json.Marshal(l.mode)
	})
	if err != nil {
		errs = append(errs, err)
	}
	return errs
}
