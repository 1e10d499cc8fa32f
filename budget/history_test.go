package budget

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/pi-session/pi-session/session"
)

// branchOf parses session lines (without the header) into a branch, each
// entry the child of the one before.
func branchOf(t *testing.T, entries ...string) []*session.Entry {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"type":"session","version":3,"id":"s","timestamp":"2026-11-30T09:00:00.000Z","cwd":"/w"}` + "\n")
	parent := "null"
	for i, e := range entries {
		id := fmt.Sprintf("e%07d", i)
		e = strings.ReplaceAll(e, "$ID", id) // pi stores a retain-none compaction's own id as firstKeptEntryId
		fmt.Fprintf(&b, `{"id":%q,"parentId":%s,"timestamp":"2026-11-30T09:%02d:00.000Z",%s}`+"\n", id, parent, i, e)
		parent = fmt.Sprintf("%q", id)
	}
	f, err := session.Parse(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	br, err := f.Branch("")
	if err != nil {
		t.Fatal(err)
	}
	return br
}

func user(text string) string {
	return fmt.Sprintf(`"type":"message","message":{"role":"user","content":[{"type":"text","text":%q}],"timestamp":1}`, text)
}

func assistantCall(name, args string, usage int) string {
	return fmt.Sprintf(`"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","id":"c","name":%q,"arguments":%s}],"stopReason":"toolUse","usage":{"input":%d,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":%d},"timestamp":1}`, name, args, usage, usage)
}

func handoffResult(path string, n int) string {
	return fmt.Sprintf(`"type":"message","message":{"role":"toolResult","toolCallId":"c","toolName":"context_handoff","content":[{"type":"text","text":"ok"}],"details":{"kind":"handoff","path":%q,"source":"voluntary","n":%d,"head":"abc","words":["a"]},"isError":false,"timestamp":1}`, path, n)
}

func compaction(source string, n int) string {
	return fmt.Sprintf(`"type":"compaction","summary":"# Handoff","firstKeptEntryId":"$ID","tokensBefore":9,"details":{"kind":"handoff","path":"/r/h-%d.md","source":%q,"n":%d}`, n, source, n)
}

func TestRestore(t *testing.T) {
	br := branchOf(t,
		user("do it"),
		assistantCall("bash", `{"command":"ls"}`, 1500),
		compaction(SourceBudget, 1),
		assistantCall("bash", `{"command":"ls"}`, 1200),
		compaction(SourceIdle, 2),
		compaction(SourceManual, 3),
		compaction(SourceHard, 4),
		user("go on"),
		assistantCall("context_handoff", `{}`, 1300),
		handoffResult("/r/h-5.md", 5),
		assistantCall("bash", `{"command":"ls"}`, 1400),
	)
	r := Restore(br)
	want := Restored{Commits: 2, IdleCommits: 1, OtherCommits: 1, MaxN: 5, Floor: 1300, FloorKnown: true}
	got := r
	got.Last, got.LastCommitAt = HandoffDetails{}, time.Time{}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Restore (-want +got):\n%s", d)
	}
	if r.Last.Path != "/r/h-5.md" || r.Last.Head != "abc" {
		t.Errorf("last handoff %+v, want the tool result's, with its back-off data", r.Last)
	}
	if r.ContinuedFrom != "" {
		t.Errorf("ContinuedFrom = %q in a session of its own", r.ContinuedFrom)
	}
}

// TestRestoreContinuedFrom: a pi relaunched from a handoff names it in its
// first prompt, after an @launch-prompt file's contents or alone.
func TestRestoreContinuedFrom(t *testing.T) {
	for prompt, want := range map[string]string{
		"continue from /r/.ai-work/handoffs/s-2.md":                            "/r/.ai-work/handoffs/s-2.md",
		"<file name=\"/r/lp.md\">\nresume\n</file>\ncontinue from /r/h/s-3.md": "/r/h/s-3.md",
		"please continue from /r/h/s-3.md":                                     "",
		"continue from relative/s-3.md":                                        "",
	} {
		if got := Restore(branchOf(t, user(prompt), user("continue from /later.md"))).ContinuedFrom; got != want {
			t.Errorf("Restore(first prompt %q).ContinuedFrom = %q, want %q", prompt, got, want)
		}
	}
}

// TestUserMessagesSince: the boundary is the last compaction or the last
// successful context_handoff that was not discarded (a relaunch continued
// from it); a failed or discarded handoff cuts nothing off.
func TestUserMessagesSince(t *testing.T) {
	failed := strings.Replace(handoffResult("/r/h-3.md", 3), `"isError":false`, `"isError":true`, 1)
	for _, c := range []struct {
		name      string
		entries   []string
		discarded func(string) bool
		want      []string
	}{
		{"a compaction", []string{user("old request"), compaction(SourceBudget, 1), user("first"), assistantCall("bash", `{}`, 1), user("  "), user("second")}, nil, []string{"first", "second"}},
		{"a handoff a relaunch continued from", []string{user("old"), compaction(SourceBudget, 1), user("before"), assistantCall("context_handoff", `{}`, 1), handoffResult("/r/h-2.md", 2), user("after")}, nil, []string{"after"}},
		{"a failed handoff", []string{user("before"), assistantCall("context_handoff", `{}`, 1), failed, user("after")}, nil, []string{"before", "after"}},
		{"a discarded draft", []string{user("before"), assistantCall("context_handoff", `{}`, 1), handoffResult("/r/h-2.md", 2), user("after")},
			func(p string) bool { return p == "/r/h-2.md" }, []string{"before", "after"}},
		{"no boundary", []string{user("a"), user("b")}, nil, []string{"a", "b"}},
	} {
		if d := cmp.Diff(c.want, UserMessagesSince(branchOf(t, c.entries...), c.discarded)); d != "" {
			t.Errorf("%s: UserMessagesSince (-want +got):\n%s", c.name, d)
		}
	}
}

