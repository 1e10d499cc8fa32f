package budget

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pi-session/pi-session/session"
)

// BenchmarkHandoffWrite: context_handoff's whole write (validation, git
// metadata of the cwd's repository and of 5 worktrees the session touched,
// the document, the files) on a repository of 10k files, against `git
// status --porcelain=v2` alone on the same repository.
func BenchmarkHandoffWrite(b *testing.B) {
	dir := b.TempDir()
	repo := filepath.Join(dir, "repo")
	git := func(d string, args ...string) { runGit(b, d, args...) }
	os.MkdirAll(repo, 0o755)
	git(repo, "init", "-q", "-b", "main")
	for i := 0; i < 10000; i++ {
		d := filepath.Join(repo, fmt.Sprintf("pkg%03d", i/100))
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, fmt.Sprintf("f%05d.go", i)), []byte(fmt.Sprintf("package p\n// %d\n", i)), 0o644)
	}
	git(repo, "add", ".")
	git(repo, "commit", "-qm", "10k files")
	var touched []string
	for i := 0; i < 5; i++ {
		wt := filepath.Join(dir, fmt.Sprintf("wt%d", i))
		git(repo, "worktree", "add", "-q", "-b", fmt.Sprintf("w%d", i), wt)
		os.WriteFile(filepath.Join(wt, "pkg000", "f00000.go"), []byte("changed\n"), 0o644)
		touched = append(touched, filepath.Join(wt, "pkg000", "f00000.go"))
	}
	os.WriteFile(filepath.Join(repo, "pkg001", "f00100.go"), []byte("changed\n"), 0o644)
	agent := filepath.Join(dir, "agent")
	os.MkdirAll(agent, 0o700)
	os.WriteFile(filepath.Join(agent, "context-budget.json"), []byte(`{"mode":"enforce"}`), 0o600)
	getenv := func(k string) string { return map[string]string{"PI_CODING_AGENT_DIR": agent, "HOME": dir}[k] }
	now := time.Now()
	// The session's tool calls touched the 5 worktrees.
	sf := filepath.Join(dir, "session.jsonl")
	var calls []string
	for i, t := range touched {
		calls = append(calls, fmt.Sprintf(`{"type":"toolCall","id":"c%d","name":"read","arguments":{"path":%q}}`, i, t))
	}
	lines := `{"type":"session","version":3,"id":"bench","timestamp":"2026-11-30T09:00:00.000Z","cwd":"` + repo + `"}
{"type":"message","id":"a0000001","parentId":null,"timestamp":"2026-11-30T09:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"read the worktrees"}],"timestamp":1}}
{"type":"message","id":"a0000002","parentId":"a0000001","timestamp":"2026-11-30T09:00:02.000Z","message":{"role":"assistant","content":[` + strings.Join(calls, ",") + `],"stopReason":"toolUse","timestamp":2}}
`
	os.WriteFile(sf, []byte(lines), 0o600)
	read := func(path string, fn func(*session.File) error) error {
		f, err := session.Open(path)
		if err != nil {
			return err
		}
		return fn(f)
	}
	eng, err := New(Options{Getenv: getenv, Now: func() time.Time { now = now.Add(time.Hour); return now }, Git: true, Sessions: read})
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	ctx := context.Background()
	// One untimed status each first, so both start from a warm cache.
	exec.Command("git", "-C", repo, "status", "--porcelain=v2").Run()
	var handoff, status time.Duration
	for i := 0; i < b.N; i++ {
		p := Peer{SessionID: fmt.Sprintf("bench%d", i), Cwd: repo, SessionFile: sf}
		eng.Start(p, nil, StartParams{})
		args := fmt.Sprintf(`{"goal":"benchmark %d","next_step":"n","facts":"f"}`, i)
		start := time.Now()
		eng.mu.Lock()
		s := eng.sessions[p.SessionID]
		eng.mu.Unlock()
		s.mu.Lock()
		s.state.Manual = true // a handoff the engine writes whatever its mode
		s.mu.Unlock()
		h := eng.Handoff(ctx, p, nil, HandoffParams{Args: []byte(args)})
		handoff += time.Since(start)
		if h.IsError {
			b.Fatal(h.Text)
		}
		if i == 0 {
			doc, _ := os.ReadFile(h.Details.Path)
			if n := strings.Count(string(doc), "/wt"); n < 5 {
				b.Fatalf("the handoff lists %d worktrees:\n%s", n, doc)
			}
		}
		start = time.Now()
		if out, err := exec.Command("git", "-C", repo, "status", "--porcelain=v2").CombinedOutput(); err != nil {
			b.Fatalf("git status: %v\n%s", err, out)
		}
		status += time.Since(start)
	}
	b.ReportMetric(float64(handoff.Microseconds())/1000/float64(b.N), "handoff-ms")
	b.ReportMetric(float64(status.Microseconds())/1000/float64(b.N), "git-status-ms")
	b.ReportMetric(float64(handoff)/float64(status), "x-git-status")
}

// BenchmarkTurnEnd: the engine's own work for one turn_end below the
// thresholds in enforce mode (the steady state), without the socket.
func BenchmarkTurnEnd(b *testing.B) {
	dir := b.TempDir()
	agent := filepath.Join(dir, "agent")
	os.MkdirAll(agent, 0o700)
	os.WriteFile(filepath.Join(agent, "context-budget.json"), []byte(`{"mode":"enforce"}`), 0o600)
	getenv := func(k string) string { return map[string]string{"PI_CODING_AGENT_DIR": agent, "HOME": dir}[k] }
	eng, err := New(Options{Getenv: getenv})
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	p := Peer{SessionID: "0198a2b4-5f2d-74b1-9cd8-17718871d66e", Cwd: dir}
	eng.Start(p, nil, StartParams{Model: "faux/faux-1"})
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tok := int64(3000 + i%100)
		eng.TurnEnd(ctx, p, nil, TurnEndParams{TurnIndex: i, Tokens: &tok, Usage: &tok, Model: "faux/faux-1", Continues: true,
			ToolResults: []ToolResultInfo{{ToolName: "bash"}}})
	}
}
