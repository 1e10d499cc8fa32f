package offload

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/pi-session/pi-session/clip"
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

	// ToolBytes is what the tools produced in full: a cut result counts
	// with the full output it was cut from, when that size is known.
	ToolBytes int64 `json:"toolBytes,omitempty"`
	// CutResults were cut by their tool (pi's bash keeps the end of a long
	// output in its result and the whole in a file), by tool; CutUnknown of
	// them left the full size unknown.
	CutResults int            `json:"cutResults,omitempty"`
	CutByTool  map[string]int `json:"cutByTool,omitempty"`
	CutUnknown int            `json:"cutUnknown,omitempty"`
	// ReadbackBytes are what ctx_read and ctx_summarize returned of
	// offloaded handles to the model.
	ReadbackBytes int64 `json:"readbackBytes,omitempty"`

	MainTokensPrevented int64 `json:"mainTokensPrevented"`
	// FullTokensKeptOut counts, beside MainTokensPrevented, what the tools
	// had cut themselves: the full outputs less the notices.
	FullTokensKeptOut int64 `json:"fullTokensKeptOut,omitempty"`
	SavedTokens       int64 `json:"savedTokens"` // the same gross figure, by its older name
	ReadbackTokens    int64 `json:"readbackTokens"`
	NetTokensSaved    int64 `json:"netTokensSaved"`
}

func tokens(b int64) int64 { return (b + bytesPerToken - 1) / bytesPerToken }

// Tally computes the figures of the events of one session (session "":
// every session). Handle provenance is taken from every event, so a
// handle offloaded in one session and read in another counts as read.
func Tally(events []Event, session string) Figures {
	f := Figures{ByStrategy: map[string]int{}, KeptLarge: map[string]int{}, CutByTool: map[string]int{}}
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
			full := max(ev.FullBytes, ev.OriginalBytes)
			f.ToolBytes += full
			f.FullTokensKeptOut += tokens(full) - tokens(ev.VisibleBytes)
			if ev.Artifact != "" {
				f.CutResults++
				f.CutByTool[orDefault(ev.Tool, "a tool")]++
				if ev.FullBytes == 0 {
					f.CutUnknown++
				}
			}
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
				f.ReadbackBytes += ev.ReturnedBytes
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
					f.ReadbackBytes += ev.ReturnedBytes
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

// renderFigures writes the figures of /ce status in plain words.
func renderFigures(b *strings.Builder, f Figures) {
	if f.Offloads == 0 {
		b.WriteString("No tool result was kept out of the model's context yet.\n")
	} else {
		fmt.Fprintf(b, "Tool results kept out of the model's context: %d", f.Offloads)
		if len(f.ByStrategy) > 1 || f.ByStrategy["offload"] != f.Offloads {
			fmt.Fprintf(b, " (%s)", strategies(f.ByStrategy))
		}
		if f.Repeats > 0 {
			fmt.Fprintf(b, ", %s already seen in this session", count(f.Repeats, "result", "results"))
		}
		b.WriteByte('\n')
		held := fmt.Sprintf("%s (%s)", count64(f.OriginalBytes, "byte", "bytes"), humanBytes(f.OriginalBytes))
		notices := fmt.Sprintf("%s (%s) of notices", count64(f.VisibleBytes, "byte", "bytes"), humanBytes(f.VisibleBytes))
		if f.CutResults == 0 {
			fmt.Fprintf(b, "  the tools returned:    %s\n", held)
		} else {
			least := ""
			if f.CutUnknown > 0 {
				least = "at least "
			}
			fmt.Fprintf(b, "  the tools produced:    %s%s (%s) in full", least, count64(f.ToolBytes, "byte", "bytes"), humanBytes(f.ToolBytes))
			if f.CutUnknown > 0 {
				fmt.Fprintf(b, "; the full size of %s is unknown", count(f.CutUnknown, "cut output", "cut outputs"))
			}
			b.WriteByte('\n')
			limit := "its limit"
			if len(f.CutByTool) > 1 {
				limit = "their limits"
			}
			fmt.Fprintf(b, "  their results held:    %s: %s cut %s to fit %s\n",
				held, toolNames(f.CutByTool), count(f.CutResults, "output", "outputs"), limit)
		}
		fmt.Fprintf(b, "  the model saw instead: %s\n", notices)
	}
	if f.Explicit > 0 {
		fmt.Fprintf(b, "Stored with ctx_offload: %s\n", count(f.Explicit, "payload", "payloads"))
	}
	if len(f.KeptLarge) > 0 {
		fmt.Fprintf(b, "Large results left in the context: %s\n", keptReasons(f.KeptLarge))
	}
	fmt.Fprintf(b, "Tokens kept out of the context (about %d bytes each): %s, the results less the notices", bytesPerToken, grouped(f.MainTokensPrevented))
	if f.CutResults > 0 {
		fmt.Fprintf(b, "; %s counting what %s had cut", grouped(f.FullTokensKeptOut), toolNames(f.CutByTool))
	}
	b.WriteByte('\n')
	fmt.Fprintf(b, "Tokens read back: %s, so %s saved net\n", grouped(f.ReadbackTokens), grouped(f.NetTokensSaved))
	if f.HandlesOffloaded > 0 || f.Reruns > 0 {
		fmt.Fprintf(b, "Later: %d of %s read back; %s again anyway\n", f.HandlesRead, count(f.HandlesOffloaded, "result", "results"), count(f.Reruns, "call run", "calls run"))
	}
	r := f.Reads
	fmt.Fprintf(b, "ctx_read: %s", count(r.Total, "call", "calls"))
	var modes []string
	add := func(n int, one, many string) {
		if n > 0 {
			modes = append(modes, count(n, one, many))
		}
	}
	add(r.Range, "byte range", "byte ranges")
	if r.RangeFromZero > 0 {
		modes[len(modes)-1] += fmt.Sprintf(" (%d from the start)", r.RangeFromZero)
	}
	add(r.Query, "query", "queries")
	if r.QueryNoMatch > 0 {
		modes[len(modes)-1] += fmt.Sprintf(" (%d matched nothing)", r.QueryNoMatch)
	}
	add(r.Section, "section", "sections")
	add(r.JSONPath, "JSONPath", "JSONPaths")
	add(r.Errors, "error", "errors")
	if r.InProgram > 0 {
		modes = append(modes, count(r.InProgram, "in a program", "in programs"))
	}
	if len(modes) > 0 {
		fmt.Fprintf(b, " (%s)", strings.Join(modes, ", "))
	}
	if f.Summaries > 0 {
		fmt.Fprintf(b, "; ctx_summarize: %s", count(f.Summaries, "call", "calls"))
	}
	b.WriteByte('\n')
}

// strategyWords names the ways a result is kept out, in plain words.
var strategyWords = map[string][2]string{
	"offload":     {"large output", "large outputs"},
	"turn-budget": {"over the turn's budget", "over the turn's budget"},
	"error":       {"error output", "error outputs"},
	"edit":        {"edit diff", "edit diffs"},
}

// strategies lists the results by how they were kept out: "3 large
// outputs, 1 error output".
func strategies(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		w, ok := strategyWords[k]
		if !ok {
			w = [2]string{k, k}
		}
		parts = append(parts, count(m[k], w[0], w[1]))
	}
	return strings.Join(parts, ", ")
}

