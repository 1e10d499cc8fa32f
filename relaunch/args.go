package relaunch

import (
	"path/filepath"
	"strings"
)

// Kind classifies one command-line item the way pi 1.6's parser reads it.
type Kind int

// The kinds of command-line items.
const (
	Option    Kind = iota // an option with its value tokens, kept on relaunch
	Selector              // a session selector (-c, -r, --session, --session-id, --fork), dropped on relaunch
	Message               // an initial message, dropped on relaunch
	File                  // an @file argument, dropped on relaunch
	Separator             // the "--" that ends option parsing
)

func (k Kind) String() string {
	return [...]string{"option", "selector", "message", "file", "separator"}[k]
}

// Item is one parsed command-line item: a flag and the value it consumed, a
// message, an @file, or the separator.
type Item struct {
	Kind   Kind
	Tokens []string
}

// Value-taking built-in flags that consume the next argument whenever there
// is one (pi checks only i+1 < len(args)).
var takesAnyValue = map[string]bool{
	"--provider": true, "--model": true, "--api-key": true,
	"--system-prompt": true, "--append-system-prompt": true,
	"--session-dir": true, "--models": true, "--tools": true, "-t": true,
	"--exclude-tools": true, "-xt": true, "--thinking": true, "--export": true,
	"--extension": true, "-e": true, "--skill": true, "--prompt-template": true,
	"--theme": true, "--name": true, "-n": true,
	// selectors that take a value
	"--session": true, "--session-id": true, "--fork": true,
}

var selectors = map[string]bool{
	"-c": true, "--continue": true, "-r": true, "--resume": true,
	"--session": true, "--session-id": true, "--fork": true,
}

// Parse splits pi's arguments into items using pi 1.6's own grammar
// (dist/cli/args.js), so a relaunch can tell options from initial messages
// and @files. Unknown "--flag" options consume the next argument when it does
// not start with "-" or "@", exactly as pi does; write extension flags as
// --flag=value to avoid the ambiguity.
func Parse(args []string) []Item {
	var items []Item
	opt := func(kind Kind, toks ...string) { items = append(items, Item{Kind: kind, Tokens: toks}) }
	for i := 0; i < len(args); i++ {
		a := args[i]
		kind := Option
		if selectors[a] {
			kind = Selector
		}
		hasNext := i+1 < len(args)
		next := ""
		if hasNext {
			next = args[i+1]
		}
		switch {
		case a == "--":
			opt(Separator, a)
			for _, p := range args[i+1:] {
				if strings.HasPrefix(p, "@") {
					opt(File, p)
				} else {
					opt(Message, p)
				}
			}
			return items
		case takesAnyValue[a] && hasNext:
			opt(kind, a, next)
			i++
		case a == "--mode" || a == "--use-theme":
			if hasNext && !strings.HasPrefix(next, "-") {
				opt(kind, a, next)
				i++
			} else {
				opt(kind, a)
			}
		case a == "--tui-mode":
			if hasNext && (next == "regular" || next == "fullscreen" || !strings.HasPrefix(next, "-")) {
				opt(kind, a, next)
				i++
			} else {
				opt(kind, a)
			}
		case a == "--list-models":
			if hasNext && !strings.HasPrefix(next, "-") && !strings.HasPrefix(next, "@") {
				opt(kind, a, next)
				i++
			} else {
				opt(kind, a)
			}
		case a == "--print" || a == "-p":
			opt(kind, a)
			if hasNext && !strings.HasPrefix(next, "@") && (!strings.HasPrefix(next, "-") || strings.HasPrefix(next, "---")) {
				opt(Message, next)
				i++
			}
		case knownBool[a]:
			opt(kind, a)
		case strings.HasPrefix(a, "@"):
			opt(File, a)
		case strings.HasPrefix(a, "--"):
			if !strings.Contains(a, "=") && hasNext && !strings.HasPrefix(next, "-") && !strings.HasPrefix(next, "@") {
				opt(kind, a, next)
				i++
			} else {
				opt(kind, a)
			}
		case strings.HasPrefix(a, "-"):
			opt(kind, a) // pi rejects unknown short options; keep it so pi says so again
		default:
			opt(Message, a)
		}
	}
	return items
}

