package budget

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pi-session/pi-session/hostproc"
)

// Git deadlines: one status call per repository, 800 ms each, 3 s for all.
const (
	GitCallDeadline  = 800 * time.Millisecond
	GitTotalDeadline = 3 * time.Second
	MaxRepoCandidate = 64
	MaxRepos         = 8
)

// gitArgs disable what a repository's configuration could make a status
// call run or write: fsmonitor hooks, optional index locks, pagers.
var gitArgs = []string{"-c", "core.fsmonitor=false", "-c", "core.untrackedCache=false", "--no-optional-locks", "--no-pager"}

// RepoRoot finds the repository containing dir by looking for .git (a
// directory, or a file for worktrees); "" when there is none. cache holds
// earlier answers by directory.
func RepoRoot(dir string, cache map[string]string) string {
	var walked []string
	root := ""
	for cur := filepath.Clean(dir); ; {
		if r, ok := cache[cur]; ok {
			root = r
			break
		}
		walked = append(walked, cur)
		if _, err := os.Lstat(filepath.Join(cur, ".git")); err == nil {
			root = cur
			break
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			break
		}
		cur = parent
	}
	if cache != nil {
		for _, w := range walked {
			cache[w] = root
		}
	}
	return root
}

// InspectRepo runs one `git status --porcelain=v2 --branch` in root.
func InspectRepo(ctx context.Context, root string) RepoState {
	r := RepoState{Root: root}
	ctx, cancel := context.WithTimeout(ctx, GitCallDeadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append(slicesClone(gitArgs), "status", "--porcelain=v2", "--branch", "--untracked-files=normal")...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0", "GIT_TERMINAL_PROMPT=0", "LC_ALL=C")
	cmd.WaitDelay = 200 * time.Millisecond
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := hostproc.Run(cmd); err != nil {
		if ctx.Err() != nil {
			r.Error = fmt.Sprintf("git status did not finish within %v", GitCallDeadline)
		} else {
			r.Error = strings.TrimSpace(firstLine(errb.String()))
			if r.Error == "" {
				r.Error = err.Error()
			}
		}
		return r
	}
	parseStatusV2(&r, out.Bytes())
	r.Known = true
	return r
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }

// parseStatusV2 reads git's porcelain v2 status with --branch.
func parseStatusV2(r *RepoState, out []byte) {
	for _, line := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(line, "# branch.oid "):
			r.Head = strings.TrimPrefix(line, "# branch.oid ")
			if r.Head == "(initial)" {
				r.Head = ""
			}
		case strings.HasPrefix(line, "# branch.head "):
			r.Branch = strings.TrimPrefix(line, "# branch.head ")
		case strings.HasPrefix(line, "# branch.upstream "):
			r.Upstream = strings.TrimPrefix(line, "# branch.upstream ")
		case strings.HasPrefix(line, "# branch.ab "):
			f := strings.Fields(strings.TrimPrefix(line, "# branch.ab "))
			if len(f) == 2 {
				r.Ahead, _ = strconv.Atoi(strings.TrimPrefix(f[0], "+"))
				r.Behind, _ = strconv.Atoi(strings.TrimPrefix(f[1], "-"))
			}
		case strings.HasPrefix(line, "1 "), strings.HasPrefix(line, "2 "), strings.HasPrefix(line, "u "):
			f := strings.SplitN(line, " ", 3)
			if len(f) < 3 {
				continue
			}
			xy := strings.ReplaceAll(f[1], ".", " ")
			fields := 9
			switch line[0] {
			case '2':
				fields = 10
			case 'u':
				fields = 11
			}
			parts := strings.SplitN(line, " ", fields)
			path := parts[len(parts)-1]
			if line[0] == '2' {
				if to, from, ok := strings.Cut(path, "\t"); ok {
					path = from + " -> " + to
				}
			}
			if strings.HasPrefix(path, ".ai-work/") {
				continue // the agent's notes and handoffs, recorded on their own
			}
			r.Changes = append(r.Changes, xy+" "+path)
			r.Dirty++
		case strings.HasPrefix(line, "? "):
			if strings.HasPrefix(line, "? .ai-work/") {
				continue
			}
			r.Changes = append(r.Changes, "?? "+strings.TrimPrefix(line, "? "))
			r.Dirty++
		}
	}
}

// CollectRepos inspects the cwd's repository and the repositories of the
// candidate paths (newest first): at most 64 candidates and 8 distinct
// repositories, sharing one 3 s deadline. Repositories found but not
// inspected in time are returned with unknown state.
func CollectRepos(ctx context.Context, cwd string, candidates []string) (cwdRepo *RepoState, repos []RepoState, omitted int) {
	ctx, cancel := context.WithTimeout(ctx, GitTotalDeadline)
	defer cancel()
	cache := map[string]string{}
	var roots []string
	seen := map[string]bool{}
	add := func(p string) {
		root := RepoRoot(p, cache)
		if root == "" || seen[root] {
			return
		}
		seen[root] = true
		if len(roots) == MaxRepos {
			omitted++
			return
		}
		roots = append(roots, root)
	}
	cwdRoot := RepoRoot(cwd, cache)
	if cwdRoot != "" {
		add(cwd)
	}
	for i, c := range candidates {
		if i == MaxRepoCandidate {
			break
		}
		dir := c
		if st, err := os.Stat(c); err != nil || !st.IsDir() {
			dir = filepath.Dir(c)
		}
		add(dir)
	}
	// The status calls run in parallel, four at a time.
	repos = make([]RepoState, len(roots))
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for i, root := range roots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if ctx.Err() != nil {
				repos[i] = RepoState{Root: root, Error: "not inspected within the 3 s git deadline"}
				return
			}
			repos[i] = InspectRepo(ctx, root)
		}()
	}
	wg.Wait()
	for _, r := range repos {
		if r.Root == cwdRoot {
			rr := r
			cwdRepo = &rr
		}
	}
	return cwdRepo, repos, omitted
}
