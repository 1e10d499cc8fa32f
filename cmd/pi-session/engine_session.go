package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/pi-session/pi-session/hooks"
	"github.com/pi-session/pi-session/session"
)

const engineSessionUsage = `usage: pi-session engine session [--leaf ID] [--json] SESSION_FILE

Reads a pi session file the way the engines read it and prints what
session.describe reports inside pi (/pi-session): entries, the branch to
the leaf, the messages pi sends to the model and their tokens, then every
problem found, one per line as FILE:LINE: what (and the field at fault):
lines pi would skip, tree defects, fields pi keeps but cannot use as meant,
an incomplete last line. The file is only read.
  --leaf ID  describe the branch ending at entry ID (default: the last entry)
  --json     print the description and every problem as JSON

Exit status: 0 when the file reads as a session (problems or not), 1 when
pi would refuse it (no session header) or it cannot be read, 64 on usage
errors.
`

// cmdEngineSession is `pi-session engine session`: a session file's shape
// and every diagnostic, where /pi-session shows the first few.
func cmdEngineSession(ctx context.Context, inv *invocation) int {
	fs := newFlagSet("engine session")
	leaf := fs.String("leaf", "", "")
	asJSON := fs.Bool("json", false, "")
	args, code, done := parseFlags(inv, fs, inv.args, engineSessionUsage)
	if done {
		return code
	}
	if len(args) != 1 {
		return inv.errorf(exitUsage, "engine session takes one session file (see pi-session engine session --help)")
	}
	path := args[0]
	f, err := session.Open(path)
	if err != nil {
		return inv.errorf(1, "%v", err)
	}
	all := f.AllDiagnostics()
	d, err := hooks.DescribeFile(f, path, *leaf, len(all))
	if err != nil {
		if errors.Is(err, session.ErrUnknownEntry) {
			return inv.errorf(exitUsage, "--leaf %s: %v", *leaf, err)
		}
		return inv.errorf(1, "%v", err)
	}
	d.Rest = ""
	if *asJSON {
		b, err := json.MarshalIndent(struct {
			hooks.Describe
			Omitted int `json:"omitted"`
		}{d, f.Omitted}, "", "  ")
		if err != nil {
			return inv.errorf(exitInternal, "%v", err)
		}
		fmt.Fprintf(inv.stdout, "%s\n", b)
		return 0
	}
	printSessionDescribe(inv.stdout, d, f.Omitted)
	return 0
}

func printSessionDescribe(w io.Writer, d hooks.Describe, omitted int) {
	fmt.Fprintf(w, "%s: %d %s, %d bytes\n", d.SessionFile, d.Entries, plural(d.Entries, "entry", "entries"), d.Bytes)
	if d.Entries > 0 {
		fmt.Fprintf(w, "branch to %s: %d %s, %d %s (%d sent to the model), %d tokens in context (%d estimated over the messages)\n",
			d.LeafID, d.Branch, plural(d.Branch, "entry", "entries"), d.Messages, plural(d.Messages, "message", "messages"), d.LLMMessages, d.ContextTokens, d.Tokens)
	}
	if d.Diagnostics == 0 {
		fmt.Fprintln(w, "no problems")
		return
	}
	fmt.Fprintf(w, "%d %s:\n", d.Diagnostics, plural(d.Diagnostics, "problem", "problems"))
	for _, p := range d.Problems {
		// The full path as given, where Text has the base name.
		s := p.Where + ": " + p.What
		if p.Field != "" {
			s += " [" + p.Field + "]"
		}
		fmt.Fprintln(w, s)
	}
	if omitted > 0 {
		fmt.Fprintf(w, "... and %d more past the first %d, not kept\n", omitted, session.MaxDiagnostics)
	}
}
