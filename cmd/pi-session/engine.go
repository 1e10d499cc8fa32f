package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/pi-session/pi-session/clip"
)

// engineCommand is one engine's command line under `pi-session engine`:
// what the engine computes from files (a note, a recall, a recap prompt),
// printed without pi, for users, scripts, tests and benchmarks.
type engineCommand struct {
	help  string  // the command's --help, beginning "usage: pi-session engine <word> ..."
	about string  // one line: what it prints
	run   command // gets the arguments after the engine word
}

// usage is the command's usage line without "usage: pi-session engine ".
func (c engineCommand) usage() string {
	line, _, _ := strings.Cut(c.help, "\n")
	return strings.TrimPrefix(line, "usage: pi-session engine ")
}

// engineCommands are the words after `pi-session engine`. Each engine's
// adapter file defines its run function; this table lists them.
var engineCommands = map[string]engineCommand{
	"recap":   {help: engineRecapUsage, about: "the exact request the recap model would receive", run: cmdEngineRecap},
	"session": {help: engineSessionUsage, about: "a session file as the engines read it, and every problem in it", run: cmdEngineSession},
}

// cmdEngine dispatches `pi-session engine <word> ...`. `engine` is one
// reserved first word for every engine: "recall ..." or "recap ..." are
// likely first words of a prompt, so they cannot be reserved themselves.
func cmdEngine(ctx context.Context, inv *invocation) int {
	if len(inv.args) == 0 {
		printEngineHelp(inv.stderr)
		return exitUsage
	}
	word := inv.args[0]
	if word == "-h" || word == "--help" || word == "help" {
		printEngineHelp(inv.stdout)
		return 0
	}
	c, ok := engineCommands[word]
	if !ok {
		return inv.errorf(exitUsage, "engine: no engine command %q%s (see pi-session engine --help)", clip.To(word, clip.EchoChars), didYouMean(word, engineWords()))
	}
	sub := *inv
	sub.args = inv.args[1:]
	return c.run(ctx, &sub)
}

// engineWords are the engine commands, sorted.
func engineWords() []string {
	words := make([]string, 0, len(engineCommands))
	for k := range engineCommands {
		words = append(words, k)
	}
	slices.Sort(words)
	return words
}

func printEngineHelp(w io.Writer) {
	fmt.Fprint(w, "usage: pi-session engine <command> [flags] [arguments]\n\n")
	fmt.Fprint(w, "Prints what pi-session's engines compute from files, without pi and\nwithout writing anything. Commands:\n")
	if len(engineCommands) == 0 {
		fmt.Fprint(w, "  (none in this build)\n")
		return
	}
	for _, k := range engineWords() {
		c := engineCommands[k]
		fmt.Fprintf(w, "  %s\n      %s\n", c.usage(), c.about)
	}
	fmt.Fprint(w, "\n`pi-session engine <command> --help` says more about each.\n")
}
