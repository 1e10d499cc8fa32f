package relay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi-session/pi-session/session"
)

// The benchmarks run each operation in a child process (this test binary,
// with RELAY_BENCH_CHILD set) so that its peak memory is its own: the
// floor (reading the file once with session/), the note, and a cold
// recall; grep -ci over the file is the other baseline. A warm recall is
// timed in process on an index already built.

func TestMain(m *testing.M) {
	if dir := os.Getenv("RELAY_RACE_CHILD"); dir != "" {
		os.Exit(raceChild(dir, os.Getenv("RELAY_RACE_FILE")))
	}
	if op := os.Getenv("RELAY_BENCH_CHILD"); op != "" {
		os.Exit(benchChild(op, os.Getenv("RELAY_BENCH_FILE")))
	}
	os.Exit(m.Run())
}

func benchChild(op, path string) int {
	ctx := context.Background()
	var err error
	switch op {
	case "floor":
		var f *session.File
		if f, err = session.Open(path); err == nil && len(f.Entries) == 0 {
			err = fmt.Errorf("no entries")
		}
	case "note":
		_, err = Compose(ctx, openReader, func(context.Context, string, string) ([]string, error) { return nil, nil }, path, "", "", 0, DefaultConfig(), 1, "/tmp/1.md")
	case "recall":
		e := New(Options{AgentDir: os.TempDir()})
		var text string
		text, err = e.Recall(ctx, openReader, RecallRequest{SessionID: "b", SessionFile: path, Args: json.RawMessage(`{"query":"quokka habitat migration"}`)})
		if err == nil && !strings.Contains(text, "entryId") {
			err = fmt.Errorf("the needle was not found: %s", text)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// measure runs the child op on path and returns its wall time and peak
// resident memory.
func measure(b *testing.B, op, path string) (time.Duration, int64) {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "RELAY_BENCH_CHILD="+op, "RELAY_BENCH_FILE="+path)
	cmd.Stderr = os.Stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s: %v", op, err)
	}
	return time.Since(start), cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
}

func grepTime(b *testing.B, path string) time.Duration {
	b.Helper()
	start := time.Now()
	out, _ := exec.Command("grep", "-ci", "quokka_habitat", path).Output()
	if strings.TrimSpace(string(out)) == "" {
		b.Fatal("grep found nothing")
	}
	return time.Since(start)
}

// benchFile returns a generated session of size MB, made once and kept in
// the temporary directory across runs (it is deterministic).
func benchFile(b *testing.B, mb int) string {
	b.Helper()
	path := filepath.Join(os.TempDir(), fmt.Sprintf("relay-bench-%dmb.jsonl", mb))
	if st, err := os.Stat(path); err == nil && st.Size() > int64(mb)<<20*9/10 {
		return path
	}
	if err := genFile(path+".tmp", int64(mb)<<20); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		b.Fatal(err)
	}
	return path
}

