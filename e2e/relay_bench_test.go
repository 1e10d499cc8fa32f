package e2e

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pi-session/pi-session/pitest"
)

// waitRequests waits until the scripted model has received n requests.
func waitRequests(b *testing.B, e *pitest.Env, n int) {
	b.Helper()
	for i := 0; i < 60000; i++ {
		data, _ := os.ReadFile(e.Log)
		if strings.Count(string(data), "\n") >= n {
			return
		}
		time.Sleep(time.Millisecond)
	}
	b.Fatalf("the model never got request %d", n)
}

// BenchmarkRelayThroughPi: the whole /relay through real pi (RPC mode,
// under pi-session) on a session of about 150k tokens: from sending
// /relay to the model's first request of the next turn. Baseline in the
// same run: a prompt's own latency (send to request) on the same 150k-token
// session just before. Medians over the b.N sessions.
func BenchmarkRelayThroughPi(b *testing.B) {
	var totals, relays, prompts []time.Duration
	for i := 0; i < b.N; i++ {
		e := pitest.NewEnv(b)
		e.Set("FAUX_CONTEXT_WINDOW", "1000000") // pi's own compaction stays out of it
		writeRelayConfig(b, e, `{"auto": {"onInput": false, "beforeExpiry": false}}`)
		const turns = 15
		e.Scenario(map[string]any{"steps": longSteps(turns+2, 40000)})
		rpc := pitest.StartRPC(b, e.Command(pitest.Binary(b), append(e.PiArgs(), "--mode", "rpc")...))
		for k := 0; k < turns; k++ {
			rpc.Prompt(fmt.Sprintf("p%d: go on with the ember cache work", k))
		}
		// Baseline: a prompt on the full session, until the model has it.
		start := time.Now()
		rpc.Send(map[string]any{"type": "prompt", "message": "one more on the full session"})
		waitRequests(b, e, turns+1)
		prompt := time.Since(start)
		rpc.WaitFrom(0, "settled", func(r pitest.Record) bool { return r.Str("type") == "agent_settled" })
		time.Sleep(200 * time.Millisecond)

		mark := rpc.Mark()
		start = time.Now()
		rpc.Send(map[string]any{"type": "prompt", "message": "/relay"})
		rpc.WaitFrom(mark, "the relay's notice", func(r pitest.Record) bool {
			return r.IsNotify() && strings.Contains(r.Str("message"), "context-relay:")
		})
		relayed := time.Since(start)
		rpc.Send(map[string]any{"type": "prompt", "message": "after the relay"})
		waitRequests(b, e, turns+2)
		total := time.Since(start)
		for _, n := range rpc.Notices(mark) {
			if !strings.Contains(n, "context-relay: relayed") {
				b.Fatalf("the relay failed: %s", n)
			}
		}
		totals, relays, prompts = append(totals, total), append(relays, relayed), append(prompts, prompt)
		rpc.Close()
	}
	median := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[len(ds)/2].Milliseconds())
	}
	b.ReportMetric(median(totals), "relay-to-next-request-ms")
	b.ReportMetric(median(relays), "relay-command-ms")
	b.ReportMetric(median(prompts), "baseline-prompt-ms")
}
