package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pi-session/pi-session/pitest"
)

const seedMarkerExt = "e2e/testdata/seed-marker.ts"

type seedSeen struct {
	PID     int    `json:"pid"`
	PPID    int    `json:"ppid"`
	Wrapper string `json:"wrapper"`
	Marker  string `json:"marker"`
	Own     bool   `json:"own"`
}

func readSeedLog(t *testing.T, path string) []seedSeen {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the seed-style extension wrote nothing: %v", err)
	}
	var out []seedSeen
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var s seedSeen
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		out = append(out, s)
	}
	return out
}

// TestSeedMarkerWriterRelaunches: an extension written for the seed's
// wrapper checks from inside real pi that basename(PI_RELAUNCH_MARKER) is
// $PI_SESSION_WRAPPER_PID-$PI_SESSION_LAUNCH_ID.json and that
// PI_SESSION_WRAPPER_PID is its parent, then writes the marker itself;
// pi-session relaunches from it. Under a PTY (where pi's parent is the
// session leader) and without one.
func TestSeedMarkerWriterRelaunches(t *testing.T) {
	for _, path := range []string{"pty", "plain"} {
		t.Run(path, func(t *testing.T) {
			e := pitest.NewEnv(t)
			log := filepath.Join(e.Work, "..", "seed-marker.jsonl")
			handoff := filepath.Join(e.Work, "handoff.md")
			if err := os.WriteFile(handoff, []byte("# Handoff\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			e.Set("SEED_MARKER_LOG", log)
			e.Set("SEED_MARKER_HANDOFF", handoff)
			var out string
			if path == "pty" {
				tm := pitest.StartTerm(t, e.Command(pitest.Binary(t), e.PiArgs(seedMarkerExt)...))
				tm.WaitReady(1)
				tm.Submit("/quit")
				tm.WaitFor("pi-session: relaunching pi in ")
				tm.WaitFor("faux: continue from")
				tm.WaitReady(2)
				tm.Submit("/quit")
				if code := tm.Wait(); code != 0 {
					t.Errorf("exit status %d; screen:\n%s", code, tm.Screen())
				}
				out = tm.Screen()
			} else {
				b, err := e.Command(pitest.Binary(t), append(e.PiArgs(seedMarkerExt), "-p", "hello")...).CombinedOutput()
				if err != nil {
					t.Fatalf("pi-session -p: %v\n%s", err, b)
				}
				out = string(b)
				if !strings.Contains(out, "pi-session: relaunching pi in ") || !strings.Contains(out, "faux: continue from "+handoff) {
					t.Errorf("no relaunch from the extension's marker:\n%s", out)
				}
			}
			seen := readSeedLog(t, log)
			if len(seen) != 2 {
				t.Fatalf("the extension saw %d launches, want 2 (one relaunch):\n%+v\n%s", len(seen), seen, out)
			}
			for i, s := range seen {
				if !s.Own || strconv.Itoa(s.PPID) != s.Wrapper {
					t.Errorf("launch %d: the seed's ownership check failed inside pi: %+v", i+1, s)
				}
			}
			assertNoMarkers(t, e)
		})
	}
}
