package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/pi-session/pi-session/offload"
	"github.com/pi-session/pi-session/pitest"
)

// onPTY runs cmd with a fresh PTY as its terminal, reads everything it
// writes as fast as possible, and returns the bytes read and the wall time
// from start to exit.
func onPTY(b *testing.B, cmd *exec.Cmd) (int64, time.Duration) {
	b.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		b.Fatal(err)
	}
	defer ptmx.Close()
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 50, Cols: 200}); err != nil {
		b.Fatal(err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	tty.Close()
	n, err := io.Copy(io.Discard, ptmx)
	var pe *os.PathError
	if err != nil && !(errors.As(err, &pe) && errors.Is(pe.Err, syscall.EIO)) {
		b.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		b.Fatalf("%v: %v", cmd.Args, err)
	}
	return n, time.Since(start)
}

func bigFile(b *testing.B, size int) string {
	b.Helper()
	p := filepath.Join(b.TempDir(), "big.txt")
	line := []byte(strings.Repeat("0123456789abcdef", 6) + " pi-session passthrough benchmark line\n")
	var buf bytes.Buffer
	for buf.Len() < 1<<20 {
		buf.Write(line)
	}
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	for written := 0; written < size; written += buf.Len() {
		f.Write(buf.Bytes())
	}
	f.Close()
	return p
}

// BenchmarkPassthrough: cat of a 200 MB file on a terminal, through
// pi-session and through script(1), interleaved in the same run; x-script is
// the ratio of the median throughputs (aim: at least 0.9). direct is cat
// alone on the terminal: the PTY's own ceiling on this machine.
func BenchmarkPassthrough(b *testing.B) {
	bin := pitest.Binary(b)
	file := bigFile(b, 200<<20)
	cat, _ := exec.LookPath("cat")
	var ps, sc, direct []float64
	mbps := func(n int64, d time.Duration) float64 { return float64(n) / d.Seconds() / 1e6 }
	for i := 0; i < b.N; i++ {
		c := exec.Command(bin, file)
		c.Env = benchEnv(b, "PI_SESSION_PI="+cat, "PI_SESSION_EXTENSION=off") // cat must not get -e
		ps = append(ps, mbps(onPTY(b, c)))
		sc = append(sc, mbps(onPTY(b, exec.Command("script", "-qfc", cat+" "+file, "/dev/null"))))
		direct = append(direct, mbps(onPTY(b, exec.Command(cat, file))))
	}
	b.ReportMetric(medianF(ps), "pi-session-MB/s")
	b.ReportMetric(medianF(sc), "script-MB/s")
	b.ReportMetric(medianF(direct), "direct-MB/s")
	b.ReportMetric(medianF(ps)/medianF(sc), "x-script")
}

func medianF(xs []float64) float64 {
	sort.Float64s(xs)
	return xs[len(xs)/2]
}

// benchEnv is the environment for pi-session in a benchmark: the real
// product (engine host, bundled extension) with its files in a temporary
// agent dir, never the developer's ~/.pi.
func benchEnv(b *testing.B, extra ...string) []string {
	agent := b.TempDir()
	return append(append(os.Environ(), "PI_CODING_AGENT_DIR="+agent, "HOME="+agent), extra...)
}

func median(ds []time.Duration) time.Duration {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2]
}

// BenchmarkStartup: the latency pi-session adds around a trivial child
// (true), on a terminal (PTY, session leader) and on pipes, against the
// child alone measured in the same run (aim: at most 5 ms).
func BenchmarkStartup(b *testing.B) {
	bin := pitest.Binary(b)
	truePath, _ := exec.LookPath("true")
	env := benchEnv(b, "PI_SESSION_PI="+truePath)
	const runs = 100
	for _, mode := range []string{"pty", "pipes"} {
		b.Run(mode, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				var alone, wrapped []time.Duration
				for r := 0; r < runs; r++ {
					for _, withSession := range []bool{false, true} {
						var c *exec.Cmd
						if withSession {
							c = exec.Command(bin)
							c.Env = env
						} else {
							c = exec.Command(truePath)
						}
						var d time.Duration
						if mode == "pty" {
							_, d = onPTY(b, c)
						} else {
							start := time.Now()
							if out, err := c.CombinedOutput(); err != nil {
								b.Fatalf("%v: %v %s", c.Args, err, out)
							}
							d = time.Since(start)
						}
						if withSession {
							wrapped = append(wrapped, d)
						} else {
							alone = append(alone, d)
						}
					}
				}
				ma, mw := median(alone), median(wrapped)
				b.ReportMetric(float64(ma.Microseconds())/1000, "child-ms")
				b.ReportMetric(float64(mw.Microseconds())/1000, "wrapped-ms")
				b.ReportMetric(float64((mw-ma).Microseconds())/1000, "added-ms")
			}
		})
	}
}

