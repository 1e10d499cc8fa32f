package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/pi-session/pi-session/clip"
	"github.com/pi-session/pi-session/supervisor"
)

// invocation is one run of pi-session: its arguments (after the command
// word, for subcommands), environment and standard streams. Everything
// pi-session prints goes through stdout and stderr, which write untrusted
// text out visibly (clip.Writer: no escape sequence or invalid byte of a
// session file, a record or an argument reaches the terminal raw); the
// files themselves are only handed to pi.
type invocation struct {
	argv0  string
	args   []string
	env    *environ
	stdin  *os.File
	stdout io.Writer
	stderr io.Writer
	files  struct{ stdout, stderr *os.File } // pi's, under the supervisor
}

// errorf prints one line "pi-session: ..." on stderr and returns code.
func (inv *invocation) errorf(code int, format string, args ...any) int {
	fmt.Fprintf(inv.stderr, "pi-session: "+format+"\n", args...)
	return code
}

// command runs one of pi-session's own subcommands and returns its exit status.
type command func(ctx context.Context, inv *invocation) int

// commands are pi-session's reserved first words. `pi-session -- <word>`
// sends the word to pi instead.
var commands = map[string]command{
	"version": cmdVersion,
	"status":  cmdStatus,
	"prune":   cmdPrune,
	"serve":   cmdServe,
	"setup":   cmdSetup,
	"doctor":  cmdDoctor,
	"engine":  cmdEngine,
	"demo":    notYet("demo"),
}

// notYet reserves a word for a command a later version provides.
func notYet(name string) command {
	return func(ctx context.Context, inv *invocation) int {
		return inv.errorf(exitUsage, "%s is reserved for a pi-session command this build does not have yet; to send %q to pi as a prompt, run: pi-session -- %s", name, name, name)
	}
}

// piSubcommands are pi's own first words; pi-session execs pi for them.
var piSubcommands = map[string]bool{
	"install": true, "remove": true, "uninstall": true, "update": true,
	"list": true, "config": true, "auth": true, "mcp": true,
}

// run is the whole program: main only calls it.
func run(ctx context.Context, argv []string, env []string, stdin, stdout, stderr *os.File) int {
	if supervisor.IsLeader(env) {
		return supervisor.RunLeader(argv[1:], env)
	}
	out, errOut := clip.NewWriter(stdout), clip.NewWriter(stderr)
	defer out.Flush()
	defer errOut.Flush()
	inv := &invocation{argv0: argv[0], args: argv[1:], env: newEnviron(env), stdin: stdin, stdout: out, stderr: errOut}
	inv.files.stdout, inv.files.stderr = stdout, stderr
	if len(inv.args) > 0 {
		if cmd, ok := commands[inv.args[0]]; ok {
			sub := *inv
			sub.args = inv.args[1:]
			return cmd(ctx, &sub)
		}
	}
	if code, typo := mistypedCommand(inv); typo {
		return code
	}
	args := inv.args
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	switch execReason(args) {
	case "help":
		return helpThenPi(inv, args)
	case "version":
		return printVersions(ctx, inv)
	case "exec":
		return execPi(inv, args)
	}
	return supervise(ctx, inv, args)
}

// mistypedCommand refuses a lone word that is one typo away from a
// command word (pi-session's or pi's): "pi-session stauts" is far likelier
// a mistyped status than a one-word prompt, and pi would start on it. The
// message says how to send the word to pi anyway.
func mistypedCommand(inv *invocation) (int, bool) {
	if len(inv.args) != 1 {
		return 0, false
	}
	word := inv.args[0]
	if strings.Trim(word, "abcdefghijklmnopqrstuvwxyz-") != "" || strings.HasPrefix(word, "-") || piSubcommands[word] {
		return 0, false
	}
	words := make([]string, 0, len(commands)+len(piSubcommands))
	for k := range commands {
		words = append(words, k)
	}
	for k := range piSubcommands {
		words = append(words, k)
	}
	slices.Sort(words)
	hint := didYouMean(word, words)
	if hint == "" {
		return 0, false
	}
	return inv.errorf(exitUsage, "%q is not a command%s; to send %q to pi as a prompt, run: pi-session -- %s", word, hint, word, word), true
}

// execReason says whether pi's arguments are a one-shot pi command that
// pi-session answers or hands to pi with exec, unsupervised: "help" for
// --help, "version" for --version (pi-session's version and pi's), "exec"
// for pi's subcommands, --export and --list-models, "" otherwise.
func execReason(args []string) string {
	if len(args) > 0 && piSubcommands[args[0]] {
		return "exec"
	}
	reason := ""
	for _, a := range args {
		switch a {
		case "--":
			return reason
		case "--help", "-h":
			return "help"
		case "--version", "-v": // pi too answers it before --export
			reason = "version"
		case "--export", "--list-models":
			if reason == "" {
				reason = "exec"
			}
		}
	}
	return reason
}

