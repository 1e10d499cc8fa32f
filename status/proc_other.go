//go:build !linux

package status

import (
	"errors"

	"golang.org/x/sys/unix"
)

// System returns the running machine's process table. Without /proc it
// knows only whether a pid is alive: start times and boot ids are unknown,
// so a reused pid reads as running.
func System() ProcessTable { return killTable{} }

type killTable struct{}

func (killTable) Lookup(pid int) Process {
	if pid <= 0 {
		return Process{}
	}
	switch err := unix.Kill(pid, 0); {
	case err == nil:
		return Process{State: PIDAlive}
	case errors.Is(err, unix.ESRCH):
		return Process{State: PIDDead}
	case errors.Is(err, unix.EPERM):
		return Process{State: PIDDenied}
	}
	return Process{}
}

func (killTable) BootID() string { return "" }

// Identify returns what is known of process pid here: only the pid.
func Identify(pid int) (Identity, error) { return Identity{PID: pid}, nil }
