package offload

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pi-session/pi-session/jsonpath"
	"github.com/pi-session/pi-session/pitest"
)

// Benchmarks of the engine on payloads of 64 KB, 1 MB, 16 MB and 100 MB in
// three shapes, each against a baseline measured in the same run:
//
//	offload (store + preview), error compaction  vs  sha256sum + cp of the file
//	range read, summarize                        (reported, no baseline)
//	literal and regex queries                    vs  grep -c / grep -c -E
//	JSONPath read (JSON only)                    vs  jq
//
// Each reports x-baseline (our time / the baseline's) and peak-MiB, the
// growth of the process's peak resident set during one operation (Linux:
// VmHWM after resetting it through /proc/self/clear_refs), next to
// limit-MiB, the payload plus 64 MiB. OFFLOAD_BENCH_SIZES (e.g. "64KB,1MB")
// limits the sizes. Nothing is asserted.

var benchSizes = []struct {
	name string
	size int
}{{"64KB", 64 << 10}, {"1MB", 1 << 20}, {"16MB", 16 << 20}, {"100MB", 100 << 20}}

// The three shapes. About 1% of lines hold " ERROR ".
const (
	benchLiteral = "ERROR"
	benchRegex   = `ERROR \[w[0-9]+\] code=5[0-9][0-9]`
)

func writeShape(path, shape string, size int) (jsonPath string, err error) {
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	n := 0
	put := func(s string) { w.WriteString(s); n += len(s) }
	switch shape {
	case "log": // lines of about 100 bytes
		for i := 0; n < size; i++ {
			if i%100 == 7 {
				put(fmt.Sprintf("2026-11-30T10:%02d:%02d.%03dZ ERROR [w%02d] code=5%02d request %d failed: upstream timed out\n", i/60%60, i%60, i%1000, i%16, i%100, i))
			} else {
				put(fmt.Sprintf("2026-11-30T10:%02d:%02d.%03dZ INFO  [w%02d] processed batch %08d in %3dms, 42 items ok\n", i/60%60, i%60, i%1000, i%16, i, i%997))
			}
		}
	case "grep": // path:line:text
		for i := 0; n < size; i++ {
			text := fmt.Sprintf("return fmt.Errorf(\"handler %d: %%w\", err)", i)
			if i%100 == 7 {
				text = fmt.Sprintf("log.Print(\"ERROR [w%d] code=5%02d retry\")", i%16, i%100)
			}
			put(fmt.Sprintf("src/pkg%03d/file%04d.go:%d:\t%s\n", i/500%1000, i/50, 10+i%50*7, text))
		}
	case "json": // a pretty-printed document with one large array
		put("{\n  \"status\": \"ok\",\n  \"generated\": \"2026-11-30T10:00:00Z\",\n  \"items\": [\n")
		i := 0
		for ; n < size-200; i++ {
			if i > 0 {
				put(",\n")
			}
			status := "ok"
			if i%10 == 3 {
				status = fmt.Sprintf("ERROR [w%d] code=5%02d", i%16, i%100)
			}
			put(fmt.Sprintf("    {\n      \"id\": %d,\n      \"name\": \"item %d\",\n      \"path\": \"/srv/data/%03d/item-%d.bin\",\n      \"size\": %d,\n      \"tags\": [\"alpha\", \"beta\"],\n      \"status\": \"%s\",\n      \"owner\": \"team-%d\",\n      \"checksum\": \"%016x\"\n    }",
				i, i, i%1000, i, i*37%100000, status, i%12, uint64(i)*0x9E3779B97F4A7C15))
		}
		put(fmt.Sprintf("\n  ],\n  \"count\": %d\n}\n", i))
		jsonPath = fmt.Sprintf("$.items[%d].name", i/2)
	}
	return jsonPath, w.Flush()
}

type benchPayload struct {
	path, jsonPath string
	data           string
}

var (
	benchMu    sync.Mutex
	benchDir   string
	benchFiles = map[string]*benchPayload{}
)

