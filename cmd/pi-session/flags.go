package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/pi-session/pi-session/clip"
	"github.com/spf13/pflag"
)

// newFlagSet is a subcommand's flag set: GNU style (--flag, --flag=value,
// -h, flags after arguments, -- ends the flags), silent, because
// parseFlags reports its errors.
func newFlagSet(name string) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	return fs
}

// parseFlags parses a subcommand's arguments. It prints usage and returns
// done with status 0 for -h and --help; a bad flag is a usage error that
// names the flag as the user typed it and points at --help. rest holds
// the arguments that are not flags, in order.
func parseFlags(inv *invocation, fs *pflag.FlagSet, args []string, usage string) (rest []string, code int, done bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fmt.Fprint(inv.stdout, usage)
			return nil, 0, true
		}
		// pflag's error repeats the flag or its value: an echo.
		return nil, inv.errorf(exitUsage, "%s: %s (see pi-session %s --help)", fs.Name(), clip.Echo(err.Error()), fs.Name()), true
	}
	return fs.Args(), 0, false
}
