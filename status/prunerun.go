package status

import (
	"container/heap"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pi-session/pi-session/atomicfile"
	"github.com/pi-session/pi-session/rotate"
)

// PruneOptions configure one pruning pass. Zero fields take the defaults.
type PruneOptions struct {
	Current string // the session starting now; never removed
	Force   bool   // ignore the 24 h throttle (a manual pass)
	DryRun  bool   // decide and report only: no lock, no removal, no cursor, no event

	Now     func() time.Time              // default time.Now
	Table   ProcessTable                  // default System()
	Markers func(path string) MarkerState // default LookupMarker
	Self    *Identity                     // the lock owner; default Identify(os.Getpid())
	Events  Appender                      // default <stateDir>/events.jsonl through rotate

	MaxAge    time.Duration // DefaultMaxAge
	Interval  time.Duration // DefaultInterval
	Limit     int           // DefaultLimit
	Budget    time.Duration // DefaultBudget
	StaleLock time.Duration // DefaultStaleLock
}

// Appender takes one JSON event; *rotate.Log is one.
type Appender interface {
	AppendJSON(v any) error
}

func (o PruneOptions) withDefaults() PruneOptions {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Table == nil {
		o.Table = System()
	}
	if o.Markers == nil {
		o.Markers = LookupMarker
	}
	if o.MaxAge <= 0 {
		o.MaxAge = DefaultMaxAge
	}
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.Limit <= 0 {
		o.Limit = DefaultLimit
	}
	if o.Budget <= 0 {
		o.Budget = DefaultBudget
	}
	if o.StaleLock <= 0 {
		o.StaleLock = DefaultStaleLock
	}
	return o
}

// PruneReport says what a pass did.
type PruneReport struct {
	Skipped    string        `json:"skipped,omitempty"` // "throttled" or "locked": no pass ran
	DryRun     bool          `json:"dryRun,omitempty"`
	Examined   int           `json:"examined"`
	Removed    []Decision    `json:"removed"` // with DryRun: what would be removed
	Kept       []Decision    `json:"kept"`
	Next       string        `json:"next"`       // the cursor saved for the next pass
	Wrapped    bool          `json:"wrapped"`    // this pass reached the last record
	OverBudget bool          `json:"overBudget"` // the time budget ended the pass early
	Elapsed    time.Duration `json:"-"`
}

// LookupMarker says whether the relaunch marker at path exists. A relative
// path or any error but "no such file" is MarkerUnknown, which keeps the record.
func LookupMarker(path string) MarkerState {
	if !filepath.IsAbs(path) {
		return MarkerUnknown
	}
	_, err := os.Lstat(path)
	switch {
	case err == nil:
		return MarkerRetained
	case errIsNotExist(err):
		return MarkerGone
	}
	return MarkerUnknown
}

// lastPrune is the throttle and cursor file, <status>/.last-prune.
type lastPrune struct {
	At     time.Time `json:"at"`
	Cursor string    `json:"cursor"`
}

const lastPruneName = ".last-prune"

// readLastPrune returns the last pass's time and cursor. A file in another
// format still throttles by its mtime.
func (s *Store) readLastPrune() (lastPrune, bool) {
	path := filepath.Join(s.dir, lastPruneName)
	b, err := os.ReadFile(path)
	if err != nil {
		return lastPrune{}, false
	}
	var lp lastPrune
	if json.Unmarshal(b, &lp) == nil && !lp.At.IsZero() {
		return lp, true
	}
	if fi, err := os.Stat(path); err == nil {
		return lastPrune{At: fi.ModTime()}, true
	}
	return lastPrune{}, false
}

func (s *Store) throttled(now time.Time, interval time.Duration) bool {
	lp, ok := s.readLastPrune()
	// A last pass far in the future means the clock was moved back: it
	// must not hold pruning off until the clock catches up.
	d := now.Sub(lp.At)
	return ok && d < interval && d > -interval
}

