package rotate

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gofrs/flock"
	"github.com/google/go-cmp/cmp"
)

func newLog(t *testing.T, path string, p Policy) *Log {
	t.Helper()
	l, err := New(path, p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func appendLines(t *testing.T, l *Log, w, from, to, size int) {
	t.Helper()
	buf := make([]byte, 0, size)
	for n := from; n < to; n++ {
		if err := l.Append(testLine(buf, w, n, size)); err != nil {
			t.Fatalf("Append line %d: %v", n, err)
		}
	}
}

func TestNewWantsJSONLName(t *testing.T) {
	for _, p := range []string{"events.json", "events", "dir/.jsonl"} {
		if _, err := New(p, Events); err == nil {
			t.Errorf("New(%q) succeeded, want an error", p)
		}
	}
}

func TestRotatesBeforeTheAppendPastTheLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	l := newLog(t, path, Policy{MaxBytes: 1000, Keep: 100})
	appendLines(t, l, 0, 0, 10, 100) // exactly 1000 bytes: full, not yet rotated
	if got := archives(t, path); len(got) != 0 {
		t.Fatalf("archives after filling the live file = %v, want none", got)
	}
	appendLines(t, l, 0, 10, 11, 100)
	got := archives(t, path)
	if len(got) != 1 {
		t.Fatalf("archives after one more append = %v, want one", got)
	}
	if fi, _ := os.Stat(filepath.Join(filepath.Dir(path), got[0])); fi == nil || fi.Size() != 1000 {
		t.Errorf("archive %s holds %v bytes, want 1000", got[0], fi)
	}
	if fi, _ := os.Stat(path); fi == nil || fi.Size() != 100 {
		t.Errorf("live file holds %v bytes, want 100", fi)
	}
}

func TestRetentionKeepsNewestArchives(t *testing.T) {
	path := filepath.Join(t.TempDir(), "turns.jsonl")
	l := newLog(t, path, Policy{MaxBytes: 100, Keep: 2})
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	l.now = func() time.Time { return clock }
	for n := 0; n < 6; n++ { // five rotations, a second apart
		clock = clock.Add(time.Second)
		appendLines(t, l, 0, n, n+1, 100)
	}
	names, _ := readNames(filepath.Dir(path))
	var got []string
	for _, n := range names {
		if strings.HasPrefix(n, "turns-") {
			got = append(got, n)
		}
	}
	slices.Sort(got)
	want := []string{"turns-20260102T030410000Z.jsonl", "turns-20260102T030411000Z.jsonl"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("archives kept (-want +got):\n%s", diff)
	}
	seen, _ := readBack(t, path, 100)
	for n := 3; n < 6; n++ {
		if seen[lineKey{0, n}] != 1 {
			t.Errorf("line %d of the two newest archives and the live file is missing", n)
		}
	}
}

func TestOversizedExistingFileRotatesOnNextAppend(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "events.jsonl")
	legacy := strings.Repeat(`{"old":true}`+"\n", 1000)
	if err := os.WriteFile(path, []byte(legacy), 0o600); err != nil {
		t.Fatal(err)
	}
	l := newLog(t, path, Policy{MaxBytes: 1000, Keep: 5})
	if err := l.Append([]byte(`{"new":true}`)); err != nil {
		t.Fatal(err)
	}
	got := archives(t, path)
	if len(got) != 1 {
		t.Fatalf("archives = %v, want the legacy file archived", got)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, got[0])); string(b) != legacy {
		t.Errorf("archive does not hold the legacy content")
	}
	if b, _ := os.ReadFile(path); string(b) != `{"new":true}`+"\n" {
		t.Errorf("live file = %q, want only the new line", b)
	}
}

