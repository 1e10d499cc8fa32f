// Package recap writes the request for a short recap of an agent run: it selects the run from the session file, renders it as a redacted transcript, builds the prompt, parses the model's answer strictly and makes a local recap when the model fails.
package recap

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pi-session/pi-session/clip"
	"github.com/pi-session/pi-session/session"
)

// Request is exactly what the recap model receives: a system prompt and
// one user message.
type Request struct {
	SystemPrompt string `json:"systemPrompt"`
	UserMessage  string `json:"userMessage"`
}

// Prepared is a run made ready for the recap model.
type Prepared struct {
	Request
	// Empty: the run has nothing to recap; Gone: its baseline left the
	// branch. Either way the run boundary is cleared without a recap.
	Empty bool `json:"empty"`
	Gone  bool `json:"gone"`
	// LeafID is the end of the branch the run was read from.
	LeafID string `json:"leafId"`
	// Entries gave text; TranscriptBytes were rendered before the cut;
	// Cut says the middle was left out; Redactions secrets were replaced.
	Entries         int  `json:"entries"`
	TranscriptBytes int  `json:"transcriptBytes"`
	Cut             bool `json:"cut"`
	Redactions      int  `json:"redactions"`
	// Fallback is the local recap for when the model fails.
	Fallback Recap `json:"fallback"`
}

// Prepare selects the run from f and builds its request and its fallback.
func Prepare(f *session.File, r Run) (*Prepared, error) {
	run, branch, err := Select(f, r)
	if errors.Is(err, ErrBaselineGone) {
		return &Prepared{Gone: true}, nil
	}
	if err != nil {
		return nil, err
	}
	p := &Prepared{}
	if len(branch) > 0 {
		p.LeafID = branch[len(branch)-1].ID
	}
	t := SerializeRuns(run, branch, r.Starts)
	if t.Entries == 0 {
		p.Empty = true
		return p, nil
	}
	p.SystemPrompt = SystemPrompt
	p.UserMessage = UserMessage(t.Text)
	p.Entries, p.TranscriptBytes, p.Cut, p.Redactions = t.Entries, t.Bytes, t.Cut, t.Redactions
	p.Fallback = Fallback(t)
	return p, nil
}

// maxFallbackTools is how many tool names a local recap lists.
const maxFallbackTools = 8

// FallbackNext is the next step of a local recap.
const FallbackNext = "Read the run's last answer above and choose the next step; /recap can pick another recap model."

// Fallback is the local recap written when the model fails: the tools the
// run called and how often, and its final answer, capped at
// FallbackTextCap bytes.
func Fallback(t Transcript) Recap {
	var parts []string
	if t.ToolCalls > 0 {
		names := t.Tools
		more := ""
		if len(names) > maxFallbackTools {
			more = fmt.Sprintf(" and %d more", len(names)-maxFallbackTools)
			names = names[:maxFallbackTools]
		}
		calls := "tool calls"
		if t.ToolCalls == 1 {
			calls = "tool call"
		}
		parts = append(parts, fmt.Sprintf("%d %s (%s%s).", t.ToolCalls, calls, strings.Join(quoteAll(names), ", "), more))
	}
	if final := clip.Visible(strings.TrimSpace(t.FinalText)); final != "" {
		if r, _ := Redact(final); len(r) <= FallbackTextCap {
			final = r
		} else {
			c, _ := capText(r, FallbackTextCap-len("…"))
			final = strings.TrimSpace(c) + "…"
		}
		parts = append(parts, "Last answer: "+final)
	}
	if len(parts) == 0 {
		parts = append(parts, "The run ended without an answer or a tool call.")
	}
	return Recap{Recap: strings.Join(parts, " "), Next: FallbackNext}
}

func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "`" + strings.ReplaceAll(clip.Visible(n), "`", "'") + "`"
	}
	return out
}