// Boolean built-in flags. Listed so that "--no-session msg" is not read as an
// unknown flag taking "msg" as its value.
var knownBool = map[string]bool{
	"--help": true, "-h": true, "--version": true, "-v": true,
	"--continue": true, "-c": true, "--resume": true, "-r": true,
	"--no-session": true, "--no-tools": true, "-nt": true,
	"--no-builtin-tools": true, "-nbt": true, "--no-extensions": true, "-ne": true,
	"--no-mcp": true, "--no-skills": true, "-ns": true,
	"--no-prompt-templates": true, "-np": true, "--no-themes": true,
	"--no-context-files": true, "-nc": true, "--verbose": true,
	"--approve": true, "-a": true, "--no-approve": true, "-na": true,
	"--offline": true,
}

// Mode reports pi's output mode for these arguments: "rpc", "json", "print"
// or "" for the default (interactive when on a terminal).
func Mode(items []Item) string {
	mode := ""
	for _, it := range items {
		if it.Kind != Option {
			continue
		}
		switch it.Tokens[0] {
		case "--mode":
			if len(it.Tokens) == 2 && (it.Tokens[1] == "rpc" || it.Tokens[1] == "json") {
				mode = it.Tokens[1]
			}
		case "-p", "--print":
			if mode == "" {
				mode = "print"
			}
		}
	}
	return mode
}

// Argv builds the arguments of a relaunched pi: the user's ordinary options
// (session selectors, initial messages and @files removed), then "--", then
// "@<launchPrompt>" when there is one, then "continue from <handoff>". The
// separator keeps the continuation message from being read as the value of a
// preceding extension flag.
func Argv(original []string, launchPrompt *string, handoff string) []string {
	var out []string
	for _, it := range Parse(original) {
		if it.Kind == Option {
			out = append(out, it.Tokens...)
		}
	}
	out = append(out, "--")
	if launchPrompt != nil {
		out = append(out, "@"+*launchPrompt)
	}
	return append(out, "continue from "+handoff)
}

// Flags whose value is a local path that pi resolves against its working
// directory, unless it names a package source (npm:, git:, builtin:, ...).
var pathValued = map[string]bool{
	"-e": true, "--extension": true, "--skill": true,
	"--prompt-template": true, "--theme": true, "--session-dir": true,
}

// Flags whose value is text, or a path when a file by that name exists.
var textOrPath = map[string]bool{"--system-prompt": true, "--append-system-prompt": true}

// Relocate makes the path values of options absolute against dir, the
// directory pi-session started in, so that a relaunch in the marker's cwd
// loads the same extensions, skills, themes and prompt files. isFile answers
// whether a --system-prompt value names an existing file (then it is a path).
// Messages and @files are left alone: a relaunch drops them.
func Relocate(args []string, dir string, isFile func(string) bool) []string {
	out := make([]string, 0, len(args))
	for _, it := range Parse(args) {
		toks := it.Tokens
		if it.Kind == Option && len(toks) == 2 && !filepath.IsAbs(toks[1]) {
			v := toks[1]
			switch {
			case pathValued[toks[0]] && isLocalPath(v) && !strings.HasPrefix(v, "~"):
				toks = []string{toks[0], filepath.Join(dir, v)}
			case textOrPath[toks[0]] && isFile(filepath.Join(dir, v)):
				toks = []string{toks[0], filepath.Join(dir, v)}
			}
		}
		out = append(out, toks...)
	}
	return out
}

// isLocalPath mirrors pi's isLocalPath: package sources are not paths.
func isLocalPath(v string) bool {
	v = strings.TrimSpace(v)
	for _, p := range []string{"npm:", "git:", "github:", "http:", "https:", "ssh:", "builtin:", "file:"} {
		if strings.HasPrefix(v, p) {
			return false
		}
	}
	return v != ""
}
