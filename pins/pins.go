// Package pins replays the rules a user pinned with /pin from the custom entries of a session branch.
package pins

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pi-session/pi-session/clip"
	"github.com/pi-session/pi-session/session"
)

// The custom entries the extension appends (pi writes them to the session
// file and never sends them to the model). A pin's data is {text, from?}:
// from is the session file an inherited pin was copied from. An unpin's is
// {pin, text}: pin is the id of the pin entry it removes.
const (
	PinType   = "pi-session:pin"
	UnpinType = "pi-session:unpin"
	// ContinuesType is the entry a pi relaunched from a handoff starts
	// with: {sessionFile, handoff}, the session and the handoff it
	// continues.
	ContinuesType = "pi-session:continues"
)

// MaxChars is the longest pin, in characters (Unicode code points).
const MaxChars = 2000

// Pin is one pinned rule on a branch.
type Pin struct {
	EntryID string `json:"entryId"`
	Text    string `json:"text"`
	Time    string `json:"timestamp"`
	From    string `json:"from,omitempty"` // an inherited pin: the session file (else the handoff) it came from
}

// Kind says what is wrong with a pin's text.
type Kind string

// The ways a text is not a pin.
const (
	Empty   Kind = "empty"
	Control Kind = "control"
	Long    Kind = "long"
)

// BadText is a text /pin refuses: empty once trimmed, holding a control
// character (At is its position in characters, 1-based; Char how it is
// written out), or longer than MaxChars (Chars).
type BadText struct {
	Kind  Kind
	At    int
	Char  string
	Chars int
}

func (e *BadText) Error() string {
	switch e.Kind {
	case Empty:
		return "pins: the pin is empty"
	case Control:
		return fmt.Sprintf("pins: the pin holds a control character (%s at character %d)", e.Char, e.At)
	}
	return fmt.Sprintf("pins: the pin is %d characters, over the limit of %d", e.Chars, MaxChars)
}

// Check returns text as it is pinned: line ends made \n, spaces, tabs and
// newlines trimmed from both ends, nothing else changed. A text that is
// empty, holds a control character other than tab and newline (an escape
// sequence could reach the terminal from /pins), or is longer than
// MaxChars is a *BadText. The extension applies the same rule (pins.ts,
// checked against the same table, testdata/check.json).
func Check(text string) (string, error) {
	t := strings.ReplaceAll(text, "\r\n", "\n")
	t = strings.ReplaceAll(t, "\r", "\n")
	t = strings.Trim(t, " \t\n")
	if t == "" {
		return "", &BadText{Kind: Empty}
	}
	n := 0
	for _, r := range t {
		n++
		if clip.IsControl(r) {
			return "", &BadText{Kind: Control, At: n, Char: clip.Visible(string(r))}
		}
	}
	if n > MaxChars {
		return "", &BadText{Kind: Long, Chars: n}
	}
	return t, nil
}

// Problem is a pin or unpin entry of the branch that does not count: one
// written by hand, or by a tool other than the extension.
type Problem struct {
	Line    int
	EntryID string
	What    string
}

func (p Problem) String() string {
	return fmt.Sprintf("line %d: entry %s: %s", p.Line, clip.Echo(p.EntryID), p.What)
}

// Replay returns the pins of a branch (root first), in the order they were
// pinned: every pin entry whose text passes Check, less those an unpin
// entry later on the branch removes, and less repeats of a current pin. A
// pin made on another branch is not on this one, so it does not count
// here. Entries that cannot count are problems, and are skipped.
func Replay(branch []*session.Entry) ([]Pin, []Problem) {
	var list []Pin
	var problems []Problem
	bad := func(e *session.Entry, format string, a ...any) {
		problems = append(problems, Problem{Line: e.Line, EntryID: e.ID, What: fmt.Sprintf(format, a...)})
	}
	for _, e := range branch {
		if e.Type != "custom" {
			continue
		}
		ct, _ := session.MemberString(e.Raw, "customType")
		if ct != PinType && ct != UnpinType {
			continue
		}
		data := session.Member(e.Raw, "data")
		if len(data) == 0 || data[0] != '{' {
			bad(e, "%s entry without a data object; skipped", ct)
			continue
		}
		if ct == UnpinType {
			id, ok := session.MemberString(data, "pin")
			if !ok {
				bad(e, "unpin without a \"pin\" entry id; skipped")
				continue
			}
			at := -1
			for i, p := range list {
				if p.EntryID == id {
					at = i
				}
			}
			if at < 0 {
				bad(e, "unpin of %s, which is no pin of this branch; skipped", clip.Echo(id))
				continue
			}
			list = append(list[:at], list[at+1:]...)
			continue
		}
		raw, ok := session.MemberString(data, "text")
		if !ok {
			bad(e, "pin without a \"text\" string; skipped")
			continue
		}
		text, err := Check(raw)
		if err != nil {
			bad(e, "%s, which /pin refuses; skipped", strings.TrimPrefix(err.Error(), "pins: "))
			continue
		}
		if Find(list, text) > 0 {
			continue
		}
		from, _ := session.MemberString(data, "from")
		list = append(list, Pin{EntryID: e.ID, Text: text, Time: e.Timestamp, From: from})
	}
	return list, problems
}

// Find is the number (1-based) of the pin holding text, 0 when none does.
func Find(list []Pin, text string) int {
	for i, p := range list {
		if p.Text == text {
			return i + 1
		}
	}
	return 0
}

// Texts are the pins' texts, in order.
func Texts(list []Pin) []string {
	out := make([]string, len(list))
	for i, p := range list {
		out[i] = p.Text
	}
	return out
}

// Listing is what /pins shows, and `pi-session engine pins` prints: a
// line saying how many there are, then each pin numbered, verbatim, its
// later lines indented under its first. The text is written with clip's
// rule for control characters, though Check keeps them out.
func Listing(texts []string) string {
	if len(texts) == 0 {
		return "no pins on this branch: /pin <rule> pins a rule, /pin alone your last message\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s on this branch (verbatim in every relay note and handoff; /unpin <n> removes one):\n", len(texts), plural(len(texts), "pin", "pins"))
	for i, t := range texts {
		b.WriteString(Numbered(i+1, clip.Visible(t), "  "))
	}
	return b.String()
}

// Numbered writes text as item n of a list: "<indent>n. " before its first
// line, its later lines indented to match.
func Numbered(n int, text, indent string) string {
	head := indent + strconv.Itoa(n) + ". "
	return head + strings.ReplaceAll(text, "\n", "\n"+strings.Repeat(" ", utf8.RuneCountInString(head))) + "\n"
}

// Bullets writes each text as a Markdown list item, verbatim: its later
// lines indented by two spaces, so they stay in the item.
func Bullets(texts []string) string {
	var b strings.Builder
	for _, t := range texts {
		b.WriteString("- " + strings.ReplaceAll(t, "\n", "\n  ") + "\n")
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
