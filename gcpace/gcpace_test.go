package gcpace

import (
	"runtime/debug"
	"sync"
	"testing"
)

// percent is the GC percent now.
func percent() int {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}

// TestOverlappingHolds: holds released in any order, and one released
// twice, leave the GC percent the process had; while one is held it is
// Percent. (Saving and restoring the percent in each caller, as each did
// before, left it at Percent for good when two overlapped and the first
// ended first.)
func TestOverlappingHolds(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(150))
	a := Sooner()
	b := Sooner()
	if p := percent(); p != Percent {
		t.Fatalf("GC percent during two holds: %d, want %d", p, Percent)
	}
	a()
	a()
	if p := percent(); p != Percent {
		t.Fatalf("GC percent with one hold left (the other released twice): %d, want %d", p, Percent)
	}
	b()
	if p := percent(); p != 150 {
		t.Fatalf("GC percent after both holds: %d, want 150", p)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				Sooner()()
			}
		})
	}
	wg.Wait()
	if p := percent(); p != 150 {
		t.Errorf("GC percent after holds on 8 goroutines: %d, want 150", p)
	}
}
