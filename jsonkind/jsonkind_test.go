package jsonkind

import (
	"strings"
	"testing"
)

func TestOf(t *testing.T) {
	for in, want := range map[string]string{
		`"x"`: "a string", ` {}`: "an object", `[1]`: "an array", `true`: "a boolean", `false`: "a boolean",
		`null`: "null", `42`: "the number 42", `-1e400`: "the number -1e400", ``: "nothing", "  ": "nothing",
		strings.Repeat("9", 300): "the number " + strings.Repeat("9", 200) + "…(300 chars)",
	} {
		if got := Of([]byte(in)); got != want {
			t.Errorf("Of(%q) = %q, want %q", in, got, want)
		}
	}
}
