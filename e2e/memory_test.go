package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pi-session/pi-session/hooks"
	"github.com/pi-session/pi-session/offload"
	"github.com/pi-session/pi-session/pitest"
)

// memorySizes are the payloads of BenchmarkHostMemory; HOST_MEMORY_SIZES
// (e.g. "1MB,16MB") limits them.
var memorySizes = []struct {
	name string
	size int
}{{"1MB", 1 << 20}, {"16MB", 16 << 20}, {"100MB", 100 << 20}}

// memoryPayload is tool-output-like text of size bytes.
func memoryPayload(size int) []byte {
	var b bytes.Buffer
	b.Grow(size + 128)
	for i := 0; b.Len() < size; i++ {
		if i%100 == 7 {
			fmt.Fprintf(&b, "2026-11-30T10:%02d:%02d.%03dZ ERROR [w%02d] code=5%02d request %d failed: upstream timed out\n", i/60%60, i%60, i%1000, i%16, i%100, i)
		} else {
			fmt.Fprintf(&b, "2026-11-30T10:%02d:%02d.%03dZ INFO  [w%02d] processed batch %08d in %3dms, 42 items ok\n", i/60%60, i%60, i%1000, i%16, i, i%997)
		}
	}
	return b.Bytes()[:size]
}

// hostPeak starts a fresh `pi-session serve`, sends it calls offload
// tool_results of data over its socket as the extension does (the text as
// bulk bytes, split into blocks text blocks), and returns the host's peak
// resident set (VmHWM) in MiB, and its resident set before the first call.
func hostPeak(b testing.TB, bin string, data []byte, calls, blocks int) (peak, idle float64) {
	e := pitest.NewEnv(b)
	cmd := e.Command(bin, "serve", "--pid", strconv.Itoa(os.Getpid()))
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var ready struct{ Socket string }
	line, err := bufio.NewReader(out).ReadBytes('\n')
	if err != nil || json.Unmarshal(line, &ready) != nil {
		b.Fatalf("serve said %q: %v", line, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := hooks.Dial(ctx, ready.Socket, hooks.Hello{Client: "bench", SessionID: "bench", Cwd: e.Work, Role: "primary", Mode: "print"})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	rss, err := pitest.StatusKB(cmd.Process.Pid, "VmRSS")
	if err != nil {
		b.Fatal(err)
	}
	n := len(data)
	content := []map[string]any{}
	for i := 0; i < blocks; i++ {
		size := n / blocks
		if i == blocks-1 {
			size = n - (blocks-1)*(n/blocks)
		}
		content = append(content, map[string]any{"type": "text", "bytes": size})
	}
	params := map[string]any{"toolName": "bash", "toolCallId": "c1", "input": map[string]any{"command": "make"},
		"content": content, "isError": false, "turnIndex": 0, "ctxReadActive": true}
	var res, notice []byte
	for i := 0; i < calls; i++ {
		data[0] = byte('a' + i) // a new payload each time: no deduplication
		res, notice, err = c.Call(ctx, "offload.toolResult", params, data)
		if err != nil {
			b.Fatal(err)
		}
	}
	if !bytes.Contains(notice, []byte("ce_")) {
		b.Fatalf("the host did not offload the result: %.300s %.300s", res, notice)
	}
	hwm, err := pitest.StatusKB(cmd.Process.Pid, "VmHWM")
	if err != nil {
		b.Fatal(err)
	}
	return float64(hwm) / 1024, float64(rss) / 1024
}

// inProcessPeak runs the same tool result through offload.Engine in a
// fresh process (this test binary, HOST_MEMORY_CHILD set) that holds the
// payload in memory, and returns that process's peak resident set in MiB.
func inProcessPeak(b *testing.B, file string) float64 {
	cmd := exec.Command(os.Args[0], "-test.run=^TestMemoryChild$")
	cmd.Env = append(os.Environ(), "HOST_MEMORY_CHILD="+file)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("in-process child: %v\n%s", err, out)
	}
	var r struct{ PeakKB int64 }
	if err := json.Unmarshal(bytes.TrimSpace(bytes.Split(out, []byte("\n"))[0]), &r); err != nil {
		b.Fatalf("child said %q: %v", out, err)
	}
	return float64(r.PeakKB) / 1024
}

// TestMemoryChild is the in-process side of BenchmarkHostMemory; it does
// nothing unless HOST_MEMORY_CHILD names a payload file.
func TestMemoryChild(t *testing.T) {
	file := os.Getenv("HOST_MEMORY_CHILD")
	if file == "" {
		return
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := offload.New(offload.Options{Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	rep, err := eng.ToolResult(context.Background(), offload.ToolResultRequest{
		SessionID: "bench", ToolName: "bash", ToolCallID: "c1", Input: json.RawMessage(`{"command":"make"}`), CtxReadActive: true,
		Content: []offload.ContentBlock{{Type: "text", Raw: data}},
	})
	if err != nil || rep.Action != "replace" {
		t.Fatalf("not offloaded: %+v %v", rep, err)
	}
	peak, err := pitest.StatusKB(os.Getpid(), "VmHWM")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("{\"peakKB\":%d}\n", peak)
}

// BenchmarkHostMemory: the engine host's peak resident set for a tool
// result of 1 MB, 16 MB and 100 MB sent over its socket as pi's extension
// sends it, against the same offload done in process (a fresh process
// holding the payload), measured in the same run. Both are whole-process
// peaks (VmHWM), Go runtime included. The aim is payload + 64 MiB, for one
// result (host-peak-MiB), two results in a row (twice-peak-MiB) and one
// result of two text blocks (blocks-peak-MiB).
//
// Measure the host, not pi-session's rusage: the maxrss the kernel reports
// for a pi-session run includes pi (Node), its child, which holds several
// copies of a large result (454 MiB for 100 MB, measured), while the
// host's own peak is the payload and a few MiB.
func BenchmarkHostMemory(b *testing.B) {
	bin := pitest.Binary(b)
	only := os.Getenv("HOST_MEMORY_SIZES")
	for _, sz := range memorySizes {
		if only != "" && !strings.Contains(","+only+",", ","+sz.name+",") {
			continue
		}
		b.Run(sz.name, func(b *testing.B) {
			data := memoryPayload(sz.size)
			file := filepath.Join(b.TempDir(), "payload.log")
			if err := os.WriteFile(file, data, 0o600); err != nil {
				b.Fatal(err)
			}
			var hosts, idles, twice, blocks, inproc []float64
			for i := 0; i < b.N; i++ {
				peak, idle := hostPeak(b, bin, data, 1, 1)
				hosts, idles = append(hosts, peak), append(idles, idle)
				peak, _ = hostPeak(b, bin, data, 2, 1)
				twice = append(twice, peak)
				peak, _ = hostPeak(b, bin, data, 1, 2)
				blocks = append(blocks, peak)
				inproc = append(inproc, inProcessPeak(b, file))
			}
			host, in := medianF(hosts), medianF(inproc)
			payload := float64(sz.size) / (1 << 20)
			b.ReportMetric(host, "host-peak-MiB")
			b.ReportMetric(medianF(twice), "twice-peak-MiB")
			b.ReportMetric(medianF(blocks), "blocks-peak-MiB")
			b.ReportMetric(medianF(idles), "host-idle-MiB")
			b.ReportMetric(in, "in-process-peak-MiB")
			b.ReportMetric(host/in, "x-in-process")
			b.ReportMetric(payload+64, "aim-MiB")
		})
	}
}
