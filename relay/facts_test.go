package relay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestNoteMemberOrder: the note reads members where pi writes them first
// (role, toolName, content) and stops early, but a file whose objects have
// their members in another order (here sorted, as Go and jq write them)
// gives the same note.
func TestNoteMemberOrder(t *testing.T) {
	for _, fixture := range []string{"short", "long", "relayed", "branch"} {
		data, err := os.ReadFile(filepath.Join("testdata", fixture+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		var sorted bytes.Buffer
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var v any
			if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
				t.Fatal(err)
			}
			line, _ := json.Marshal(v) // maps: members sorted
			sorted.Write(append(line, '\n'))
		}
		path := filepath.Join(t.TempDir(), fixture+".jsonl")
		if err := os.WriteFile(path, sorted.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		want := composeFixture(t, fixture, DefaultConfig()).Text
		got, err := Compose(context.Background(), openReader, fakeGit, path, "", "", 0, DefaultConfig(), 2, "/agent/context-relay/"+fixture+"/2.md")
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, got.Text); d != "" {
			t.Errorf("%s with sorted members: the note differs (-pi's order +sorted):\n%s", fixture, d)
		}
	}
}

// TestKeptFrom: the kept part starts at the last user message the model
// sees; at pi's cut point when the part from there on is over tailMaxChars
// and pi's is later; at pi's when there is no user message.
func TestKeptFrom(t *testing.T) {
	b := newBuilder(t)
	u1 := b.user("first question")
	b.assistant("short answer")
	u2 := b.user("second question")
	big := b.assistant(strings.Repeat("long answer ", 2000)) // 24000 characters
	later := b.assistant("a later answer")
	omitted := b.user("a message the user takes back")
	b.add("-", "context_edit", map[string]any{"targetId": omitted, "replacement": nil})
	_, _, branch := b.open()
	tests := []struct {
		name, pi string
		tail     int
		want     string
	}{
		{"the last user message (an omitted one does not count)", later, 48000, u2},
		{"over tailMaxChars, pi's later cut", later, 1000, later},
		{"over tailMaxChars, pi's cut earlier", u1, 1000, u2},
		{"over tailMaxChars, pi's cut unknown", "nope", 1000, u2},
		{"pi's cut right at the user message", u2, 1000, u2},
		{"pi's after the big answer, tail under the limit", big, 200000, u2},
	}
	for _, tt := range tests {
		if got := KeptFrom(branch, tt.pi, tt.tail); got != tt.want {
			t.Errorf("%s: KeptFrom(pi %s, tailMaxChars %d) = %s, want %s", tt.name, tt.pi, tt.tail, got, tt.want)
		}
	}
	// No user message at all: pi's cut point.
	nb := newBuilder(t)
	nb.assistant("an answer without a question")
	a2 := nb.assistant("another")
	_, _, branch = nb.open()
	if got := KeptFrom(branch, a2, 48000); got != a2 {
		t.Errorf("without a user message: KeptFrom = %s, want pi's %s", got, a2)
	}
}