// BenchmarkIdleMemory: resident memory of pi-session (and of its PTY session
// leader) while pi idles (aim: at most 20 MiB for the supervisor).
func BenchmarkIdleMemory(b *testing.B) {
	bin := pitest.Binary(b)
	sleep, _ := exec.LookPath("sleep")
	for i := 0; i < b.N; i++ {
		ptmx, tty, err := pty.Open()
		if err != nil {
			b.Fatal(err)
		}
		c := exec.Command(bin, "2")
		c.Env = benchEnv(b, "PI_SESSION_PI="+sleep, "PI_SESSION_EXTENSION=off") // sleep must not get -e
		c.Stdin, c.Stdout, c.Stderr = tty, tty, tty
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
		if err := c.Start(); err != nil {
			b.Fatal(err)
		}
		go io.Copy(io.Discard, ptmx)
		time.Sleep(time.Second) // idle: started, nothing flowing
		sup := rssMiB(b, c.Process.Pid)
		leader := 0.0
		for _, pid := range childPIDs(c.Process.Pid) {
			leader = rssMiB(b, pid)
		}
		c.Wait()
		tty.Close()
		ptmx.Close()
		b.ReportMetric(sup, "supervisor-MiB")
		b.ReportMetric(leader, "leader-MiB")
	}
}

func rssMiB(b *testing.B, pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return float64(kb) / 1024
		}
	}
	b.Fatalf("no VmRSS for %d", pid)
	return 0
}

