package main

import (
	"syscall"
	"testing"

	"github.com/pi-session/pi-session/supervisor"
)

func TestKilledLine(t *testing.T) {
	for _, tt := range []struct {
		res  supervisor.Result
		want string
	}{
		{supervisor.Result{Signal: syscall.SIGKILL}, "pi was killed (SIGKILL)"},
		{supervisor.Result{Signal: syscall.SIGSEGV, CoreDumped: true}, "pi was killed (SIGSEGV, core dumped)"},
		{supervisor.Result{Signal: syscall.Signal(40)}, "pi was killed (signal 40)"},
	} {
		if got := killedLine(tt.res); got != tt.want {
			t.Errorf("killedLine(%+v) = %q, want %q", tt.res, got, tt.want)
		}
	}
}