func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// BenchmarkRelay measures, per session size (RELAY_BENCH_SIZES, MB,
// default 10,100,500): reading the file once with session/ (the floor),
// grep -ci, the note, a cold recall (read, index, search), a warm recall
// against one substring search of the file in memory (scan), and the peak
// memory of each process. Medians of three runs.
func BenchmarkRelay(b *testing.B) {
	sizes := []int{10, 100, 500}
	if s := os.Getenv("RELAY_BENCH_SIZES"); s != "" {
		sizes = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				b.Fatalf("RELAY_BENCH_SIZES: %v", err)
			}
			sizes = append(sizes, n)
		}
	}
	for _, mb := range sizes {
		b.Run(fmt.Sprintf("%dMB", mb), func(b *testing.B) {
			path := benchFile(b, mb)
			st, _ := os.Stat(path)
			size := float64(st.Size())
			for i := 0; i < b.N; i++ {
				var floor, note, cold, grep []time.Duration
				var floorMem, noteMem, coldMem int64
				for k := 0; k < 3; k++ {
					d, m := measure(b, "floor", path)
					floor, floorMem = append(floor, d), max(floorMem, m)
					d, m = measure(b, "note", path)
					note, noteMem = append(note, d), max(noteMem, m)
					d, m = measure(b, "recall", path)
					cold, coldMem = append(cold, d), max(coldMem, m)
					grep = append(grep, grepTime(b, path))
				}
				warm := warmRecall(b, path)
				scan := scanTime(b, path)
				fl := median(floor)
				b.ReportMetric(float64(fl.Milliseconds()), "floor-ms")
				b.ReportMetric(float64(median(grep).Milliseconds()), "grep-ms")
				b.ReportMetric(float64(median(note).Milliseconds()), "note-ms")
				b.ReportMetric(float64(median(note))/float64(fl), "note/floor")
				b.ReportMetric(float64(median(cold).Milliseconds()), "cold-recall-ms")
				b.ReportMetric(float64(median(cold))/float64(fl), "cold/floor")
				b.ReportMetric(float64(warm.Microseconds())/1000, "warm-recall-ms")
				b.ReportMetric(float64(scan.Microseconds())/1000, "scan-ms")
				b.ReportMetric(float64(warm)/float64(scan), "warm/scan")
				b.ReportMetric(float64(floorMem)/size, "floor-mem/file")
				b.ReportMetric(float64(noteMem)/size, "note-mem/file")
				b.ReportMetric(float64(coldMem)/size, "recall-mem/file")
			}
		})
	}
}

// warmRecall builds the index once, then times recalls that find nothing
// new to read: the median of several queries, each run three times.
func warmRecall(b *testing.B, path string) time.Duration {
	b.Helper()
	f, err := session.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	read := func(p string, fn func(*session.File) error) error {
		if _, err := f.Update(); err != nil {
			return err
		}
		return fn(f)
	}
	e := New(Options{AgentDir: b.TempDir()})
	ask := func(q string) {
		raw, _ := json.Marshal(map[string]any{"query": q})
		if _, err := e.Recall(context.Background(), read, RecallRequest{SessionID: "b", SessionFile: path, Args: raw}); err != nil {
			b.Fatal(err)
		}
	}
	ask("warm up")
	var ds []time.Duration
	for _, q := range []string{"quokka habitat migration", "shard 17", "INFO ok", "src go", "migrat quok", "kalomi"} {
		for k := 0; k < 3; k++ {
			start := time.Now()
			ask(q)
			ds = append(ds, time.Since(start))
		}
	}
	return median(ds)
}

// scanTime is the baseline of a warm recall: one pass of a substring
// search over the file held in memory, counting the needle's occurrences
// (the seed's search, without even lowercasing), the median of three.
func scanTime(b *testing.B, path string) time.Duration {
	b.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	var ds []time.Duration
	for k := 0; k < 3; k++ {
		start := time.Now()
		if bytes.Count(data, []byte("quokka_habitat migration")) == 0 {
			b.Fatal("the needle is not in the file")
		}
		ds = append(ds, time.Since(start))
	}
	return median(ds)
}

// TestGeneratedSession: the benchmarks' generator writes a session pi's
// reader takes without a complaint, whose relay and recall work.
func TestGeneratedSession(t *testing.T) {
	path := filepath.Join(t.TempDir(), "g.jsonl")
	if err := genFile(path, 2<<20); err != nil {
		t.Fatal(err)
	}
	f, err := session.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Diagnostics) != 0 || len(f.Entries) < 100 {
		t.Fatalf("%d entries, diagnostics %v", len(f.Entries), f.Diagnostics)
	}
	p, err := Compose(context.Background(), openReader, nil, path, "", "", 0, DefaultConfig(), 1, "/n/1.md")
	if err != nil || !strings.Contains(p.Text, "Never push to main without asking.") {
		t.Fatalf("note: %v\n%s", err, p.Text)
	}
	e := New(Options{AgentDir: t.TempDir()})
	text, err := e.Recall(context.Background(), openReader, RecallRequest{SessionID: "b", SessionFile: path, Args: json.RawMessage(`{"query":"quokka habitat migration"}`)})
	if err != nil || !strings.Contains(text, "quokka_habitat migration failed") {
		t.Fatalf("recall: %v\n%s", err, text)
	}
}
