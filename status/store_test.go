package status

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestWriteRead(t *testing.T) {
	state := filepath.Join(t.TempDir(), "context-budget")
	s := NewStore(state)
	r := fullRecord()
	if err := s.Write(r); err != nil {
		t.Fatal(err)
	}
	path, _ := s.Path(r.SessionID)
	if path != filepath.Join(state, "status", r.SessionID+".json") {
		t.Errorf("Path = %s", path)
	}
	for p, want := range map[string]os.FileMode{path: 0o600, s.Dir(): 0o700} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, %v; want %v", p, fi.Mode().Perm(), err, want)
		}
	}
	got, err := s.Read(r.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r, got); diff != "" {
		t.Errorf("Read after Write (-want +got):\n%s", diff)
	}
}

func TestWriteSetsUpdatedAt(t *testing.T) {
	s := NewStore(t.TempDir())
	s.now = func() time.Time { return t0 }
	r := &Record{SessionID: "s1", PID: 1}
	if err := s.Write(r); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Read("s1"); got == nil || !got.UpdatedAt.Equal(t0) {
		t.Errorf("UpdatedAt = %v, want %v", got, t0)
	}
}

func TestRewriteKeepsUnknownFields(t *testing.T) {
	s := NewStore(t.TempDir())
	if err := os.MkdirAll(s.Dir(), 0o700); err != nil {
		t.Fatal(err)
	}
	path, _ := s.Path("s1")
	newer := `{"sessionId":"s1","pid":5,"cwd":"/a","futureField":{"x":1},"tokens":10}`
	if err := os.WriteFile(path, []byte(newer), 0o600); err != nil {
		t.Fatal(err)
	}
	// An older writer that never read the file rewrites the record.
	if err := s.Write(&Record{SessionID: "s1", PID: 5, Cwd: "/b", Extra: map[string]json.RawMessage{"mine": json.RawMessage(`true`)}}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if compactRaw(m["futureField"]) != `{"x":1}` || compactRaw(m["mine"]) != "true" || compactRaw(m["cwd"]) != `"/b"` {
		t.Errorf("rewritten record = %s; want futureField kept, mine added, cwd /b", b)
	}
}

func TestEnd(t *testing.T) {
	s := NewStore(t.TempDir())
	s.table = &fakeTable{procs: map[int]Process{5: {State: PIDAlive, StartTicks: 50}}}
	if err := s.Write(&Record{SessionID: "s1", PID: 5, StartTicks: 50}); err != nil {
		t.Fatal(err)
	}
	if err := s.End("s1", Identity{PID: 6, StartTicks: 60}, t0); !errors.Is(err, ErrNotOwner) {
		t.Errorf("End by another process = %v, want ErrNotOwner", err)
	}
	if err := s.End("s1", Identity{PID: 5, StartTicks: 51}, t0); !errors.Is(err, ErrNotOwner) {
		t.Errorf("End by a later process with the same pid = %v, want ErrNotOwner", err)
	}
	if r, _ := s.Read("s1"); r == nil || r.EndedAt != nil {
		t.Fatalf("a refused End changed the record: %+v", r)
	}
	if err := s.End("s1", Identity{PID: 5, StartTicks: 50}, t0); err != nil {
		t.Fatal(err)
	}
	r, err := s.Read("s1")
	if err != nil || r.EndedAt == nil || !r.EndedAt.Equal(t0) {
		t.Fatalf("after End: %+v, %v", r, err)
	}
	if got := Classify(r, Process{State: PIDDead}, ""); got != Exited {
		t.Errorf("Classify(ended, dead) = %q, want exited", got)
	}
	if err := s.End("nobody", Identity{PID: 5}, t0); err == nil {
		t.Errorf("End of a missing record succeeded")
	}
}

// TestUpdateOwnership: a writer replaces a record only when it is the
// record's process, or the record has no live owner.
func TestUpdateOwnership(t *testing.T) {
	const boot = "boot-a"
	table := &fakeTable{boot: boot, procs: map[int]Process{
		10: {State: PIDAlive, StartTicks: 100}, // running
		11: {State: PIDAlive, StartTicks: 999}, // pid reused
		12: {State: PIDDenied},                 // another user's, no start time
		13: {State: PIDAlive},                  // alive, start time unreadable
	}}
	me := Identity{PID: 20, StartTicks: 200, BootID: boot}
	for _, tc := range []struct {
		name string
		old  string // the record on disk, "" for none
		self Identity
		want error
	}{
		{"no record", "", me, nil},
		{"own record", `{"sessionId":"s","pid":20,"startTicks":200,"bootId":"boot-a"}`, me, nil},
		{"own record, start time not recorded", `{"sessionId":"s","pid":20}`, me, nil},
		{"live owner", `{"sessionId":"s","pid":10,"startTicks":100,"bootId":"boot-a"}`, me, ErrNotOwner},
		{"live owner, same pid, other start", `{"sessionId":"s","pid":20,"startTicks":150,"bootId":"boot-a"}`, me, nil},
		{"live owner without start time", `{"sessionId":"s","pid":10}`, me, ErrNotOwner},
		{"owner of another user", `{"sessionId":"s","pid":12,"startTicks":5}`, me, ErrNotOwner},
		{"owner alive, table without start time", `{"sessionId":"s","pid":13,"startTicks":5}`, me, ErrNotOwner},
		{"owner ended", `{"sessionId":"s","pid":10,"startTicks":100,"endedAt":"2026-01-02T03:04:05Z"}`, me, nil},
		{"owner dead", `{"sessionId":"s","pid":30,"startTicks":100}`, me, nil},
		{"owner pid reused", `{"sessionId":"s","pid":11,"startTicks":100}`, me, nil},
		{"owner of an earlier boot", `{"sessionId":"s","pid":10,"startTicks":100,"bootId":"boot-z"}`, me, nil},
		{"no pid", `{"sessionId":"s"}`, me, nil},
		{"invalid pid", `{"sessionId":"s","pid":"12ab"}`, me, nil},
		{"names another session", `{"sessionId":"someone-else","pid":30}`, me, ErrMismatch},
		{"names no session", `{"pid":30}`, me, ErrMismatch},
		{"corrupt", `{"sessionId":"s","pid":`, me, ErrCorrupt},
		{"writer without identity, live owner", `{"sessionId":"s","pid":10,"startTicks":100}`, Identity{}, ErrNotOwner},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewStore(t.TempDir())
			s.table = table
			if tc.old != "" {
				writeRaw(t, s, "s.json", tc.old)
			}
			before, _ := os.ReadFile(filepath.Join(s.Dir(), "s.json"))
			err := s.Update("s", tc.self, func(r *Record) { r.Cwd = "/mine" })
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("Update = %v, want %v", err, tc.want)
			}
			after, _ := os.ReadFile(filepath.Join(s.Dir(), "s.json"))
			if err != nil {
				if string(after) != string(before) {
					t.Errorf("a refused Update changed the file:\n%s\nto\n%s", before, after)
				}
				if names, _ := s.recordNames(); len(names) > 1 {
					t.Errorf("a refused Update wrote other records: %v", names)
				}
				return
			}
			r, err := s.Read("s")
			if err != nil || r.Cwd != "/mine" || r.PID != tc.self.PID || r.StartTicks != tc.self.StartTicks || r.InvalidPID != nil {
				t.Errorf("after Update: %+v, %v", r, err)
			}
		})
	}
}

