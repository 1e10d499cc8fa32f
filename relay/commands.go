package relay

import (
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Command is a build, test or check command the session ran (pi's bash
// tool, or the user's own !command), the latest run of each distinct one.
type Command struct {
	Cmd    string
	Status string // "exit 0", "exit 2", "timed out", "aborted"; "" when unknown
	Time   string // of the latest run, "2006-01-02 15:04"
	Runs   int
}

// buildTools are the programs whose runs a continuing model needs to know
// about: builds, tests, linters and type checkers; for the ones that do
// many things, the subcommands that build or check.
var buildTools = map[string][]string{
	"go":     {"build", "test", "vet", "generate", "install", "run"},
	"cargo":  {"build", "test", "check", "clippy", "run", "bench", "nextest", "fmt"},
	"npm":    {"test", "t", "run", "ci", "install", "i", "exec"},
	"pnpm":   {"test", "t", "run", "build", "lint", "typecheck", "install", "i", "exec"},
	"yarn":   {"test", "run", "build", "lint", "typecheck", "install"},
	"bun":    {"test", "run", "build", "install"},
	"deno":   {"test", "check", "lint", "task", "compile"},
	"npx":    nil,
	"pnpx":   nil,
	"dotnet": {"build", "test", "run", "publish", "restore"},
	"swift":  {"build", "test", "run"},
	"mix":    {"test", "compile", "format", "credo", "dialyzer"},
	"stack":  {"build", "test"},
	"cabal":  {"build", "test", "run"},
	"zig":    {"build", "test"},
	"python": {"-m"}, "python3": {"-m"}, "uv": {"run", "sync"}, "poetry": {"run", "install"},
	"bundle": {"exec"}, "php": {"artisan", "vendor/bin/phpunit"}, "composer": {"test", "install", "run"},
	"docker": {"build", "compose"}, "git": nil,
	"make": {}, "gmake": {}, "cmake": {}, "ctest": {}, "ninja": {}, "meson": {}, "bazel": {}, "bazelisk": {}, "buck2": {},
	"mvn": {}, "mvnw": {}, "gradle": {}, "gradlew": {}, "ant": {}, "sbt": {}, "lein": {},
	"pytest": {}, "tox": {}, "nox": {}, "unittest": {}, "mypy": {}, "ruff": {}, "flake8": {}, "pylint": {}, "black": {}, "pyright": {},
	"tsc": {}, "eslint": {}, "prettier": {}, "jest": {}, "vitest": {}, "mocha": {}, "playwright": {}, "cypress": {}, "biome": {}, "vite": {}, "webpack": {}, "turbo": {}, "nx": {},
	"rspec": {}, "rake": {}, "rubocop": {}, "phpunit": {}, "pest": {},
	"gcc": {}, "g++": {}, "clang": {}, "clang++": {}, "cc": {}, "javac": {}, "kotlinc": {}, "rustc": {}, "ghc": {},
	"golangci-lint": {}, "staticcheck": {}, "gofmt": {}, "shellcheck": {}, "hadolint": {}, "terraform": {}, "tflint": {}, "helm": {}, "kubectl": nil,
	"xcodebuild": {}, "flutter": {"test", "build", "analyze"}, "dart": {"test", "analyze", "compile"},
	"node": {"--test"}, "bats": {}, "ginkgo": {}, "gotestsum": {},
}

// BuildCommand reports whether a shell command line runs a build, test or
// check: one of its commands (split at && || ; | and newlines, after
// environment assignments, sudo, time, timeout, env, nice) is such a tool.
func BuildCommand(line string) bool {
	for _, seg := range splitShell(line) {
		f := strings.Fields(seg)
		for len(f) > 0 {
			w := f[0]
			switch {
			case strings.Contains(w, "=") && !strings.HasPrefix(w, "-") && !strings.HasPrefix(w, "="):
				f = f[1:]
				continue
			case w == "sudo" || w == "time" || w == "env" || w == "nice" || w == "nohup" || w == "exec" || w == "command":
				f = f[1:]
				for len(f) > 0 && strings.HasPrefix(f[0], "-") {
					f = f[1:]
				}
				continue
			case (w == "bash" || w == "sh" || w == "zsh") && len(f) > 1 && !strings.HasPrefix(f[1], "-"):
				f = f[1:] // the script it runs
				continue
			case w == "timeout" && len(f) > 1:
				f = f[2:]
				continue
			}
			break
		}
		if len(f) == 0 {
			continue
		}
		tool := path.Base(f[0])
		tool = strings.TrimPrefix(tool, "./")
		subs, ok := buildTools[tool]
		if !ok {
			if strings.HasSuffix(tool, ".sh") && (strings.Contains(tool, "test") || strings.Contains(tool, "build") || strings.Contains(tool, "check") || strings.Contains(tool, "lint") || strings.Contains(tool, "ci")) {
				return true
			}
			continue
		}
		switch {
		case tool == "npx" || tool == "pnpx":
			if len(f) > 1 {
				if _, ok := buildTools[strings.TrimPrefix(f[1], "-y")]; ok {
					return true
				}
			}
		case tool == "python" || tool == "python3":
			if len(f) > 2 && f[1] == "-m" {
				switch f[2] {
				case "pytest", "unittest", "mypy", "ruff", "tox", "nox", "pylint", "flake8", "black", "build", "compileall", "doctest":
					return true
				}
			}
		case subs == nil:
			// A tool that only rarely builds (git, kubectl): never.
		case len(subs) == 0:
			return true
		default:
			if len(f) > 1 {
				for _, s := range subs {
					if f[1] == s {
						return true
					}
				}
			}
		}
	}
	return false
}

// splitShell cuts a command line at && || ; | and newlines, outside
// quotes (a rough reading: enough to find each command's program).
func splitShell(line string) []string {
	var out []string
	var b strings.Builder
	quote := byte(0)
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
			b.WriteByte(c)
		case c == '\'' || c == '"':
			quote = c
			b.WriteByte(c)
		case c == '&' || c == '|' || c == ';' || c == '\n' || c == '(' || c == ')':
			out = append(out, b.String())
			b.Reset()
		default:
			b.WriteByte(c)
		}
	}
	return append(out, b.String())
}

var exitRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?:exited with code|exit code:?|exit status:?)\s*(-?\d+)`)
})

// resultStatus reads a bash result's status: its error flag and the
// status line pi's bash tool appends ("Command exited with code 2",
// "Command timed out after 30 seconds", "Command aborted").
func resultStatus(text string, isError bool) string {
	tail := text
	if len(tail) > 400 {
		tail = tail[len(tail)-400:]
	}
	if m := exitRE().FindAllStringSubmatch(tail, -1); m != nil {
		if n, err := strconv.Atoi(m[len(m)-1][1]); err == nil {
			return "exit " + strconv.Itoa(n)
		}
	}
	switch {
	case strings.Contains(tail, "Command timed out"):
		return "timed out"
	case strings.Contains(tail, "Command aborted"):
		return "aborted"
	case !isError:
		return "exit 0"
	}
	return "failed"
}

// commands collects the build and test commands of a branch in one pass.
type commands struct {
	calls  map[string]int // tool call id -> index in runs
	runs   []Command      // every build command run, in order
	latest map[string]int // command -> index of its latest run
}

func newCommands() *commands {
	return &commands{calls: map[string]int{}, latest: map[string]int{}}
}

func (c *commands) call(id, cmd, ts string) {
	cmd = strings.TrimSpace(cmd)
	if !BuildCommand(cmd) {
		return
	}
	c.calls[id] = len(c.runs)
	c.runs = append(c.runs, Command{Cmd: cmd, Time: minute(ts)})
}

// wants reports whether the tool call id is a build command's.
func (c *commands) wants(id string) bool {
	_, ok := c.calls[id]
	return ok
}

func (c *commands) result(id, text string, isError bool) {
	if i, ok := c.calls[id]; ok {
		c.runs[i].Status = resultStatus(text, isError)
	}
}

func (c *commands) status(id, status string) {
	if i, ok := c.calls[id]; ok {
		c.runs[i].Status = status
	}
}

// list is each distinct command once, at its latest run, latest first,
// with the number of runs.
func (c *commands) list() []Command {
	count := map[string]int{}
	for _, r := range c.runs {
		count[r.Cmd]++
	}
	var out []Command
	done := map[string]bool{}
	for i := len(c.runs) - 1; i >= 0; i-- {
		r := c.runs[i]
		if done[r.Cmd] {
			continue
		}
		done[r.Cmd] = true
		r.Runs = count[r.Cmd]
		out = append(out, r)
	}
	return out
}

// textTail is the last n bytes (or a little less, from a rune's start)
// of a message content's text, pieces joined by newlines, read by its end
// only (textEnds): a build's output can be megabytes, and its status is
// at the end.
func textTail(raw []byte, n int) string {
	var lits [][]byte
	walkLiterals(raw, func(lit []byte) bool {
		lits = append(lits, lit)
		return true
	})
	return literalSpan(lits, false, 0, n).Tail
}
