package pitest

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
)

// GroupStates lists the processes of process group pgrp with their states
// (the third field of /proc/<pid>/stat: "T" is stopped), read from /proc.
func GroupStates(pgrp int) map[int]string {
	out := map[int]string{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) > 2 && f[2] == strconv.Itoa(pgrp) {
			out[pid] = f[0]
		}
	}
	return out
}

// StatusKB reads a field (VmHWM, VmRSS) of /proc/<pid>/status, in KiB.
func StatusKB(pid int, field string) (int64, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(l, field+":"); ok {
			return strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		}
	}
	return 0, fmt.Errorf("pitest: no %s in /proc/%d/status", field, pid)
}

// PeakMiB runs op once in this process and returns how much its peak
// resident set grew, in MiB (VmHWM after resetting it through
// /proc/self/clear_refs); -1 where that cannot be measured.
func PeakMiB(op func()) float64 {
	runtime.GC()
	debug.FreeOSMemory()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		op()
		return -1
	}
	before, err1 := StatusKB(os.Getpid(), "VmRSS")
	op()
	hwm, err2 := StatusKB(os.Getpid(), "VmHWM")
	if err1 != nil || err2 != nil {
		return -1
	}
	return float64(hwm-before) / 1024
}
