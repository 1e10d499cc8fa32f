package offload

import (
	"strings"
	"testing"
)

// TestRenderFiguresTallies pins how /ce status lists the offloads by
// strategy and the large results left inline, sorted by name.
func TestRenderFiguresTallies(t *testing.T) {
	var b strings.Builder
	renderFigures(&b, Figures{
		Offloads:   4,
		ByStrategy: map[string]int{"offload": 3, "error": 1},
		KeptLarge:  map[string]int{"small-saving": 2, "image": 1},
	})
	got := b.String()
	for _, want := range []string{
		"Offloaded results: 4 (error 1, offload 3)\n",
		"Large results left inline: image 1, small-saving 2\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("renderFigures = %q, want it to hold %q", got, want)
		}
	}
}
