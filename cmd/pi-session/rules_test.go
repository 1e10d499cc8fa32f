package main

import (
	"fmt"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/pi-session/pi-session/rules"
)

// TestReadMessage: engine rules --text reads a message from standard input
// as the rules read one: whole, or of a longer one its start and its end,
// however the input is cut into reads.
func TestReadMessage(t *testing.T) {
	const whole = rules.ReadHead + rules.ReadTail
	for _, n := range []int{0, 10, whole, whole + 1, whole + rules.ReadTail/2, 3 * whole} {
		var b strings.Builder
		for i := 0; b.Len() < n; i++ {
			fmt.Fprintf(&b, "line %d\n", i)
		}
		text := b.String()[:n]
		msg, got, err := readMessage(iotest.HalfReader(strings.NewReader(text)))
		if err != nil || got != int64(n) {
			t.Fatalf("%d bytes: read %d, %v", n, got, err)
		}
		if msg.Partial() != (n > whole) {
			t.Errorf("%d bytes: partial %v", n, msg.Partial())
		}
		if !strings.HasPrefix(text, msg.Text) || len(msg.Text) != min(n, whole) {
			t.Errorf("%d bytes: the head is %d bytes, not the message's start", n, len(msg.Text))
		}
		if n > whole && !strings.HasSuffix(msg.Tail, text[n-rules.ReadTail:]) {
			t.Errorf("%d bytes: the tail does not end as the message does", n)
		}
	}
}