// Prune runs one pruning pass over the store, as at session start or by
// `pi-session prune`: throttled to one per Interval (unless Force), under a
// mkdir lock, over at most Limit records after the saved cursor or until
// Budget has passed, removing only what PlanPrune says. Each pass that ran
// logs one status_pruned event. Errors are returned for the caller to log;
// none of them is a reason to stop a session from starting.
func (s *Store) Prune(o PruneOptions) (PruneReport, error) {
	o = o.withDefaults()
	start := o.Now()
	rep := PruneReport{DryRun: o.DryRun, Removed: []Decision{}, Kept: []Decision{}}
	if _, err := os.Stat(s.dir); errors.Is(err, fs.ErrNotExist) {
		return rep, nil
	}
	if !o.Force && s.throttled(start, o.Interval) {
		rep.Skipped = "throttled"
		return rep, nil
	}
	var errs []error
	if !o.DryRun {
		self := o.Self
		if self == nil {
			id, err := Identify(os.Getpid())
			if err != nil {
				id = Identity{PID: os.Getpid()}
			}
			self = &id
		}
		lk, err := s.lockPrune(*self, o.Table, start, o.StaleLock)
		if err != nil {
			return rep, err
		}
		if lk == nil {
			rep.Skipped = "locked"
			return rep, nil
		}
		defer func() {
			if err := lk.release(); err != nil {
				errs = append(errs, err)
			}
		}()
		// Another pass may have finished while this one took the lock.
		if !o.Force && s.throttled(start, o.Interval) {
			rep.Skipped = "throttled"
			return rep, nil
		}
	}

	saved, _ := s.readLastPrune()
	window, last, err := s.scanWindow(saved.Cursor, o.Limit)
	if err != nil {
		return rep, err
	}
	in := PruneInput{
		Now: start, MaxAge: o.MaxAge, Current: o.Current, Last: last,
		PIDs: map[int]PIDState{}, Markers: map[string]MarkerState{},
	}
	seen := map[string]fs.FileInfo{}
	for i, name := range window {
		if i > 0 && o.Now().Sub(start) >= o.Budget {
			rep.OverBudget = true
			break
		}
		c, fi := s.examine(name)
		seen[name] = fi
		in.Examined = append(in.Examined, c)
		if _, ask := precheck(c, start, o.MaxAge, o.Current); !ask {
			continue
		}
		if _, asked := in.PIDs[c.PID]; !asked {
			in.PIDs[c.PID] = o.Table.Lookup(c.PID).State
		}
		if _, asked := in.Markers[c.Marker]; c.Marker != "" && !asked && in.PIDs[c.PID] == PIDDead {
			in.Markers[c.Marker] = o.Markers(c.Marker)
		}
	}
	plan := PlanPrune(in)
	rep.Examined, rep.Next = len(in.Examined), plan.Next
	rep.Wrapped = len(in.Examined) > 0 && plan.Next == ""
	rep.Kept = append(rep.Kept, plan.Keep...)
	for _, d := range plan.Remove {
		if o.DryRun {
			rep.Removed = append(rep.Removed, d)
			continue
		}
		switch err := s.removeIfUnchanged(d.Name, seen[d.Name]); {
		case err == nil:
			rep.Removed = append(rep.Removed, d)
		case errors.Is(err, errChanged):
			rep.Kept = append(rep.Kept, Decision{d.Name, KeptChanged})
		default:
			rep.Kept = append(rep.Kept, Decision{d.Name, KeptRemoveFailed})
			errs = append(errs, err)
		}
	}
	rep.Elapsed = o.Now().Sub(start)
	if o.DryRun {
		return rep, errors.Join(errs...)
	}
	lp, _ := json.Marshal(lastPrune{At: start.UTC(), Cursor: plan.Next})
	if err := atomicfile.WriteFile(filepath.Join(s.dir, lastPruneName), lp, 0o600); err != nil {
		errs = append(errs, fmt.Errorf("status: save prune cursor: %w", err))
	}
	if err := s.logPruned(o, start, rep); err != nil {
		errs = append(errs, err)
	}
	return rep, errors.Join(errs...)
}

