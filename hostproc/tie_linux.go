package hostproc

import "syscall"

const supported = true

func tie(a *syscall.SysProcAttr, sig syscall.Signal) { a.Pdeathsig = sig }
