package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pinSession writes a session: user messages and answers on the main line
// with pins among them (one multi-line, one unpinned later), and a side
// branch, abandoned, that holds a pin of its own. extra pins of the given
// texts follow the last pin.
func pinSession(t *testing.T, extra ...string) string {
	t.Helper()
	var lines []string
	add := func(v map[string]any) {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(b))
	}
	add(map[string]any{"type": "session", "version": 3, "id": "01a2b3c4-0000-7000-8000-0000000000a1", "timestamp": "2026-12-01T10:00:00.000Z", "cwd": "/nonexistent-cwd"})
	n := 0
	parent := any(nil)
	entry := func(v map[string]any) string {
		n++
		id := fmt.Sprintf("e%07d", n)
		v["id"], v["parentId"], v["timestamp"] = id, parent, fmt.Sprintf("2026-12-01T10:%02d:00.000Z", n%60)
		add(v)
		parent = id
		return id
	}
	user := func(text string) string {
		return entry(map[string]any{"type": "message", "message": map[string]any{"role": "user", "content": text, "timestamp": 1}})
	}
	answer := func(text string) string {
		return entry(map[string]any{"type": "message", "message": map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": text}}, "stopReason": "stop", "timestamp": 1}})
	}
	pin := func(text string) string {
		return entry(map[string]any{"type": "custom", "customType": "pi-session:pin", "data": map[string]any{"text": text}})
	}
	user("Look at the build. Never push to main without asking me. Use tabs.")
	answer("Looked.")
	pin("Never push to main without asking me.")
	pin("Use tabs.")
	user("Use spaces, not tabs.")
	answer("Spaces then.")
	fork := answer("ok")
	multi := pin("Migrations:\n- each gets a down script\n- never edit an applied one")
	gone := pin("Ship on Fridays.")
	entry(map[string]any{"type": "custom", "customType": "pi-session:unpin", "data": map[string]any{"pin": gone, "text": "Ship on Fridays."}})
	for _, x := range extra {
		pin(x)
	}
	user(strings.Repeat("a long question about the linker. ", 200))
	answer(strings.Repeat("a long answer. ", 300))
	user("next question")
	_ = multi
	// The abandoned side branch, from the first answer, with its own pin;
	// the main line stays the file's last entry's branch.
	main := parent
	parent = fork
	pin("Side branch only: use tabs.")
	user("a side question")
	parent = main
	user("the last message")
	path := filepath.Join(t.TempDir(), "pins.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func composePins(t *testing.T, path string, cfg Config) string {
	t.Helper()
	p, err := Compose(context.Background(), openReader, nil, path, "", "", 0, cfg, 1, "/agent/context-relay/x/1.md")
	if err != nil {
		t.Fatal(err)
	}
	return p.Text
}

// TestNotePins: the pins come first, verbatim (a multi-line pin keeps its
// lines), before the constraints; a pin that was unpinned, or made on an
// abandoned branch, is not there; a constraint a pin holds is not repeated.
func TestNotePins(t *testing.T) {
	note := composePins(t, pinSession(t), DefaultConfig())
	const section = "## Pinned rules (the user pinned these with /pin: verbatim, current until unpinned)\n" +
		"- Never push to main without asking me.\n" +
		"- Use tabs.\n" +
		"- Migrations:\n  - each gets a down script\n  - never edit an applied one\n"
	i := strings.Index(note, section)
	if i < 0 {
		t.Fatalf("the note lacks the pins section %q:\n%s", section, note)
	}
	if first := strings.Index(note, "\n## "); first != i-1 {
		t.Errorf("the pins are not the note's first section:\n%s", note)
	}
	for _, absent := range []string{"Ship on Fridays", "use tabs"} {
		if strings.Contains(note, absent) {
			t.Errorf("the note holds %q (unpinned, or pinned on an abandoned branch):\n%s", absent, note)
		}
	}
	if strings.Count(note, "- Never push to main without asking me.\n") != 1 {
		t.Errorf("the pinned rule is repeated as a constraint:\n%s", note)
	}
	// A later message replaces a pinned rule: the pin holds (it is not
	// listed as superseded); the new rule is a constraint beside it.
	if strings.Contains(note, "(superseded) Use tabs.") || !strings.Contains(note, "- Use spaces, not tabs.\n") {
		t.Errorf("a pinned rule is listed as superseded, or its replacement is missing:\n%s", note)
	}
}

// TestNotePinsUncapped: pins never give way, however small limits.total
// is and however many there are: every pin is whole in the note, and the
// other sections shrink first.
func TestNotePinsUncapped(t *testing.T) {
	var many []string
	for i := range 30 {
		many = append(many, fmt.Sprintf("Rule %d: %s", i+1, strings.TrimSpace(strings.Repeat("keep this whole ", 120))))
	}
	cfg := DefaultConfig()
	cfg.Limits.Total = 500
	note := composePins(t, pinSession(t, many...), cfg)
	for _, p := range many {
		if !strings.Contains(note, "- "+p+"\n") {
			t.Fatalf("a 500-character note lost or cut a pin of %d characters:\n%.3000s", len(p), note)
		}
	}
	if strings.Contains(note, "## The last answer") {
		t.Errorf("the last answer did not give way to the pins:\n%.3000s", note)
	}
	if n, sum := runes(note), 30*runes(many[0]); n < sum {
		t.Errorf("the note has %d characters, less than its pins (%d)", n, sum)
	}
}