// scanWindow is Window over the record names in the directory, without
// holding or sorting them all: one read of the directory keeps the limit
// smallest names after cursor in a heap, and notes the greatest name. When
// no name follows the cursor it reads again from the start (a wrap).
func (s *Store) scanWindow(cursor string, limit int) (window []string, last string, err error) {
	d, err := os.Open(s.dir)
	if err != nil {
		return nil, "", fmt.Errorf("status: %w", err)
	}
	defer d.Close()
	h := &maxHeap{}
	for {
		names, err := d.Readdirnames(1024)
		for _, n := range names {
			if !IsRecordName(n) {
				continue
			}
			last = max(last, n)
			if n <= cursor || limit <= 0 {
				continue
			}
			if h.Len() < limit {
				heap.Push(h, n)
			} else if n < (*h)[0] {
				(*h)[0] = n
				heap.Fix(h, 0)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, "", fmt.Errorf("status: read %s: %w", s.dir, err)
		}
	}
	if h.Len() == 0 && cursor != "" && last != "" {
		return s.scanWindow("", limit)
	}
	window = []string(*h)
	slices.Sort(window)
	return window, last, nil
}

// maxHeap is a heap of names with the greatest on top.
type maxHeap []string

func (h maxHeap) Len() int           { return len(h) }
func (h maxHeap) Less(i, j int) bool { return h[i] > h[j] }
func (h maxHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *maxHeap) Push(x any)        { *h = append(*h, x.(string)) }
func (h *maxHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// examine reads one record file into a Candidate.
func (s *Store) examine(name string) (Candidate, fs.FileInfo) {
	c := Candidate{Name: name}
	r, fi, err := readRecord(filepath.Join(s.dir, name))
	if fi != nil {
		c.ModTime = fi.ModTime()
	}
	if err != nil {
		c.Err = err.Error()
		return c, fi
	}
	c.SessionID, c.PID, c.Marker = r.SessionID, r.PID, r.RelaunchMarker
	c.Mismatch = r.SessionID != strings.TrimSuffix(name, ".json")
	return c, fi
}

var errChanged = errors.New("status: record changed during the pass")

// removeHook, when a test sets it, runs between the last look at a record
// and its removal.
var removeHook func()

// removeIfUnchanged removes a record file unless it was replaced or
// rewritten since it was examined (a resumed session writing it again).
func (s *Store) removeIfUnchanged(name string, before fs.FileInfo) error {
	return s.locked(func() error { return removeUnchanged(filepath.Join(s.dir, name), before) })
}

// removeUnchanged is removeIfUnchanged under the store's write lock, so
// that no writer replaces the record between the look and the removal.
func removeUnchanged(path string, before fs.FileInfo) error {
	now, err := os.Lstat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return errChanged
		}
		return fmt.Errorf("status: %w", err)
	}
	if before == nil || !os.SameFile(before, now) || !now.ModTime().Equal(before.ModTime()) || now.Size() != before.Size() {
		return errChanged
	}
	if removeHook != nil {
		removeHook()
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("status: prune: %w", err)
	}
	return nil
}

// logPruned appends the pass's status_pruned event.
func (s *Store) logPruned(o PruneOptions, start time.Time, rep PruneReport) error {
	keptBy := map[Reason]int{}
	for _, d := range rep.Kept {
		keptBy[d.Reason]++
	}
	ev := map[string]any{
		"ts":         start.UTC().Format(time.RFC3339Nano),
		"event":      "status_pruned",
		"examined":   rep.Examined,
		"removed":    len(rep.Removed),
		"kept":       len(rep.Kept),
		"keptBy":     keptBy,
		"cursor":     rep.Next,
		"wrapped":    rep.Wrapped,
		"overBudget": rep.OverBudget,
		"elapsedMs":  rep.Elapsed.Milliseconds(),
		"manual":     o.Force,
	}
	events := o.Events
	if events == nil {
		l, err := rotate.New(filepath.Join(s.stateDir, "events.jsonl"), rotate.Events)
		if err != nil {
			return fmt.Errorf("status: %w", err)
		}
		defer l.Close()
		events = l
	}
	if err := events.AppendJSON(ev); err != nil {
		return fmt.Errorf("status: log status_pruned: %w", err)
	}
	return nil
}
