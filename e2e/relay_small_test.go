package e2e

import (
	"strings"
	"testing"

	"github.com/pi-session/pi-session/pitest"
)

// TestRelayNothingToCompact: /relay on an empty session and after one
// short exchange answers with one plain notice (level info) that there is
// nothing to compact yet, and pi starts no compaction (it showed pi's
// "Compaction failed: Nothing to compact" and "context-relay: relay
// failed" as two red errors).
func TestRelayNothingToCompact(t *testing.T) {
	e := pitest.NewEnv(t)
	pi, args := relayPiArgs(t, e)
	rpc := pitest.StartRPC(t, e.Command(pi, args...))
	for _, prompt := range []string{"", "hello"} {
		if prompt != "" {
			rpc.Prompt(prompt)
		}
		from := rpc.Prompt("/relay")
		rec, _ := rpc.WaitFrom(from, "the relay's notice", func(r pitest.Record) bool {
			return r.IsNotify() && strings.HasPrefix(r.Str("message"), "context-relay: ")
		})
		if !strings.HasPrefix(rec.Str("message"), "context-relay: nothing to compact yet: ") || rec.Str("notifyType") == "error" {
			t.Errorf("after %q: /relay said %v", prompt, rec)
		}
		for _, r := range rpc.Records(from) {
			if typ := r.Str("type"); strings.HasPrefix(typ, "compaction_") || r.IsNotify() && r.Str("notifyType") == "error" {
				t.Errorf("after %q: %v", prompt, r)
			}
		}
		if n := len(rpc.Notices(from)); n != 1 {
			t.Errorf("after %q: %d notices, want 1: %v", prompt, n, rpc.Notices(from))
		}
	}
	rpc.Close()
}
