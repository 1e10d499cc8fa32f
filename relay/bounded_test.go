package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pi-session/pi-session/rules"
)

// TestRecentInstructionsSameNote: leaving out the instructions a note
// could not show (recentInstructions) gives the very note all of them
// give, for any lengths and limits, the task among them or not.
func TestRecentInstructionsSameNote(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 60 {
		lim := DefaultConfig().Limits
		lim.Total = []int{500, 2000, 9500, 30000}[trial%4]
		n := 1 + r.IntN(400)
		var all []Instruction
		for i := range n {
			words := make([]string, 1+r.IntN([]int{10, 60, 600}[r.IntN(3)]))
			for k := range words {
				words[k] = fmt.Sprintf("w%d", r.IntN(1000))
			}
			all = append(all, Instruction{EntryID: fmt.Sprintf("%08x", i), Time: "2026-12-01 10:00", Text: strings.Join(words, " "), More: r.IntN(4) / 3 * 500})
		}
		f := Facts{Task: "the task", TaskEntry: "", Instructions: all, Earlier: []string{"before"}}
		if trial%2 == 1 {
			f.TaskEntry = all[0].EntryID // the task is the first instruction
		}
		want := Layout(f, nil, nil, meta, lim)
		recent := recentInstructions{lim: lim}
		for _, in := range all {
			recent.add(in, in.EntryID == f.TaskEntry)
		}
		g := f
		g.Instructions, g.InstructionsOmitted = recent.list, recent.omitted
		if got := Layout(g, nil, nil, meta, lim); got != want {
			t.Fatalf("trial %d (%d instructions, %d kept, total %d): the note differs:\n%s", trial, n, len(recent.list), lim.Total, cmp.Diff(want, got))
		}
		if n > 200 && lim.Total <= 9500 && len(recent.list) > n/2 {
			t.Errorf("trial %d: %d of %d instructions kept at total %d", trial, len(recent.list), n, lim.Total)
		}
	}
}

// TestEarlierKeptSameLine: the "Earlier:" line from the latest messages
// before the boundary, each cut as gather keeps them, is the line all of
// them whole give.
func TestEarlierKeptSameLine(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := range 40 {
		lim := DefaultConfig().Limits
		lim.Chain = []int{10, 400, 5000}[trial%3]
		var all, kept []string
		for range 1 + r.IntN(3000) {
			s := strings.Repeat(fmt.Sprintf("word%d ", r.IntN(100)), r.IntN(80))
			all = append(all, s)
			kept = append(kept, cut(oneLine(s), earlierChars))
		}
		kept = kept[max(len(kept)-earlierKept(lim), 0):]
		if got, want := condense(kept, lim.Chain), condense(all, lim.Chain); got != want {
			t.Fatalf("trial %d, chain %d: %q, want %q", trial, lim.Chain, got, want)
		}
	}
}

