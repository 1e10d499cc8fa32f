package status

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/pi-session/pi-session/diskfull"
)

// TestEndOnFullDisk: on a file system with no byte left, a session's
// clean end and its exit status are still recorded (written over the
// record in place), so the session reads as exited, not crashed; a record
// that does not exist yet cannot be made, and the error says why.
func TestEndOnFullDisk(t *testing.T) {
	s := NewStore(diskfull.Mount(t, 64<<10))
	self := Identity{PID: 123, StartTicks: 456789, BootID: "3f1c0a9e-0000-4000-8000-000000000001"}
	s.table = &fakeTable{boot: self.BootID, procs: map[int]Process{self.PID: {PIDAlive, self.StartTicks}}}
	r := fullRecord()
	if err := s.Write(r); err != nil {
		t.Fatal(err)
	}
	diskfull.Fill(t, s.StateDir())

	other := fullRecord()
	other.SessionID = "0193a1b2-c3d4-7e5f-8a9b-000000000002"
	if err := s.Write(other); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("a new record on a full disk: %v, want ENOSPC", err)
	}
	if err := s.End(r.SessionID, self, t0); err != nil {
		t.Fatalf("End on a full disk: %v", err)
	}
	exit := 0
	if err := s.Update(r.SessionID, self, func(r *Record) { r.ExitStatus = &exit }); err != nil {
		t.Fatalf("the exit status on a full disk: %v", err)
	}
	got, err := s.Read(r.SessionID)
	if err != nil {
		t.Fatalf("the record written in place does not read back: %v", err)
	}
	if got.EndedAt == nil || !got.EndedAt.Equal(t0) || got.ExitStatus == nil || *got.ExitStatus != 0 || got.Tokens == nil || *got.Tokens != *r.Tokens {
		t.Errorf("record after the end: endedAt %v, exit %v, tokens %v", got.EndedAt, got.ExitStatus, got.Tokens)
	}
	s.table = &fakeTable{boot: self.BootID} // the process is gone now
	entries, err := s.List(s.table, "")
	if err != nil || len(entries) != 1 || entries[0].State != Exited {
		t.Fatalf("status of the session: %+v, %v; want one, exited", entries, err)
	}
	names, _ := os.ReadDir(s.Dir())
	for _, n := range names {
		if strings.Contains(n.Name(), ".tmp-") {
			t.Errorf("a temporary file is left: %s", n.Name())
		}
	}
}

// TestOverwriteNeedsItsBlocks: a record is written over in place only
// when the blocks it holds take the new text, so a write never stops half
// way through a record; a shorter text is padded to the old length.
func TestOverwriteNeedsItsBlocks(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/r.json"
	const old, short = `{"sessionId": "s1", "cwd": "/a/long/path"}`, `{"sessionId": "s1"}`
	if err := os.WriteFile(path, []byte(old+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := overwrite(path, []byte(short+"\n")); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if want := short + strings.Repeat(" ", len(old)-len(short)) + "\n"; string(b) != want {
		t.Errorf("after a shorter overwrite: %q, want %q", b, want)
	}
	if r, err := Parse(b); err != nil || r.SessionID != "s1" {
		t.Errorf("the padded record: %+v, %v", r, err)
	}
	huge := []byte(`{"sessionId": "s1", "cwd": "` + strings.Repeat("x", 1<<20) + `"}` + "\n")
	if err := overwrite(path, huge); err == nil {
		t.Errorf("a megabyte was written over a record of one block")
	}
	if err := overwrite(dir, []byte("{}\n")); err == nil {
		t.Errorf("a directory was written over")
	}
}