// BenchmarkToolResultHook16MB: what pi-session's tool_result hook costs
// through real pi for a 16 MiB result, split into the offload engine's own
// work (the same call in process, measured in the same run) and the rest:
// moving the bytes from pi into the engine and the notice back.
func BenchmarkToolResultHook16MB(b *testing.B) {
	bin := pitest.Binary(b)
	var hooks, engines []float64
	for i := 0; i < b.N; i++ {
		e := pitest.NewEnv(b)
		var buf bytes.Buffer
		for n := 0; buf.Len() < 16<<20; n++ {
			fmt.Fprintf(&buf, "step %07d INFO compiling module_%d with -O2 -Wall: ok\n", n, n%300)
		}
		data := buf.Bytes()[:16<<20]
		file := filepath.Join(e.Work, "big.log")
		if err := os.WriteFile(file, data, 0o600); err != nil {
			b.Fatal(err)
		}
		timing := filepath.Join(e.Work, "timing.jsonl")
		e.Set("TOOL_TIMING", timing)
		e.Set("FAUX_CONTEXT_WINDOW", "100000000")
		e.Scenario(map[string]any{"steps": []map[string]any{
			{"tool": "dump_file", "args": map[string]any{"path": file}},
			{"text": "ok"},
		}})
		out, err := e.Command(bin, append(e.PiArgs("testdata/pi/test-tools.ts"), "-p", "go")...).CombinedOutput()
		if err != nil {
			b.Fatalf("pi-session: %v\n%s", err, out)
		}
		var rec struct{ HookMs float64 }
		line, _ := os.ReadFile(timing)
		if err := json.Unmarshal(bytes.TrimSpace(line), &rec); err != nil {
			b.Fatalf("timing %q: %v", line, err)
		}
		hooks = append(hooks, rec.HookMs)

		eng, err := offload.New(offload.Options{Workspace: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		rep, err := eng.ToolResult(context.Background(), offload.ToolResultRequest{
			SessionID: "bench", ToolName: "dump_file", ToolCallID: "c1", CtxReadActive: true,
			Content: []offload.ContentBlock{{Type: "text", Raw: data}},
		})
		engines = append(engines, float64(time.Since(start).Microseconds())/1000)
		eng.Close()
		if err != nil || rep.Action != "replace" {
			b.Fatalf("engine kept the result: %+v %v", rep, err)
		}
	}
	hook, engine := medianF(hooks), medianF(engines)
	b.ReportMetric(hook, "hook-ms")
	b.ReportMetric(engine, "engine-ms")
	b.ReportMetric(hook-engine, "transfer-ms")
	b.ReportMetric((hook-engine)/engine, "transfer/engine")
}

// BenchmarkBudgetTurn: the per-turn cost of the budget's hooks through
// real pi. The same scripted session of 60 tool turns runs without the
// extension, then with it twice: in enforce mode below the thresholds (the
// steady state: one turn_end round trip per turn, tool calls not asked),
// and in observe mode past the thresholds (turn_end and tool_call sent
// each turn, not awaited). It reports the hooks' own time as the extension
// measured it, and the wall-clock difference per turn, which includes the
// other engines' hooks.
func BenchmarkBudgetTurn(b *testing.B) {
	bin := pitest.Binary(b)
	const turns = 60
	steps := []map[string]any{}
	for i := 0; i < turns; i++ {
		steps = append(steps, map[string]any{"tool": "bash", "args": map[string]any{"command": "true"}})
	}
	steps = append(steps, map[string]any{"text": "done"})
	const (
		enforceBelow = `{"mode":"enforce"}`
		observePast  = `{"mode":"observe","models":{"faux/faux-1":{"main":{"soft":10,"handoff":20,"hard":100000000,"minProgress":1}}}}`
	)
	run := func(cfg string) (float64, float64) {
		e := pitest.NewEnv(b)
		if cfg != "" {
			if err := os.WriteFile(filepath.Join(e.Agent, "context-budget.json"), []byte(cfg), 0o600); err != nil {
				b.Fatal(err)
			}
		} else {
			e.Set("PI_SESSION_EXTENSION", "off")
		}
		e.Scenario(map[string]any{"steps": steps})
		timing := filepath.Join(e.Work, "timing.jsonl")
		e.Set("PI_SESSION_BUDGET_TIMING", timing)
		start := time.Now()
		out, err := e.Command(bin, append(e.PiArgs(), "-p", "go")...).CombinedOutput()
		d := float64(time.Since(start).Microseconds()) / 1000
		if err != nil {
			b.Fatalf("pi-session: %v\n%s", err, out)
		}
		if n := len(e.Requests()); n != turns+1 {
			b.Fatalf("%d model requests, want %d", n, turns+1)
		}
		if cfg == "" {
			return d, 0
		}
		var rec map[string]float64
		line, _ := os.ReadFile(timing)
		if err := json.Unmarshal(bytes.TrimSpace(line), &rec); err != nil || rec["turns"] < turns {
			b.Fatalf("timing %q: %v", line, err)
		}
		return d, (rec["turnEndMs"] + rec["toolCallMs"]) / rec["turns"]
	}
	var without, enforce, observe, enforceHook, observeHook []float64
	for i := 0; i < b.N; i++ {
		d0, _ := run("")
		d1, h1 := run(enforceBelow)
		d2, h2 := run(observePast)
		without, enforce, observe = append(without, d0), append(enforce, d1), append(observe, d2)
		enforceHook, observeHook = append(enforceHook, h1), append(observeHook, h2)
	}
	b.ReportMetric(medianF(enforceHook), "enforce-hooks-ms/turn")
	b.ReportMetric(medianF(observeHook), "observe-hooks-ms/turn")
	b.ReportMetric((medianF(enforce)-medianF(without))/turns, "enforce-wall-ms/turn")
	b.ReportMetric((medianF(observe)-medianF(without))/turns, "observe-wall-ms/turn")
	b.ReportMetric(medianF(without), "without-ms")
}
