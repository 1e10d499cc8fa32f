// Package gitexclude keeps the directories pi-session writes inside a git repository out of commits by listing them in the repository's local exclude file (.git/info/exclude), never in .gitignore.
package gitexclude

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Comment is the line written above the patterns pi-session adds, once.
const Comment = "# added by pi-session: its handoffs and offloaded tool results, kept out of commits"

// Repo is where a directory's repository keeps its exclude file.
type Repo struct {
	Root    string // the working tree's top directory
	Exclude string // <common git dir>/info/exclude: a linked worktree shares its main repository's
}

// Find returns the repository that holds dir: the nearest directory at
// or above dir with a .git entry (a directory, or a file "gitdir: ..." in
// a linked worktree or submodule). ok is false when dir is in none.
func Find(dir string) (r Repo, ok bool) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return Repo{}, false
	}
	for d := dir; ; d = filepath.Dir(d) {
		dotgit := filepath.Join(d, ".git")
		fi, err := os.Stat(dotgit)
		if err == nil {
			gitDir := dotgit
			if !fi.IsDir() {
				if gitDir, ok = readGitFile(dotgit); !ok {
					return Repo{}, false
				}
			}
			return Repo{Root: d, Exclude: filepath.Join(commonDir(gitDir), "info", "exclude")}, true
		}
		if filepath.Dir(d) == d {
			return Repo{}, false
		}
	}
}

// readGitFile reads the git directory a .git file names ("gitdir: path",
// relative to the file's directory unless absolute).
func readGitFile(path string) (string, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	gd, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), "gitdir: ")
	if !ok || strings.TrimSpace(gd) == "" {
		return "", false
	}
	if !filepath.IsAbs(gd) {
		gd = filepath.Join(filepath.Dir(path), gd)
	}
	return filepath.Clean(gd), true
}

// commonDir is the directory a git directory shares with its worktrees:
// what its commondir file names (a linked worktree's), else itself.
func commonDir(gitDir string) string {
	b, err := os.ReadFile(filepath.Join(gitDir, "commondir"))
	if err != nil {
		return gitDir
	}
	cd := strings.TrimSpace(string(b))
	if cd == "" {
		return gitDir
	}
	if !filepath.IsAbs(cd) {
		cd = filepath.Join(gitDir, cd)
	}
	return filepath.Clean(cd)
}

// Pattern is the exclude line for dir inside the working tree root:
// "/.ai-work/", anchored at the top, the characters git reads as a glob
// or a comment escaped. ok is false for a dir outside root, root itself,
// or a name no pattern can hold (a newline).
func Pattern(root, dir string) (string, bool) {
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || strings.ContainsAny(rel, "\n\r") {
		return "", false
	}
	var b strings.Builder
	b.WriteByte('/')
	for _, c := range filepath.ToSlash(rel) {
		if strings.ContainsRune(`\*?[`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	p := b.String()
	if strings.HasSuffix(p, " ") {
		p = strings.TrimSuffix(p, " ") + `\ `
	}
	return p + "/", true
}

// listed reports whether the exclude file's text already has pattern, or
// the same path written without its leading or trailing slash.
func listed(text []byte, pattern string) bool {
	bare := strings.TrimSuffix(strings.TrimPrefix(pattern, "/"), "/")
	for line := range bytes.Lines(text) {
		switch strings.TrimSpace(string(line)) {
		case pattern, "/" + bare, bare + "/", bare:
			return true
		}
	}
	return false
}

var (
	mu sync.Mutex
	// done holds the directories looked at, each exclude file + "\x00" +
	// pattern listed or given up on, and each exclude file warned about.
	done = map[string]bool{}
)

// Add lists dir, a directory pi-session writes inside a repository, in
// that repository's exclude file, once: nothing when it is listed already
// (by pi-session or by hand), when dir is in no repository, or when this
// process already did it. A pattern is added below Comment (written the
// first time only). When the exclude file cannot be written the warning
// says so and what to add by hand, once per file and process; pi-session
// goes on either way.
func Add(dir string) (warning string) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	mu.Lock()
	defer mu.Unlock()
	if done["dir\x00"+dir] {
		return "" // looked at already by this process: no walk up again
	}
	done["dir\x00"+dir] = true
	r, ok := Find(dir)
	if !ok {
		return ""
	}
	pattern, ok := Pattern(r.Root, dir)
	if !ok {
		return ""
	}
	key := r.Exclude + "\x00" + pattern
	if done[key] {
		return ""
	}
	done[key] = true
	if err := add(r.Exclude, pattern); err != nil {
		if done["warned\x00"+r.Exclude] {
			return "" // warned already
		}
		done["warned\x00"+r.Exclude] = true
		return fmt.Sprintf("gitexclude: %s could not be kept out of git (%v): add the line %s to %s or to a .gitignore", dir, err, pattern, r.Exclude)
	}
	return ""
}

func add(exclude, pattern string) error {
	old, err := os.ReadFile(exclude)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if listed(old, pattern) {
		return nil
	}
	var b strings.Builder
	if len(old) > 0 && !bytes.HasSuffix(old, []byte("\n")) {
		b.WriteByte('\n')
	}
	if !listed(old, Comment) {
		b.WriteString(Comment + "\n")
	}
	b.WriteString(pattern + "\n")
	if err := os.MkdirAll(filepath.Dir(exclude), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(exclude, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	// One write: a second writer appending at once interleaves whole
	// blocks, not lines.
	_, err = f.WriteString(b.String())
	return errors.Join(err, f.Close())
}
