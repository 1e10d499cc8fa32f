package status

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// recordFile writes a record for id and dates its file age before now.
func recordFile(t *testing.T, s *Store, r *Record, now time.Time, age time.Duration) string {
	t.Helper()
	if err := s.Write(r); err != nil {
		t.Fatal(err)
	}
	path, _ := s.Path(r.SessionID)
	setAge(t, path, now, age)
	return path
}

func setAge(t *testing.T, path string, now time.Time, age time.Duration) {
	t.Helper()
	if err := os.Chtimes(path, now.Add(-age), now.Add(-age)); err != nil {
		t.Fatal(err)
	}
}

func remaining(t *testing.T, s *Store) []string {
	t.Helper()
	names, err := s.recordNames()
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// recordingEvents collects appended events.
type recordingEvents struct{ events []map[string]any }

func (r *recordingEvents) AppendJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	r.events = append(r.events, m)
	return nil
}

func decisions(ds []Decision) map[string]Reason {
	m := map[string]Reason{}
	for _, d := range ds {
		m[d.Name] = d.Reason
	}
	return m
}

const old = 8 * 24 * time.Hour

// TestPruneRealFiles runs a pass over real record files, the real process
// table (this process alive, a reaped child dead) and real marker files.
func TestPruneRealFiles(t *testing.T) {
	requireLinux(t)
	state := t.TempDir()
	s := NewStore(state)
	now := time.Now()
	self, err := Identify(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	dead := deadPID(t)
	markers := t.TempDir()
	kept := filepath.Join(markers, "123-abc.json")
	if err := os.WriteFile(kept, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	live := &Record{SessionID: "live"}
	live.SetProcess(self)
	reused := &Record{SessionID: "reused"}
	reused.SetProcess(self)
	reused.StartTicks-- // another process once had this pid
	for _, tc := range []struct {
		r   *Record
		age time.Duration
	}{
		{live, old},
		{reused, old},
		{&Record{SessionID: "dead", PID: dead}, old},
		{&Record{SessionID: "dead-ended", PID: dead, EndedAt: tp(now.Add(-old))}, old},
		{&Record{SessionID: "dead-recent", PID: dead}, 6 * 24 * time.Hour},
		{&Record{SessionID: "dead-seven-days", PID: dead}, 7*24*time.Hour - time.Second},
		{&Record{SessionID: "dead-marker-kept", PID: dead, RelaunchMarker: kept}, old},
		{&Record{SessionID: "dead-marker-gone", PID: dead, RelaunchMarker: filepath.Join(markers, "gone.json")}, old},
		{&Record{SessionID: "dead-marker-relative", PID: dead, RelaunchMarker: "relaunch/x.json"}, old},
		{&Record{SessionID: "dead-current", PID: dead}, old},
		{&Record{SessionID: "no-pid"}, old},
	} {
		recordFile(t, s, tc.r, now, tc.age)
	}
	writeRaw(t, s, "corrupt.json", `{"pid": 12`)
	setAge(t, filepath.Join(s.Dir(), "corrupt.json"), now, old)
	writeRaw(t, s, "invalid-pid.json", `{"sessionId":"invalid-pid","pid":"12"}`)
	setAge(t, filepath.Join(s.Dir(), "invalid-pid.json"), now, old)
	// Handoffs and session files beside the store are never touched.
	handoff := filepath.Join(state, "handoff.md")
	os.WriteFile(handoff, []byte("x"), 0o600)
	setAge(t, handoff, now, 100*old)

	events := &recordingEvents{}
	rep, err := s.Prune(PruneOptions{Current: "dead-current", Now: func() time.Time { return now }, Events: events})
	if err != nil {
		t.Fatal(err)
	}
	wantRemoved := map[string]Reason{
		"dead.json": RemovedDead, "dead-ended.json": RemovedDead, "dead-marker-gone.json": RemovedDead,
	}
	wantKept := map[string]Reason{
		"live.json": KeptAlive, "reused.json": KeptAlive, "dead-recent.json": KeptRecent,
		"dead-seven-days.json": KeptRecent, "dead-marker-kept.json": KeptMarker,
		"dead-marker-relative.json": KeptMarkerUnknown, "dead-current.json": KeptCurrent,
		"no-pid.json": KeptNoPID, "corrupt.json": KeptUnreadable, "invalid-pid.json": KeptNoPID,
	}
	if diff := cmp.Diff(wantRemoved, decisions(rep.Removed)); diff != "" {
		t.Errorf("removed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantKept, decisions(rep.Kept)); diff != "" {
		t.Errorf("kept (-want +got):\n%s", diff)
	}
	var want []string
	for n := range wantKept {
		want = append(want, n)
	}
	slices.Sort(want)
	if diff := cmp.Diff(want, remaining(t, s)); diff != "" {
		t.Errorf("files left (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(handoff); err != nil {
		t.Errorf("a file beside the store was touched: %v", err)
	}
	if rep.Examined != 13 || !rep.Wrapped || rep.Next != "" || rep.Skipped != "" {
		t.Errorf("report = %+v; want 13 examined, wrapped", rep)
	}
	if len(events.events) != 1 {
		t.Fatalf("events = %v, want one status_pruned", events.events)
	}
	ev := events.events[0]
	if ev["event"] != "status_pruned" || ev["examined"] != 13.0 || ev["removed"] != 3.0 || ev["kept"] != 10.0 {
		t.Errorf("event = %v", ev)
	}
	if by, _ := ev["keptBy"].(map[string]any); by["alive"] != 2.0 || by["recent"] != 2.0 {
		t.Errorf("event keptBy = %v", ev["keptBy"])
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), lockName)); !os.IsNotExist(err) {
		t.Errorf("prune lock left behind: %v", err)
	}
}

// EPERM through the liveness interface: kept, like any pid whose liveness
// is not confirmed dead.
func TestPruneKeepsEPERM(t *testing.T) {
	s := NewStore(t.TempDir())
	now := t0
	recordFile(t, s, &Record{SessionID: "other-user", PID: 1}, now, old)
	recordFile(t, s, &Record{SessionID: "unanswered", PID: 2}, now, old)
	table := &fakeTable{procs: map[int]Process{1: {State: PIDDenied}, 2: {State: PIDUnknown}}}
	rep, err := s.Prune(PruneOptions{Now: func() time.Time { return now }, Table: table, Events: &recordingEvents{}, Self: &Identity{PID: 99}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]Reason{"other-user.json": KeptPIDUnknown, "unanswered.json": KeptPIDUnknown}, decisions(rep.Kept)); diff != "" || len(rep.Removed) != 0 {
		t.Errorf("kept (-want +got):\n%s\nremoved %v", diff, rep.Removed)
	}
}

func TestPruneKeepsRealEPERM(t *testing.T) {
	requireLinux(t)
	if os.Geteuid() == 0 {
		t.Skip("running as root: pid 1 answers kill(1, 0) without EPERM; TestPruneKeepsEPERM covers the rule through the interface")
	}
	s := NewStore(t.TempDir())
	now := time.Now()
	recordFile(t, s, &Record{SessionID: "init", PID: 1, StartTicks: 999999999}, now, old)
	rep, err := s.Prune(PruneOptions{Now: func() time.Time { return now }, Events: &recordingEvents{}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]Reason{"init.json": KeptPIDUnknown}, decisions(rep.Kept)); diff != "" {
		t.Errorf("kept (-want +got):\n%s", diff)
	}
}

func TestPruneThrottle(t *testing.T) {
	s := NewStore(t.TempDir())
	now := t0
	table := &fakeTable{}
	opts := PruneOptions{Now: func() time.Time { return now }, Table: table, Events: &recordingEvents{}, Self: &Identity{PID: 99}}
	recordFile(t, s, &Record{SessionID: "a", PID: 5}, now, old)
	if rep, err := s.Prune(opts); err != nil || rep.Skipped != "" || len(rep.Removed) != 1 {
		t.Fatalf("first pass = %+v, %v; want one removal", rep, err)
	}
	recordFile(t, s, &Record{SessionID: "b", PID: 5}, now, old)
	for _, tc := range []struct {
		after   time.Duration
		force   bool
		skipped string
	}{
		{time.Hour, false, "throttled"},
		{23*time.Hour + 59*time.Minute, false, "throttled"},
		{time.Hour, true, ""}, // a manual pass
		{24*time.Hour + 59*time.Minute, false, "throttled"},
		{25 * time.Hour, false, ""},
		{26 * time.Hour, false, "throttled"},
		{50 * time.Hour, false, ""},
	} {
		now = t0.Add(tc.after)
		opts.Force = tc.force
		rep, err := s.Prune(opts)
		if err != nil || rep.Skipped != tc.skipped {
			t.Errorf("pass at +%v (force %v) = %+v, %v; want skipped %q", tc.after, tc.force, rep, err, tc.skipped)
		}
	}
	// The forced pass at +1h counts: the next automatic one is 24 h after it.
	lp, ok := s.readLastPrune()
	if !ok || !lp.At.Equal(t0.Add(50*time.Hour)) {
		t.Errorf(".last-prune = %+v, %v", lp, ok)
	}
	// A clock moved back by more than a day does not hold pruning off.
	now = t0.Add(-72 * time.Hour)
	opts.Force = false
	if rep, _ := s.Prune(opts); rep.Skipped != "" {
		t.Errorf("pass after the clock went back 5 days: skipped %q", rep.Skipped)
	}
	// A .last-prune written by something else throttles by its mtime.
	now = time.Now()
	writeRaw(t, s, lastPruneName, "legacy\n")
	if rep, _ := s.Prune(opts); rep.Skipped != "throttled" {
		t.Errorf("pass after a fresh legacy .last-prune: skipped %q, want throttled", rep.Skipped)
	}
}

func TestPruneCursorWraps(t *testing.T) {
	s := NewStore(t.TempDir())
	now := t0
	table := &fakeTable{procs: map[int]Process{5: {State: PIDAlive}}}
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		recordFile(t, s, &Record{SessionID: id, PID: 5}, now, old)
	}
	events := &recordingEvents{}
	opts := PruneOptions{Now: func() time.Time { return now }, Table: table, Events: events, Limit: 2, Force: true, Self: &Identity{PID: 99}}
	var passes []string
	for i := 0; i < 4; i++ {
		rep, err := s.Prune(opts)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, d := range rep.Kept {
			names = append(names, strings.TrimSuffix(d.Name, ".json"))
		}
		passes = append(passes, strings.Join(names, ",")+" next="+rep.Next)
	}
	want := []string{"a,b next=b.json", "c,d next=d.json", "e next=", "a,b next=b.json"}
	if diff := cmp.Diff(want, passes); diff != "" {
		t.Errorf("passes (-want +got):\n%s", diff)
	}
	if len(events.events) != 4 || events.events[2]["wrapped"] != true {
		t.Errorf("events = %v; want four, the third wrapped", events.events)
	}
}

func TestPruneBudget(t *testing.T) {
	s := NewStore(t.TempDir())
	base := t0
	for _, id := range []string{"a", "b", "c", "d", "e", "f"} {
		recordFile(t, s, &Record{SessionID: id, PID: 5}, base, old)
	}
	// Every look at the clock costs 60 ms: the clock is read at the start
	// and before each record after the first, so the 200 ms budget ends the
	// pass before the fifth record (240 ms in), whatever the limit.
	now := base
	clock := func() time.Time { now = now.Add(60 * time.Millisecond); return now }
	rep, err := s.Prune(PruneOptions{Now: clock, Table: &fakeTable{}, Events: &recordingEvents{}, Self: &Identity{PID: 99}})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OverBudget || rep.Examined != 4 || rep.Next != "d.json" || len(rep.Removed) != 4 {
		t.Errorf("report = %+v; want over budget after 4, cursor d.json", rep)
	}
	if lp, _ := s.readLastPrune(); lp.Cursor != "d.json" {
		t.Errorf("saved cursor = %q, want d.json", lp.Cursor)
	}
	if diff := cmp.Diff([]string{"e.json", "f.json"}, remaining(t, s)); diff != "" {
		t.Errorf("files left (-want +got):\n%s", diff)
	}
}

func TestPruneDryRun(t *testing.T) {
	state := t.TempDir()
	s := NewStore(state)
	now := t0
	recordFile(t, s, &Record{SessionID: "a", PID: 5}, now, old)
	recordFile(t, s, &Record{SessionID: "b", PID: 6}, now, time.Hour)
	rep, err := s.Prune(PruneOptions{DryRun: true, Now: func() time.Time { return now }, Table: &fakeTable{}})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.DryRun || len(rep.Removed) != 1 || rep.Removed[0].Name != "a.json" || len(rep.Kept) != 1 {
		t.Errorf("dry run report = %+v", rep)
	}
	if diff := cmp.Diff([]string{"a.json", "b.json"}, remaining(t, s)); diff != "" {
		t.Errorf("a dry run removed files (-want +got):\n%s", diff)
	}
	for _, name := range []string{filepath.Join(s.Dir(), lastPruneName), filepath.Join(state, "events.jsonl")} {
		if _, err := os.Stat(name); !os.IsNotExist(err) {
			t.Errorf("a dry run wrote %s", name)
		}
	}
}

func TestPruneLogsToEventsJSONL(t *testing.T) {
	state := t.TempDir()
	s := NewStore(state)
	now := t0
	recordFile(t, s, &Record{SessionID: "a", PID: 5}, now, old)
	if _, err := s.Prune(PruneOptions{Now: func() time.Time { return now }, Table: &fakeTable{}, Self: &Identity{PID: 99}}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(state, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("events.jsonl line %q: %v", sc.Text(), err)
		}
		lines = append(lines, m)
	}
	if len(lines) != 1 || lines[0]["event"] != "status_pruned" || lines[0]["removed"] != 1.0 || lines[0]["ts"] != "2026-01-02T03:04:05Z" {
		t.Errorf("events.jsonl = %v", lines)
	}
	if fi, err := f.Stat(); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("events.jsonl mode %v", fi.Mode().Perm())
	}
}

