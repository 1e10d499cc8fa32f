package rotate

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkAppendProcesses measures appends per second of 200-byte lines
// from 1 and 8 writer processes through Log (1 MiB limit, so rotations
// happen), against plain O_APPEND writes without rotation by the same number
// of processes in the same run. b.N is the total number of lines; every line
// is read back and checked afterwards, so
//
//	go test ./rotate -run '^$' -bench AppendProcesses/writers=8 -benchtime 1600000x
//
// is also the full-size multi-process test (8 writers x 200k lines).
func BenchmarkAppendProcesses(b *testing.B) {
	for _, writers := range []int{1, 8} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			const size = 200
			per := (b.N + writers - 1) / writers
			p := Policy{MaxBytes: 1 << 20, Keep: 1 << 20}
			cfgs := func(path string) []childConfig {
				c := make([]childConfig, writers)
				for w := range c {
					c[w] = childConfig{path: path, writer: w, lines: per, size: size, policy: p}
				}
				return c
			}
			dir := b.TempDir()
			b.StopTimer()
			start := time.Now()
			runWriters(b, "plain", cfgs(filepath.Join(dir, "plain.jsonl")))
			baseline := time.Since(start)

			logPath := filepath.Join(dir, "log", "events.jsonl")
			b.StartTimer()
			start = time.Now()
			runWriters(b, "append", cfgs(logPath))
			rotated := time.Since(start)
			b.StopTimer()

			total := float64(per * writers)
			b.ReportMetric(total/rotated.Seconds(), "appends/s")
			b.ReportMetric(total/baseline.Seconds(), "baseline-appends/s")
			b.ReportMetric(baseline.Seconds()/rotated.Seconds(), "x-baseline")
			seen, files := readBack(b, logPath, size)
			checkExactlyOnce(b, seen, writers, per)
			b.ReportMetric(float64(files), "files")
		})
	}
}

// BenchmarkAppend is one goroutine appending 200-byte lines in-process,
// with the O_APPEND write alone as the baseline.
func BenchmarkAppend(b *testing.B) {
	line := testLine(nil, 0, 0, 200)
	dir := b.TempDir()
	f, err := os.OpenFile(filepath.Join(dir, "plain.jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		f.Write(line)
	}
	baseline := time.Since(start)
	l, err := New(filepath.Join(dir, "events.jsonl"), Policy{MaxBytes: 1 << 20, Keep: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	b.ResetTimer()
	start = time.Now()
	for i := 0; i < b.N; i++ {
		if err := l.Append(line); err != nil {
			b.Fatal(err)
		}
	}
	took := time.Since(start)
	b.ReportMetric(float64(b.N)/took.Seconds(), "appends/s")
	b.ReportMetric(baseline.Seconds()/took.Seconds(), "x-baseline")
}