func printHelp(w io.Writer) {
	fmt.Fprint(w, strings.TrimLeft(helpText, "\n"))
}

// helpThenPi prints pi-session's help, then pi's own (exec). Without a
// runnable pi the help says so and the status is still 0: asking for help
// succeeded.
func helpThenPi(inv *invocation, args []string) int {
	printHelp(inv.stdout)
	pi, err := findPi(inv.env)
	if err != nil {
		fmt.Fprintf(inv.stdout, "Note: pi's own help is not shown: pi was not found (%v).\n", err)
		return 0
	}
	fmt.Fprint(inv.stdout, "pi's own help follows.\n\n")
	if err := execFound(inv, pi, args); err != nil {
		fmt.Fprintf(inv.stdout, "Note: pi's own help is not shown: %v.\n", err)
	}
	return 0
}

const helpText = `
pi-session - runs pi under supervision and relaunches it from verified handoffs

Usage:
  pi-session [pi options] [--] [@files...] [messages...]   run pi (alias pi=pi-session)
  pi-session -- <word> ...                                 send a reserved word to pi as a prompt
  pi-session version                                       pi-session's version and the pi it runs
  pi-session status | prune                                sessions' status records (see --help of each)
  pi-session setup [--undo]                                install (or remove) pi-session's extension for plain pi
  pi-session doctor                                        check Node, pi, the extension, the engine socket
  pi-session serve                                         the engine host alone (plain pi's extension starts it)
  pi-session engine <command> ...                          what an engine computes from files, without pi
  (reserved: demo)

Every argument goes to pi unchanged; a leading "--" is removed. pi's own
subcommands (install, remove, uninstall, update, list, config, auth, mcp) and
--help, --export, --list-models are handed to pi directly; --version prints
pi-session's version and pi's, as pi-session version does.
pi-session passes its bundled extension to pi (-e) unless you installed it
with pi-session setup, and serves the engines it calls on a private socket.
On relaunch pi-session keeps your options but drops session selectors
(-c, -r, --session, --session-id, --fork), initial messages and @files.
Write extension flags as --flag=value: like pi, pi-session reads
"--flag word" as a flag with the value "word".

Environment:
  PI_SESSION_PI                       the real pi (default: pi on PATH, never pi-session itself)
  PI_SESSION_MARKER_DIR               relaunch marker directory (default <agent dir>/relaunch)
  PI_SESSION_MAX_RELAUNCHES_PER_HOUR  relaunches per rolling hour (default 5; 0 turns relaunch off)
  PI_SESSION_EXTENSION                the extension to pass to pi: a directory (instead of the
                                      bundled one), or "off" for none
  PI_CODING_AGENT_DIR                 pi's agent directory (default ~/.pi/agent)
  PI_CONTEXT_BUDGET_STATE_DIR         status records and telemetry logs
                                      (default <agent dir>/context-budget)
  PI_CONTEXT_BUDGET_CONFIG            the budget engine's configuration
                                      (default <agent dir>/context-budget.json)
  PI_RESUME_CHECK                     the budget's resume check command (wins over resumeChecks)
  PI_SUMMARY_IDLE_MS                  quiet time after a run before its recap
                                      (default 180000, at least 30000)
  PI_SESSION_BIN                      the pi-session that plain pi's extension starts (under
                                      pi-session: this one, as a stand-in host, unless set)
  XDG_RUNTIME_DIR                     where the engine socket goes first (<dir>/pi-session/)
  Files: <agent dir>/context-relay.json (relay), <agent dir>/summaries/config.private.json
  (recap, written by /recap), <workspace>/.pi/context-engineer.json (offload).
  Set for pi only: PI_SESSION_WRAPPER, PI_SESSION_WRAPPER_PID, PI_SESSION_LAUNCH_ID, PI_RELAUNCH_MARKER,
  PI_SESSION_SOCKET (the engine socket)

Exit status:
  pi's own status; 128+n when pi died of signal n, or when pi-session itself
  received SIGTERM, SIGHUP or SIGQUIT (n) and pi then exited 0.
  64  usage error            73  cannot create a file or directory pi-session writes
  70  internal error             (the marker directory; setup's files)
  71  system error (PTY)     78  invalid configuration (an environment variable, a
                                 settings file that is not JSON)
                             126 pi found but not executable
                             127 pi not found
  A subcommand's own meaning of 1 is in its --help (doctor: a check failed).

`