// A record rewritten between examination and removal (a resumed session)
// is kept.
func TestPruneKeepsRecordChangedDuringPass(t *testing.T) {
	s := NewStore(t.TempDir())
	s.table = &fakeTable{} // pid 5, the record's process, is dead
	now := t0
	path := recordFile(t, s, &Record{SessionID: "a", PID: 5, RelaunchMarker: "/m/a.json"}, now, old)
	markers := func(string) MarkerState {
		if err := s.Write(&Record{SessionID: "a", PID: 7}); err != nil {
			t.Error(err)
		}
		return MarkerGone
	}
	rep, err := s.Prune(PruneOptions{Now: func() time.Time { return now }, Table: &fakeTable{}, Markers: markers, Events: &recordingEvents{}, Self: &Identity{PID: 99}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]Reason{"a.json": KeptChanged}, decisions(rep.Kept)); diff != "" || len(rep.Removed) != 0 {
		t.Errorf("kept (-want +got):\n%s\nremoved %v", diff, rep.Removed)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("the rewritten record is gone: %v", err)
	}
}

func TestPruneLock(t *testing.T) {
	requireLinux(t)
	self, err := Identify(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	deadOwner := Identity{PID: deadPID(t), StartTicks: 1, BootID: self.BootID}
	for _, tc := range []struct {
		name    string
		owner   *Identity // nil: a lock directory without an owner file
		age     time.Duration
		skipped string
	}{
		{"fresh lock held by this process", &self, time.Second, "locked"},
		{"fresh lock of a dead owner", &deadOwner, time.Second, "locked"},
		{"stale lock of a live owner", &self, time.Minute, "locked"},
		{"stale lock of a dead owner", &deadOwner, time.Minute, ""},
		{"stale lock of a reused pid", &Identity{PID: self.PID, StartTicks: self.StartTicks + 1, BootID: self.BootID}, time.Minute, ""},
		{"stale lock without owner", nil, time.Minute, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewStore(t.TempDir())
			now := time.Now()
			recordFile(t, s, &Record{SessionID: "a", PID: deadOwner.PID}, now, old)
			dir := filepath.Join(s.Dir(), lockName)
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if tc.owner != nil {
				b, _ := json.Marshal(lockOwner{PID: tc.owner.PID, StartTicks: tc.owner.StartTicks, BootID: tc.owner.BootID, Token: "theirs"})
				os.WriteFile(filepath.Join(dir, "owner"), b, 0o600)
			}
			setAge(t, dir, now, tc.age)
			rep, err := s.Prune(PruneOptions{Now: func() time.Time { return now }, Events: &recordingEvents{}})
			if err != nil || rep.Skipped != tc.skipped {
				t.Fatalf("Prune = %+v, %v; want skipped %q", rep, err, tc.skipped)
			}
			_, statErr := os.Stat(dir)
			if tc.skipped == "locked" && statErr != nil {
				t.Errorf("a lock that is not stale was removed")
			}
			if tc.skipped == "" {
				if !os.IsNotExist(statErr) {
					t.Errorf("lock left after the pass: %v", statErr)
				}
				if len(rep.Removed) != 1 {
					t.Errorf("the pass after breaking the lock removed %v, want a.json", rep.Removed)
				}
			}
			if leftovers, _ := filepath.Glob(filepath.Join(s.Dir(), lockName+".gone-*")); len(leftovers) != 0 {
				t.Errorf("broken lock left aside: %v", leftovers)
			}
		})
	}
}

