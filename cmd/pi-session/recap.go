package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/pi-session/pi-session/clip"
	"github.com/pi-session/pi-session/hooks"
	"github.com/pi-session/pi-session/recap"
	"github.com/pi-session/pi-session/session"
)

// recapEngine is the host's "recap" engine. The extension schedules a
// recap and calls the model; the text work is here: prepare reads the run
// from the caller's session file and returns the redacted request for the
// recap model with a local fallback, and verdict judges the model's answer.
func recapEngine() hooks.Engine {
	return hooks.Engine{
		Name:    "recap",
		Methods: map[string]hooks.Handler{"prepare": recapPrepare, "verdict": recapVerdict, "config": recapConfig},
	}
}

// recapPrepare answers recap.prepare: {leafId, after, last} -> recap.Prepared.
func recapPrepare(ctx context.Context, r *hooks.Request) (any, error) {
	var run recap.Run
	if err := r.Decode(&run); err != nil {
		return nil, err
	}
	file := r.Peer.Hello.SessionFile
	if file == "" {
		return &recap.Prepared{Empty: true}, nil // an in-memory session (--no-session)
	}
	var out *recap.Prepared
	err := r.Sessions().With(file, func(f *session.File) error {
		p, err := recap.Prepare(f, run)
		out = p
		return err
	})
	if errors.Is(err, fs.ErrNotExist) {
		return &recap.Prepared{Empty: true}, nil // pi has not written the file yet
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// recapConfig answers recap.config: {path} -> recap.LoadedConfig, the
// configuration at path (pi's <agent dir>/summaries/config.private.json,
// which the extension names) read with the checks every configuration
// of pi-session gets.
func recapConfig(ctx context.Context, r *hooks.Request) (any, error) {
	var p struct {
		Path string `json:"path"`
	}
	if err := r.Decode(&p); err != nil {
		return nil, err
	}
	if !filepath.IsAbs(p.Path) || filepath.Base(p.Path) != "config.private.json" || filepath.Base(filepath.Dir(p.Path)) != "summaries" {
		return nil, fmt.Errorf("recap: config: %q is not <agent dir>/summaries/config.private.json", clip.Echo(p.Path))
	}
	return recap.LoadConfig(p.Path), nil
}

// recapVerdict answers recap.verdict: the model's answer -> recap.Verdict.
func recapVerdict(ctx context.Context, r *hooks.Request) (any, error) {
	var a recap.Answer
	if err := r.Decode(&a); err != nil {
		return nil, err
	}
	return recap.Judge(a), nil
}

const engineRecapUsage = `usage: pi-session engine recap [--after ENTRY_ID] [--starts ID,...] [--leaf ENTRY_ID] [--json] SESSION_FILE

Prints the exact request the recap model would receive for a run of the
session (its system prompt and its user message, with secrets redacted),
and sends nothing anywhere. Use it to audit what leaves your machine.
  --after ID  the run after this entry (exclusive), as the extension sends
              it: the leaf when the run began; default: the last run, from
              the last user message on the branch
  --starts ID,...
              the entries after which each later run began, as the
              extension sends them when several runs wait for one recap:
              the request opens each run with "--- run n of N ---"
  --leaf ID   the end of the branch (default: the file's last entry)
  --json      print {"systemPrompt", "userMessage", ...} as JSON
A summary (entries, bytes, cut, secrets redacted) goes to stderr.
`

// cmdEngineRecap runs `pi-session engine recap`.
func cmdEngineRecap(ctx context.Context, inv *invocation) int {
	fset := newFlagSet("engine recap")
	after := fset.String("after", "", "")
	starts := fset.StringSlice("starts", nil, "")
	leaf := fset.String("leaf", "", "")
	asJSON := fset.Bool("json", false, "")
	args, code, done := parseFlags(inv, fset, inv.args, engineRecapUsage)
	if done {
		return code
	}
	if len(args) != 1 {
		return inv.errorf(exitUsage, "engine recap: want one SESSION_FILE, got %d arguments (see pi-session engine recap --help)", len(args))
	}
	f, err := session.Open(args[0])
	if err != nil {
		return inv.errorf(1, "engine recap: %v", err) // names the file
	}
	if f.Header == nil { // the lines pi skipped say why
		printDiagnostics(inv, f)
		return inv.errorf(1, "engine recap: %s: %v", clip.Echo(args[0]), session.ErrNoHeader)
	}
	run := recap.Run{LeafID: *leaf, Last: !fset.Changed("after"), Starts: *starts}
	if fset.Changed("after") {
		run.After = after
	}
	p, err := recap.Prepare(f, run)
	if err != nil {
		return inv.errorf(1, "engine recap: %s: %v", clip.Echo(args[0]), err)
	}
	switch {
	case p.Gone:
		return inv.errorf(1, "engine recap: %s: entry %q is not on the branch that ends at %q", clip.Echo(args[0]), clip.Echo(*after), clip.Echo(leafName(f, *leaf)))
	case p.Empty:
		return inv.errorf(1, "engine recap: %s: nothing to recap in the run after %s", clip.Echo(args[0]), baselineName(run))
	}
	if *asJSON {
		enc := json.NewEncoder(inv.stdout)
		enc.SetEscapeHTML(false) // the request as sent: <recent_work>, not \u003c
		enc.SetIndent("", "  ")
		if err := enc.Encode(p); err != nil {
			return inv.errorf(exitInternal, "engine recap: %v", err)
		}
	} else {
		fmt.Fprintf(inv.stdout, "--- system prompt ---\n%s\n--- user message ---\n%s\n", p.SystemPrompt, p.UserMessage)
	}
	cut := ""
	if p.Cut {
		cut = fmt.Sprintf(", cut to %d bytes", recap.TranscriptCap)
	}
	fmt.Fprintf(inv.stderr, "pi-session: recap request for the run after %s (leaf %s): %d entries, transcript %d bytes%s, %d secrets redacted\n",
		baselineName(run), clip.Echo(p.LeafID), p.Entries, p.TranscriptBytes, cut, p.Redactions)
	// Lines pi would skip are left out of the run too; say which.
	printDiagnostics(inv, f)
	return 0
}

// printDiagnostics prints the first five problems of a session file on
// stderr, and how many more there are.
func printDiagnostics(inv *invocation, f *session.File) {
	all := f.AllDiagnostics()
	const shown = 5
	for _, d := range all[:min(len(all), shown)] {
		fmt.Fprintf(inv.stderr, "pi-session: %v\n", d)
	}
	if len(all) > shown {
		fmt.Fprintf(inv.stderr, "pi-session: and %d more problems (pi-session engine session lists them)\n", len(all)-shown+f.Omitted)
	}
}

func baselineName(run recap.Run) string {
	switch {
	case run.Last:
		return "the last user message"
	case run.After == nil:
		return "the start of the branch"
	}
	return fmt.Sprintf("%q", clip.Echo(*run.After))
}

func leafName(f *session.File, leaf string) string {
	if leaf == "" && f.Leaf() != nil {
		return f.Leaf().ID
	}
	return leaf
}
