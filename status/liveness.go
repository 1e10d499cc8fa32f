package status

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// State is what a reader can say about a recorded session.
type State string

// States of a session, from its record and the process table.
const (
	Running     State = "running"     // the recorded process is alive and is the same process
	Exited      State = "exited"      // the session's end is recorded (endedAt is set): a bye, or pi exited, whatever its status
	Interrupted State = "interrupted" // pi ended on Ctrl+C or a stop request pi-session passed on
	Crashed     State = "crashed"     // pi was killed by a signal nobody asked for, or its pid is dead without a recorded end
	PIDReused   State = "pid reused"  // the pid is alive, but its start time or boot differs
	Unknown     State = "unknown"     // no usable pid, or the process table would not say (EPERM etc.)
	Corrupt     State = "corrupt"     // the record could not be read or parsed
	// Mismatched: the record's sessionId is not the one its file name says
	// (written by hand, or by a tool that got the name wrong). Writers
	// leave it alone.
	Mismatched State = "mismatched"
)

// PIDState is the answer of kill(pid, 0).
type PIDState int

// Answers about one pid.
const (
	PIDUnknown PIDState = iota // not asked, or an error other than ESRCH/EPERM
	PIDAlive                   // the signal could be sent
	PIDDead                    // ESRCH: no such process
	PIDDenied                  // EPERM: a process exists, owned by another user
)

func (s PIDState) String() string {
	switch s {
	case PIDAlive:
		return "alive"
	case PIDDead:
		return "dead"
	case PIDDenied:
		return "eperm"
	}
	return "unknown"
}

// Process is what the process table says about one pid.
type Process struct {
	State      PIDState
	StartTicks uint64 // start time in clock ticks since boot; 0 when unreadable
}

// ProcessTable answers liveness questions. System is the real one; tests
// pass fakes.
type ProcessTable interface {
	Lookup(pid int) Process
	BootID() string // the running kernel's boot id; "" when unknown
}

// Identity identifies a process across pid reuse: its pid, its start time
// since boot and the boot it belongs to.
type Identity struct {
	PID        int
	StartTicks uint64
	BootID     string
	Start      time.Time // wall-clock estimate, zero when unknown; not used for matching
}

// SetProcess records id as the session's process.
func (r *Record) SetProcess(id Identity) {
	r.PID, r.StartTicks, r.BootID = id.PID, id.StartTicks, id.BootID
	r.ProcessStart = nil
	if !id.Start.IsZero() {
		t := id.Start.UTC()
		r.ProcessStart = &t
	}
}

// Classify decides the state of a recorded session from what the process
// table said about its pid and the current boot id ("" when unknown). The
// start time comes from /proc, not from a wall clock, so moving the clock
// does not make a live process look reused.
func Classify(r *Record, p Process, bootID string) State {
	if r.EndedAt != nil {
		if r.EndedBy == EndInterrupt {
			return Interrupted
		}
		return Exited
	}
	if r.PID <= 0 {
		return Unknown
	}
	switch p.State {
	case PIDDead:
		return Crashed
	case PIDAlive, PIDDenied:
		if r.BootID != "" && bootID != "" && r.BootID != bootID {
			return PIDReused
		}
		if r.StartTicks != 0 && p.StartTicks != 0 {
			if r.StartTicks != p.StartTicks {
				return PIDReused
			}
			return Running
		}
		if p.State == PIDAlive {
			return Running // nothing to compare: the best answer there is
		}
	}
	return Unknown
}

// parseStartTicks reads field 22 of a /proc/<pid>/stat line. The command
// name (field 2) is in parentheses and may itself hold spaces and
// parentheses, so fields are counted from the last ')'.
func parseStartTicks(stat []byte) (uint64, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("status: malformed /proc stat line")
	}
	fields := strings.Fields(string(stat[i+1:])) // fields 3, 4, ...
	if len(fields) < 20 {
		return 0, fmt.Errorf("status: short /proc stat line")
	}
	ticks, err := strconv.ParseUint(fields[22-3], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("status: /proc stat start time: %w", err)
	}
	return ticks, nil
}
