// Package owndir makes and checks the directories pi-session writes into by the rule its relaunch marker directory follows: yours, writable by no one else, and a symbolic link only after a warning.
package owndir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// ErrUntrusted marks a directory someone else could write to: owned by
// another user, or writable by its group or by others (sticky bit or
// not). Files there could have been put there, or replaced, by them.
var ErrUntrusted = errors.New("owndir: not trusted")

// ErrNotDir marks a path that names something else than a directory.
var ErrNotDir = errors.New("owndir: not a directory")

// Error is a refused directory (or file, for CheckFile): which, why, and
// how to fix it.
type Error struct {
	Dir  string // the path refused
	What string // "writable by others (mode 0777)"
	Fix  string
	Kind error // ErrUntrusted or ErrNotDir
}

func (e *Error) Error() string {
	return fmt.Sprintf("owndir: %s is %s: refused; fix: %s", e.Dir, e.What, e.Fix)
}

func (e *Error) Unwrap() error { return e.Kind }

// Make creates dir with its missing parents (mode 0700) and checks dir
// and the levels-1 directories above it (the part of the path pi-session
// owns: 2 for <repo>/.ai-work/handoffs, 1 for a directory named by a
// variable), by the rule of Check. The directories above those are the
// user's business (a repository, a home) and are not checked.
func Make(dir string, levels int) (warning string, err error) {
	return walk(dir, levels, true)
}

// Check checks dir and the levels-1 directories above it without
// creating anything (a missing one is no problem, nor is anything below
// it): each must be a directory owned by this user that neither its group
// nor others can write to, or an *Error (ErrUntrusted, ErrNotDir) says
// which is not, why and how to fix it. A component that is a symbolic
// link is followed when what it points to passes; the warning names the
// link and where it leads, the first time this process meets it (later
// calls return ""), as a link someone else planted there would make
// pi-session write into a place of their choosing.
func Check(dir string, levels int) (warning string, err error) {
	return walk(dir, levels, false)
}

func walk(dir string, levels int, create bool) (string, error) {
	dir = filepath.Clean(dir)
	chain := []string{dir}
	for len(chain) < levels {
		up := filepath.Dir(chain[0])
		if up == chain[0] {
			break
		}
		chain = append([]string{up}, chain...)
	}
	if create {
		// The parents above the checked part are made as MkdirAll would.
		if top := filepath.Dir(chain[0]); top != chain[0] {
			if err := os.MkdirAll(top, 0o700); err != nil {
				return "", fmt.Errorf("owndir: %w", err)
			}
		}
	}
	var warnings []string
	for _, c := range chain {
		fi, err := os.Lstat(c)
		if errors.Is(err, fs.ErrNotExist) {
			if !create {
				break
			}
			if err := os.Mkdir(c, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
				return "", fmt.Errorf("owndir: %w", err)
			}
			fi, err = os.Lstat(c)
		}
		if err != nil {
			return "", fmt.Errorf("owndir: %w", err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			target, _ := filepath.EvalSymlinks(c)
			if fi, err = os.Stat(c); err != nil {
				return "", &Error{Dir: c, What: fmt.Sprintf("a symbolic link that leads nowhere usable (%v)", unwrapPath(err)), Fix: "remove the link, or make it point at a directory of your own", Kind: ErrNotDir}
			}
			if err := trusted(c, fi, " (a symbolic link to "+target+")"); err != nil {
				return "", err
			}
			if first(c, target) {
				warnings = append(warnings, fmt.Sprintf("%s is a symbolic link to %s: pi-session writes there; if you did not make the link, remove it", c, target))
			}
			continue
		}
		if err := trusted(c, fi, ""); err != nil {
			return "", err
		}
	}
	w := ""
	for i, s := range warnings {
		if i > 0 {
			w += "; "
		}
		w += s
	}
	return w, nil
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// trusted refuses what is not a directory, one owned by another user,
// and one its group or others can write to.
func trusted(path string, fi fs.FileInfo, link string) error {
	if !fi.IsDir() {
		return &Error{Dir: path, What: "not a directory" + link, Fix: "move it away, or point pi-session elsewhere", Kind: ErrNotDir}
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return &Error{Dir: path, What: fmt.Sprintf("owned by uid %d, not by you (uid %d)%s, so its owner decides what is in it", st.Uid, os.Geteuid(), link),
			Fix: "remove it if you do not know who made it, or use a directory of your own", Kind: ErrUntrusted}
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		who := "others"
		if perm&0o002 == 0 {
			who = "its group"
		}
		return &Error{Dir: path, What: fmt.Sprintf("writable by %s (mode %04o)%s, so they could put files there or replace pi-session's", who, perm, link),
			Fix: "chmod go-w " + path, Kind: ErrUntrusted}
	}
	return nil
}

// CheckFile applies the rule to a file pi-session wrote and reads back (a
// handoff's sidecar): fi, its Lstat or the Stat of an open file, must be
// a regular file owned by this user that neither its group nor others
// can write to; otherwise someone else could have written it, and an
// *Error (ErrUntrusted) says so.
func CheckFile(path string, fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return &Error{Dir: path, What: "not a regular file", Fix: "remove it", Kind: ErrNotDir}
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return &Error{Dir: path, What: fmt.Sprintf("owned by uid %d, not by you (uid %d), so they could have written it", st.Uid, os.Geteuid()),
			Fix: "remove it if you do not know who wrote it", Kind: ErrUntrusted}
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		who := "others"
		if perm&0o002 == 0 {
			who = "its group"
		}
		return &Error{Dir: path, What: fmt.Sprintf("writable by %s (mode %04o), so they could have written it", who, perm),
			Fix: "chmod go-w " + path, Kind: ErrUntrusted}
	}
	return nil
}

var warned sync.Map // "link\x00target" -> true

// first reports whether the link to target is met for the first time.
func first(link, target string) bool {
	_, seen := warned.LoadOrStore(link+"\x00"+target, true)
	return !seen
}
