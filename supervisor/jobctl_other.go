//go:build !(linux && (amd64 || arm64 || riscv64 || loong64 || ppc64 || ppc64le || s390x))

package supervisor

import "syscall"

// stopJob cannot stop pi-session with certainty here (see the Linux
// version), so it does not stop at all: the caller resumes pi at once, as
// where no job-control shell could continue pi-session.
func stopJob(sig syscall.Signal) {}
