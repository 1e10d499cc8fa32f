package budget

import (
	"encoding/json"
	"errors"
	"io/fs"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// PathFS resolves symlinks for the grace classifier; os-backed in the
// engine, a map in tests.
type PathFS interface {
	// EvalSymlinks returns the path with every symlink resolved; a missing
	// path is an error satisfying errors.Is(err, fs.ErrNotExist).
	EvalSymlinks(path string) (string, error)
}

// GraceInput is one tool call as the grace classifier sees it.
type GraceInput struct {
	Tool  string          // pi's tool name: read, write, edit, ls, grep, find, bash
	Input json.RawMessage // the call's arguments
	Cwd   string          // the session's cwd (absolute)
	Home  string          // the home directory pi expands ~ with
	Roots []string        // directories whose .ai-work/ holds state (cwd, repository root)
}

// Classify reports whether a tool call may run during the
// state-recording grace window: an edit or write of a canonical
// .ai-work/**/*.md file, a read of an .ai-work path, or a single simple
// read-only git command. Anything it does not recognise fails closed,
// with the reason.
func Classify(in GraceInput, fsys PathFS) (bool, string) {
	var args map[string]json.RawMessage
	if json.Unmarshal(in.Input, &args) != nil {
		return false, "arguments are not an object"
	}
	str := func(k string) (string, bool) {
		var s string
		return s, json.Unmarshal(args[k], &s) == nil && s != ""
	}
	switch in.Tool {
	case "edit", "write":
		p, ok := str("path")
		if !ok {
			return false, "no path"
		}
		abs := NormalizePath(p, in.Cwd, in.Home)
		if !strings.HasSuffix(abs, ".md") {
			return false, "only .ai-work/**/*.md files may be edited"
		}
		return underStateDir(abs, in.Roots, fsys, true)
	case "read", "ls", "grep", "find":
		p, ok := str("path")
		if !ok {
			return false, "no .ai-work path"
		}
		return underStateDir(NormalizePath(p, in.Cwd, in.Home), in.Roots, fsys, false)
	case "bash":
		cmd, ok := str("command")
		if !ok {
			return false, "no command"
		}
		if len(args) != 1 {
			if _, t := args["timeout"]; !(len(args) == 2 && t) {
				return false, "bash options other than timeout"
			}
		}
		return ReadOnlyGit(cmd)
	}
	return false, "tool " + in.Tool + " is not a state-recording tool"
}

var unicodeSpaces = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("[\u00A0\u2000-\u200A\u202F\u205F\u3000]") })

// NormalizePath resolves a tool's path argument as pi 1.6 does
// (resolveToCwd): Unicode spaces become spaces, a leading @ is dropped, ~
// and ~/ expand to home, file:// URLs become paths, and a relative path is
// joined to cwd, with . and .. resolved lexically.
func NormalizePath(p, cwd, home string) string {
	p = unicodeSpaces().ReplaceAllString(p, " ")
	p = strings.TrimPrefix(p, "@")
	switch {
	case p == "~":
		p = home
	case strings.HasPrefix(p, "~/"):
		p = filepath.Join(home, p[2:])
	case strings.HasPrefix(p, "file://"):
		if u, err := url.Parse(p); err == nil {
			p = u.Path
		}
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(cwd, p)
	}
	return filepath.Clean(p)
}

// underStateDir checks that abs lies in <root>/.ai-work for one of roots,
// lexically and once symlinks are resolved (the deepest existing ancestor
// for a file that does not exist yet).
func underStateDir(abs string, roots []string, fsys PathFS, file bool) (bool, string) {
	for _, root := range roots {
		dir := filepath.Join(root, ".ai-work")
		if abs != dir && !strings.HasPrefix(abs, dir+"/") {
			continue
		}
		if file && abs == dir {
			return false, "not a file"
		}
		realDir, err := fsys.EvalSymlinks(dir)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && file {
				realDir = dir // created by this write
			} else if errors.Is(err, fs.ErrNotExist) {
				return false, ".ai-work does not exist"
			} else {
				return false, "cannot resolve .ai-work: " + err.Error()
			}
		}
		real, err := resolveExisting(abs, fsys)
		if err != nil {
			return false, "cannot resolve the path: " + err.Error()
		}
		if real != realDir && !strings.HasPrefix(real, realDir+"/") {
			return false, "the path leaves .ai-work through a symlink"
		}
		return true, ""
	}
	return false, "not under .ai-work"
}

