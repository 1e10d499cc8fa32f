package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi-session/pi-session/hooks"
	"github.com/pi-session/pi-session/marker"
	"github.com/pi-session/pi-session/supervisor"
	"github.com/rogpeppe/go-internal/testscript"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"pi-session": func() {
			os.Exit(run(context.Background(), os.Args, os.Environ(), os.Stdin, os.Stdout, os.Stderr))
		},
		"fakepi-impl": func() { os.Exit(fakePi()) },
	})
}

func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			// fakepi is a script, not a hard link of the test binary, so
			// pi-session does not take it for itself.
			bin := filepath.Join(env.WorkDir, ".fakebin")
			if err := os.MkdirAll(bin, 0o755); err != nil {
				return err
			}
			script := "#!/bin/sh\nexec fakepi-impl \"$@\"\n"
			if err := os.WriteFile(filepath.Join(bin, "fakepi"), []byte(script), 0o755); err != nil {
				return err
			}
			env.Setenv("PATH", bin+string(filepath.ListSeparator)+env.Getenv("PATH"))
			env.Setenv("PI_SESSION_PI", "fakepi")
			env.Setenv("HOME", filepath.Join(env.WorkDir, "home"))
			env.Setenv("PI_CODING_AGENT_DIR", filepath.Join(env.WorkDir, "agent"))
			env.Setenv("FAKEPI_LOG", filepath.Join(env.WorkDir, "launches.jsonl"))
			// Scripts that compare pi's arguments see only the user's;
			// extension.txtar tests what pi-session adds.
			env.Setenv("PI_SESSION_EXTENSION", "off")
			return nil
		},
		Condition: func(cond string) (bool, error) {
			if cond == "root" { // permissions do not stop root
				return os.Geteuid() == 0, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"expectcode": expectCode,
			"launches":   countLaunches,
			"markers":    countMarkers,
		},
	})
}

// expectcode N prog args... runs prog and requires exit status N.
func expectCode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: expectcode N prog [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("expectcode: %v", err)
	}
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	if err != nil {
		msg := err.Error()
		if _, err := fmt.Sscanf(msg, "exit status %d", &got); err != nil {
			ts.Fatalf("expectcode: %s: %v", args[1], msg)
		}
	}
	if got != want {
		ts.Fatalf("%s exited with status %d, want %d", args[1], got, want)
	}
}

// launches N requires that fakepi ran N times.
func countLaunches(ts *testscript.TestScript, neg bool, args []string) {
	want, _ := strconv.Atoi(args[0])
	got := 0
	if f, err := os.Open(ts.Getenv("FAKEPI_LOG")); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			got++
		}
		f.Close()
	}
	if got != want {
		ts.Fatalf("fakepi ran %d times, want %d", got, want)
	}
}

// markers N requires N marker files in the marker directory.
func countMarkers(ts *testscript.TestScript, neg bool, args []string) {
	want, _ := strconv.Atoi(args[0])
	dir := filepath.Join(ts.Getenv("PI_CODING_AGENT_DIR"), "relaunch")
	if d := ts.Getenv("PI_SESSION_MARKER_DIR"); d != "" {
		dir = d
	}
	ents, _ := os.ReadDir(dir)
	got := 0
	for _, e := range ents {
		if _, _, ok := marker.ParseName(e.Name()); ok {
			got++
		}
	}
	if got != want {
		ts.Fatalf("%d markers in %s, want %d", got, dir, want)
	}
}

