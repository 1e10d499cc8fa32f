package budget

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCollectRepos: the cwd's repository first, then the repositories of
// the touched paths, at most 8 distinct ones (the rest counted), each
// inspected with porcelain v2 (branch, HEAD, dirty paths, .ai-work/ left
// out).
func TestCollectRepos(t *testing.T) {
	dir := t.TempDir()
	var candidates []string
	for i := 0; i < 10; i++ {
		r := filepath.Join(dir, fmt.Sprintf("r%d", i))
		os.MkdirAll(filepath.Join(r, "sub"), 0o700)
		runGit(t, r, "init", "-q", "-b", fmt.Sprintf("b%d", i))
		os.WriteFile(filepath.Join(r, "sub", "f.go"), nil, 0o600)
		os.MkdirAll(filepath.Join(r, ".ai-work"), 0o700)
		os.WriteFile(filepath.Join(r, ".ai-work", "STATE.md"), nil, 0o600)
		candidates = append(candidates, filepath.Join(r, "sub", "f.go"))
	}
	cwd := filepath.Join(dir, "r9", "sub")
	repo, repos, omitted := CollectRepos(context.Background(), cwd, append(candidates, candidates...))
	if repo == nil || repo.Root != filepath.Join(dir, "r9") || !repo.Known || repo.Branch != "b9" || repo.Dirty != 1 || repo.Changes[0] != "?? sub/" {
		t.Errorf("cwd repository: %+v", repo)
	}
	if len(repos) != MaxRepos || repos[0].Root != filepath.Join(dir, "r9") || omitted != 10-MaxRepos {
		t.Errorf("%d repositories (first %s), %d omitted; want %d, the cwd's first, %d omitted", len(repos), repos[0].Root, omitted, MaxRepos, 10-MaxRepos)
	}
	if repo, repos, _ := CollectRepos(context.Background(), dir, nil); repo != nil || len(repos) != 0 {
		t.Errorf("outside a repository: %+v %v", repo, repos)
	}
}

// TestInspectRepoDeadline: a git status that does not finish within its
// 800 ms leaves the repository's state unknown, saying why, and does not
// hold the handoff up.
func TestInspectRepoDeadline(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	os.MkdirAll(bin, 0o700)
	os.WriteFile(filepath.Join(bin, "git"), []byte("#!/bin/sh\nexec sleep 10\n"), 0o700)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	r := InspectRepo(context.Background(), dir)
	if r.Known || !strings.Contains(r.Error, "did not finish within 800ms") {
		t.Errorf("slow git: %+v", r)
	}
}
