package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/pi-session/pi-session/clip"
	"github.com/pi-session/pi-session/marker"
	"github.com/pi-session/pi-session/paths"
	"github.com/pi-session/pi-session/relaunch"
	"github.com/pi-session/pi-session/status"
)

// keepWhy records, beside a marker pi-session keeps as evidence, why it
// refused the relaunch and which pi-session it was, for status and prune.
func keepWhy(markerPath string, d relaunch.Decision, now time.Time) error {
	if _, err := os.Lstat(markerPath); err != nil {
		return nil // nothing was kept
	}
	w := marker.Why{Marker: markerPath, Reason: d.Reason.String(), Message: d.Why, At: now.UTC(), PID: os.Getpid()}
	if id, err := status.Identify(os.Getpid()); err == nil {
		w.StartTicks, w.BootID = id.StartTicks, id.BootID
	}
	return marker.WriteWhy(w)
}

// markerOwner says whether the pi-session that kept a marker still runs:
// the one its Why names (pid, start time, boot), else the pid in its name.
func markerOwner(r marker.Retained, table status.ProcessTable) marker.Owner {
	pid, ticks, boot := r.PID, uint64(0), ""
	if r.Why != nil && r.Why.PID > 0 {
		pid, ticks, boot = r.Why.PID, r.Why.StartTicks, r.Why.BootID
	}
	p := table.Lookup(pid)
	switch p.State {
	case status.PIDDead:
		return marker.OwnerGone
	case status.PIDAlive, status.PIDDenied:
		if now := table.BootID(); boot != "" && now != "" && boot != now {
			return marker.OwnerGone
		}
		if ticks != 0 && p.StartTicks != 0 {
			if ticks != p.StartTicks {
				return marker.OwnerGone // a later process with the same pid
			}
			return marker.OwnerRunning
		}
		if p.State == status.PIDAlive {
			return marker.OwnerRunning
		}
	}
	return marker.OwnerUnknown
}

// printRetained lists the markers kept after a refused relaunch (those
// whose pi-session is not running) with the reason and their age.
func printRetained(w io.Writer, dir string, list []marker.Retained, table status.ProcessTable, now time.Time) {
	list = slices.DeleteFunc(slices.Clone(list), func(r marker.Retained) bool { return markerOwner(r, table) == marker.OwnerRunning })
	if len(list) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%d retained relaunch %s in %s (kept as evidence when a relaunch was refused; pi-session prune removes those older than 7 days whose pi-session is gone):\n",
		len(list), plural(len(list), "marker", "markers"), dir)
	for _, r := range list {
		fmt.Fprintf(w, "  %s  kept %s ago: %s\n", r.Name, age(now.Sub(r.Since())), retainedReason(r))
	}
}

func retainedReason(r marker.Retained) string {
	switch {
	case r.WhyErr != nil:
		return "reason unreadable: " + clip.Echo(r.WhyErr.Error())
	case r.Why == nil:
		return "no reason recorded (kept by an older pi-session, or written by another tool)"
	case r.Why.Message == "":
		return clip.Echo(r.Why.Reason)
	}
	return clip.Echo(r.Why.Message)
}

// markerPrune is what one pass did with the retained markers.
type markerPrune struct {
	Dir     string            `json:"dir"`
	Removed []markerDecision  `json:"removed"` // with --dry-run: what would be removed
	Kept    []markerDecision  `json:"kept"`
	Orphans []string          `json:"orphans"` // reason files whose marker is gone, removed
	Errors  []string          `json:"errors,omitempty"`
	gone    map[string]string // removed (or would be) marker paths
}

type markerDecision struct {
	Name   string      `json:"name"`
	Reason marker.Fate `json:"reason"`
}

// pruneMarkers removes (or, dry, decides) the retained markers older than
// maxAge whose pi-session is gone, with their reason files, and the reason
// files left without a marker.
func pruneMarkers(getenv paths.Getenv, table status.ProcessTable, now time.Time, dry bool) (markerPrune, error) {
	mp := markerPrune{Dir: paths.MarkerDir(getenv), Removed: []markerDecision{}, Kept: []markerDecision{}, Orphans: []string{}, gone: map[string]string{}}
	list, orphans, err := marker.ListRetained(mp.Dir)
	if err != nil {
		return mp, err
	}
	for _, r := range list {
		fate := marker.RetainedFate(r, markerOwner(r, table), now, status.DefaultMaxAge)
		if fate != marker.RemoveOld {
			mp.Kept = append(mp.Kept, markerDecision{r.Name, fate})
			continue
		}
		if !dry {
			if err := marker.RemoveRetained(r.Path); err != nil {
				mp.Errors = append(mp.Errors, err.Error())
				continue
			}
		}
		mp.Removed = append(mp.Removed, markerDecision{r.Name, fate})
		mp.gone[r.Path] = r.Name
	}
	for _, o := range orphans {
		if !dry {
			if err := os.Remove(o); err != nil {
				mp.Errors = append(mp.Errors, err.Error())
				continue
			}
		}
		mp.Orphans = append(mp.Orphans, o)
	}
	return mp, nil
}

// lookup answers the record pass's marker questions as they are after
// this pass: a marker it removed (or would remove) is gone.
func (mp markerPrune) lookup(path string) status.MarkerState {
	if _, ok := mp.gone[path]; ok {
		return status.MarkerGone
	}
	return status.LookupMarker(path)
}

func printMarkerPrune(w io.Writer, mp markerPrune, dry, verbose bool) {
	n := len(mp.Removed) + len(mp.Kept)
	if n == 0 && len(mp.Orphans) == 0 {
		return
	}
	verb := "removed"
	if dry {
		verb = "would remove"
	}
	fmt.Fprintf(w, "%s %d of %d retained relaunch %s in %s\n", verb, len(mp.Removed), n, plural(n, "marker", "markers"), mp.Dir)
	for _, d := range mp.Removed {
		decisionLine(w, "remove", d.Name, d.Reason)
	}
	kept := make([]marker.Fate, len(mp.Kept))
	for i, d := range mp.Kept {
		kept[i] = d.Reason
		if verbose {
			decisionLine(w, "keep", d.Name, d.Reason)
		}
	}
	if !verbose {
		printReasonCounts(w, kept, "kept: ")
	}
	if len(mp.Orphans) > 0 {
		fmt.Fprintf(w, "  %s %d reason %s whose marker is gone\n", verb, len(mp.Orphans), plural(len(mp.Orphans), "file", "files"))
	}
	for _, e := range mp.Errors {
		fmt.Fprintf(w, "  error    %s\n", e)
	}
}