// An append whose descriptor was checked just before another process
// filled and renamed the file lands in the archive: late, but not lost. The
// append after it notices the rename and goes to the new live file.
func TestAppendRacingARenameLandsInArchive(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "events.jsonl")
	l := newLog(t, path, Policy{MaxBytes: 16, Keep: 5})
	if err := l.Append([]byte(`{"n":1}`)); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, ArchiveName("events", time.Now(), 0))
	fired := false
	testHook = func(stage string) {
		if stage != "checked" || fired {
			return
		}
		fired = true
		// Another writer appends, finds the file full and rotates it.
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Error(err)
			return
		}
		f.WriteString("{\"o\":1}\n")
		f.Close()
		if err := os.Rename(path, archive); err != nil {
			t.Error(err)
		}
	}
	defer func() { testHook = nil }()
	if err := l.Append([]byte(`{"n":2}`)); err != nil {
		t.Fatal(err)
	}
	testHook = nil
	if err := l.Append([]byte(`{"n":3}`)); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(archive)
	live, _ := os.ReadFile(path)
	if string(a) != "{\"n\":1}\n{\"o\":1}\n{\"n\":2}\n" || string(live) != "{\"n\":3}\n" {
		t.Errorf("archive = %q, live = %q; want lines 1, o, 2 archived and 3 live", a, live)
	}
}

