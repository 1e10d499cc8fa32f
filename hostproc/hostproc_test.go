package hostproc

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The tests start a host (this test binary with HOSTPROC_CHILD set) that
// starts processes the way an engine host does, prints their pids, and
// is killed.
func TestMain(m *testing.M) {
	switch os.Getenv("HOSTPROC_CHILD") {
	case "run":
		go Run(exec.Command("sleep", "30"))
		waitForPIDs("sleep")
	case "group":
		cmd := exec.Command("bash", "-c", GroupScript, "t", `sleep 30 & sleep 31 & echo "$$ $!"; wait`)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Stdout = os.Stdout
		go func() {
			runtimeLocked(func() {
				Tie(cmd, syscall.SIGTERM)
				cmd.Run()
			})
		}()
		select {}
	}
	os.Exit(m.Run())
}

// waitForPIDs prints the pids of this process's children named name, once
// there is one, and waits to be killed.
func waitForPIDs(name string) {
	for {
		if pids := children(os.Getpid(), name); len(pids) > 0 {
			fmt.Println(strings.Trim(fmt.Sprint(pids), "[]"))
			select {}
		}
		time.Sleep(time.Millisecond)
	}
}

// children are the pids of pid's children named name (of any of its
// threads: a child belongs to the thread that forked it).
func children(pid int, name string) []int {
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var all []string
	for _, f := range files {
		b, _ := os.ReadFile(f)
		all = append(all, strings.Fields(string(b))...)
	}
	var out []int
	for _, f := range all {
		c, _ := strconv.Atoi(f)
		if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", c)); strings.TrimSpace(string(comm)) == name {
			out = append(out, c)
		}
	}
	return out // a child forked but not yet exec'd has its parent's name: not yet
}

func runs(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// TestKilledHostLeavesNothing: a host dies (SIGKILL); what it started
// with Run, and a GroupScript command with everything that command
// started, end with it.
func TestKilledHostLeavesNothing(t *testing.T) {
	if !Supported() {
		t.Skip("no parent-death signal on this system")
	}
	for _, part := range []string{"run", "group"} {
		t.Run(part, func(t *testing.T) {
			for try := 0; try < 10; try++ {
				cmd := exec.Command(os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), "HOSTPROC_CHILD="+part)
				out, err := cmd.StdoutPipe()
				if err != nil {
					t.Fatal(err)
				}
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				line, err := bufio.NewReader(out).ReadString('\n')
				if err != nil {
					t.Fatalf("the host printed no pids: %v", err)
				}
				var pids []int
				for _, f := range strings.Fields(line) {
					pid, _ := strconv.Atoi(f)
					pids = append(pids, pid)
				}
				cmd.Process.Kill()
				cmd.Wait()
				for _, pid := range pids {
					for k := 0; runs(pid); k++ {
						if k == 2000 {
							syscall.Kill(pid, syscall.SIGKILL)
							t.Fatalf("try %d: pid %d outlived its host by 2 s", try, pid)
						}
						time.Sleep(time.Millisecond)
					}
				}
			}
		})
	}
}

// TestGroupScriptStatus: the script exits as its command does.
func TestGroupScriptStatus(t *testing.T) {
	for _, tt := range []struct {
		command string
		want    int
	}{
		{"true", 0},
		{"exit 3", 3},
		{"echo out; echo err >&2; exit 7", 7},
	} {
		cmd := exec.Command("bash", "-c", GroupScript, "t", tt.command)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		err := Run(cmd)
		var ee *exec.ExitError
		got := 0
		if errors.As(err, &ee) {
			got = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if got != tt.want {
			t.Errorf("%q: exit status %d, want %d", tt.command, got, tt.want)
		}
	}
}

func runtimeLocked(fn func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	fn()
}
