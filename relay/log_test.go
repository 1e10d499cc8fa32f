package relay

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/pi-session/pi-session/diskfull"
	"github.com/pi-session/pi-session/rotate"
)

// TestLogOnFullDisk: a relay log line that cannot be written (the disk is
// full) is an error each time and a warning for the session's user once,
// until a line of the session is written again; every line that was
// written reads back whole.
func TestLogOnFullDisk(t *testing.T) {
	agent := diskfull.Mount(t, 64<<10)
	e := New(Options{AgentDir: agent})
	defer e.Close()
	log := func(session string) (string, error) {
		return e.Log(LogEntry{At: "2026-12-01T10:00:00Z", SessionID: session, Trigger: "manual", TokensBefore: 150000, NoteChars: 9000, KeptFrom: "abcd1234", OK: true})
	}
	written := 0
	if w, err := log("s1"); w != "" || err != nil {
		t.Fatalf("a line on a disk with room: %q, %v", w, err)
	}
	written++
	// untilLost writes lines of session until one is lost (the log's last
	// block has room for a few), and says whether that one was warned of.
	untilLost := func(session string) bool {
		for range 1000 {
			w, err := log(session)
			if err == nil {
				if w != "" {
					t.Errorf("a warning for a line written: %q", w)
				}
				written++
				continue
			}
			if w != "" && (!strings.Contains(w, "no space left on device") || !strings.Contains(w, e.LogPath())) {
				t.Errorf("the warning does not say where and why: %q", w)
			}
			return w != ""
		}
		t.Fatalf("1000 lines of %s were written to a full disk", session)
		return false
	}
	fill := diskfull.Fill(t, agent)
	for i, c := range []struct {
		session string
		warned  bool
	}{
		{"s1", true},  // the first lost line is said
		{"s1", false}, // and not again
		{"s2", true},  // another session's user is told too
		{"s2", false},
	} {
		if got := untilLost(c.session); got != c.warned {
			t.Errorf("lost line %d (of %s): warned %v, want %v", i+1, c.session, got, c.warned)
		}
	}
	if err := os.Remove(fill); err != nil {
		t.Fatal(err)
	}
	if w, err := log("s1"); w != "" || err != nil {
		t.Fatalf("a line once there is room again: %q, %v", w, err)
	}
	written++
	diskfull.Fill(t, agent)
	if !untilLost("s1") {
		t.Errorf("a line lost after one was written again is not said")
	}
	data, err := os.ReadFile(e.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	lines := 0
	err = rotate.ReadLines(bytes.NewReader(data), e.LogPath(), 1<<20, func(line []byte) error {
		var l LogEntry
		if err := json.Unmarshal(line, &l); err != nil {
			t.Errorf("a log line does not read back: %v: %s", err, line)
		}
		lines++
		return nil
	}, func(rotate.Fragment) {})
	if err != nil || lines != written {
		t.Errorf("the log holds %d whole lines (%v), want the %d written", lines, err, written)
	}
}

// TestLogOpenedOnceThereIsRoom: an engine whose first line finds the disk
// full (its log directory cannot be made) warns, and writes its lines once
// there is room again: the log is opened again, not given up on.
func TestLogOpenedOnceThereIsRoom(t *testing.T) {
	agent := diskfull.Mount(t, 64<<10)
	fill := diskfull.Fill(t, agent)
	e := New(Options{AgentDir: agent})
	defer e.Close()
	l := LogEntry{At: "2026-12-01T10:00:00Z", SessionID: "s1", Trigger: "manual", OK: true}
	if w, err := e.Log(l); err == nil || !strings.Contains(w, "no space left on device") {
		t.Fatalf("the first line on a full disk: warning %q, %v", w, err)
	}
	if err := os.Remove(fill); err != nil {
		t.Fatal(err)
	}
	if w, err := e.Log(l); w != "" || err != nil {
		t.Fatalf("a line once there is room: %q, %v", w, err)
	}
	if data, err := os.ReadFile(e.LogPath()); err != nil || strings.Count(string(data), "\n") != 1 {
		t.Errorf("the log holds %q (%v), want the one line written", data, err)
	}
}
