package status

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/shirou/gopsutil/v4/host"
	"golang.org/x/sys/unix"
)

// userHZ is the unit of /proc/<pid>/stat's start time: USER_HZ, which the
// kernel fixes at 100 for user space on every architecture pi runs on.
const userHZ = 100

// System returns the running machine's process table.
func System() ProcessTable { return procTable{} }

type procTable struct{}

func (procTable) Lookup(pid int) Process {
	if pid <= 0 {
		return Process{} // kill(0) and kill(-1) would signal groups
	}
	var p Process
	switch err := unix.Kill(pid, 0); {
	case err == nil:
		p.State = PIDAlive
	case errors.Is(err, unix.ESRCH):
		return Process{State: PIDDead}
	case errors.Is(err, unix.EPERM):
		p.State = PIDDenied
	default:
		return Process{}
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return p
	}
	if zombie(b) {
		return Process{State: PIDDead} // exited; its parent has not reaped it yet
	}
	p.StartTicks, _ = parseStartTicks(b)
	return p
}

// zombie reports whether a /proc/<pid>/stat line is of a process that has
// exited (state Z or X) but is not reaped yet.
func zombie(stat []byte) bool {
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X')
}

func (procTable) BootID() string {
	id, _ := bootID()
	return id
}

// Identify returns the identity of process pid: its start time in clock
// ticks since boot (/proc/<pid>/stat field 22) and the boot id. Start is
// estimated from the boot time (gopsutil, which knows container quirks).
func Identify(pid int) (Identity, error) {
	ticks, err := startTicks(pid)
	if err != nil {
		return Identity{}, err
	}
	id := Identity{PID: pid, StartTicks: ticks}
	if id.BootID, err = bootID(); err != nil {
		return Identity{}, err
	}
	if boot, err := host.BootTime(); err == nil && boot > 0 {
		id.Start = time.Unix(int64(boot), 0).Add(time.Duration(ticks) * time.Second / userHZ).UTC()
	}
	return id, nil
}

func startTicks(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("status: %w", err)
	}
	return parseStartTicks(b)
}

func bootID() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", fmt.Errorf("status: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}
