package pitest

import (
	"bytes"
	"os"
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
