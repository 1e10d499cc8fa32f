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

// BenchmarkBudgetTurn: the per-turn cost of the budget hooks through
// real pi. The same scripted session of N and then 2N tool turns runs
// with the extension (enforce mode below the thresholds, the steady state;
// observe mode past them, the default mode with every hook sending), with
// the same extension minus its budget module (index.ts without the
// registerBudget line, in a temporary copy), and without the extension.
// Two measures cancel what a run pays once (pi's start, the extension's
// load, connect and hello): the slope (T(2N) - T(N)) / N of wall times,
// and the median time between two model requests in the steady state
// (one turn: the tool, the hooks, the session writes). Each is taken in
// the same repeat for every variant; the figures are medians over the
// repeats, with the spread (max - min) of the budget's cost. It also
// reports the hooks' own time as the extension measured it
// (PI_SESSION_BUDGET_TIMING).
func BenchmarkBudgetTurn(b *testing.B) {
	bin := pitest.Binary(b)
	const n = 40
	const (
		enforceBelow = `{"mode":"enforce"}`
		observePast  = `{"mode":"observe","models":{"faux/faux-1":{"main":{"soft":10,"handoff":20,"hard":100000000,"minProgress":1}}}}`
	)
	noBudget := extensionWithout(b, "\tregisterBudget(pi, kit);\n")
	type result struct{ wall, gap, hooks float64 }
	run := func(ext, cfg string, turns int) result {
		steps := []map[string]any{}
		for i := 0; i < turns; i++ {
			steps = append(steps, map[string]any{"tool": "bash", "args": map[string]any{"command": "true"}})
		}
		steps = append(steps, map[string]any{"text": "done"})
		e := pitest.NewEnv(b)
		if err := os.WriteFile(filepath.Join(e.Agent, "context-budget.json"), []byte(cfg), 0o600); err != nil {
			b.Fatal(err)
		}
		if ext != "" {
			e.Set("PI_SESSION_EXTENSION", ext)
		}
		e.Scenario(map[string]any{"steps": steps})
		// No request log: the scripted model would read the whole log at
		// each request, a cost growing with the square of the turns.
		e.Set("FAUX_LOG", "")
		times := filepath.Join(e.Work, "times.txt")
		e.Set("FAUX_TIMES", times)
		timing := filepath.Join(e.Work, "timing.jsonl")
		e.Set("PI_SESSION_BUDGET_TIMING", timing)
		start := time.Now()
		out, err := e.Command(bin, append(e.PiArgs(), "-p", "go")...).CombinedOutput()
		r := result{wall: float64(time.Since(start).Microseconds()) / 1000}
		if err != nil {
			b.Fatalf("pi-session: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), "done") {
			b.Fatalf("the session did not end with the last step:\n%s", out)
		}
		r.gap = requestGaps(b, times, 5)
		if ext == "" {
			var rec map[string]float64
			line, _ := os.ReadFile(timing)
			if err := json.Unmarshal(bytes.TrimSpace(line), &rec); err != nil || rec["turns"] < float64(turns) {
				b.Fatalf("timing %q: %v", line, err)
			}
			r.hooks = (rec["turnEndMs"] + rec["toolCallMs"]) / rec["turns"]
		}
		return r
	}
	var slopeEnforce, slopeObserve, slopeExt, gapEnforce, gapObserve, gapExt, hooksEnforce, hooksObserve []float64
	for i := 0; i < b.N; i++ {
		measure := func(ext, cfg string) (slope, gap, hooks float64) {
			r1, r2 := run(ext, cfg, n), run(ext, cfg, 2*n)
			return (r2.wall - r1.wall) / n, (r1.gap + r2.gap) / 2, (r1.hooks + r2.hooks) / 2
		}
		sOff, gOff, _ := measure("off", enforceBelow)
		sNo, gNo, _ := measure(noBudget, enforceBelow)
		sEnf, gEnf, hEnf := measure("", enforceBelow)
		sObs, gObs, hObs := measure("", observePast)
		b.Logf("repeat %d: per turn (slope / median gap) without the extension %.2f / %.2f ms, without the budget %.2f / %.2f, enforce %.2f / %.2f, observe %.2f / %.2f; budget hooks %.3f / %.3f ms",
			i, sOff, gOff, sNo, gNo, sEnf, gEnf, sObs, gObs, hEnf, hObs)
		slopeEnforce, slopeObserve, slopeExt = append(slopeEnforce, sEnf-sNo), append(slopeObserve, sObs-sNo), append(slopeExt, sEnf-sOff)
		gapEnforce, gapObserve, gapExt = append(gapEnforce, gEnf-gNo), append(gapObserve, gObs-gNo), append(gapExt, gEnf-gOff)
		hooksEnforce, hooksObserve = append(hooksEnforce, hEnf), append(hooksObserve, hObs)
	}
	b.ReportMetric(medianF(gapEnforce), "budget-enforce-gap-ms/turn")
	b.ReportMetric(spread(gapEnforce), "budget-enforce-gap-spread-ms")
	b.ReportMetric(medianF(gapObserve), "budget-observe-gap-ms/turn")
	b.ReportMetric(spread(gapObserve), "budget-observe-gap-spread-ms")
	b.ReportMetric(medianF(slopeEnforce), "budget-enforce-slope-ms/turn")
	b.ReportMetric(spread(slopeEnforce), "budget-enforce-slope-spread-ms")
	b.ReportMetric(medianF(slopeObserve), "budget-observe-slope-ms/turn")
	b.ReportMetric(medianF(gapExt), "extension-gap-ms/turn")
	b.ReportMetric(medianF(slopeExt), "extension-slope-ms/turn")
	b.ReportMetric(medianF(hooksEnforce), "enforce-hooks-ms/turn")
	b.ReportMetric(medianF(hooksObserve), "observe-hooks-ms/turn")
}

// extensionWithout is a temporary copy of the bundled extension with one
// line of its index.ts removed (a module's registration).
func extensionWithout(b *testing.B, line string) string {
	b.Helper()
	src := filepath.Join(pitest.Root(b), "extension")
	dst := filepath.Join(b.TempDir(), "extension")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		b.Fatal(err)
	}
	index := filepath.Join(dst, "pi-session", "index.ts")
	data, err := os.ReadFile(index)
	if err != nil {
		b.Fatal(err)
	}
	if !bytes.Contains(data, []byte(line)) {
		b.Fatalf("%s has no line %q", index, line)
	}
	if err := os.WriteFile(index, bytes.Replace(data, []byte(line), nil, 1), 0o600); err != nil {
		b.Fatal(err)
	}
	return dst
}

// requestGaps is the median time between consecutive model requests in
// a FAUX_TIMES file, skipping the first skip requests.
func requestGaps(b *testing.B, file string, skip int) float64 {
	data, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	var ts, gaps []float64
	for _, l := range strings.Fields(string(data)) {
		v, err := strconv.ParseFloat(l, 64)
		if err != nil {
			b.Fatalf("%s: %v", file, err)
		}
		ts = append(ts, v)
	}
	for i := skip + 1; i < len(ts); i++ {
		gaps = append(gaps, ts[i]-ts[i-1])
	}
	if len(gaps) == 0 {
		b.Fatalf("%s: %d requests", file, len(ts))
	}
	return medianF(gaps)
}

// spread is max - min.
func spread(xs []float64) float64 {
	lo, hi := xs[0], xs[0]
	for _, x := range xs {
		lo, hi = min(lo, x), max(hi, x)
	}
	return hi - lo
}
