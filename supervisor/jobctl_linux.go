//go:build linux && (amd64 || arm64 || riscv64 || loong64 || ppc64 || ppc64le || s390x)

package supervisor

import (
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// kernelSigaction has room for the kernel's struct sigaction on the
// architectures this file builds for, whose first word is the handler.
// Only whole values read from the kernel are written back, so the rest of
// the layout does not matter.
type kernelSigaction struct {
	handler uintptr
	_       [7]uintptr
}

const sigIgn = 1 // SIG_IGN; SIG_DFL is 0

func rtSigaction(sig syscall.Signal, act, old *kernelSigaction) syscall.Errno {
	_, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig),
		uintptr(unsafe.Pointer(act)), uintptr(unsafe.Pointer(old)), 8, 0, 0)
	return e
}

// stopJob stops pi-session's job the way vim and less do for Ctrl+Z: every
// other process of pi-session's process group gets sig (a wrapper such as
// make or a shell script is part of the job the shell sees), then
// pi-session stops itself with sig's default action. It returns once
// pi-session is continued, or at once when the kernel discards the stop
// because nothing could continue the group (it is orphaned: no job-control
// shell started it, as for a tmux pane's command).
//
// pi-session's own stop must be certain before anything continues pi, and
// kill(2) on oneself does not wait for a multi-threaded process to stop. So
// the signal to the group is ignored by pi-session (SIG_IGN drops it at
// sending), and pi-session then sends sig to the calling thread alone with
// the default action: the kernel acts on a thread's own pending signal
// before the system call returns, so tgkill comes back only after the stop
// has ended or was discarded. The thread is locked for the duration and Go's
// own handler is put back afterwards.
func stopJob(sig syscall.Signal) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var old kernelSigaction
	ign := kernelSigaction{handler: sigIgn}
	if rtSigaction(sig, &ign, &old) != 0 {
		return
	}
	defer rtSigaction(sig, &old, nil)
	// The signal must reach this thread even when pi-session inherited it
	// blocked (environments that block SIGTTOU for their children exist).
	var unblock, mask unix.Sigset_t
	unblock.Val[(sig-1)/64] |= 1 << ((uint(sig) - 1) % 64)
	if unix.PthreadSigmask(unix.SIG_UNBLOCK, &unblock, &mask) == nil {
		defer unix.PthreadSigmask(unix.SIG_SETMASK, &mask, nil)
	}
	unix.Kill(0, sig)
	var dfl kernelSigaction
	rtSigaction(sig, &dfl, nil)
	unix.Tgkill(unix.Getpid(), unix.Gettid(), unix.Signal(sig))
}
