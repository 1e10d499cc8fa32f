package gitexclude

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// git runs git in dir and returns its output; it fails the test on an
// error unless allowFail.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_SYSTEM=/dev/null",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v: %s", args, err, out)
	}
	return string(out)
}

// ignored reports whether git ignores path (relative to dir).
func ignored(t *testing.T, dir, path string) bool {
	t.Helper()
	cmd := exec.Command("git", "check-ignore", "-q", path)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_SYSTEM=/dev/null")
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 {
		return false
	}
	if err != nil {
		t.Fatalf("git check-ignore %s: %v", path, err)
	}
	return true
}

// fresh forgets what this process did, as a new pi-session would.
func fresh() {
	mu.Lock()
	defer mu.Unlock()
	done = map[string]bool{}
}

// write creates path with its parents.
func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func newRepo(t *testing.T) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "repo")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, root, "init", "-q", "-b", "main")
	return root
}

// TestAdd: the handoff directory of a fresh repository is excluded once,
// git then ignores what is written there, and the status stays clean.
func TestAdd(t *testing.T) {
	fresh()
	root := newRepo(t)
	exclude := filepath.Join(root, ".git", "info", "exclude")
	before := read(t, exclude) // git init's template
	write(t, filepath.Join(root, ".ai-work", "handoffs", "s-1.md"), "# Handoff\n")
	if w := Add(filepath.Join(root, ".ai-work")); w != "" {
		t.Fatalf("warning: %s", w)
	}
	want := before + Comment + "\n/.ai-work/\n"
	if diff := cmp.Diff(want, read(t, exclude)); diff != "" {
		t.Errorf("exclude (-want +got):\n%s", diff)
	}
	if !ignored(t, root, ".ai-work/handoffs/s-1.md") {
		t.Error("git does not ignore the handoff")
	}
	if st := git(t, root, "status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Errorf("git status: %q", st)
	}
	// Again in this process, and in a new one: nothing more.
	Add(filepath.Join(root, ".ai-work"))
	fresh()
	Add(filepath.Join(root, ".ai-work"))
	if got := read(t, exclude); got != want {
		t.Errorf("a second Add changed the exclude file:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(root, ".gitignore")); err == nil {
		t.Error("a .gitignore was written")
	}
	// Another directory later: below the comment already there, which is
	// not repeated.
	fresh()
	store := filepath.Join(root, "sub", ".pi", "context-store")
	write(t, filepath.Join(store, "blobs", "x"), "payload")
	write(t, filepath.Join(root, "sub", ".pi", "settings.json"), "{}")
	Add(store)
	if diff := cmp.Diff(want+"/sub/.pi/context-store/\n", read(t, exclude)); diff != "" {
		t.Errorf("exclude (-want +got):\n%s", diff)
	}
	if !ignored(t, root, "sub/.pi/context-store/blobs/x") {
		t.Error("git does not ignore the store")
	}
	if ignored(t, root, "sub/.pi/settings.json") {
		t.Error("git ignores pi's own project settings beside the store")
	}
}

// TestWorktree: a linked worktree's .git is a file; its exclude file is
// the main repository's (git reads info/exclude from the common dir).
func TestWorktree(t *testing.T) {
	fresh()
	root := newRepo(t)
	write(t, filepath.Join(root, "README"), "x\n")
	git(t, root, "add", "README")
	git(t, root, "commit", "-q", "-m", "init")
	wt := filepath.Join(filepath.Dir(root), "wt")
	git(t, root, "worktree", "add", "-q", "-b", "side", wt)
	if fi, err := os.Stat(filepath.Join(wt, ".git")); err != nil || fi.IsDir() {
		t.Fatalf("the worktree's .git is not a file: %v", err)
	}
	dir := filepath.Join(wt, ".ai-work")
	write(t, filepath.Join(dir, "handoffs", "s-1.md"), "# Handoff\n")
	r, ok := Find(filepath.Join(dir, "handoffs"))
	if !ok || r.Root != wt || r.Exclude != filepath.Join(root, ".git", "info", "exclude") {
		t.Fatalf("Find = %+v, %v", r, ok)
	}
	if w := Add(dir); w != "" {
		t.Fatal(w)
	}
	if !strings.Contains(read(t, r.Exclude), "\n/.ai-work/\n") {
		t.Errorf("exclude: %q", read(t, r.Exclude))
	}
	if !ignored(t, wt, ".ai-work/handoffs/s-1.md") {
		t.Error("git does not ignore the worktree's handoff")
	}
	if st := git(t, wt, "status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Errorf("git status in the worktree: %q", st)
	}
}

// TestSeparateGitDir: a .git file without commondir (git init
// --separate-git-dir, a submodule): the exclude file is in the named dir.
func TestSeparateGitDir(t *testing.T) {
	fresh()
	base := t.TempDir()
	root := filepath.Join(base, "repo")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, root, "init", "-q", "--separate-git-dir", filepath.Join(base, "store.git"))
	dir := filepath.Join(root, "deep", ".ai-work")
	write(t, filepath.Join(dir, "n.md"), "note\n")
	if w := Add(dir); w != "" {
		t.Fatal(w)
	}
	if !strings.Contains(read(t, filepath.Join(base, "store.git", "info", "exclude")), "\n/deep/.ai-work/\n") {
		t.Error("not in the separate git dir's exclude")
	}
	if !ignored(t, root, "deep/.ai-work/n.md") {
		t.Error("git does not ignore it")
	}
}

