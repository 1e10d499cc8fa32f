//go:build !linux

package hostproc

import "syscall"

const supported = false

func tie(*syscall.SysProcAttr, syscall.Signal) {}
