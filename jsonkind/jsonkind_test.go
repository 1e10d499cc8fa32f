package jsonkind

import "testing"

func TestOf(t *testing.T) {
	for in, want := range map[string]string{
		`"x"`: "a string", ` {}`: "an object", `[1]`: "an array", `true`: "a boolean", `false`: "a boolean",
		`null`: "null", `42`: "the number 42", `-1e400`: "the number -1e400", ``: "nothing", "  ": "nothing",
		`12345678901234567890123456789012345678901234`: "the number 1234567890123456789012345678901234567890...",
	} {
		if got := Of([]byte(in)); got != want {
			t.Errorf("Of(%q) = %q, want %q", in, got, want)
		}
	}
}
