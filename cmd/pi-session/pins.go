package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/pi-session/pi-session/budget"
	"github.com/pi-session/pi-session/clip"
	"github.com/pi-session/pi-session/hooks"
	"github.com/pi-session/pi-session/pins"
	"github.com/pi-session/pi-session/session"
	"github.com/pi-session/pi-session/supervisor"
)

// pinsHost serves the pins engine on the engine host: what a pi relaunched
// from a handoff inherits. /pin, /pins and /unpin themselves live in the
// extension (custom entries of the session), and the relay and budget
// engines read the pins from the session file.
//
// How a relaunched pi knows its predecessor: pi-session relaunched it from
// a marker it checked, and tells the relauncher (supervise.go); the
// relauncher answers only the pi of that launch (the peer pid the kernel
// reports) and only its first main session. The marker's sessionFile names
// the previous session (the handoff's sidecar does when the marker names
// none); its pins are read from that file's branch, or, when the file
// cannot be read, from the sidecar, which kept the pins the handoff was
// written with. Nothing here trusts the first prompt ("continue from
// <handoff>"): a user can type it in any pi.
type pinsHost struct {
	relauncher *supervisor.Relauncher // nil under `pi-session serve`: no relaunch there
}

func (h *pinsHost) engine() hooks.Engine {
	return hooks.Engine{Name: "pins", Methods: map[string]hooks.Handler{"inherit": h.inherit}}
}

// inheritance is pins.inherit's answer: empty for a session that
// continues nothing.
type inheritance struct {
	SessionFile string   `json:"sessionFile,omitempty"` // the previous session file, absolute
	Handoff     string   `json:"handoff,omitempty"`
	Pins        []string `json:"pins"`
	From        string   `json:"from,omitempty"`    // where the pins were read: "session" or "handoff"
	Warning     string   `json:"warning,omitempty"` // why none could be read
}

func (h *pinsHost) inherit(ctx context.Context, r *hooks.Request) (any, error) {
	if h.relauncher == nil {
		return inheritance{Pins: []string{}}, nil
	}
	c, ok := h.relauncher.ContinuationFor(r.Peer)
	if !ok {
		return inheritance{Pins: []string{}}, nil
	}
	return inherit(c, r.Sessions().With), nil
}

// inherit reads what a relaunch continuing c inherits, with read for
// session files.
func inherit(c supervisor.Continuation, read func(string, func(*session.File) error) error) inheritance {
	out := inheritance{SessionFile: c.SessionFile, Handoff: c.Handoff, Pins: []string{}}
	sc, scErr := budget.ReadSidecar(c.Handoff)
	if !filepath.IsAbs(out.SessionFile) {
		out.SessionFile = ""
		if scErr == nil && filepath.IsAbs(sc.Metadata.SessionFile) {
			out.SessionFile = sc.Metadata.SessionFile
		}
	}
	readErr := errors.New("no session file is named by the relaunch marker or the handoff's sidecar")
	if out.SessionFile != "" {
		readErr = read(out.SessionFile, func(f *session.File) error {
			b, err := f.Branch("")
			if err != nil {
				return err
			}
			list, _ := pins.Replay(b)
			out.Pins, out.From = pins.Texts(list), "session"
			return nil
		})
		if readErr == nil {
			return out
		}
	}
	if scErr != nil {
		out.Warning = fmt.Sprintf("the pins of the previous session could not be read: %v; nor from the handoff's sidecar: %v", readErr, scErr)
		return out
	}
	for _, p := range sc.Metadata.Pins {
		if t, err := pins.Check(p); err == nil && !contains(out.Pins, t) {
			out.Pins = append(out.Pins, t)
		}
	}
	out.From = "handoff"
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func init() {
	engineCommands["pins"] = engineCommand{
		help:  enginePinsUsage,
		about: "the rules pinned with /pin on a session's branch, as /pins lists them",
		run:   cmdEnginePins,
	}
}

const enginePinsUsage = `usage: pi-session engine pins [--leaf ID] [--json] SESSION_FILE

Prints the pins of the session file's branch ending at --leaf (default:
the last entry) as /pins lists them: numbered, verbatim, in the order they
were pinned, without those /unpin removed or pinned on another branch.
Every relay note and handoff of that branch begins with them. A pin or
unpin entry that cannot count (written by hand: no text, control
characters, over 2,000 characters, an unpin of no pin) is reported on
stderr with its line, and skipped. Nothing is written.
  --leaf ID  the branch ending at entry ID
  --json     {sessionFile, leafId, pins: [{n, text, entryId, timestamp, from?}], problems: [{line, entryId, what}]}

Exit status: 0 when the file reads as a session (pins or none), 1 when it
cannot be read or has no session header, 64 on usage errors.
`

func cmdEnginePins(ctx context.Context, inv *invocation) int {
	fs := newFlagSet("engine pins")
	leaf := fs.String("leaf", "", "")
	asJSON := fs.Bool("json", false, "")
	args, code, done := parseFlags(inv, fs, inv.args, enginePinsUsage)
	if done {
		return code
	}
	if len(args) != 1 {
		return inv.errorf(exitUsage, "engine pins: want one SESSION_FILE, got %d arguments (see pi-session engine pins --help)", len(args))
	}
	path := args[0]
	f, err := session.Open(path)
	if err != nil {
		return inv.errorf(1, "engine pins: %v", err)
	}
	for _, d := range f.Diagnostics { // first: they may say why there is no header
		fmt.Fprintf(inv.stderr, "pi-session: %v\n", d)
	}
	if f.Header == nil {
		return inv.errorf(1, "engine pins: %s: %v", path, session.ErrNoHeader)
	}
	branch, err := f.Branch(*leaf)
	if err != nil {
		if errors.Is(err, session.ErrUnknownEntry) {
			return inv.errorf(exitUsage, "engine pins: --leaf %s: %v", clip.Echo(*leaf), err)
		}
		return inv.errorf(1, "engine pins: %v", err)
	}
	list, problems := pins.Replay(branch)
	for _, p := range problems {
		fmt.Fprintf(inv.stderr, "pi-session: %s:%d: entry %s: %s\n", path, p.Line, clip.Echo(p.EntryID), p.What)
	}
	if !*asJSON {
		printDoc(inv.stdout, pins.Listing(pins.Texts(list)))
		return 0
	}
	type jsonPin struct {
		N int `json:"n"`
		pins.Pin
	}
	type jsonProblem struct {
		Line    int    `json:"line"`
		EntryID string `json:"entryId"`
		What    string `json:"what"`
	}
	out := struct {
		SessionFile string        `json:"sessionFile"`
		LeafID      string        `json:"leafId"`
		Pins        []jsonPin     `json:"pins"`
		Problems    []jsonProblem `json:"problems"`
	}{SessionFile: path, Pins: []jsonPin{}, Problems: []jsonProblem{}}
	if len(branch) > 0 {
		out.LeafID = branch[len(branch)-1].ID
	}
	for i, p := range list {
		out.Pins = append(out.Pins, jsonPin{i + 1, p})
	}
	for _, p := range problems {
		out.Problems = append(out.Problems, jsonProblem{p.Line, p.EntryID, p.What})
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return inv.errorf(exitInternal, "%v", err)
	}
	fmt.Fprintf(inv.stdout, "%s\n", strings.TrimRight(string(b), "\n"))
	return 0
}
