package offload

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// bytesPerToken is the estimate behind every token figure.
const bytesPerToken = 4

// ReadCounts counts ctx_read calls by mode.
type ReadCounts struct {
	Total         int `json:"total"`
	InProgram     int `json:"inProgram"`
	Range         int `json:"range"`
	RangeFromZero int `json:"rangeFromZero"`
	Query         int `json:"query"`
	QueryNoMatch  int `json:"queryNoMatch"`
	Section       int `json:"section"`
	JSONPath      int `json:"jsonPath"`
	Errors        int `json:"errors"`
}

// Figures are the savings and follow-up figures of /ce status.
type Figures struct {
	Sessions            int            `json:"sessions"`
	Offloads            int            `json:"offloads"` // results replaced at the model boundary
	ByStrategy          map[string]int `json:"byStrategy"`
	Repeats             int            `json:"repeats"`
	Explicit            int            `json:"explicit"` // ctx_offload calls
	KeptLarge           map[string]int `json:"keptLarge"`
	OriginalBytes       int64          `json:"originalBytes"`
	VisibleBytes        int64          `json:"visibleBytes"`
	ArtifactRecovered   int            `json:"artifactRecovered"`
	ArtifactUnrecovered int            `json:"artifactUnrecovered"`

	HandlesOffloaded int        `json:"handlesOffloaded"`
	HandlesRead      int        `json:"handlesRead"` // offloaded handles later read with ctx_read or ctx_summarize
	Reruns           int        `json:"reruns"`      // offloaded calls run again anyway
	Reads            ReadCounts `json:"reads"`
	Summaries        int        `json:"summaries"`

	MainTokensPrevented int64 `json:"mainTokensPrevented"`
	SavedTokens         int64 `json:"savedTokens"` // the same gross figure, by its older name
	ReadbackTokens      int64 `json:"readbackTokens"`
	NetTokensSaved      int64 `json:"netTokensSaved"`
}

func tokens(b int64) int64 { return (b + bytesPerToken - 1) / bytesPerToken }

// Tally computes the figures of the events of one session (session "":
// every session). Handle provenance is taken from every event, so a
// handle offloaded in one session and read in another counts as read.
func Tally(events []Event, session string) Figures {
	f := Figures{ByStrategy: map[string]int{}, KeptLarge: map[string]int{}}
	boundary := map[string]bool{} // handle fingerprints offloaded at the boundary
	for _, ev := range events {
		if ev.Type == "offload" && ev.HandleFP != "" {
			boundary[ev.HandleFP] = true
		}
	}
	sessions := map[string]bool{}
	offloaded := map[string]bool{} // of this session, in order
	read := map[string]bool{}
	for _, ev := range events {
		if session != "" && ev.Session != session {
			continue
		}
		if ev.Session != "" {
			sessions[ev.Session] = true
		}
		switch ev.Type {
		case "offload":
			f.Offloads++
			f.ByStrategy[ev.Strategy]++
			if ev.Repeat {
				f.Repeats++
			}
			f.OriginalBytes += ev.OriginalBytes
			f.VisibleBytes += ev.VisibleBytes
			f.MainTokensPrevented += tokens(ev.OriginalBytes) - tokens(ev.VisibleBytes)
			if ev.HandleFP != "" {
				offloaded[ev.HandleFP] = true
			}
			switch ev.Artifact {
			case "recovered":
				f.ArtifactRecovered++
			case "unrecovered":
				f.ArtifactUnrecovered++
			}
		case "keep":
			f.KeptLarge[ev.Reason]++
		case "program-output":
			// A program's final output derived from offloaded handles is
			// a readback; an output offloaded in turn is not credited as
			// a second saving (its own offload counts the bytes it kept out).
			if boundary[ev.HandleFP] {
				f.ReadbackTokens += tokens(ev.ReturnedBytes)
			}
		case "store":
			f.Explicit++
		case "rerun":
			f.Reruns++
		case "read", "read-error":
			r := &f.Reads
			r.Total++
			if ev.InProgram {
				r.InProgram++
			}
			if ev.Type == "read-error" {
				r.Errors++
				break
			}
			switch ev.Mode {
			case "range":
				r.Range++
				if ev.FromZero {
					r.RangeFromZero++
				}
			case "query":
				r.Query++
				if ev.Matches != nil && *ev.Matches == 0 {
					r.QueryNoMatch++
				}
			case "section":
				r.Section++
			case "jsonPath":
				r.JSONPath++
			}
			fallthrough
		case "summarize":
			if ev.Type == "summarize" {
				f.Summaries++
			}
			if boundary[ev.HandleFP] {
				read[ev.HandleFP] = true
				if !ev.InProgram {
					f.ReadbackTokens += tokens(ev.ReturnedBytes)
				}
			}
		}
	}
	f.Sessions = len(sessions)
	f.HandlesOffloaded = len(offloaded)
	for h := range read {
		if offloaded[h] {
			f.HandlesRead++
		}
	}
	f.SavedTokens = f.MainTokensPrevented
	f.NetTokensSaved = f.MainTokensPrevented - f.ReadbackTokens
	return f
}

// renderFigures writes /ce status.
func renderFigures(b *strings.Builder, f Figures) {
	fmt.Fprintf(b, "Offloaded results: %d", f.Offloads)
	if len(f.ByStrategy) > 0 {
		fmt.Fprintf(b, " (%s)", counts(f.ByStrategy))
	}
	if f.Repeats > 0 {
		fmt.Fprintf(b, ", %d repeated", f.Repeats)
	}
	b.WriteByte('\n')
	fmt.Fprintf(b, "  %s of results became %s of notices\n", humanBytes(f.OriginalBytes), humanBytes(f.VisibleBytes))
	if f.ArtifactRecovered+f.ArtifactUnrecovered > 0 {
		fmt.Fprintf(b, "  truncated output completed from its artifact: %d; fragment only: %d\n", f.ArtifactRecovered, f.ArtifactUnrecovered)
	}
	if f.Explicit > 0 {
		fmt.Fprintf(b, "Stored with ctx_offload: %d\n", f.Explicit)
	}
	if len(f.KeptLarge) > 0 {
		fmt.Fprintf(b, "Large results left inline: %s\n", counts(f.KeptLarge))
	}
	fmt.Fprintf(b, "Follow-up: %d of %d offloaded handles later read; %d offloaded calls run again anyway\n", f.HandlesRead, f.HandlesOffloaded, f.Reruns)
	r := f.Reads
	fmt.Fprintf(b, "ctx_read: %d calls (%d in programs): range %d (%d from offset 0), query %d (%d matched nothing), section %d, jsonPath %d, errors %d; ctx_summarize: %d\n",
		r.Total, r.InProgram, r.Range, r.RangeFromZero, r.Query, r.QueryNoMatch, r.Section, r.JSONPath, r.Errors, f.Summaries)
	fmt.Fprintf(b, "Tokens (about %d bytes each): mainTokensPrevented %d, readbackTokens %d, netTokensSaved %d\n",
		bytesPerToken, f.MainTokensPrevented, f.ReadbackTokens, f.NetTokensSaved)
}

// counts lists a tally by name: "error 2, offload 5".
func counts(m map[string]int) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
