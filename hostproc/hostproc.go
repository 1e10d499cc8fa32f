// Package hostproc ties the processes an engine host starts to the host's life, so that none outlives a host that dies.
package hostproc

import (
	"os/exec"
	"runtime"
	"syscall"
)

// Tie makes the kernel send sig to cmd's process when the host dies (a
// parent-death signal; on systems without one, Tie does nothing). The
// kernel sends it when the thread that started cmd ends, not only the
// process: start cmd from a goroutine locked to its thread
// (runtime.LockOSThread) that stays locked until Wait has returned, as Run
// does. Only cmd's own process gets sig; see GroupScript for what it
// starts.
func Tie(cmd *exec.Cmd, sig syscall.Signal) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	tie(cmd.SysProcAttr, sig)
}

// Run runs cmd (cmd.Run) tied to the host with SIGKILL, holding the
// calling goroutine on its thread until cmd has exited.
func Run(cmd *exec.Cmd) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	Tie(cmd, syscall.SIGKILL)
	return cmd.Run()
}

// Output is Run's cmd.Output.
func Output(cmd *exec.Cmd) ([]byte, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	Tie(cmd, syscall.SIGKILL)
	return cmd.Output()
}

// GroupScript is a bash script that runs the command in $1 (with bash -c)
// and exits with its status; started as the leader of a process group of
// its own and tied to the host with SIGTERM, it kills its whole group
// (itself, the command and everything the command started that stayed in
// the group) when the host dies. Run it as
//
//	bash -c GroupScript <name> <command>
//
// with Setpgid set. SIGTERM before the trap is set ends the script before
// it starts the command; after, wait returns at once and the trap runs.
const GroupScript = `trap 'kill -KILL 0' TERM; bash -c "$1" & wait $!`

// Supported reports whether Tie has an effect on this system.
func Supported() bool { return supported }
