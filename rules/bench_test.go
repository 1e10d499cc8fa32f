package rules

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// benchMessages are user messages of the sizes people type: a chat line,
// a task paragraph with a few rules, a pasted AGENTS.md of 40 bullets in
// two languages.
func benchMessages() map[string]string {
	var guide strings.Builder
	guide.WriteString("# AGENTS.md\n\n## Style\n")
	for i := range 20 {
		fmt.Fprintf(&guide, "- Keep module %d free of global state; pass dependencies in.\n", i)
		fmt.Fprintf(&guide, "- モジュール%dのテストは必ず `go test -race` で通すこと。\n", i)
	}
	return map[string]string{
		"chat":  "ok thanks, now run the tests again and never push to main",
		"task":  "Look at the failing test in relay/note_test.go and fix it. Never push to main. When a test is flaky, tell me before you retry it.\n\n## Style\n- Keep functions short.\n- I'd prefer small commits.\nコメントは日本語で書くこと。テストは必ず通してください。",
		"guide": guide.String(),
	}
}

// BenchmarkClassify is the cost of reading one message, against cutting
// it into sentences alone (the floor every reader pays): per message, per
// sentence, and the ratio.
func BenchmarkClassify(b *testing.B) {
	m := Default()
	for _, name := range []string{"chat", "task", "guide"} {
		msg := benchMessages()[name]
		units := len(Split(msg))
		var split time.Duration
		b.Run(name+"/split", func(b *testing.B) {
			start := time.Now()
			for b.Loop() {
				Split(msg)
			}
			split = time.Since(start) / time.Duration(b.N)
		})
		b.Run(name+"/classify", func(b *testing.B) {
			start := time.Now()
			for b.Loop() {
				m.Classify(msg)
			}
			per := time.Since(start) / time.Duration(b.N)
			b.ReportMetric(float64(per.Microseconds()), "µs/message")
			b.ReportMetric(float64(per.Nanoseconds())/float64(units)/1000, "µs/sentence")
			b.ReportMetric(float64(units)/per.Seconds(), "sentences/s")
			if split > 0 {
				b.ReportMetric(float64(per)/float64(split), "x-split")
			}
		})
	}
}

// BenchmarkExtract10000 is one message of 10,000 generated rules, read
// and compared with each other (each time anew: the cache of messages
// read is emptied).
func BenchmarkExtract10000(b *testing.B) {
	var s strings.Builder
	for i := range 10000 {
		fmt.Fprintf(&s, "You must never touch file%d.go and always run test%d. ", i, i)
	}
	msgs := []Message{{EntryID: "u1", Text: s.String()}}
	m := *Default()
	for b.Loop() {
		m.cache = &classCache{}
		m.Extract(msgs)
	}
}
