package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// piError is a failure to find a runnable pi, with pi-session's exit code.
type piError struct {
	code int
	msg  string
}

func (e *piError) Error() string { return e.msg }

// findPi resolves the real pi: PI_SESSION_PI (a path, or a name looked up on
// PATH), else "pi" on PATH. pi-session itself is skipped, so that
// `alias pi=pi-session` or a pi -> pi-session symlink cannot recurse.
func findPi(env *environ) (string, error) {
	self := selfInfo()
	name, explicit := env.Lookup("PI_SESSION_PI")
	if !explicit || name == "" {
		name, explicit = "pi", false
	}
	origin := "pi on PATH"
	if explicit {
		origin = fmt.Sprintf("PI_SESSION_PI=%q", name)
	}
	if strings.Contains(name, "/") {
		p, err := filepath.Abs(name)
		if err != nil {
			return "", &piError{exitConfig, fmt.Sprintf("%s: %v", origin, err)}
		}
		fi, err := os.Stat(p)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return "", &piError{exitNotFound, fmt.Sprintf("%s: no such file", origin)}
		case err != nil:
			return "", &piError{exitNotExec, fmt.Sprintf("%s: %v", origin, err)}
		case fi.IsDir() || fi.Mode().Perm()&0o111 == 0:
			return "", &piError{exitNotExec, fmt.Sprintf("%s: not an executable file", origin)}
		case self != nil && os.SameFile(fi, self):
			return "", &piError{exitConfig, fmt.Sprintf("%s is pi-session itself; point it at the real pi", origin)}
		}
		return p, nil
	}
	sawSelf := false
	for _, dir := range filepath.SplitList(env.Get("PATH")) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		fi, err := os.Stat(p)
		if err != nil || fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
			continue
		}
		if self != nil && os.SameFile(fi, self) {
			sawSelf = true
			continue
		}
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		return p, nil
	}
	if sawSelf {
		return "", &piError{exitNotFound, fmt.Sprintf("%s: the only %q on PATH is pi-session itself; set PI_SESSION_PI to the real pi", origin, name)}
	}
	return "", &piError{exitNotFound, fmt.Sprintf("%s: %q not found on PATH; install pi 1.6 (npm install -g @earendil-works/pi-coding-agent@1.6) or set PI_SESSION_PI", origin, name)}
}

// selfInfo identifies pi-session's own executable, nil when unknown.
func selfInfo() os.FileInfo {
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	fi, err := os.Stat(exe)
	if err != nil {
		return nil
	}
	return fi
}