// A file removed by hand is noticed on the next append (its link count is
// zero), so lines do not vanish into an unlinked file.
func TestRemovedLiveFileIsRecreated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	l := newLog(t, path, Events)
	if err := l.Append([]byte(`{"n":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := l.Append([]byte(`{"n":2}`)); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "{\"n\":2}\n" {
		t.Errorf("live file = %q, %v; want the second line", b, err)
	}
}

// A rotation by another process at a lower limit (a file not full by this
// Log's policy) is noticed within pathCheckEvery appends.
func TestRotationAtALowerLimitIsNoticed(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "events.jsonl")
	l := newLog(t, path, Policy{MaxBytes: 1 << 20, Keep: 5})
	if err := l.Append([]byte(`{"n":0}`)); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path, filepath.Join(dir, ArchiveName("events", time.Now(), 0))); err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= pathCheckEvery; n++ {
		if err := l.Append([]byte(`{"n":1}`)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("no new live file after %d appends: %v", pathCheckEvery, err)
	}
}

func TestTwoLogsShareOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	p := Policy{MaxBytes: 500, Keep: 1000}
	a, b := newLog(t, path, p), newLog(t, path, p)
	buf := make([]byte, 0, 100)
	for n := 0; n < 100; n++ {
		l := a
		if n%3 == 0 {
			l = b
		}
		if err := l.Append(testLine(buf, 0, n, 100)); err != nil {
			t.Fatal(err)
		}
	}
	seen, files := readBack(t, path, 100)
	checkExactlyOnce(t, seen, 1, 100)
	if files < 15 {
		t.Errorf("%d files, want about 20 rotations", files)
	}
}

func TestModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "state")
	path := filepath.Join(dir, "events.jsonl")
	l := newLog(t, path, Policy{MaxBytes: 10, Keep: 5})
	for i := 0; i < 3; i++ {
		if err := l.Append([]byte(`{"x":"0123456789"}`)); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v, %v; want 0700", d, fi.Mode().Perm(), err)
		}
	}
	names, _ := readNames(dir)
	if len(names) != 4 { // live, lock, two archives
		t.Errorf("directory holds %v, want the live file, the lock and two archives", names)
	}
	for _, n := range names {
		if fi, err := os.Stat(filepath.Join(dir, n)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, %v; want 0600", n, fi.Mode().Perm(), err)
		}
	}
}

func TestAppendLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	l := newLog(t, path, Events)
	for _, bad := range []string{"", "not json", `{"a":1}{"b":2}`, `{"a":`, "{\"a\":1}\n{\"b\":2}"} {
		if err := l.Append([]byte(bad)); !errors.Is(err, ErrNotJSON) {
			t.Errorf("Append(%q) = %v, want ErrNotJSON", bad, err)
		}
	}
	for _, good := range []string{`{"a":1}`, "{\"a\":2}\n", "{\n  \"a\": 3\n}\r\n", `"s"`} {
		if err := l.Append([]byte(good)); err != nil {
			t.Errorf("Append(%q) = %v", good, err)
		}
	}
	if err := l.AppendJSON(map[string]string{"event": "x\ny"}); err != nil {
		t.Error(err)
	}
	if err := l.AppendJSON(func() {}); err == nil {
		t.Error("AppendJSON(func) succeeded, want a marshal error")
	}
	b, _ := os.ReadFile(path)
	want := "{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n\"s\"\n{\"event\":\"x\\ny\"}\n"
	if string(b) != want {
		t.Errorf("file = %q, want %q", b, want)
	}
}

func TestContendedLockSkipsRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	l := newLog(t, path, Policy{MaxBytes: 100, Keep: 5})
	var errs []error
	l.OnRotateError = func(err error) { errs = append(errs, err) }
	held := flock.New(path + ".lock")
	if ok, err := held.TryLock(); !ok || err != nil {
		t.Fatalf("TryLock = %v, %v", ok, err)
	}
	appendLines(t, l, 0, 0, 5, 100)
	if got := archives(t, path); len(got) != 0 {
		t.Errorf("archives while another holder has the lock = %v, want none", got)
	}
	held.Close()
	appendLines(t, l, 0, 5, 6, 100)
	if got := archives(t, path); len(got) != 1 {
		t.Errorf("archives after the lock was released = %v, want one", got)
	}
	if len(errs) != 0 {
		t.Errorf("contention reported as errors: %v", errs)
	}
	seen, _ := readBack(t, path, 100)
	checkExactlyOnce(t, seen, 1, 6)
}

func TestStaleLockIsBroken(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	l := newLog(t, path, Policy{MaxBytes: 100, Keep: 5, StaleLock: time.Minute})
	held := flock.New(path + ".lock")
	if ok, err := held.TryLock(); !ok || err != nil {
		t.Fatalf("TryLock = %v, %v", ok, err)
	}
	defer held.Close()
	appendLines(t, l, 0, 0, 2, 100)
	if got := archives(t, path); len(got) != 0 {
		t.Fatalf("archives under a fresh held lock = %v, want none", got)
	}
	var stages []string
	testHook = func(s string) {
		if s != "checked" && s != "writing" {
			stages = append(stages, s)
		}
	}
	defer func() { testHook = nil }()
	l.now = func() time.Time { return time.Now().Add(2 * time.Minute) }
	appendLines(t, l, 0, 2, 3, 100)
	if got := archives(t, path); len(got) != 1 {
		t.Errorf("archives after the lock went stale = %v, want one", got)
	}
	if diff := cmp.Diff([]string{"stale", "locked", "planned", "renamed"}, stages); diff != "" {
		t.Errorf("rotation stages (-want +got):\n%s", diff)
	}
}

func TestRotationFailureDefersWithoutBlocking(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	l := newLog(t, path, Policy{MaxBytes: 100, Keep: 5})
	clock := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	l.now = func() time.Time { return clock }
	// A directory where the lock file belongs makes every rotation fail.
	if err := os.Mkdir(path+".lock", 0o700); err != nil {
		t.Fatal(err)
	}
	var errs []error
	l.OnRotateError = func(err error) { errs = append(errs, err) }
	appendLines(t, l, 0, 0, 3, 100) // rotation due at the second append; fails once
	if len(errs) != 1 {
		t.Fatalf("rotation errors = %v, want exactly one (then deferred)", errs)
	}
	if !strings.HasPrefix(errs[0].Error(), "rotate: ") {
		t.Errorf("error %q lacks the package prefix", errs[0])
	}
	clock = clock.Add(2 * time.Second)
	appendLines(t, l, 0, 3, 4, 100)
	if len(errs) != 2 {
		t.Errorf("rotation errors after the retry delay = %d, want 2", len(errs))
	}
	os.Remove(path + ".lock")
	clock = clock.Add(2 * time.Second)
	appendLines(t, l, 0, 4, 5, 100)
	if got := archives(t, path); len(got) != 1 || len(errs) != 2 {
		t.Errorf("after the cause went away: archives %v, errors %d; want one archive, no new error", got, len(errs))
	}
	seen, _ := readBack(t, path, 100)
	checkExactlyOnce(t, seen, 1, 5)
}
