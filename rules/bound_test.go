package rules

import (
	"strings"
	"testing"
)

// TestLongMessageReadByItsEnds: of a message of megabytes (a log pasted
// between two rules), the rules before and after the paste are found and
// the paste between is not read; the message given by its ends reads the
// same.
func TestLongMessageReadByItsEnds(t *testing.T) {
	var log strings.Builder
	for log.Len() < 5<<20 {
		log.WriteString("2026-12-01T10:00:00 INFO worker 17 finished shard 42 in 12 ms\n")
	}
	msg := "Always run go test before you commit.\nHere is the log:\n" + log.String() + "Never push to main without asking.\n"
	whole := Message{EntryID: "u1", Text: msg}
	if !whole.Partial() {
		t.Fatalf("a message of %d bytes is read whole", len(msg))
	}
	ends := Message{EntryID: "u1", Text: msg[:ReadHead+10], Tail: msg[len(msg)-ReadTail-10:]}
	for name, m := range map[string]Message{"whole": whole, "by its ends": ends} {
		var got []string
		for _, r := range Extract([]Message{m}) {
			got = append(got, r.Text)
		}
		if strings.Join(got, "|") != "Always run go test before you commit.|Never push to main without asking." {
			t.Errorf("%s: rules %q", name, got)
		}
		units := Default().ClassifyMessage(m)
		read := 0
		for _, u := range units {
			read += len(u.Text)
			if strings.Contains(u.Text, "2026") && strings.Count(u.Text, "INFO") > 1 && len(u.Text) > maxUnitRunes*2 {
				t.Errorf("%s: a unit of %d bytes", name, len(u.Text))
			}
		}
		if read > ReadHead+ReadTail {
			t.Errorf("%s: %d bytes read of %d, want at most %d", name, read, len(msg), ReadHead+ReadTail)
		}
	}
}

// TestCutEnds: the ends of a long message are cut where a sentence ends,
// so that no sentence is read in half.
func TestCutEnds(t *testing.T) {
	var b strings.Builder
	for b.Len() < 2*(ReadHead+ReadTail) {
		b.WriteString("The worker finished its shard. ")
	}
	text := b.String() // one line
	head, tail := Message{Text: text}.ends()
	if !strings.HasSuffix(head, "shard.") || len(head) > ReadHead || len(head) < ReadHead/2 {
		t.Errorf("head of %d bytes ends %q", len(head), head[max(len(head)-20, 0):])
	}
	if !strings.HasPrefix(tail, "The worker") || len(tail) > ReadTail || len(tail) < ReadTail/2 {
		t.Errorf("tail of %d bytes starts %q", len(tail), tail[:min(len(tail), 20)])
	}
	short := "Run the tests. " + strings.Repeat("x", 100)
	if h, tl := (Message{Text: short}).ends(); h != short || tl != "" {
		t.Errorf("a short message is cut: %q, %q", h, tl)
	}
	ja := strings.Repeat("テストは必ず先に書いてください。", ReadHead/16)
	if h, _ := (Message{Text: ja, Tail: ja}).ends(); !strings.HasSuffix(h, "。") {
		t.Errorf("a Japanese head ends %q", h[max(len(h)-12, 0):])
	}
}