// TestGatherAgentLaunches: subagents launched with an Agent tool call are
// RUNNING until a result, notification or record says otherwise; their
// worktrees are found in the result's text; files come from edit and write
// calls, the latest changed first.
func TestGatherAgentLaunches(t *testing.T) {
	b := newBuilder(t)
	b.user("Start the subagents and fix the files.")
	call := func(id, name string, args map[string]any) {
		b.add("-", "message", map[string]any{"message": map[string]any{"role": "assistant", "content": []any{
			map[string]any{"type": "text", "text": "calling " + name},
			map[string]any{"type": "toolCall", "id": id, "name": name, "arguments": args},
		}, "stopReason": "toolUse", "timestamp": 1}})
	}
	result := func(id, name, text string, details map[string]any) {
		b.add("-", "message", map[string]any{"message": map[string]any{"role": "toolResult", "toolCallId": id, "toolName": name,
			"content": []any{map[string]any{"type": "text", "text": text}}, "details": details, "isError": false, "timestamp": 1}})
	}
	call("c1", "Agent", map[string]any{"subagent_type": "profiler", "description": "profile the linker"})
	result("c1", "Agent", "Launched agent_id: ag-1 in /home/u/repo/.pi/worktrees/prof", nil)
	call("c2", "Agent", map[string]any{"subagent_type": "tester", "description": "run the tests"})
	result("c2", "Agent", "done: 212 tests pass", map[string]any{"id": "ag-2", "status": "completed", "branch": "run-tests"})
	call("c3", "write", map[string]any{"path": "a.go", "content": "package a"})
	result("c3", "write", "ok", nil)
	call("c4", "edit", map[string]any{"path": "b.go", "edits": []any{}})
	result("c4", "edit", "ok", nil)
	call("c5", "edit", map[string]any{"path": "a.go", "edits": []any{}})
	result("c5", "edit", "ok", nil)
	kept := b.user("and now?")
	_, f, branch := b.open()
	facts := Gather(f.Header, branch, kept)
	want := []Subagent{
		{ID: "ag-1", Type: "profiler", Description: "profile the linker", State: "running", Running: true, Worktree: "/home/u/repo/.pi/worktrees/prof", Started: "2026-12-01T10:02:00.000Z"},
		{ID: "ag-2", Type: "tester", Description: "run the tests", State: "completed", Branch: "run-tests", Result: "done: 212 tests pass", Started: "2026-12-01T10:04:00.000Z"},
	}
	if d := cmp.Diff(want, facts.Subagents); d != "" {
		t.Errorf("subagents mismatch (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"/home/u/repo/.pi/worktrees/prof"}, facts.Worktrees); d != "" {
		t.Errorf("worktrees mismatch (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]FileChange{{Path: "a.go", Edits: 1, Write: true}, {Path: "b.go", Edits: 1}}, facts.Files); d != "" {
		t.Errorf("files mismatch (-want +got):\n%s", d)
	}
	if facts.Answer != "calling edit" {
		t.Errorf("the last answer = %q", facts.Answer)
	}
}

// TestGitLogs: git is asked in the cwd and every worktree under one
// timeout; a directory whose git fails, or that git does not answer in
// time, is left out; a real repository gives its commits since the
// session started.
func TestGitLogs(t *testing.T) {
	facts := Facts{Cwd: "/work", Started: "2026-12-01T10:00:00.000Z", Worktrees: []string{"/x/worktrees/a", "/x/worktrees/hangs"}}
	cfg := DefaultConfig()
	cfg.GitTimeoutMs = 50
	git := func(ctx context.Context, dir, since string) ([]string, error) {
		if since != facts.Started {
			t.Errorf("git asked since %q", since)
		}
		switch dir {
		case "/work":
			return nil, errors.New("not a repository")
		case "/x/worktrees/hangs":
			<-ctx.Done()
			return []string{"late"}, ctx.Err()
		}
		return []string{"abc1234 work in a"}, nil
	}
	got := gitLogs(context.Background(), git, facts, cfg)
	if d := cmp.Diff([]GitLog{{Dir: "/x/worktrees/a", Commits: []string{"abc1234 work in a"}}}, got); d != "" {
		t.Errorf("gitLogs mismatch (-want +got):\n%s", d)
	}
	cfg.GitTimeoutMs = 0
	if got := gitLogs(context.Background(), git, facts, cfg); got != nil {
		t.Errorf("gitTimeoutMs 0 still asked git: %v", got)
	}

	// RunGit on a real repository, and outside one.
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed for this test")
	}
	repo := t.TempDir()
	runGit := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_DATE=2026-12-01T11:00:00Z", "GIT_COMMITTER_DATE=2026-12-01T11:00:00Z")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	runGit("init", "-q")
	runGit("commit", "-q", "--allow-empty", "-m", "Speed up symbol resolution")
	commits, err := RunGit(context.Background(), repo, "2026-12-01T10:00:00.000Z")
	if err != nil || len(commits) != 1 || !strings.HasSuffix(commits[0], " Speed up symbol resolution") {
		t.Errorf("RunGit = %q, %v", commits, err)
	}
	if commits, err := RunGit(context.Background(), repo, "2026-12-01T12:00:00.000Z"); err != nil || len(commits) != 0 {
		t.Errorf("RunGit since after the commit = %q, %v", commits, err)
	}
	if _, err := RunGit(context.Background(), t.TempDir(), "2026-12-01T10:00:00.000Z"); err == nil {
		t.Errorf("RunGit outside a repository succeeded")
	}
}

// TestNoteUsesReplacements: an entry replaced with context_edit appears in
// the note as its replacement (a user message among the instructions and
// the constraints, an answer as the last answer), never as it was.
func TestNoteUsesReplacements(t *testing.T) {
	b := newBuilder(t)
	u := b.user("Always deploy on Fridays. Look at the build.")
	b.add("-", "context_edit", map[string]any{"targetId": u, "replacement": map[string]any{"content": "Never deploy on Fridays. Look at the build."}})
	a := b.assistant("The password is hunter2.")
	b.add("-", "context_edit", map[string]any{"targetId": a, "replacement": map[string]any{"content": "The build is green."}})
	kept := b.user("next")
	_, f, branch := b.open()
	note := Layout(Gather(f.Header, branch, kept), nil, nil, NoteMeta{N: 1, Path: "/n/1.md", KeptFrom: kept}, DefaultConfig().Limits)
	for _, want := range []string{"- Never deploy on Fridays.", "Never deploy on Fridays. Look at the build.", "The build is green."} {
		if !strings.Contains(note, want) {
			t.Errorf("the note lacks the replacement %q:\n%s", want, note)
		}
	}
	for _, gone := range []string{"Always deploy", "hunter2"} {
		if strings.Contains(note, gone) {
			t.Errorf("the note shows replaced text %q:\n%s", gone, note)
		}
	}
}
