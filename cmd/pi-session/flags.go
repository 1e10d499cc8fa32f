package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/pi-session/pi-session/clip"
	"github.com/pi-session/pi-session/jsonpos"
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
// names the flag as the user typed it, suggests the flag a mistyped one
// most likely meant, says the range a number flag allows, and points at
// --help. rest holds the arguments that are not flags, in order.
func parseFlags(inv *invocation, fs *pflag.FlagSet, args []string, usage string) (rest []string, code int, done bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fmt.Fprint(inv.stdout, usage)
			return nil, 0, true
		}
		return nil, inv.errorf(exitUsage, "%s: %s (see pi-session %s --help)", fs.Name(), flagError(fs, err), fs.Name()), true
	}
	return fs.Args(), 0, false
}

// flagError says what is wrong with a flag, for parseFlags. pflag's error
// repeats the flag or its value as typed: an echo.
func flagError(fs *pflag.FlagSet, err error) string {
	var notExist *pflag.NotExistError
	var invalid *pflag.InvalidValueError
	var rangeErr *outOfRange
	switch {
	case errors.As(err, &rangeErr) && errors.As(err, &invalid):
		// "--limit 0: out of range: give 1 to 30"
		return fmt.Sprintf("--%s %s: %s", invalid.GetFlag().Name, clip.Echo(invalid.GetValue()), rangeErr.Error())
	case errors.As(err, &notExist):
		var names []string
		fs.VisitAll(func(f *pflag.Flag) {
			if !f.Hidden {
				names = append(names, f.Name)
			}
		})
		typed := notExist.GetSpecifiedName()
		if group := notExist.GetSpecifiedShortnames(); group != "" {
			// -limit is read as the shorthands l, i, m, i, t: the long
			// flag with one dash is the likelier mistake.
			typed = group
		}
		if near := jsonpos.Nearest(typed, names); near != "" {
			return clip.Echo(err.Error()) + fmt.Sprintf(" (did you mean --%s?)", near)
		}
	}
	return clip.Echo(err.Error())
}

// didYouMean is ` (did you mean "status"?)` for a word near one of known,
// or "": the one suggestion for a mistyped subcommand, anywhere.
func didYouMean(word string, known []string) string {
	if near := jsonpos.Nearest(word, known); near != "" && near != word {
		return fmt.Sprintf(" (did you mean %q?)", near)
	}
	return ""
}

// outOfRange is a number flag's value that is not a number of its kind
// (problem "not a whole number") or outside what the flag allows.
type outOfRange struct{ problem, allowed string }

func (e *outOfRange) Error() string { return e.problem + ": give " + e.allowed }

// intRange is an int flag that allows lo to hi: a value outside is a
// usage error naming the flag and the range, never clamped silently.
type intRange struct {
	p      *int
	lo, hi int
}

// intFlag defines an int flag that allows lo to hi (hi math.MaxInt: no
// upper bound).
func intFlag(fs *pflag.FlagSet, name string, def, lo, hi int) *int {
	p := new(int)
	*p = def
	fs.Var(&intRange{p: p, lo: lo, hi: hi}, name, "")
	return p
}

func (r *intRange) allowed() string {
	if r.hi == math.MaxInt {
		return fmt.Sprintf("%d or more", r.lo)
	}
	return fmt.Sprintf("%d to %d", r.lo, r.hi)
}

func (r *intRange) Set(s string) error {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return &outOfRange{problem: "not a whole number", allowed: r.allowed()}
	}
	if n < r.lo || n > r.hi {
		return &outOfRange{problem: "out of range", allowed: r.allowed()}
	}
	*r.p = n
	return nil
}

func (r *intRange) String() string { return strconv.Itoa(*r.p) }
func (r *intRange) Type() string   { return "int" }

// durationRange is a duration flag that allows lo to hi.
type durationRange struct {
	p      *time.Duration
	lo, hi time.Duration
}

// durationFlag defines a duration flag that allows lo to hi.
func durationFlag(fs *pflag.FlagSet, name string, def, lo, hi time.Duration) *time.Duration {
	p := new(time.Duration)
	*p = def
	fs.Var(&durationRange{p: p, lo: lo, hi: hi}, name, "")
	return p
}

func (r *durationRange) allowed() string {
	return fmt.Sprintf("%s to %s", shortDuration(r.lo), shortDuration(r.hi))
}

// shortDuration writes 1h and 5m rather than 1h0m0s and 5m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func (r *durationRange) Set(s string) error {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return &outOfRange{problem: "not a duration (such as 200ms or 5s)", allowed: r.allowed()}
	}
	if d < r.lo || d > r.hi {
		return &outOfRange{problem: "out of range", allowed: r.allowed()}
	}
	*r.p = d
	return nil
}

func (r *durationRange) String() string { return r.p.String() }
func (r *durationRange) Type() string   { return "duration" }

// printDoc writes a document (a note, a handoff, a listing) to w, ending it
// with a newline when it lacks one, so that what follows on the terminal
// (the stderr summary, the shell's prompt) starts on a line of its own.
func printDoc(w io.Writer, doc string) {
	fmt.Fprint(w, doc)
	if !strings.HasSuffix(doc, "\n") {
		fmt.Fprintln(w)
	}
}
