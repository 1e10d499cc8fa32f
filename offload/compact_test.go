package offload

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The keyword automaton scores each line as a plain search would: the best
// score of the diagnostic words it holds, ignoring ASCII case.
func TestKeywordMachine(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	pieces := []string{"Error", "FAIL", "not found", "can't", "exit Code", "expected", "unexpected", "warning", "errror", "no t found", "x", " ", "é", "Caused By", "panic:", "abortion", "timed  out"}
	var lines []string
	for i := 0; i < 2000; i++ {
		var b strings.Builder
		for k := r.IntN(6); k > 0; k-- {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		lines = append(lines, b.String())
	}
	text := strings.Join(lines, "\n")
	var want, got []int
	for _, l := range lines {
		ll := strings.ToLower(l)
		best := 0
		for _, dw := range diagWords {
			if strings.Contains(ll, dw.w) {
				best = max(best, dw.score)
			}
		}
		want = append(want, best)
	}
	got = make([]int, len(lines))
	n, pos := 0, 0
	diagMachine().scan([]byte(text), func(start, end, score int) bool {
		for pos < start {
			if text[pos] == '\n' {
				n++
			}
			pos++
		}
		got[n] = score
		return true
	})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("line scores (-want +got):\n%s", diff)
	}
}