// keptWords says why a large result stayed in the context.
var keptWords = map[string]string{
	KeepNested:      "called inside a program",
	KeepNoReader:    "ctx_read was not an active tool",
	KeepSmallSaving: "a notice would have saved too little",
	KeepStoreFailed: "storing failed",
}

func keptReasons(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		w, ok := keptWords[k]
		if !ok {
			w = clip.Echo(k)
		}
		parts = append(parts, fmt.Sprintf("%d (%s)", m[k], w))
	}
	return strings.Join(parts, ", ")
}

// toolNames lists tools: "bash", "bash and grep", "bash, grep and read".
func toolNames(m map[string]int) string {
	names := slices.Sorted(maps.Keys(m))
	for i, n := range names {
		names[i] = clip.Echo(n)
	}
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// count says "1 result" or "3 results".
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return grouped(int64(n)) + " " + many
}

func count64(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return grouped(n) + " " + many
}

// grouped writes n with thousands separators: 1,212,902.
func grouped(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// days says how long payloads are kept: "7 days", "1 day", "12 hours",
// "90 minutes".
func days(d time.Duration) string {
	switch {
	case d >= 24*time.Hour && d%(24*time.Hour) == 0:
		return count64(int64(d/(24*time.Hour)), "day", "days")
	case d >= time.Hour && d%time.Hour == 0:
		return count64(int64(d/time.Hour), "hour", "hours")
	case d >= time.Minute && d%time.Minute == 0:
		return count64(int64(d/time.Minute), "minute", "minutes")
	}
	return count64(int64(d/time.Second), "second", "seconds")
}