// TestMismatchedRecordIsLeftAlone: the file name says one session, the
// record another; neither a hello of either session nor a bye touches it,
// and the other session's file is not written through it.
func TestMismatchedRecordIsLeftAlone(t *testing.T) {
	s := NewStore(t.TempDir())
	s.table = &fakeTable{procs: map[int]Process{10: {State: PIDAlive, StartTicks: 100}}}
	live := `{"sessionId":"someone-else","pid":10,"startTicks":100,"cwd":"/theirs"}`
	writeRaw(t, s, "someone-else.json", live)
	writeRaw(t, s, "x.json", `{"sessionId":"someone-else","pid":30,"cwd":"/stale"}`)
	stale, _ := os.ReadFile(filepath.Join(s.Dir(), "x.json"))
	me := Identity{PID: 30}
	if err := s.Update("x", me, func(r *Record) { r.Cwd = "/mine" }); !errors.Is(err, ErrMismatch) {
		t.Errorf("Update(x) = %v, want ErrMismatch", err)
	}
	if err := s.End("x", me, t0); !errors.Is(err, ErrMismatch) {
		t.Errorf("End(x) = %v, want ErrMismatch", err)
	}
	for name, want := range map[string]string{"someone-else.json": live, "x.json": string(stale)} {
		if got, _ := os.ReadFile(filepath.Join(s.Dir(), name)); string(got) != want {
			t.Errorf("%s = %s, want it untouched: %s", name, got, want)
		}
	}
	entries, err := s.List(s.table, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.SessionID == "x" && (e.State != Mismatched || !strings.Contains(fmt.Sprint(e.Err), "x.json holds sessionId \"someone-else\", but its name says \"x\"")) {
			t.Errorf("x listed as %s: %v; want mismatched with its path", e.State, e.Err)
		}
		if e.SessionID == "someone-else" && e.State != Running {
			t.Errorf("the live session is listed as %s", e.State)
		}
	}
}