// TestNoRepo: outside any repository nothing is written anywhere.
func TestNoRepo(t *testing.T) {
	fresh()
	dir := filepath.Join(t.TempDir(), "plain", ".ai-work")
	if _, ok := Find(dir); ok {
		t.Skip("the temporary directory is inside a git repository")
	}
	if w := Add(dir); w != "" {
		t.Fatal(w)
	}
	if _, err := os.Stat(filepath.Dir(dir)); err == nil {
		t.Error("Add created a directory")
	}
}

// TestUnwritable: an exclude file that cannot be written (here a
// directory, which stops root too) gives one warning naming the file and
// the line to add, then none; the repository is left as it was.
func TestUnwritable(t *testing.T) {
	fresh()
	root := newRepo(t)
	exclude := filepath.Join(root, ".git", "info", "exclude")
	if err := os.Remove(exclude); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(exclude, 0o755); err != nil {
		t.Fatal(err)
	}
	w := Add(filepath.Join(root, ".ai-work"))
	if !strings.Contains(w, exclude) || !strings.Contains(w, "add the line /.ai-work/ to") {
		t.Errorf("warning: %q", w)
	}
	if w := Add(filepath.Join(root, ".ai-work")); w != "" {
		t.Errorf("second warning: %q", w)
	}
	if w := Add(filepath.Join(root, "other")); w != "" {
		t.Errorf("a warning for another directory of the same file: %q", w)
	}
	if _, err := os.Stat(filepath.Join(root, ".gitignore")); err == nil {
		t.Error("a .gitignore was written")
	}
}

// TestExisting: a line the user wrote (with or without slashes) counts;
// a last line without a newline gets one before what is added; a missing
// info/ directory is made.
func TestExisting(t *testing.T) {
	for _, tt := range []struct {
		name, before, want string
	}{
		{"by hand, bare", "*.log\n.ai-work\n", "*.log\n.ai-work\n"},
		{"by hand, slashes", "/.ai-work/\n", "/.ai-work/\n"},
		{"by hand, indented", "  .ai-work/  \n", "  .ai-work/  \n"},
		{"no final newline", "*.log", "*.log\n" + Comment + "\n/.ai-work/\n"},
		{"a deeper path only", "/x/.ai-work/\n", "/x/.ai-work/\n" + Comment + "\n/.ai-work/\n"},
		{"no file", "", Comment + "\n/.ai-work/\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fresh()
			root := newRepo(t)
			exclude := filepath.Join(root, ".git", "info", "exclude")
			if tt.before == "" {
				if err := os.RemoveAll(filepath.Dir(exclude)); err != nil {
					t.Fatal(err)
				}
			} else {
				write(t, exclude, tt.before)
			}
			if w := Add(filepath.Join(root, ".ai-work")); w != "" {
				t.Fatal(w)
			}
			if diff := cmp.Diff(tt.want, read(t, exclude)); diff != "" {
				t.Errorf("exclude (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPattern: names git would read as globs, comments or negations are
// escaped, and git agrees that the pattern matches the directory.
func TestPattern(t *testing.T) {
	root := newRepo(t)
	for _, tt := range []struct{ rel, want string }{
		{".ai-work", "/.ai-work/"},
		{"a b/.pi/context-store", "/a b/.pi/context-store/"},
		{"x[1]*?", `/x\[1]\*\?/`},
		{`back\slash`, `/back\\slash/`},
		{"#hash", "/#hash/"},
		{"!bang", "/!bang/"},
		{"trail ", `/trail\ /`},
	} {
		dir := filepath.Join(root, tt.rel)
		got, ok := Pattern(root, dir)
		if !ok || got != tt.want {
			t.Errorf("Pattern(%q) = %q, %v; want %q", tt.rel, got, ok, tt.want)
			continue
		}
		write(t, filepath.Join(dir, "f"), "x")
		write(t, filepath.Join(root, ".git", "info", "exclude"), got+"\n")
		if !ignored(t, root, filepath.Join(tt.rel, "f")) {
			t.Errorf("git does not ignore %q with %q", tt.rel, got)
		}
	}
	for _, dir := range []string{root, filepath.Dir(root), filepath.Join(root, "new\nline")} {
		if p, ok := Pattern(root, dir); ok {
			t.Errorf("Pattern(%q) = %q, want none", dir, p)
		}
	}
}
