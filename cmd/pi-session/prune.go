package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/pi-session/pi-session/status"
)

const pruneUsage = `usage: pi-session prune [--dry-run] [--throttle] [--budget D] [--verbose] [--json]

Runs one pass of pruning by hand. First the relaunch markers kept when a
relaunch was refused: those kept strictly more than 7 days ago whose
pi-session is gone are removed, with their reason files. Then the status
records: records strictly older than 7 days whose pid is confirmed dead are
removed; live or unknown pids, missing pids, corrupt records and records
whose relaunch marker still exists are kept. A pass examines at most 5000 records or about 200 ms and
continues where the last one stopped. Handoffs and session files are never
touched.
  --dry-run   say what would be removed; remove nothing
  --throttle  skip the pass if one ran in the last 24 hours, as at start-up
  --budget D  let the pass run for D (e.g. 5s) instead of about 200 ms
  --verbose   list every kept record with its reason, not just the counts
  --json      print the report as JSON
`

// cmdPrune runs a pruning pass over the status records.
func cmdPrune(ctx context.Context, inv *invocation) int {
	fs := newFlagSet("prune")
	dryRun := fs.Bool("dry-run", false, "")
	throttle := fs.Bool("throttle", false, "")
	verbose := fs.BoolP("verbose", "v", false, "")
	asJSON := fs.Bool("json", false, "")
	budget := durationFlag(fs, "budget", status.DefaultBudget, time.Millisecond, time.Hour)
	args, code, done := parseFlags(inv, fs, inv.args, pruneUsage)
	if done {
		return code
	}
	if len(args) > 0 {
		return inv.errorf(exitUsage, "prune takes no arguments (see pi-session prune --help)")
	}
	store := status.StoreFromEnv(inv.env.Get)
	// Retained markers first: a record whose marker goes follows the
	// normal rule in the same pass.
	mp, merr := pruneMarkers(inv.env.Get, status.System(), time.Now(), *dryRun)
	rep, err := store.Prune(status.PruneOptions{DryRun: *dryRun, Force: !*throttle, Budget: *budget, Markers: mp.lookup})
	if *asJSON {
		b, jerr := json.MarshalIndent(struct {
			status.PruneReport
			Dir       string      `json:"dir"`
			ElapsedMs int64       `json:"elapsedMs"`
			Markers   markerPrune `json:"markers"`
		}{rep, store.Dir(), rep.Elapsed.Milliseconds(), mp}, "", "  ")
		if jerr != nil {
			return inv.errorf(exitInternal, "%v", jerr)
		}
		fmt.Fprintf(inv.stdout, "%s\n", b)
	} else {
		printMarkerPrune(inv.stdout, mp, *dryRun, *verbose)
		printPrune(inv.stdout, store.Dir(), rep, *verbose)
	}
	if err = errors.Join(merr, err); err != nil {
		return inv.errorf(exitOSErr, "%v", err)
	}
	if len(mp.Errors) > 0 {
		return inv.errorf(exitOSErr, "%d retained %s could not be removed", len(mp.Errors), plural(len(mp.Errors), "marker", "markers"))
	}
	return 0
}

func printPrune(w io.Writer, dir string, rep status.PruneReport, verbose bool) {
	switch rep.Skipped {
	case "throttled":
		fmt.Fprintf(w, "no pass: one ran in the last 24 hours (run without --throttle to prune now)\n")
		return
	case "locked":
		fmt.Fprintf(w, "no pass: another pass holds %s/.prune.lock\n", dir)
		return
	}
	if rep.Examined == 0 {
		fmt.Fprintf(w, "no status records in %s\n", dir)
		return
	}
	verb := "removed"
	if rep.DryRun {
		verb = "would remove"
	}
	fmt.Fprintf(w, "%s %d of %d %s examined in %s (%d ms)\n", verb, len(rep.Removed), rep.Examined,
		plural(rep.Examined, "record", "records"), dir, rep.Elapsed.Milliseconds())
	for _, d := range rep.Removed {
		decisionLine(w, "remove", d.Name, d.Reason)
	}
	if len(rep.Kept) > 0 {
		fmt.Fprintf(w, "kept %d:\n", len(rep.Kept))
		reasons := make([]status.Reason, len(rep.Kept))
		for i, d := range rep.Kept {
			reasons[i] = d.Reason
			if verbose {
				decisionLine(w, "keep", d.Name, d.Reason)
			}
		}
		if !verbose {
			printReasonCounts(w, reasons, "")
		}
	}
	switch {
	case rep.OverBudget:
		fmt.Fprintf(w, "the pass stopped at its time budget; the next continues after %s\n", rep.Next)
	case rep.Next != "":
		fmt.Fprintf(w, "the pass stopped at its record limit; the next continues after %s\n", rep.Next)
	}
}

// describer is a pruning reason that says what it means.
type describer interface {
	~string
	Describe() string
}

// decisionLine is one line of a pass's report: "  remove   name: why".
func decisionLine[R describer](w io.Writer, verb, name string, r R) {
	fmt.Fprintf(w, "  %-8s %s: %s\n", verb, name, r.Describe())
}

// printReasonCounts prints how many items have each reason, one line per
// reason in order: "  <count>  <prefix><what it means>".
func printReasonCounts[R describer](w io.Writer, reasons []R, prefix string) {
	counts := map[R]int{}
	var order []R
	for _, r := range reasons {
		if counts[r] == 0 {
			order = append(order, r)
		}
		counts[r]++
	}
	slices.Sort(order)
	for _, r := range order {
		fmt.Fprintf(w, "  %5d  %s%s\n", counts[r], prefix, r.Describe())
	}
}
