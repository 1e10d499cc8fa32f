package status

import (
	"os"
	"os/exec"
	"runtime"
	"testing"
)

const (
	bootA = "11111111-1111-4111-8111-111111111111"
	bootB = "22222222-2222-4222-8222-222222222222"
)

func TestClassify(t *testing.T) {
	ended := tp(t0)
	for _, tc := range []struct {
		name string
		rec  Record
		p    Process
		boot string
		want State
	}{
		{"same process", Record{PID: 10, StartTicks: 500, BootID: bootA}, Process{PIDAlive, 500}, bootA, Running},
		{"start time differs", Record{PID: 10, StartTicks: 500, BootID: bootA}, Process{PIDAlive, 501}, bootA, PIDReused},
		{"boot differs", Record{PID: 10, StartTicks: 500, BootID: bootA}, Process{PIDAlive, 500}, bootB, PIDReused},
		{"dead, no clean end", Record{PID: 10, StartTicks: 500, BootID: bootA}, Process{State: PIDDead}, bootA, Crashed},
		{"dead after a reboot", Record{PID: 10, StartTicks: 500, BootID: bootA}, Process{State: PIDDead}, bootB, Crashed},
		{"dead, clean end", Record{PID: 10, EndedAt: ended}, Process{State: PIDDead}, bootA, Exited},
		{"dead, exited non-zero", Record{PID: 10, EndedAt: ended, EndedBy: EndExit, ExitStatus: ptr(3)}, Process{State: PIDDead}, bootA, Exited},
		{"dead, interrupted", Record{PID: 10, EndedAt: ended, EndedBy: EndInterrupt, ExitStatus: ptr(130)}, Process{State: PIDDead}, bootA, Interrupted},
		{"dead, killed: no end recorded", Record{PID: 10, EndedBy: EndSignal, ExitStatus: ptr(137)}, Process{State: PIDDead}, bootA, Crashed},
		{"ended, process still alive", Record{PID: 10, StartTicks: 500, EndedAt: ended}, Process{PIDAlive, 500}, bootA, Exited},
		{"eperm, same identity", Record{PID: 10, StartTicks: 500, BootID: bootA}, Process{PIDDenied, 500}, bootA, Running},
		{"eperm, other start", Record{PID: 10, StartTicks: 500, BootID: bootA}, Process{PIDDenied, 9}, bootA, PIDReused},
		{"eperm, nothing to compare", Record{PID: 10}, Process{State: PIDDenied}, bootA, Unknown},
		{"alive, record without identity", Record{PID: 10}, Process{PIDAlive, 700}, bootA, Running},
		{"alive, start unreadable", Record{PID: 10, StartTicks: 500, BootID: bootA}, Process{State: PIDAlive}, bootA, Running},
		{"boot id unknown now", Record{PID: 10, StartTicks: 500, BootID: bootA}, Process{PIDAlive, 500}, "", Running},
		{"probe failed", Record{PID: 10, StartTicks: 500}, Process{}, bootA, Unknown},
		{"no pid", Record{}, Process{State: PIDDead}, bootA, Unknown},
	} {
		if got := Classify(&tc.rec, tc.p, tc.boot); got != tc.want {
			t.Errorf("%s: Classify(%+v, %+v, %q) = %q, want %q", tc.name, tc.rec, tc.p, tc.boot, got, tc.want)
		}
	}
}

func TestParseStartTicks(t *testing.T) {
	for _, tc := range []struct {
		line string
		want uint64
		ok   bool
	}{
		{"4242 (pi) S 1 4242 4242 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 987654 1000 10 18446744073709551615", 987654, true},
		{"4242 (a) (b) c) R 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 123 9", 123, true},
		{"4242 (x y) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 77 9 9 9", 77, true},
		{"4242 (pi) S 1 2 3", 0, false},
		{"no parens at all", 0, false},
		{"4242 (pi) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 -5 9", 0, false},
	} {
		got, err := parseStartTicks([]byte(tc.line))
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseStartTicks(%q) = %d, %v; want %d, ok=%v", tc.line, got, err, tc.want, tc.ok)
		}
	}
}

func requireLinux(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("start times and boot ids come from /proc, which only Linux has")
	}
}

func TestSystemTable(t *testing.T) {
	requireLinux(t)
	self, err := Identify(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if self.StartTicks == 0 || len(self.BootID) != 36 || self.Start.IsZero() {
		t.Errorf("Identify(self) = %+v; want start ticks, a boot id and a start time", self)
	}
	table := System()
	if got := table.BootID(); got != self.BootID {
		t.Errorf("BootID() = %q, Identify says %q", got, self.BootID)
	}
	if got := table.Lookup(os.Getpid()); got != (Process{PIDAlive, self.StartTicks}) {
		t.Errorf("Lookup(self) = %+v, want alive with start %d", got, self.StartTicks)
	}
	rec := &Record{}
	rec.SetProcess(self)
	if got := Classify(rec, table.Lookup(os.Getpid()), table.BootID()); got != Running {
		t.Errorf("Classify(self) = %q, want running", got)
	}
	rec.StartTicks++
	if got := Classify(rec, table.Lookup(os.Getpid()), table.BootID()); got != PIDReused {
		t.Errorf("Classify(self with another start time) = %q, want pid reused", got)
	}
	dead := deadPID(t)
	if got := table.Lookup(dead); got.State != PIDDead {
		t.Errorf("Lookup(reaped child %d) = %+v, want dead", dead, got)
	}
	for _, pid := range []int{0, -1} {
		if got := table.Lookup(pid); got.State != PIDUnknown {
			t.Errorf("Lookup(%d) = %+v, want unknown (never signal a group)", pid, got)
		}
	}
}

// The real EPERM answer needs a process owned by someone else, which root
// does not have: root may signal everything.
func TestSystemTableEPERM(t *testing.T) {
	requireLinux(t)
	if os.Geteuid() == 0 {
		t.Skip("running as root: kill(1, 0) succeeds, so EPERM cannot be observed; the pure tests cover PIDDenied")
	}
	if got := System().Lookup(1); got.State != PIDDenied || got.StartTicks == 0 {
		t.Errorf("Lookup(1) as uid %d = %+v, want eperm with a start time", os.Geteuid(), got)
	}
}

// deadPID returns the pid of a child that has exited and been reaped.
func deadPID(t testing.TB) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func ptr[T any](v T) *T { return &v }