// payloadFor generates (once per run) the payload of a shape and size.
func payloadFor(b *testing.B, shape string, size int) *benchPayload {
	b.Helper()
	benchMu.Lock()
	defer benchMu.Unlock()
	key := fmt.Sprintf("%s-%d", shape, size)
	if p, ok := benchFiles[key]; ok {
		return p
	}
	if benchDir == "" {
		d, err := os.MkdirTemp("", "offload-bench-")
		if err != nil {
			b.Fatal(err)
		}
		benchDir = d
	}
	path := filepath.Join(benchDir, key+".txt")
	jp, err := writeShape(path, shape, size)
	if err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	p := &benchPayload{path: path, jsonPath: jp, data: string(data)}
	benchFiles[key] = p
	return p
}

func cleanupBench() {
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
}

// timeCmd runs a shell command a few times and returns its best time. Its
// output goes to a file: GNU grep stops at the first match when its output
// is /dev/null.
func timeCmd(b *testing.B, script string) (time.Duration, bool) {
	b.Helper()
	best := time.Duration(0)
	sink := filepath.Join(benchDir, "baseline.out")
	defer os.Remove(sink)
	for i := 0; i < 3; i++ {
		start := time.Now()
		out, err := exec.Command("sh", "-c", script+` >"`+sink+`"`).CombinedOutput()
		d := time.Since(start)
		if err != nil {
			b.Logf("baseline %q: %v %s", script, err, out)
			return 0, false
		}
		if best == 0 || d < best {
			best = d
		}
	}
	return best, true
}

func benchSizeList() []struct {
	name string
	size int
} {
	only := os.Getenv("OFFLOAD_BENCH_SIZES")
	if only == "" {
		return benchSizes
	}
	var out []struct {
		name string
		size int
	}
	for _, s := range benchSizes {
		for _, w := range strings.Split(only, ",") {
			if strings.EqualFold(strings.TrimSpace(w), s.name) {
				out = append(out, s)
			}
		}
	}
	return out
}

