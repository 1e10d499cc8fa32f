package budget

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func TestReadOnlyGit(t *testing.T) {
	for _, c := range []struct {
		cmd  string
		want bool
	}{
		{"git status", true},
		{"git status --porcelain=v2 --branch", true},
		{"  git   status -s  ", true},
		{"git diff --no-ext-diff --no-textconv", true},
		{"git diff --no-ext-diff --no-textconv --stat HEAD~1 -- a.go", true},
		{"git diff --no-ext-diff", false},
		{"git diff", false},
		{"git diff --no-ext-diff --no-textconv --output=/tmp/x", false},
		{"git diff --no-ext-diff --no-textconv --ext-diff", false},
		{"git log --oneline --no-show-signature -n 5", true},
		{"git log --oneline --no-show-signature -5", true},
		{"git log --oneline", false},
		{"git log --oneline --no-show-signature -p", false},
		{"git log --oneline --no-show-signature --format=%H", false},
		{"git log --oneline --no-show-signature --pretty=oneline", false},
		{"git rev-parse HEAD", true},
		{"git rev-parse --show-toplevel", true},
		{"git rev-parse --abbrev-ref HEAD", true},
		{"git branch --show-current", true},
		{"git branch -D main", false},
		{"git branch", false},
		{"git worktree list", true},
		{"git worktree list --porcelain", true},
		{"git worktree add ../x", false},
		{"git -C /tmp status", false},
		{"git --paginate status", false},
		{"git -c core.pager=less status", false},
		{"git -p log --oneline --no-show-signature", false},
		{"git status; rm -rf /", false},
		{"git status && echo hi", false},
		{"git status | cat", false},
		{"git status > out", false},
		{"git log --oneline --no-show-signature $(id)", false},
		{"git log --oneline --no-show-signature `id`", false},
		{"git status 'a b'", false},
		{"git status\nrm x", false},
		{"GIT_PAGER=less git status", false},
		{"git push", false},
		{"git commit -m x", false},
		{"git checkout main", false},
		{"echo git status", false},
		{"git", false},
		{"git status ~/x", false},
	} {
		if got, why := ReadOnlyGit(c.cmd); got != c.want {
			t.Errorf("ReadOnlyGit(%q) = %v (%s), want %v", c.cmd, got, why, c.want)
		}
	}
}

func TestNormalizePath(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"@.ai-work/x.md", "/w/.ai-work/x.md"},
		{"~/notes.md", "/home/u/notes.md"},
		{"~", "/home/u"},
		{"a/../../etc/passwd", "/etc/passwd"},
		{"file:///w/a.md", "/w/a.md"},
		{"/abs/./b", "/abs/b"},
		{".ai-work\u00a0x/a.md", "/w/.ai-work x/a.md"},
	} {
		if got := NormalizePath(c.in, "/w", "/home/u"); got != c.want {
			t.Errorf("NormalizePath(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestClassify(t *testing.T) {
	dir := t.TempDir()
	cwd := filepath.Join(dir, "repo")
	os.MkdirAll(filepath.Join(cwd, ".ai-work", "task"), 0o700)
	os.MkdirAll(filepath.Join(dir, "elsewhere"), 0o700)
	os.Symlink(filepath.Join(dir, "elsewhere"), filepath.Join(cwd, ".ai-work", "escape"))
	os.WriteFile(filepath.Join(dir, "elsewhere", "x.md"), nil, 0o600)
	os.Symlink(filepath.Join(dir, "elsewhere", "x.md"), filepath.Join(cwd, ".ai-work", "link.md"))
	in := func(tool string, args map[string]any) GraceInput {
		b, _ := json.Marshal(args)
		return GraceInput{Tool: tool, Input: b, Cwd: cwd, Home: "/home/u", Roots: []string{cwd}}
	}
	for _, c := range []struct {
		name string
		in   GraceInput
		want bool
	}{
		{"edit STATE.md", in("edit", map[string]any{"path": ".ai-work/task/STATE.md"}), true},
		{"write a new note with @", in("write", map[string]any{"path": "@.ai-work/task/new/notes.md", "content": "x"}), true},
		{"write absolute", in("write", map[string]any{"path": filepath.Join(cwd, ".ai-work/a.md")}), true},
		{"write a .txt", in("write", map[string]any{"path": ".ai-work/a.txt"}), false},
		{"write outside", in("write", map[string]any{"path": "src/a.md"}), false},
		{"write escaping with ..", in("write", map[string]any{"path": ".ai-work/../README.md"}), false},
		{"write through a symlinked dir", in("write", map[string]any{"path": ".ai-work/escape/y.md"}), false},
		{"edit a symlinked file", in("edit", map[string]any{"path": ".ai-work/link.md"}), false},
		{"read .ai-work", in("read", map[string]any{"path": ".ai-work/task/STATE.md"}), true},
		{"ls .ai-work", in("ls", map[string]any{"path": ".ai-work"}), true},
		{"read elsewhere", in("read", map[string]any{"path": "main.go"}), false},
		{"read through symlink", in("read", map[string]any{"path": ".ai-work/escape/x.md"}), false},
		{"bash git status", in("bash", map[string]any{"command": "git status"}), true},
		{"bash git status with timeout", in("bash", map[string]any{"command": "git status", "timeout": 5}), true},
		{"bash cat", in("bash", map[string]any{"command": "cat .ai-work/task/STATE.md"}), false},
		{"unknown tool", in("ctx_read", map[string]any{"path": ".ai-work/x.md"}), false},
		{"no arguments", GraceInput{Tool: "read", Input: []byte(`"x"`)}, false},
	} {
		if got, why := Classify(c.in, osFS{}); got != c.want {
			t.Errorf("%s: Classify = %v (%s), want %v", c.name, got, why, c.want)
		}
	}
}
