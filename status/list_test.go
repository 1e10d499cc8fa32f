package status

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeTable answers from a map; pids not in it are dead.
type fakeTable struct {
	procs map[int]Process
	boot  string
	asked []int
}

func (f *fakeTable) Lookup(pid int) Process {
	f.asked = append(f.asked, pid)
	if p, ok := f.procs[pid]; ok {
		return p
	}
	return Process{State: PIDDead}
}

func (f *fakeTable) BootID() string { return f.boot }

func writeRaw(t *testing.T, s *Store, name, content string) {
	t.Helper()
	if err := os.MkdirAll(s.Dir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Dir(), name), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestList(t *testing.T) {
	s := NewStore(t.TempDir())
	ended := tp(t0)
	for _, r := range []*Record{
		{SessionID: "aa-running", PID: 10, StartTicks: 5, BootID: bootA},
		{SessionID: "ab-reused", PID: 11, StartTicks: 5, BootID: bootA},
		{SessionID: "b-crashed", PID: 12, StartTicks: 5, BootID: bootA},
		{SessionID: "c-exited", PID: 13, EndedAt: ended},
		{SessionID: "d-eperm", PID: 14},
		{SessionID: "e-nopid"},
	} {
		if err := s.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	writeRaw(t, s, "f-corrupt.json", `{"pid": 1`)
	writeRaw(t, s, ".f-x.json.tmp-123", `{}`)
	writeRaw(t, s, ".last-prune", `{}`)
	writeRaw(t, s, "notes.txt", `x`)
	if err := os.Mkdir(filepath.Join(s.Dir(), "g-dir.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	table := &fakeTable{boot: bootA, procs: map[int]Process{
		10: {PIDAlive, 5}, 11: {PIDAlive, 6}, 14: {State: PIDDenied},
	}}
	entries, err := s.List(table, "")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]State{}
	for _, e := range entries {
		got[e.SessionID] = e.State
		if (e.State == Corrupt) != (e.Err != nil) || (e.Err == nil) != (e.Record != nil) {
			t.Errorf("entry %s: state %q, err %v, record %v", e.SessionID, e.State, e.Err, e.Record)
		}
		if e.Path != filepath.Join(s.Dir(), e.SessionID+".json") {
			t.Errorf("entry %s: path %s", e.SessionID, e.Path)
		}
	}
	want := map[string]State{
		"aa-running": Running, "ab-reused": PIDReused, "b-crashed": Crashed, "c-exited": Exited,
		"d-eperm": Unknown, "e-nopid": Unknown, "f-corrupt": Corrupt, "g-dir": Corrupt,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("List states (-want +got):\n%s", diff)
	}
	for _, e := range entries {
		if e.SessionID == "f-corrupt" && !errors.Is(e.Err, ErrCorrupt) {
			t.Errorf("corrupt entry error = %v, want ErrCorrupt", e.Err)
		}
	}
	if diff := cmp.Diff([]int{10, 11, 12, 14}, table.asked); diff != "" {
		t.Errorf("pids asked (-want +got): ended sessions and missing pids need no question\n%s", diff)
	}

	entries, err = s.List(table, "a")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range entries {
		ids = append(ids, e.SessionID)
	}
	if diff := cmp.Diff([]string{"aa-running", "ab-reused"}, ids); diff != "" {
		t.Errorf("List prefix a (-want +got):\n%s", diff)
	}
}

func TestListMissingDir(t *testing.T) {
	entries, err := NewStore(filepath.Join(t.TempDir(), "none")).List(&fakeTable{}, "")
	if err != nil || len(entries) != 0 {
		t.Errorf("List of a missing directory = %v, %v; want nothing, no error", entries, err)
	}
}
