package main

import (
	"errors"
	"fmt"
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
	err = execFound(inv, pi, args)
	code := exitOSErr
	if errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.ENOEXEC) {
		code = exitNotExec
	}
	return inv.errorf(code, "%v", err)
}

// execFound execs the pi findPi found with args; it returns only on
// failure.
func execFound(inv *invocation, pi string, args []string) error {
	err := syscall.Exec(pi, append([]string{pi}, args...), inv.env.List())
	return fmt.Errorf("exec %s: %w", pi, err)
}
