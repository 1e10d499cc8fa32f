package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pi-session/pi-session/budget"
	"github.com/pi-session/pi-session/session"
	"github.com/pi-session/pi-session/supervisor"
)

func readSession(path string, fn func(*session.File) error) error {
	f, err := session.Open(path)
	if err != nil {
		return err
	}
	return fn(f)
}

// TestInherit: a relaunched pi inherits the pins of the session its
// marker names (or its handoff's sidecar does); when that file cannot be
// read, the pins the sidecar kept; when neither can be read, none, and a
// warning says why.
func TestInherit(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "old.jsonl")
	os.WriteFile(old, []byte(`{"type":"session","version":3,"id":"old","timestamp":"2026-12-01T10:00:00.000Z","cwd":"/w"}
{"type":"message","id":"m1","parentId":null,"timestamp":"2026-12-01T10:01:00.000Z","message":{"role":"user","content":"hi","timestamp":1}}
{"type":"custom","id":"p1","parentId":"m1","timestamp":"2026-12-01T10:02:00.000Z","customType":"pi-session:pin","data":{"text":"Never push to main."}}
{"type":"custom","id":"p2","parentId":"p1","timestamp":"2026-12-01T10:03:00.000Z","customType":"pi-session:pin","data":{"text":"Keep commits small."}}
`), 0o600)
	handoff := func(name, sessionFile string, pinned []string) string {
		sc := &budget.Sidecar{Version: 1, ID: name, Path: filepath.Join(dir, name+".md"), Metadata: budget.Metadata{SessionFile: sessionFile, Pins: pinned}}
		if err := budget.WriteHandoff(dir, sc, "# Handoff\n"); err != nil {
			t.Fatal(err)
		}
		return sc.Path
	}
	withSidecar := handoff("h1", old, []string{"from the sidecar", "esc \x1b[2J", "from the sidecar"})
	noSessionFile := handoff("h2", "", []string{"only in the sidecar"})
	bare := filepath.Join(dir, "bare.md")
	os.WriteFile(bare, []byte("# a handoff another tool wrote\n"), 0o600)
	for _, tt := range []struct {
		name string
		c    supervisor.Continuation
		want inheritance
		warn string
	}{
		{"the marker's session", supervisor.Continuation{SessionFile: old, Handoff: withSidecar},
			inheritance{SessionFile: old, Handoff: withSidecar, Pins: []string{"Never push to main.", "Keep commits small."}, From: "session"}, ""},
		{"the sidecar's session", supervisor.Continuation{Handoff: withSidecar},
			inheritance{SessionFile: old, Handoff: withSidecar, Pins: []string{"Never push to main.", "Keep commits small."}, From: "session"}, ""},
		{"a relative path is no session", supervisor.Continuation{SessionFile: "old.jsonl", Handoff: noSessionFile},
			inheritance{Handoff: noSessionFile, Pins: []string{"only in the sidecar"}, From: "handoff"}, ""},
		{"a session file gone: the sidecar's pins, checked", supervisor.Continuation{SessionFile: filepath.Join(dir, "gone.jsonl"), Handoff: withSidecar},
			inheritance{SessionFile: filepath.Join(dir, "gone.jsonl"), Handoff: withSidecar, Pins: []string{"from the sidecar"}, From: "handoff"}, ""},
		{"nothing readable", supervisor.Continuation{SessionFile: filepath.Join(dir, "gone.jsonl"), Handoff: bare},
			inheritance{SessionFile: filepath.Join(dir, "gone.jsonl"), Handoff: bare, Pins: []string{}}, "could not be read: session: open " + filepath.Join(dir, "gone.jsonl")},
		{"no session named, no sidecar", supervisor.Continuation{Handoff: bare},
			inheritance{Handoff: bare, Pins: []string{}}, "no session file is named by the relaunch marker or the handoff's sidecar; nor from the handoff's sidecar"},
	} {
		got := inherit(tt.c, readSession)
		if !strings.Contains(got.Warning, tt.warn) || (tt.warn == "") != (got.Warning == "") {
			t.Errorf("%s: warning %q, want one holding %q", tt.name, got.Warning, tt.warn)
		}
		got.Warning = ""
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("%s: inherit (-want +got):\n%s", tt.name, d)
		}
	}
}