// resolveExisting resolves symlinks of the deepest existing ancestor of p
// and appends the rest.
func resolveExisting(p string, fsys PathFS) (string, error) {
	rest := ""
	for cur := p; ; {
		r, err := fsys.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(r, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p, nil
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// plainWord is a shell word that needs no quoting and expands to itself.
var plainWord = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._/@:^~=+,%-]+$`) })

// ReadOnlyGit accepts exactly the grace window's read-only git commands:
// git status, git diff --no-ext-diff --no-textconv, git log --oneline
// --no-show-signature, git rev-parse, git branch --show-current and git
// worktree list, each alone, with known options only. Shell syntax,
// global git options and unrecognised options are refused.
func ReadOnlyGit(cmd string) (bool, string) {
	words := strings.Fields(cmd)
	if len(words) < 2 || words[0] != "git" {
		return false, "not a single git command"
	}
	for _, w := range words {
		if !plainWord().MatchString(w) || strings.HasPrefix(w, "~") || strings.Contains(w, "=~") {
			return false, "shell syntax in " + w
		}
	}
	if strings.ContainsAny(cmd, "\n\r\t") {
		return false, "shell syntax"
	}
	sub, args := words[1], words[2:]
	if strings.HasPrefix(sub, "-") {
		return false, "global git options are not allowed"
	}
	options := func(allowed map[string]bool, prefixes []string, needed ...string) (bool, string) {
		seen := map[string]bool{}
		dashdash := false
		for _, a := range args {
			if dashdash || !strings.HasPrefix(a, "-") {
				continue
			}
			if a == "--" {
				dashdash = true
				continue
			}
			ok := allowed[a]
			for _, p := range prefixes {
				if strings.HasPrefix(a, p) {
					ok = true
				}
			}
			if !ok {
				return false, "option " + a + " is not allowed with git " + sub
			}
			seen[a] = true
		}
		for _, n := range needed {
			if !seen[n] {
				return false, "git " + sub + " needs " + n
			}
		}
		return true, ""
	}
	switch sub {
	case "status":
		return options(set("-s", "--short", "-b", "--branch", "--porcelain", "--porcelain=v1", "--porcelain=v2", "--long",
			"-uno", "-unormal", "-uall", "--untracked-files=no", "--untracked-files=normal", "--untracked-files=all",
			"--ignored", "--no-renames", "--ahead-behind", "--no-ahead-behind", "--show-stash", "-v", "--verbose"), nil)
	case "diff":
		return options(set("--no-ext-diff", "--no-textconv", "--stat", "--numstat", "--shortstat", "--name-only", "--name-status",
			"--cached", "--staged", "--no-color", "--color=never", "--patience", "--histogram", "--minimal", "--summary",
			"--ignore-all-space", "-w", "--ignore-space-change", "-b", "--no-renames", "--check", "--merge-base", "-R"),
			[]string{"-U", "--unified=", "--stat="}, "--no-ext-diff", "--no-textconv")
	case "log":
		return options(set("--oneline", "--no-show-signature", "--graph", "--decorate", "--no-decorate", "--all", "--no-color",
			"--color=never", "--first-parent", "--reverse", "--no-merges", "--merges", "--abbrev-commit", "--topo-order", "--date-order"),
			[]string{"-n", "--max-count=", "--since=", "--until=", "--after=", "--before=", "--author=", "--skip=", "-1", "-2", "-3", "-4", "-5", "-6", "-7", "-8", "-9"},
			"--oneline", "--no-show-signature")
	case "rev-parse":
		return options(set("--show-toplevel", "--show-prefix", "--show-cdup", "--git-dir", "--git-common-dir", "--absolute-git-dir",
			"--is-inside-work-tree", "--is-inside-git-dir", "--is-bare-repository", "--abbrev-ref", "--short", "--verify", "-q",
			"--quiet", "--symbolic-full-name", "--show-superproject-working-tree"), []string{"--short=", "--abbrev-ref="})
	case "branch":
		if len(args) == 1 && args[0] == "--show-current" {
			return true, ""
		}
		return false, "only git branch --show-current is allowed"
	case "worktree":
		if len(args) == 0 || args[0] != "list" {
			return false, "only git worktree list is allowed"
		}
		for _, a := range args[1:] {
			if a != "--porcelain" && a != "-v" && a != "--verbose" {
				return false, "option " + a + " is not allowed with git worktree list"
			}
		}
		return true, ""
	}
	return false, "git " + sub + " is not a grace command"
}

func set(items ...string) map[string]bool {
	m := make(map[string]bool, len(items))
	for _, i := range items {
		m[i] = true
	}
	return m
}