// A pass whose lock was broken and retaken by another pass leaves the
// other pass's lock alone when it finishes.
func TestPruneLockReleaseLeavesOthersLock(t *testing.T) {
	s := NewStore(t.TempDir())
	os.MkdirAll(s.Dir(), 0o700)
	lk, err := s.lockPrune(Identity{PID: 99}, &fakeTable{}, t0, DefaultStaleLock)
	if err != nil || lk == nil {
		t.Fatalf("lockPrune = %v, %v", lk, err)
	}
	// Someone breaks it and takes a fresh one.
	if err := removeAside(lk.dir); err != nil {
		t.Fatal(err)
	}
	other, err := s.lockPrune(Identity{PID: 98}, &fakeTable{}, t0, DefaultStaleLock)
	if err != nil || other == nil {
		t.Fatalf("second lockPrune = %v, %v", other, err)
	}
	if err := lk.release(); err != nil {
		t.Fatal(err)
	}
	if v, ok := inspectLock(lk.dir); !ok || v.owner == nil || v.owner.Token != other.token {
		t.Errorf("releasing a broken lock removed its successor: %+v, %v", v, ok)
	}
}

func TestPruneMissingDir(t *testing.T) {
	s := NewStore(filepath.Join(t.TempDir(), "none"))
	rep, err := s.Prune(PruneOptions{Table: &fakeTable{}})
	if err != nil || rep.Examined != 0 {
		t.Errorf("Prune of a missing store = %+v, %v", rep, err)
	}
	if _, err := os.Stat(s.Dir()); !os.IsNotExist(err) {
		t.Errorf("Prune created the store directory")
	}
}