func TestBadSessionIDs(t *testing.T) {
	s := NewStore(t.TempDir())
	for _, id := range []string{"", "../x", ".last-prune", "a/b"} {
		if err := s.Write(&Record{SessionID: id}); !errors.Is(err, ErrBadSessionID) {
			t.Errorf("Write(%q) = %v, want ErrBadSessionID", id, err)
		}
		if _, err := s.Read(id); !errors.Is(err, ErrBadSessionID) {
			t.Errorf("Read(%q) = %v, want ErrBadSessionID", id, err)
		}
	}
}

func TestStoreFromEnv(t *testing.T) {
	env := map[string]string{"PI_CODING_AGENT_DIR": "/agent"}
	if got := StoreFromEnv(func(k string) string { return env[k] }).Dir(); got != "/agent/context-budget/status" {
		t.Errorf("Dir = %s", got)
	}
	env["PI_CONTEXT_BUDGET_STATE_DIR"] = "/state"
	if got := StoreFromEnv(func(k string) string { return env[k] }).Dir(); got != "/state/status" {
		t.Errorf("Dir with PI_CONTEXT_BUDGET_STATE_DIR = %s", got)
	}
}

// TestPatchKeepsWhatOthersWrote: Patch changes fields of the record as it
// is now, so an end written since an engine last looked stays, and so does
// the record's process.
func TestPatchKeepsWhatOthersWrote(t *testing.T) {
	s := NewStore(t.TempDir())
	s.table = &fakeTable{procs: map[int]Process{5: {State: PIDAlive, StartTicks: 50}}}
	me := Identity{PID: 5, StartTicks: 50}
	if err := s.Update("s1", me, func(r *Record) { r.Cwd = "/w" }); err != nil {
		t.Fatal(err)
	}
	if err := s.End("s1", me, t0); err != nil {
		t.Fatal(err)
	}
	if err := s.Patch("s1", func(r *Record) { r.Phase, r.PID = "idle", 99 }); err != nil {
		t.Fatal(err)
	}
	r, err := s.Read("s1")
	if err != nil || r.Phase != "idle" || r.PID != 5 || r.StartTicks != 50 || r.Cwd != "/w" || r.EndedAt == nil {
		t.Errorf("after Patch: %+v, %v; want phase idle, the record's own process, the end kept", r, err)
	}
	writeRaw(t, s, "x.json", `{"sessionId":"someone-else"}`)
	if err := s.Patch("x", func(r *Record) { r.Phase = "idle" }); !errors.Is(err, ErrMismatch) {
		t.Errorf("Patch of a mismatched record = %v, want ErrMismatch", err)
	}
	if err := s.Patch("new", func(r *Record) { r.Phase = "idle" }); err != nil {
		t.Errorf("Patch of a missing record = %v, want it created", err)
	}
}
