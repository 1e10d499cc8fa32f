package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pi-session/pi-session/paths"
	"golang.org/x/sys/unix"
)

// writeDir is a directory pi or pi-session must be able to write into,
// and the variable that moves it elsewhere.
type writeDir struct {
	what     string // for people: "pi's agent directory (its sessions and settings)"
	dir      string
	variable string
}

// writeDirs lists where pi and pi-session write at every start: pi's
// agent directory (pi's sessions and settings; pi-session's log and
// socket), the relaunch markers' directory and the status records' state
// directory. The last two default to inside the agent directory, which
// PI_CODING_AGENT_DIR then moves with it.
func writeDirs(env *environ) []writeDir {
	moves := func(own string) string {
		if env.Get(own) != "" {
			return own
		}
		return "PI_CODING_AGENT_DIR"
	}
	return []writeDir{
		{"pi's agent directory (its sessions and settings)", paths.AgentDir(env.Get), "PI_CODING_AGENT_DIR"},
		{"the relaunch markers' directory", paths.MarkerDir(env.Get), moves("PI_SESSION_MARKER_DIR")},
		{"the status records' directory", paths.StateDir(env.Get), moves("PI_CONTEXT_BUDGET_STATE_DIR")},
	}
}

// dirProblem is a directory of writeDirs that cannot be written.
type dirProblem struct {
	writeDir
	err error
}

// unwritableDirs checks each of writeDirs with canWrite.
func unwritableDirs(env *environ) []dirProblem {
	var out []dirProblem
	for _, d := range writeDirs(env) {
		if err := canWrite(d.dir); err != nil {
			out = append(out, dirProblem{d, err})
		}
	}
	return out
}

// canWrite says whether files can be created in dir, or, when dir does
// not exist yet, in its nearest existing parent (where it would be made):
// access(2), which says EROFS for a read-only file system too.
func canWrite(dir string) error {
	d, err := nearestDir(dir)
	if err != nil {
		return err
	}
	if err := unix.Access(d, unix.W_OK|unix.X_OK); err != nil {
		return &os.PathError{Op: "write in", Path: d, Err: err}
	}
	return nil
}

// notDirError names a path on the way to a directory that is not one.
type notDirError string

func (e notDirError) Error() string { return string(e) + " is not a directory" }

// nearestDir is dir, or when it does not exist yet its nearest existing
// parent (where it would be made). A file on the way (ENOTDIR) is found
// and named like a missing part.
func nearestDir(dir string) (string, error) {
	d := dir
	for {
		fi, err := os.Stat(d)
		if err == nil {
			if !fi.IsDir() {
				return "", notDirError(d)
			}
			return d, nil
		}
		if !errors.Is(err, os.ErrNotExist) && !errors.Is(err, unix.ENOTDIR) || filepath.Dir(d) == d {
			return "", err
		}
		d = filepath.Dir(d)
	}
}

// dirsFix is one message for every directory of ps: which cannot be
// written and why, then the settings that move them all somewhere
// writable (fixOf).
func dirsFix(ps []dirProblem) string {
	var parts []string
	for i := 0; i < len(ps); {
		// Directories failing the same way (one read-only HOME) share it.
		j, names := i, []string{}
		for ; j < len(ps) && ps[j].err.Error() == ps[i].err.Error(); j++ {
			names = append(names, ps[j].what+" "+ps[j].dir)
		}
		parts = append(parts, fmt.Sprintf("%s (%v)", strings.Join(names, ", "), ps[i].err))
		i = j
	}
	return "cannot write " + strings.Join(parts, "; ") + ": " + fixOf(ps)
}

// fixOf names each setting that moves a directory of ps, once:
// "set X to a writable directory".
func fixOf(ps []dirProblem) string {
	var vars []string
	for _, p := range ps {
		if !slices.Contains(vars, p.variable) {
			vars = append(vars, p.variable)
		}
	}
	if len(vars) == 1 {
		return "set " + vars[0] + " to a writable directory"
	}
	return "set " + strings.Join(vars[:len(vars)-1], ", ") + " and " + vars[len(vars)-1] + " to writable directories"
}