// TestLatestStateChange: edits, writes and state-changing bash commands
// count; read-only inspection and the recording of state notes do not.
func TestLatestStateChange(t *testing.T) {
	at := func(i int) time.Time { return time.Date(2026, 11, 30, 9, i, 0, 0, time.UTC) }
	for _, c := range []struct {
		name    string
		entries []string
		want    time.Time
	}{
		{"nothing", []string{user("hi")}, time.Time{}},
		{"an edit", []string{assistantCall("edit", `{"path":"main.go"}`, 1), user("x")}, at(0)},
		{"read-only bash after an edit", []string{assistantCall("edit", `{"path":"main.go"}`, 1), assistantCall("bash", `{"command":"git status && cat a | grep b"}`, 1)}, at(0)},
		{"a build", []string{assistantCall("edit", `{"path":"main.go"}`, 1), assistantCall("bash", `{"command":"git status; make"}`, 1)}, at(1)},
		{"notes recorded after the change", []string{assistantCall("bash", `{"command":"go test ./..."}`, 1),
			assistantCall("write", `{"path":".ai-work/task/STATE.md"}`, 1), assistantCall("edit", `{"path":"/r/.ai-work/notes.md"}`, 1),
			assistantCall("edit", `{"path":"STATE-2.md"}`, 1)}, at(0)},
	} {
		if got := LatestStateChange(branchOf(t, c.entries...)); !got.Equal(c.want) {
			t.Errorf("%s: LatestStateChange = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestLint(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, ".ai-work", "task"), 0o700)
	os.MkdirAll(filepath.Join(root, ".ai-work", "handoffs"), 0o700)
	old, fresh := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC)
	for p, mt := range map[string]time.Time{"STATE.md": old, ".ai-work/task/notes.md": old, ".ai-work/task/fresh.md": fresh, ".ai-work/handoffs/s-1.md": old} {
		f := filepath.Join(root, p)
		os.WriteFile(f, nil, 0o600)
		os.Chtimes(f, mt, mt)
	}
	got := Lint([]string{root}, time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC), []string{"/gone.md"})
	want := []string{"files_to_read: /gone.md does not exist (missing)",
		filepath.Join(root, "STATE.md") + " predates the latest state-changing tool call (2026-01-02T00:00:00Z); update it if it records task state",
		filepath.Join(root, ".ai-work/task/notes.md") + " predates the latest state-changing tool call (2026-01-02T00:00:00Z); update it if it records task state"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Lint (-want +got):\n%s", d)
	}
}

// TestWordsAndBackoff: the token set ignores case, order and punctuation;
// back-off needs a known, unchanged HEAD, similarity over 0.9 and 15
// minutes.
func TestWordsAndBackoff(t *testing.T) {
	a := Words(Args{Goal: "Fix the flaky test!", Facts: "CI run 42 failed.", NextStep: "re-run ci"})
	b := Words(Args{Goal: "re-run CI", Facts: "fix: flaky TEST, the run 42", NextStep: "failed"})
	if d := cmp.Diff(a, b); d != "" || Jaccard(a, b) != 1 {
		t.Errorf("word sets differ (-a +b):\n%s", d)
	}
	if j := Jaccard([]string{"a", "b", "c"}, []string{"b", "c", "d"}); j != 0.5 {
		t.Errorf("Jaccard = %v, want 0.5", j)
	}
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	prev := HandoffDetails{Path: "/h/1.md", Head: "abc", Words: a, WrittenAt: t0}
	for _, c := range []struct {
		name  string
		head  string
		words []string
		at    time.Duration
		want  bool
	}{
		{"repeat", "abc", b, 5 * time.Minute, true},
		{"HEAD moved", "def", b, 5 * time.Minute, false},
		{"HEAD unknown", "", b, 5 * time.Minute, false},
		{"after 15 minutes", "abc", b, 15 * time.Minute, false},
		{"new narrative", "abc", append(slices.Clone(a), "x", "y"), 5 * time.Minute, false},
	} {
		if got := !Backoff(prev, c.head, c.words, t0.Add(c.at)).IsZero(); got != c.want {
			t.Errorf("%s: backed off %v, want %v", c.name, got, c.want)
		}
	}
}

// TestCutMiddle: the marker counts exactly the bytes cut.
func TestCutMiddle(t *testing.T) {
	s := strings.Repeat("abcdefghij", 500) + "é" + strings.Repeat("0123456789", 500)
	got := cutMiddle(s, 1000)
	var n int
	i := strings.Index(got, "[…cut ")
	if _, err := fmt.Sscanf(got[i:], "[…cut %d bytes", &n); err != nil {
		t.Fatal(err)
	}
	marker := got[strings.LastIndex(got[:i], "\n") : strings.Index(got[i:], "\n")+i+1]
	if kept := len(got) - len(marker); kept+n != len(s) || len(got) > 1000 {
		t.Errorf("kept %d + cut %d != %d bytes (result %d bytes)", kept, n, len(s), len(got))
	}
	if !strings.HasPrefix(got, "abcdefghij") || !strings.HasSuffix(got, "0123456789") {
		t.Errorf("cutMiddle lost the ends: %.40q...", got)
	}
}
