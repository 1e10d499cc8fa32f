package main

import (
	"errors"
	"syscall"
)

// execPi replaces pi-session with pi for one-shot pi commands, unsupervised.
// It returns only on failure.
func execPi(inv *invocation, args []string) int {
	pi, err := findPi(inv.env)
	if err != nil {
		var pe *piError
		errors.As(err, &pe)
		return inv.errorf(pe.code, "%s", pe.msg)
	}
	err = syscall.Exec(pi, append([]string{pi}, args...), inv.env.List())
	code := exitOSErr
	if errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.ENOEXEC) {
		code = exitNotExec
	}
	return inv.errorf(code, "exec %s: %v", pi, err)
}