func BenchmarkEngine(b *testing.B) {
	defer cleanupBench()
	ctx := context.Background()
	_, jqErr := exec.LookPath("jq")
	for _, shape := range []string{"log", "json", "grep"} {
		for _, sz := range benchSizeList() {
			prefix := shape + "/" + sz.name
			p := payloadFor(b, shape, sz.size)
			limit := float64(len(p.data))/(1<<20) + 64
			ws := b.TempDir()
			e, err := New(Options{Workspace: ws})
			if err != nil {
				b.Fatal(err)
			}
			rep, _ := e.ToolResult(ctx, tr("bash", text(p.data)))
			if rep.Action != "replace" {
				b.Fatalf("%s: not offloaded: %s", prefix, rep.Reason)
			}
			handle := rep.Handle
			report := func(b *testing.B, base time.Duration, peak float64) {
				per := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
				if base > 0 {
					b.ReportMetric(per/float64(base.Nanoseconds()), "x-baseline")
					b.ReportMetric(float64(base.Nanoseconds())/1e6, "baseline-ms")
				}
				b.ReportMetric(peak, "peak-MiB")
				b.ReportMetric(limit, "limit-MiB")
				b.SetBytes(int64(len(p.data)))
			}
			// Offload and error compaction store into a fresh, already
			// open store each time (setting it up is not timed), so that
			// identical payloads are written again instead of deduplicated.
			prepare := func() (*Engine, string) {
				dir, err := os.MkdirTemp("", "offload-ws-")
				if err != nil {
					b.Fatal(err)
				}
				eng, err := New(Options{Workspace: dir})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := eng.openStore(); err != nil {
					b.Fatal(err)
				}
				return eng, dir
			}
			store := func(eng *Engine, isError bool) {
				req := tr("bash", text(p.data))
				req.IsError = isError
				if r, _ := eng.ToolResult(ctx, req); r.Action != "replace" {
					b.Fatalf("not replaced: %s", r.Reason)
				}
			}
			hashCopy, _ := timeCmd(b, fmt.Sprintf("cp %s %s.copy && rm %s.copy && sha256sum %s", p.path, p.path, p.path, p.path))
			for _, op := range []struct {
				name    string
				isError bool
			}{{"offload", false}, {"error-compaction", true}} {
				b.Run(prefix+"/"+op.name, func(b *testing.B) {
					eng, dir := prepare()
					peak := pitest.PeakMiB(func() { store(eng, op.isError) })
					eng.Close()
					os.RemoveAll(dir)
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						b.StopTimer()
						eng, dir := prepare()
						runtime.GC()
						b.StartTimer()
						store(eng, op.isError)
						b.StopTimer()
						eng.Close()
						os.RemoveAll(dir)
						b.StartTimer()
					}
					report(b, hashCopy, peak)
				})
			}
			read := func(args string) func() {
				return func() {
					if _, err := e.Read(ctx, ReadRequest{Args: json.RawMessage(strings.ReplaceAll(args, "H", handle))}); err != nil {
						b.Fatal(err)
					}
				}
			}
			grepLit, _ := timeCmd(b, fmt.Sprintf("grep -c %q %s", benchLiteral, p.path))
			grepRe, _ := timeCmd(b, fmt.Sprintf("grep -c -E %q %s", benchRegex, p.path))
			reads := []struct {
				name string
				run  func()
				base time.Duration
			}{
				{"range-middle", read(fmt.Sprintf(`{"id":"H","offset":%d,"length":15000}`, len(p.data)/2)), 0},
				{"query-literal", read(`{"id":"H","query":"` + benchLiteral + `","maxMatches":20}`), grepLit},
				{"query-regex", read(`{"id":"H","query":"` + strings.ReplaceAll(benchRegex, `\`, `\\`) + `","regex":true,"maxMatches":20}`), grepRe},
				{"summarize", func() {
					if _, err := e.Summarize(ctx, SummarizeRequest{Args: json.RawMessage(`{"id":"` + handle + `"}`)}); err != nil {
						b.Fatal(err)
					}
				}, 0},
			}
			if p.jsonPath != "" {
				var jqBase time.Duration
				if jqErr == nil {
					jqBase, _ = timeCmd(b, fmt.Sprintf("jq %q %s", "."+strings.TrimPrefix(p.jsonPath, "$."), p.path))
				} else {
					b.Logf("%s: jq unavailable: the JSONPath read has no baseline", prefix)
				}
				reads = append(reads, struct {
					name string
					run  func()
					base time.Duration
				}{"jsonpath", read(`{"id":"H","jsonPath":"` + p.jsonPath + `"}`), jqBase})
			}
			for _, op := range reads {
				b.Run(prefix+"/"+op.name, func(b *testing.B) {
					peak := pitest.PeakMiB(op.run)
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						op.run()
					}
					report(b, op.base, peak)
				})
			}
			e.Close()
		}
	}
}

// TestBenchShapes checks the generated payloads are what the benchmarks
// claim: about 1% of lines match both queries, and the JSON path selects a
// value.
func TestBenchShapes(t *testing.T) {
	dir := t.TempDir()
	for _, shape := range []string{"log", "json", "grep"} {
		path := filepath.Join(dir, shape)
		jp, err := writeShape(path, shape, 256<<10)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(path)
		lines := totalLines(data)
		for _, q := range []struct {
			terms []string
			regex bool
		}{{[]string{benchLiteral}, false}, {[]string{benchRegex}, true}} {
			m, err := queryMatcher(q.terms, q.regex, false)
			if err != nil {
				t.Fatal(err)
			}
			n := countMatches(m, data, 0)
			if pct := float64(n) * 100 / float64(lines); pct < 0.5 || pct > 2 {
				t.Errorf("%s: %q matches %d of %d lines (%.2f%%), want about 1%%", shape, q.terms[0], n, lines, pct)
			}
		}
		if shape == "json" {
			q, err := jsonpath.Parse(jp)
			if err != nil {
				t.Fatal(err)
			}
			if nodes, err := q.Select(data); err != nil || len(nodes) != 1 {
				t.Errorf("json: %s selects %d values, %v", jp, len(nodes), err)
			}
		}
	}
}
