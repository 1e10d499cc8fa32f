package supervisor

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// foreground reports whether pi-session's process group is the foreground
// group of terminal f. A terminal that is not pi-session's controlling
// terminal has no say in job control: it counts as foreground.
func foreground(f *os.File) bool {
	var pgrp int
	err := control(f, func(fd int) (err error) {
		pgrp, err = unix.IoctlGetInt(fd, unix.TIOCGPGRP)
		return err
	})
	return err != nil || pgrp == unix.Getpgrp()
}

// proc is what job control needs to know of one process.
type proc struct {
	pid, ppid, pgrp, session int
	zombie                   bool
}

// orphaned is the kernel's rule for an orphaned process group: no live
// member has a parent in another group of the same session (children of
// init do not count). The kernel discards SIGTSTP, SIGTTIN and SIGTTOU sent
// to an orphaned group, since no job-control shell could continue it.
func orphaned(pgrp int, procs []proc) bool {
	byPID := make(map[int]proc, len(procs))
	for _, p := range procs {
		byPID[p.pid] = p
	}
	for _, p := range procs {
		if p.pgrp != pgrp || p.zombie || p.ppid <= 1 {
			continue
		}
		if parent, ok := byPID[p.ppid]; ok && parent.pgrp != pgrp && parent.session == p.session {
			return false
		}
	}
	return true
}

// orphanedGroup applies orphaned to pi-session's own group and the process
// table in /proc. When /proc cannot be read it answers true: the caller
// then stops waiting for a shell that may not exist.
func orphanedGroup() bool {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	var procs []proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, err := procStat(pid); err == nil {
			procs = append(procs, p)
		}
	}
	return orphaned(unix.Getpgrp(), procs)
}

// procStat reads a process's state, parent, group and session from
// /proc/<pid>/stat.
func procStat(pid int) (proc, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return proc{}, err
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return proc{}, fmt.Errorf("supervisor: malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:])) // state ppid pgrp session ...
	if len(f) < 4 {
		return proc{}, fmt.Errorf("supervisor: short /proc/%d/stat", pid)
	}
	p := proc{pid: pid, zombie: f[0] == "Z" || f[0] == "X"}
	var errs [3]error
	p.ppid, errs[0] = strconv.Atoi(f[1])
	p.pgrp, errs[1] = strconv.Atoi(f[2])
	p.session, errs[2] = strconv.Atoi(f[3])
	for _, err := range errs {
		if err != nil {
			return proc{}, fmt.Errorf("supervisor: malformed /proc/%d/stat", pid)
		}
	}
	return p, nil
}
