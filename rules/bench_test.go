package rules

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkClassify is the cost of one typical user message: a task
// paragraph with a few rules, in two languages.
func BenchmarkClassify(b *testing.B) {
	msg := "Look at the failing test in relay/note_test.go and fix it. Never push to main. " +
		"When a test is flaky, tell me before you retry it.\n\n## Style\n- Keep functions short.\n- I'd prefer small commits.\n" +
		"コメントは日本語で書くこと。テストは必ず通してください。"
	m := Default()
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		m.Classify(msg)
	}
}

// BenchmarkExtract10000 is one message of 10,000 generated rules.
func BenchmarkExtract10000(b *testing.B) {
	var s strings.Builder
	for i := range 10000 {
		fmt.Fprintf(&s, "You must never touch file%d.go and always run test%d. ", i, i)
	}
	msgs := []Message{{"u1", s.String()}}
	for b.Loop() {
		Extract(msgs)
	}
}
