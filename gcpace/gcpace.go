// Package gcpace makes the garbage collector run sooner while large reads run, shared by readers that overlap.
package gcpace

import (
	"runtime/debug"
	"sync"
)

// Percent is the GC percent while a hold is taken: a read that allocates
// much short-lived garbage beside a large session held in memory keeps
// its peak near what it keeps.
const Percent = 10

var (
	mu    sync.Mutex
	holds int
	saved int // the GC percent before the first hold
)

// Sooner sets the GC percent to Percent until release is called. Holds
// overlap (a note composed while an index is built in the background):
// the percent the process had is put back when the last is released,
// whatever the order, and a release called twice counts once.
func Sooner() (release func()) {
	mu.Lock()
	if holds == 0 {
		saved = debug.SetGCPercent(Percent)
	}
	holds++
	mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			mu.Lock()
			defer mu.Unlock()
			if holds--; holds == 0 {
				debug.SetGCPercent(saved)
			}
		})
	}
}
