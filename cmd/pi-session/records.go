package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pi-session/pi-session/budget"
	"github.com/pi-session/pi-session/clip"
	"github.com/pi-session/pi-session/status"
	"github.com/pi-session/pi-session/supervisor"
	"golang.org/x/sys/unix"
)

// endedLaunch is what the supervisor knows of a launch whose pi exited.
type endedLaunch struct {
	launchID string
	pi       status.Identity // pi's process, from the moment it started
	cwd      string
	marker   string   // the relaunch marker path of the launch
	mode     string   // pi's mode from its arguments
	sessions []string // the sessions pi said hello for (host.sessionsOf)
	chain    chainLink
	res      supervisor.Result
}

// chainLink is where a launch sits in its pi-session's chain of
// relaunches: the session it continues ("" for the first launch) and the
// handoffs of the sessions before it.
type chainLink struct {
	continues      string
	handoffsBefore int
}

// howEnded classifies a launch's end for its record (status.EndExit,
// EndInterrupt or EndSignal) and names the signal that killed pi. pi that
// exited, whatever its status, exited; killed by SIGINT (Ctrl+C) or by the
// stop request pi-session received and passed on, it was interrupted;
// killed by any other signal, it crashed.
func howEnded(res supervisor.Result) (by, signal string) {
	if res.Signal == 0 {
		return status.EndExit, ""
	}
	signal = unix.SignalName(res.Signal)
	if signal == "" {
		signal = "signal " + strconv.Itoa(int(res.Signal))
	}
	if res.Signal == syscall.SIGINT || res.Signal == res.Interrupted {
		return status.EndInterrupt, signal
	}
	return status.EndSignal, signal
}

// recordEnd gives every supervised pi a status record with its end. The
// sessions pi said hello for get pi's exit status and how it ended, and
// an end time unless pi crashed (killed by a signal nobody asked for); a
// record another live process took over meanwhile is left alone
// (status.Update). A pi that never said hello (its extension did not
// connect, as in a -p run that ends before it does, a flag pi does not
// know, or no extension at all) gets a record of the supervisor's own,
// launch-<launch id>, since its session id is unknown, with the line of
// its early output that says why it ended, when it failed.
func recordEnd(store *status.Store, l endedLaunch) []error {
	exit := l.res.Status()
	by, sig := howEnded(l.res)
	now := time.Now().UTC()
	end := func(r *status.Record) {
		r.ExitStatus, r.EndedBy, r.ExitSignal = &exit, by, sig
		if r.EndedAt == nil && by != status.EndSignal {
			r.EndedAt = &now
		}
		r.UpdatedAt = now
	}
	var errs []error
	for _, id := range l.sessions {
		if err := store.Update(id, l.pi, end); err != nil {
			errs = append(errs, err)
		}
	}
	if len(l.sessions) > 0 {
		return errs
	}
	err := store.Update("launch-"+l.launchID, l.pi, func(r *status.Record) {
		r.Source, r.Cwd, r.Role = "supervisor", l.cwd, status.RoleMain
		r.WrapperOwned, r.RelaunchMarker, r.Version = true, l.marker, Version()
		r.SetProcess(l.pi)
		r.Continues, r.HandoffsBefore = l.chain.continues, l.chain.handoffsBefore
		end(r)
		if exit != 0 && by == status.EndExit {
			r.ExitNote = earlyNote(l.res.Early)
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

// noteChars bounds a record's exit note.
const noteChars = 160

// earlyNote is the line of pi's early output that says why it ended (see
// meaningfulLine), clipped, its control characters written out; "" when
// pi printed nothing.
func earlyNote(early []byte) string {
	lines := textLines(early)
	if len(lines) == 0 {
		return ""
	}
	return clip.Visible(clip.To(meaningfulLine(lines), noteChars))
}

// textLines is what a terminal would show of b, line by line: escape
// sequences (CSI, OSC, DCS and the other ESC sequences) and control
// characters removed, a carriage return taken as a line end, blank lines
// dropped, each line's surrounding white space trimmed. A sequence cut off
// at the end of b is dropped.
func textLines(b []byte) []string {
	var lines []string
	var cur strings.Builder
	flush := func() {
		if t := strings.TrimSpace(cur.String()); t != "" {
			lines = append(lines, t)
		}
		cur.Reset()
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case c == '\n' || c == '\r':
			flush()
		case c == 0x1b:
			i = escapeEnd(b, i)
		case c == '\t':
			cur.WriteByte(' ')
		case c < 0x20 || c == 0x7f:
		default:
			cur.WriteByte(c)
		}
	}
	flush()
	return lines
}

// escapeEnd returns the index of the last byte of the escape sequence
// starting at b[i] (an ESC), or len(b)-1 when it does not end in b.
func escapeEnd(b []byte, i int) int {
	if i+1 >= len(b) {
		return len(b) - 1
	}
	switch b[i+1] {
	case '[': // CSI: parameters and intermediates, then a final byte 0x40-0x7e
		for j := i + 2; j < len(b); j++ {
			if b[j] >= 0x40 && b[j] <= 0x7e {
				return j
			}
		}
	case ']', 'P', 'X', '^', '_': // OSC, DCS, SOS, PM, APC: up to BEL or ESC \
		for j := i + 2; j < len(b); j++ {
			if b[j] == 0x07 {
				return j
			}
			if b[j] == 0x1b && j+1 < len(b) && b[j+1] == '\\' {
				return j + 1
			}
		}
	default: // ESC with intermediates (0x20-0x2f), then one final byte
		j := i + 1
		for j < len(b) && b[j] >= 0x20 && b[j] <= 0x2f {
			j++
		}
		return min(j, len(b)-1)
	}
	return len(b) - 1
}

// nextLink is the chain link of the launch that relaunches from the one
// that just ended: it continues the session that armed the relaunch
// (armedBy), else the only session pi said hello for, else the
// supervisor's record of a pi that said none; its handoffs before are that
// session's, the one it handed off included.
func nextLink(store *status.Store, cur chainLink, armedBy string, sessions []string, launchID string) chainLink {
	prev := armedBy
	switch {
	case prev != "":
	case len(sessions) == 1:
		prev = sessions[0]
	case len(sessions) == 0:
		prev = "launch-" + launchID
	}
	before := cur.handoffsBefore + 1
	if prev != "" {
		if r, err := store.Read(prev); err == nil {
			before = r.HandoffsBefore + r.HandoffCount + 1
		}
	}
	return chainLink{continues: prev, handoffsBefore: before}
}

// linkChain notes in the record of session prev that next continued it;
// its pending handoff, carried out by the relaunch, is not pending any
// more. A missing record is not made.
func linkChain(store *status.Store, prev, next string) {
	if _, err := store.Read(prev); err != nil {
		return
	}
	store.Patch(prev, func(r *status.Record) {
		r.ContinuedBy = next
		if r.Phase == string(budget.PendingCommit) {
			r.Phase, r.Action = status.PhaseRelaunched, ""
		}
		r.UpdatedAt = time.Time{}
	})
}
