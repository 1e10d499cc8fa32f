package e2e

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/pi-session/pi-session/pitest"
)

// TestTwoRelaysAtOnceThroughPi: two pi processes under pi-session (each
// with its engine host) on one session file run /relay at the same moment,
// a few rounds. Every compaction must point at a note of its own: the note
// file at its notePath holds exactly its summary, and no two compactions
// share a note. (relay's TestTwoRelaysAtOnce counts the same race over
// many more rounds without pi.)
func TestTwoRelaysAtOnceThroughPi(t *testing.T) {
	e := pitest.NewEnv(t)
	// Every answer long, whichever pi asks: the sessions have something
	// to compact each round.
	e.Scenario(map[string]any{"steps": longSteps(1, 40000), "repeat": true})
	a := startRelaySession(t, e)
	for _, p := range relayPrompts[:3] {
		a.Prompt(p)
	}
	sf := sessionFile(t, a)
	b := startRelaySession(t, e, "--session", sf)
	const rounds = 3
	for i := 0; i < rounds; i++ {
		for k, rpc := range []*pitest.RPC{a, b} {
			rpc.Prompt(fmt.Sprintf("round %d, pi %d: carry on", i, k))
		}
		ma, mb := a.Mark(), b.Mark()
		a.Send(map[string]any{"type": "prompt", "message": "/relay"})
		b.Send(map[string]any{"type": "prompt", "message": "/relay"})
		for _, w := range []struct {
			rpc  *pitest.RPC
			mark int
		}{{a, ma}, {b, mb}} {
			rec, _ := w.rpc.WaitFrom(w.mark, "the relay's notice", func(r pitest.Record) bool {
				return r.IsNotify() && strings.Contains(r.Str("message"), "context-relay:")
			})
			if !strings.Contains(rec.Str("message"), "context-relay: relayed") {
				t.Errorf("round %d: %s", i, rec.Str("message"))
			}
		}
	}
	a.Close()
	b.Close()
	seen := map[string]int{}
	var relays, foreign int
	for _, c := range compactions(t, sf) {
		details, _ := c["details"].(map[string]any)
		path, _ := details["notePath"].(string)
		if relay, _ := details["relay"].(bool); !relay {
			continue
		}
		relays++
		seen[path]++
		note, err := os.ReadFile(path)
		if summary, _ := c["summary"].(string); err != nil || string(note) != summary {
			foreign++
		}
	}
	shared := 0
	for _, n := range seen {
		if n > 1 {
			shared += n
		}
	}
	t.Logf("%d rounds of two /relay at once through pi: %d relay compactions, %d of them share a note, %d point at a note that is not their own", rounds, relays, shared, foreign)
	if relays != 2*rounds || shared > 0 || foreign > 0 {
		t.Errorf("%d relay compactions (want %d), %d share a note, %d point at a note not their own", relays, 2*rounds, shared, foreign)
	}
}
