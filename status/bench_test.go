package status

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pi-session/pi-session/atomicfile"
)

// fillStore writes n records quickly (not atomically: this is set-up) with
// a mix the pruning pass meets in life: a third this live process, a third
// a dead pid, a third recent; every tenth old dead one has a marker path.
func fillStore(b *testing.B, s *Store, n int, now time.Time) {
	b.Helper()
	self, err := Identify(os.Getpid())
	if err != nil {
		b.Fatal(err)
	}
	dead := deadPID(b)
	if err := os.MkdirAll(s.Dir(), 0o700); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < n; i++ {
		r := fullRecord()
		r.SessionID = fmt.Sprintf("0193a1b2-%04x-7e5f-8a9b-%012x", i%65536, i)
		age := old
		switch i % 3 {
		case 0:
			r.SetProcess(self)
		case 1:
			r.PID, r.StartTicks = dead, 1
			if i%10 == 1 {
				r.RelaunchMarker = filepath.Join(s.StateDir(), "relaunch", r.SessionID+".json")
			} else {
				r.RelaunchMarker = ""
			}
		case 2:
			r.PID, age = dead, time.Hour
		}
		data, _ := json.Marshal(r)
		path := filepath.Join(s.Dir(), r.SessionID+".json")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			b.Fatal(err)
		}
		if err := os.Chtimes(path, now.Add(-age), now.Add(-age)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPrunePass runs pruning passes over 100k records, each pass
// continuing from the previous one's cursor, and reports records examined
// per pass, the time a pass took (mean and worst) and the share of passes
// that the 200 ms budget (rather than the 5000-record limit) ended.
func BenchmarkPrunePass(b *testing.B) {
	s := NewStore(b.TempDir())
	now := time.Now()
	fillStore(b, s, 100_000, now)
	events := &recordingEvents{}
	var examined, overBudget, removed int
	var total, worst time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rep, err := s.Prune(PruneOptions{Force: true, Events: events})
		if err != nil {
			b.Fatal(err)
		}
		examined += rep.Examined
		removed += len(rep.Removed)
		total += rep.Elapsed
		worst = max(worst, rep.Elapsed)
		if rep.OverBudget {
			overBudget++
		}
	}
	b.ReportMetric(float64(examined)/float64(b.N), "examined/pass")
	b.ReportMetric(float64(removed)/float64(b.N), "removed/pass")
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/pass")
	b.ReportMetric(float64(worst.Milliseconds()), "worst-ms")
	b.ReportMetric(float64(overBudget)/float64(b.N), "budget-ended/pass")
}

// BenchmarkList10k is what `pi-session status` does: read and classify 10k
// records.
func BenchmarkList10k(b *testing.B) {
	s := NewStore(b.TempDir())
	fillStore(b, s, 10_000, time.Now())
	table := System()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		entries, err := s.List(table, "")
		if err != nil || len(entries) != 10_000 {
			b.Fatalf("List = %d entries, %v", len(entries), err)
		}
	}
	b.ReportMetric(float64(time.Since(start).Milliseconds())/float64(b.N), "ms/list")
}

// BenchmarkUpdate is one record write as the engine host makes it: the
// write lock, a read of the record on disk, the ownership check, an atomic
// write; the baseline is the atomic write of the same bytes alone.
func BenchmarkUpdate(b *testing.B) {
	s := NewStore(b.TempDir())
	self, err := Identify(os.Getpid())
	if err != nil {
		b.Fatal(err)
	}
	r := fullRecord()
	r.SessionID = "s1"
	r.SetProcess(self)
	data, _ := json.MarshalIndent(r, "", "  ")
	base := filepath.Join(b.TempDir(), "plain.json")
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if err := atomicfile.WriteFile(base, data, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	baseline := time.Since(start)
	b.ResetTimer()
	start = time.Now()
	for i := 0; i < b.N; i++ {
		if err := s.Update("s1", self, func(old *Record) { old.Tokens = r.Tokens; old.Phase = "idle" }); err != nil {
			b.Fatal(err)
		}
	}
	took := time.Since(start)
	b.ReportMetric(float64(took.Microseconds())/float64(b.N), "us/write")
	b.ReportMetric(float64(baseline.Microseconds())/float64(b.N), "baseline-us/write")
	b.ReportMetric(took.Seconds()/baseline.Seconds(), "x-baseline")
}