// fakePi stands in for pi in the CLI scripts. It logs each launch to
// FAKEPI_LOG ({"n","args","cwd"}), and on its first FAKEPI_MARKERS launches
// writes a relaunch marker at the path the wrapper assigned, pointing at
// FAKEPI_HANDOFF (and FAKEPI_LAUNCH_PROMPT). FAKEPI_ARM=socket asks the
// wrapper to write it instead, over PI_SESSION_SOCKET as the extension does
// (FAKEPI_HELLO_ROLE sets the session's role, default main).
// FAKEPI_MARKER_RAW writes those bytes as the marker (with the octal mode
// FAKEPI_MARKER_MODE, if set); FAKEPI_DESCENDANT makes a child process try
// to arm it; FAKEPI_EXIT and FAKEPI_SIGNAL (a signal name without SIG)
// choose how it ends (only on launch FAKEPI_END_ON, when set), after it
// writes FAKEPI_STDERR (Go escapes allowed) to stderr.
func fakePi() int {
	args := os.Args[1:]
	if len(args) == 1 && args[0] == "--version" {
		fmt.Println("fakepi 1.6.0")
		return 0
	}
	if os.Getenv("FAKEPI_ROLE") == "descendant" {
		if os.Getenv("FAKEPI_ARM") == "socket" {
			fmt.Fprintf(os.Stderr, "descendant: %v\n", armOverSocket())
			return 0
		}
		_, err := marker.AssignmentFromEnv(os.Getenv, os.Getppid())
		fmt.Fprintf(os.Stderr, "descendant: %v\n", err)
		return 0
	}
	n := logLaunch(args)
	fmt.Printf("fakepi launch %d\n", n)
	want, _ := strconv.Atoi(os.Getenv("FAKEPI_MARKERS"))
	if n <= want {
		if err := fakeMarker(); err != nil {
			fmt.Fprintf(os.Stderr, "fakepi: %v\n", err)
			return 2
		}
	}
	if msg := os.Getenv("FAKEPI_STDERR"); msg != "" {
		if u, err := strconv.Unquote(`"` + msg + `"`); err == nil {
			msg = u // Go escapes: \n, \x1b, \xff
		}
		fmt.Fprint(os.Stderr, msg)
	}
	if on := os.Getenv("FAKEPI_END_ON"); on != "" && on != strconv.Itoa(n) {
		os.Setenv("FAKEPI_SIGNAL", "")
		os.Setenv("FAKEPI_EXIT", "")
	}
	if name := os.Getenv("FAKEPI_SIGNAL"); name != "" {
		sig := unix.SignalNum("SIG" + name)
		signal.Reset(sig)
		syscall.Kill(os.Getpid(), sig)
		select {}
	}
	code, _ := strconv.Atoi(os.Getenv("FAKEPI_EXIT"))
	return code
}

func logLaunch(args []string) int {
	path := os.Getenv("FAKEPI_LOG")
	n := 1
	if b, err := os.ReadFile(path); err == nil {
		n += strings.Count(string(b), "\n")
	}
	cwd, _ := os.Getwd()
	if args == nil {
		args = []string{}
	}
	line, _ := json.Marshal(map[string]any{"n": n, "args": args, "cwd": cwd})
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err == nil {
		f.Write(append(line, '\n'))
		f.Close()
	}
	return n
}

// armOverSocket arms the relaunch through the wrapper's engine host.
func armOverSocket() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	role := os.Getenv("FAKEPI_HELLO_ROLE")
	if role == "" {
		role = hooks.RoleMain
	}
	cwd, _ := os.Getwd()
	c, err := hooks.Dial(ctx, os.Getenv(hooks.EnvSocket), hooks.Hello{
		Client: "extension", PID: os.Getpid(), SessionID: "01a22b91-5f2d-74b1-9cd8-17718871d66e",
		Cwd: cwd, Role: role, Mode: "print", Headless: true,
	})
	if err != nil {
		return fmt.Errorf("arm: %w", err)
	}
	defer c.Bye(ctx)
	p := supervisor.ArmParams{Handoff: os.Getenv("FAKEPI_HANDOFF"), Cwd: os.Getenv("FAKEPI_MARKER_CWD")}
	if lp := os.Getenv("FAKEPI_LAUNCH_PROMPT"); lp != "" {
		p.LaunchPrompt = &lp
	}
	res, _, err := c.Call(ctx, "supervisor.armRelaunch", p, nil)
	if err != nil {
		return fmt.Errorf("arm refused: %w", err)
	}
	fmt.Fprintf(os.Stderr, "fakepi: armed %s\n", res)
	return nil
}

func fakeMarker() error {
	if os.Getenv("FAKEPI_DESCENDANT") != "" {
		c := exec.Command("fakepi-impl")
		c.Env = append(os.Environ(), "FAKEPI_ROLE=descendant")
		c.Stdout, c.Stderr = os.Stdout, os.Stderr
		return c.Run()
	}
	if os.Getenv("FAKEPI_ARM") == "socket" {
		if err := armOverSocket(); err != nil {
			fmt.Fprintf(os.Stderr, "fakepi: %v\n", err)
		}
		return nil
	}
	a, err := marker.AssignmentFromEnv(os.Getenv, os.Getppid())
	if err != nil {
		return err
	}
	if raw := os.Getenv("FAKEPI_MARKER_RAW"); raw != "" {
		if err := os.WriteFile(a.Path, []byte(raw), 0o600); err != nil {
			return err
		}
		if mode, err := strconv.ParseUint(os.Getenv("FAKEPI_MARKER_MODE"), 8, 32); err == nil {
			return os.Chmod(a.Path, os.FileMode(mode))
		}
		return nil
	}
	cwd := os.Getenv("FAKEPI_MARKER_CWD")
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	m := marker.Marker{Cwd: cwd, Handoff: os.Getenv("FAKEPI_HANDOFF")}
	if lp := os.Getenv("FAKEPI_LAUNCH_PROMPT"); lp != "" {
		m.LaunchPrompt = &lp
	}
	return marker.WriteAssigned(a, m)
}
