package status

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
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
	if err := s.Write(&Record{SessionID: "s1", PID: 5}); err != nil {
		t.Fatal(err)
	}
	if err := s.End("s1", t0); err != nil {
		t.Fatal(err)
	}
	r, err := s.Read("s1")
	if err != nil || r.EndedAt == nil || !r.EndedAt.Equal(t0) {
		t.Fatalf("after End: %+v, %v", r, err)
	}
	if got := Classify(r, Process{State: PIDDead}, ""); got != Exited {
		t.Errorf("Classify(ended, dead) = %q, want exited", got)
	}
	if err := s.End("nobody", t0); err == nil {
		t.Errorf("End of a missing record succeeded")
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