// TestNoteOfEnormousMessages: a session whose user messages are
// megabytes long on one line each gets its note with the rules stated
// before and after the pastes, says which messages were read for rules
// only by their ends, and counts the task's characters past what it shows.
func TestNoteOfEnormousMessages(t *testing.T) {
	var paste strings.Builder
	for paste.Len() < 3<<20 {
		paste.WriteString("Worker 17 finished shard 42 in 12 ms and moved on to the next one. ")
	}
	task := "Port the importer to the new API. Always run the tests before you commit.\n\n" + paste.String() + "\n\nNever push to main without asking."
	later := "Here is the log.\n" + paste.String() + "\nFrom now on, answer in German."
	lines := []map[string]any{
		{"type": "session", "version": 3, "id": "01a2b3c4-bbbb-7000-8000-00000000e000", "timestamp": "2026-12-01T10:00:00.000Z", "cwd": "/home/dev/project"},
	}
	parent := any(nil)
	add := func(id, role, text string) {
		lines = append(lines, map[string]any{"type": "message", "id": id, "parentId": parent, "timestamp": "2026-12-01T10:00:01.000Z",
			"message": map[string]any{"role": role, "content": []any{map[string]any{"type": "text", "text": text}}, "timestamp": 1}})
		parent = id
	}
	add("00000001", "user", task)
	add("00000002", "assistant", "Started.")
	add("00000003", "user", later)
	add("00000004", "assistant", "Ja.")
	add("00000005", "user", "What is left?")
	path := filepath.Join(t.TempDir(), "s.jsonl")
	var b strings.Builder
	for _, l := range lines {
		j, _ := json.Marshal(l)
		b.Write(j)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := Compose(context.Background(), openReader, nil, path, "", "", 0, DefaultConfig(), 1, "/n/1.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"- Always run the tests before you commit.",
		"- Never push to main without asking.",
		"- From now on, answer in German.",
		"(2 messages are too long to read whole, 00000001, 00000003: only their first 128 KB and last 32 KB were read for rules;",
	} {
		if !strings.Contains(p.Text, want) {
			t.Errorf("the note lacks %q:\n%.3000s", want, p.Text)
		}
	}
	if strings.Contains(p.Text, "- Worker 17") {
		t.Errorf("a sentence of the paste is listed as a rule")
	}
	m := regexp.MustCompile(`\[… (\d+) more characters: recall\(\{entryId: "00000001"\}\)\]`).FindStringSubmatch(p.Text)
	if m == nil {
		t.Fatalf("the task does not say how much is left:\n%.3000s", p.Text)
	}
	more, _ := strconv.Atoi(m[1])
	shown := strings.Index(p.Text, "Port the importer")
	end := strings.Index(p.Text, "\n[… ")
	if got := runes(p.Text[shown:end]) + more; got < len(task)-2 || got > len(task) {
		t.Errorf("the task shows %d characters and says %d more, of %d", runes(p.Text[shown:end]), more, len(task))
	}
	if n := runes(p.Text); n > DefaultConfig().Limits.Total+2000 {
		t.Errorf("the note has %d characters", n)
	}
}

// TestCutAsBefore: cut, which reads only as far as it cuts, gives what
// cutting the whole string as characters gives, invalid UTF-8 included,
// and a control character counted as it is written out (\x1b: 4), so
// that what is cut to n is n long at most.
func TestCutAsBefore(t *testing.T) {
	old := func(s string, n int) string {
		if runes(s) <= n {
			return s
		}
		if n <= 1 {
			return "…"
		}
		var head []rune
		w := 0
		for _, r := range s {
			if w += runes(string(r)); w > n-1 {
				break
			}
			head = append(head, r)
		}
		return strings.TrimRight(string(head), " ") + "…"
	}
	r := rand.New(rand.NewPCG(5, 6))
	alphabet := []string{"a", " ", "é", "日", "😀", "\xff", "\xe3\x81", "\n", "\x1b", "\u009b", "\x7f"}
	for range 5000 {
		var b strings.Builder
		for range r.IntN(40) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		s, n := b.String(), r.IntN(45)
		got := cut(s, n)
		if want := old(s, n); got != want {
			t.Fatalf("cut(%q, %d) = %q, want %q", s, n, got, want)
		}
		if runes(got) > max(n, 1) {
			t.Fatalf("cut(%q, %d) = %q: %d characters", s, n, got, runes(got))
		}
	}
}

// TestInstructionLineLen: a line is measured as long as it is written.
func TestInstructionLineLen(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	alphabet := []string{"a", " ", "é", "日", "😀", "\xff", "\n", "  "}
	for range 5000 {
		var b strings.Builder
		for range r.IntN(300) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		in := Instruction{EntryID: fmt.Sprintf("%x", r.IntN(1<<32)), Time: "2026-12-01 10:00", Text: b.String(), More: r.IntN(2) * 7}
		flat := oneLine(in.Text)
		each := r.IntN(320)
		if got, want := instructionLineLen(in, flat, runes(flat), each), runes(instructionLine(in, flat, each)); got != want {
			t.Fatalf("instructionLineLen(%q, each %d, more %d) = %d, want %d", flat, each, in.More, got, want)
		}
	}
}

// TestFlatHead: a long text made one line from its start only is cut as
// the whole text made one line is, whatever stands at the start's end (a
// cut character, white space, a control character).
func TestFlatHead(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	alphabet := []string{"word", " ", "  \n\t ", "é", "日本", "😀", "\x1b", "\xff", strings.Repeat(" ", 300)}
	for range 3000 {
		var b strings.Builder
		for b.Len() < 1000+r.IntN(6000) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		s, n := b.String(), []int{earlierChars, 120, 1 + r.IntN(200)}[r.IntN(3)]
		if got, want := cut(flatHead(s, n), n), cut(oneLine(s), n); got != want {
			t.Fatalf("cut(flatHead(%.40q…, %d)) = %q, want %q", s, n, got, want)
		}
		in := Instruction{EntryID: "abcd1234", Time: "2026-12-01 10:00", Text: s}
		if got, want := instructionLine(in, flatHead(s, n), n), instructionLine(in, oneLine(s), n); got != want {
			t.Fatalf("instructionLine of flatHead(%.40q…, %d) = %q, want %q", s, n, got, want)
		}
	}
}

// TestRulesBounds: the messages a user types are read whole; pastes are
// read by their ends, less of each the more of them there are, so that
// what is read stays within the budget (or at the least read of each).
func TestRulesBounds(t *testing.T) {
	repeat := func(n, size int) []int {
		s := make([]int, n)
		for i := range s {
			s[i] = size
		}
		return s
	}
	cases := []struct {
		name       string
		sizes      []int
		branch     int
		head, tail int
	}{
		{"no messages", nil, 1 << 20, rules.ReadHead, rules.ReadTail},
		{"7,000 typed messages in 100 MB", repeat(7000, 300), 100 << 20, rules.ReadHead, rules.ReadTail},
		{"one message of 60 MB", []int{60 << 20}, 60 << 20, rules.ReadHead, rules.ReadTail},
		{"12 pastes of 1 MB", repeat(12, 1<<20), 12 << 20, rules.ReadHead, rules.ReadTail},
		{"13 pastes of 1 MB", repeat(13, 1<<20), 13 << 20, rules.ReadHead / 2, rules.ReadTail / 2},
		{"1,800 pastes of 70 KB in 120 MB", repeat(1800, 70<<10), 120 << 20, 1 << 10, 256},
		{"200 pastes of 60 KB in 12 MB", repeat(200, 60<<10), 12 << 20, 8 << 10, 2 << 10},
		{"100,000 messages of 10 KB", repeat(100000, 10<<10), 1 << 30, 1 << 10, 256},
	}
	for _, c := range cases {
		head, tail := rulesBounds(c.sizes, c.branch)
		if head != c.head || tail != c.tail {
			t.Errorf("%s: %d and %d bytes read, want %d and %d", c.name, head, tail, c.head, c.tail)
		}
		read := 0
		for _, n := range c.sizes {
			read += min(n, head+tail)
		}
		if read > rulesBudget(c.branch) && head > 1<<10 {
			t.Errorf("%s: %d bytes read of a budget of %d", c.name, read, rulesBudget(c.branch))
		}
	}
}

// TestNoteOfManyPastes: of a session of 200 pasted logs of 60 KB, each
// paste is read for rules by its ends only (8 KB and 2 KB: the budget of
// 2 MB), so the rules typed before and after the pastes, and those of the
// short messages between them, are in the note, and the note says how
// the pastes were read.
func TestNoteOfManyPastes(t *testing.T) {
	var log strings.Builder
	for log.Len() < 60<<10 {
		fmt.Fprintf(&log, "2026-12-01T10:00:%02d INFO worker %d finished shard %d\n", log.Len()%60, log.Len()%97, log.Len()%1013)
	}
	lines := []string{`{"type":"session","version":3,"id":"01a2b3c4-bbbb-7000-8000-00000000e001","timestamp":"2026-12-01T10:00:00.000Z","cwd":"/home/dev/project"}`}
	parent := "null"
	add := func(role, text string) {
		id := fmt.Sprintf("%08x", len(lines))
		msg, _ := json.Marshal(map[string]any{"role": role, "content": []any{map[string]any{"type": "text", "text": text}}, "timestamp": 1})
		lines = append(lines, fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-12-01T10:00:01.000Z","message":%s}`, id, parent, msg))
		parent = strconv.Quote(id)
	}
	for i := range 200 {
		add("user", fmt.Sprintf("Always check shard %d before you merge. Here is run %d:\n%sNever restart worker %d by hand.", i, i, log.String(), i))
		add("assistant", "Looked at it.")
		if i%50 == 0 {
			add("user", fmt.Sprintf("Keep the retry limit at %d.", i+3))
			add("assistant", "Ok.")
		}
	}
	add("user", "What is left?")
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := Compose(context.Background(), openReader, nil, path, "", "", 0, DefaultConfig(), 1, "/n/1.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"- Always check shard 199 before you merge.",
		"- Never restart worker 199 by hand.",
		"- Keep the retry limit at 153.",
		"(200 messages are too long to read whole, 00000001, 00000005, 00000007 and 197 more: only their first 8 KB and last 2 KB were read for rules;",
	} {
		if !strings.Contains(p.Text, want) {
			t.Errorf("the note lacks %q:\n%.4000s", want, p.Text)
		}
	}
	if strings.Contains(p.Text, "INFO worker") {
		t.Errorf("a line of a paste is in the note:\n%.4000s", p.Text)
	}
}
