package main

// pi-session's own exit statuses, distinct from pi's usual 0, 1 and 128+n.
// They follow sysexits.h and the shell's 126/127.
const (
	exitUsage      = 64  // bad arguments to a pi-session command
	exitInternal   = 70  // a bug in pi-session
	exitOSErr      = 71  // the system refused: PTY, fork, pipes
	exitCantCreate = 73  // a state directory cannot be created
	exitConfig     = 78  // invalid configuration in the environment
	exitNotExec    = 126 // pi found but cannot be executed
	exitNotFound   = 127 // pi not found
	exitSignalBase = 128 // 128+n: pi died of signal n, or pi-session was asked to stop by n
)
