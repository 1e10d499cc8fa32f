package budget

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/pi-session/pi-session/regfile"
)

// maxLegacyRead bounds how much of a Markdown handoff the recovery reads:
// handoffs are capped at 52 KiB, older writers wrote somewhat more.
const maxLegacyRead = 256 << 10

// ReadPrior reads what the emergency backstop needs of a prior handoff:
// its JSON sidecar, or, when the sidecar is missing or unreadable (a
// handoff from an older writer, a sidecar lost or damaged), the fields
// recovered from the Markdown itself. The error says why neither worked.
func ReadPrior(handoff string) (*Sidecar, error) {
	sc, serr := ReadSidecar(handoff)
	if serr == nil {
		return sc, nil
	}
	f, err := regfile.Open(handoff)
	if err != nil {
		return nil, fmt.Errorf("no sidecar (%v) and no Markdown: %w", trimPathErr(serr), err)
	}
	defer f.Close()
	doc, err := io.ReadAll(io.LimitReader(f, maxLegacyRead))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", handoff, err)
	}
	a, ok := ParseHandoffMarkdown(string(doc))
	if !ok {
		return nil, fmt.Errorf("no sidecar (%v), and %s has none of the Goal, Next step, constraints, facts or files sections", trimPathErr(serr), handoff)
	}
	return &Sidecar{Path: handoff, Args: a, recovered: "markdown"}, nil
}

// priorHandoff is the prior handoff for the mechanical summary: what
// ReadPrior recovers, or only its path and why it could not be read, so
// that the summary still cites it. Nil when there is no prior handoff.
func priorHandoff(path string) *Sidecar {
	if path == "" {
		return nil
	}
	sc, err := ReadPrior(path)
	if err != nil {
		return &Sidecar{Path: path, recovered: "unreadable: " + err.Error()}
	}
	return sc
}

func trimPathErr(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Op + " " + pe.Path + ": " + pe.Err.Error()
	}
	return err.Error()
}

// handoffSections maps the level-2 headings a handoff uses (this writer's
// and older ones', compared in lower case) to the field they hold; ""
// marks a known section that ends the one before it and holds nothing the
// backstop uses.
var handoffSections = map[string]string{
	"goal": "goal", "objective": "goal", "task": "goal",
	"next step": "next", "next steps": "next", "next": "next",
	"user constraints (verbatim)": "constraints", "user constraints": "constraints", "constraints": "constraints",
	"verified facts": "facts", "facts": "facts", "verified state": "facts",
	"files to read first": "files", "files to read": "files", "read first": "files",
	"decisions": "", "hypotheses (unverified)": "", "hypotheses": "", "open items": "",
	"watch actions": "", "resume check": "", "user messages since previous handoff (verbatim)": "",
	"automatic state": "", "discarded drafts (uncommitted, superseded)": "", "lint": "",
	"metadata": "", "git state": "", "pending jobs": "", "running subagents": "",
}

// ParseHandoffMarkdown recovers a handoff's fields from its Markdown, a
// pure function. A section runs from its level-2 heading to the next
// known section heading or level-1 heading outside a code fence, so
// nested headings (### and deeper, and ## headings a user wrote inside
// their constraints) stay in the section they belong to. It reports
// whether any field was found.
func ParseHandoffMarkdown(doc string) (Args, bool) {
	var a Args
	found := false
	field, fence := "-", ""
	var body []string
	flush := func() {
		text := strings.Trim(strings.Join(body, "\n"), "\n")
		body = body[:0]
		if strings.TrimSpace(text) == "" {
			return
		}
		switch field {
		case "goal":
			a.Goal = text
		case "next":
			a.NextStep = text
		case "constraints":
			a.UserConstraints = text
		case "facts":
			a.Facts = text
		case "files":
			for _, l := range strings.Split(text, "\n") {
				l = strings.TrimSpace(l)
				if p, ok := strings.CutPrefix(l, "- "); ok {
					l = p
				} else if p, ok := strings.CutPrefix(l, "* "); ok {
					l = p
				} else {
					continue
				}
				l = strings.Trim(strings.TrimSpace(l), "`")
				if l != "" && len(l) <= MaxPathBytes {
					a.FilesToRead = append(a.FilesToRead, l)
				}
			}
			if len(a.FilesToRead) == 0 {
				return
			}
		default:
			return
		}
		found = true
	}
	for _, line := range strings.Split(strings.ReplaceAll(doc, "\r\n", "\n"), "\n") {
		trimmed := strings.TrimLeft(line, " ")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			body = append(body, line)
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			body = append(body, line)
			continue
		}
		if strings.HasPrefix(line, "# ") {
			flush()
			field = "-"
			continue
		}
		if title, ok := strings.CutPrefix(line, "## "); ok {
			if f, known := handoffSections[strings.ToLower(strings.TrimSpace(strings.TrimRight(title, "# ")))]; known {
				flush()
				field = f
				continue
			}
		}
		body = append(body, line)
	}
	flush()
	return a, found
}
