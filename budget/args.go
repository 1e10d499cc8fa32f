package budget

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/pi-session/pi-session/clip"
)

// WatchAction is one running job, watch or subagent the handoff covers.
type WatchAction struct {
	ID         string `json:"id"`
	Target     string `json:"target"`
	OnComplete string `json:"on_complete"`
	Cancel     string `json:"cancel,omitempty"`
}

// Args are context_handoff's arguments.
type Args struct {
	Goal            string        `json:"goal"`
	NextStep        string        `json:"next_step"`
	Facts           string        `json:"facts"`
	UserConstraints string        `json:"user_constraints,omitempty"`
	Decisions       string        `json:"decisions,omitempty"`
	Hypotheses      string        `json:"hypotheses,omitempty"`
	OpenItems       string        `json:"open_items,omitempty"`
	FilesToRead     []string      `json:"files_to_read,omitempty"`
	WatchActions    []WatchAction `json:"watch_actions,omitempty"`
	LaunchPrompt    string        `json:"launch_prompt,omitempty"`
}

// Limits of the arguments.
const (
	MaxArgsBytes      = 1 << 20 // the whole call
	MaxWatchActions   = 20
	MaxWatchField     = 300 // characters
	MaxFilesToRead    = 64
	MaxFilesChecked   = 20
	MaxLaunchPrompt   = 32 << 10
	NarrativeBudget   = 12 << 10
	DocumentCap       = 52 << 10
	MaxPathBytes      = 4096
	constraintsFields = "user_constraints"
)

// FieldError is one problem with one argument.
type FieldError struct {
	Field   string `json:"field"`
	Problem string `json:"problem"`
}

func (e FieldError) Error() string { return e.Field + ": " + e.Problem }

// ArgsError lists the problems of a call, for the model to correct.
type ArgsError []FieldError

func (e ArgsError) Error() string {
	var b strings.Builder
	b.WriteString("context_handoff: the arguments need fixing; correct them and call context_handoff again:")
	for i, f := range e {
		if i == 8 {
			fmt.Fprintf(&b, "\n- (%d more)", len(e)-i)
			break
		}
		b.WriteString("\n- " + clip.To(f.Error(), 400))
	}
	return b.String()
}

var stringFields = []string{"goal", "next_step", "facts", "user_constraints", "decisions", "hypotheses", "open_items", "launch_prompt"}

// ParseArgs validates context_handoff's arguments: the required goal,
// next_step and facts, the optional fields' types and limits. Paths in
// files_to_read are made absolute against cwd. Every problem is
// reported, each naming its field and echoing a clipped value.
func ParseArgs(raw []byte, cwd string) (Args, error) {
	var a Args
	if len(raw) > MaxArgsBytes {
		return a, ArgsError{{Field: "(arguments)", Problem: fmt.Sprintf("%d bytes, over the limit of %d; put long material in a file under .ai-work/ and list it in files_to_read", len(raw), MaxArgsBytes)}}
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return a, ArgsError{{Field: "(arguments)", Problem: "must be a JSON object with goal, next_step and facts"}}
	}
	var errs ArgsError
	bad := func(field, format string, args ...any) {
		errs = append(errs, FieldError{Field: field, Problem: fmt.Sprintf(format, args...)})
	}
	str := func(field string, required bool) string {
		v, ok := m[field]
		if !ok || string(bytes.TrimSpace(v)) == "null" {
			if required {
				bad(field, "required; give a nonempty string")
			}
			return ""
		}
		var s string
		if json.Unmarshal(v, &s) != nil {
			bad(field, "must be a string, got %s", echoRaw(v))
			return ""
		}
		if !utf8.ValidString(s) {
			bad(field, "is not valid UTF-8")
			return ""
		}
		if i, r, ok := controlChar(s); ok {
			bad(field, "contains the control character %U at byte %d; escape sequences would reach the terminal when the handoff is shown: remove it or write it out (\\x1b)", r, i)
			return ""
		}
		if strings.TrimSpace(s) == "" {
			if required {
				bad(field, "required; give a nonempty string")
			}
			return ""
		}
		return s
	}
	a.Goal = str("goal", true)
	a.NextStep = str("next_step", true)
	a.Facts = str("facts", true)
	a.UserConstraints = str("user_constraints", false)
	a.Decisions = str("decisions", false)
	a.Hypotheses = str("hypotheses", false)
	a.OpenItems = str("open_items", false)
	a.LaunchPrompt = str("launch_prompt", false)
	if len(a.LaunchPrompt) > MaxLaunchPrompt {
		bad("launch_prompt", "%d bytes, over the limit of %d: %s", len(a.LaunchPrompt), MaxLaunchPrompt, clip.Echo(a.LaunchPrompt))
	}
	if v, ok := m["files_to_read"]; ok && string(bytes.TrimSpace(v)) != "null" {
		var list []json.RawMessage
		if json.Unmarshal(v, &list) != nil {
			bad("files_to_read", "must be an array of paths, got %s", echoRaw(v))
		} else if len(list) > MaxFilesToRead {
			bad("files_to_read", "%d entries, at most %d; list the most important first", len(list), MaxFilesToRead)
		} else {
			for i, item := range list {
				var p string
				f := fmt.Sprintf("files_to_read[%d]", i)
				switch {
				case json.Unmarshal(item, &p) != nil:
					bad(f, "must be a string path, got %s", echoRaw(item))
				case strings.TrimSpace(p) == "":
					bad(f, "empty path")
				case len(p) > MaxPathBytes || strings.ContainsAny(p, "\x00\n"):
					bad(f, "not a usable path: %s", clip.Echo(p))
				default:
					if !filepath.IsAbs(p) {
						p = filepath.Join(cwd, p)
					}
					a.FilesToRead = append(a.FilesToRead, filepath.Clean(p))
				}
			}
		}
	}
	if v, ok := m["watch_actions"]; ok && string(bytes.TrimSpace(v)) != "null" {
		var list []json.RawMessage
		if json.Unmarshal(v, &list) != nil {
			bad("watch_actions", `must be an array of {"id","target","on_complete","cancel"?}, got %s`, echoRaw(v))
		} else if len(list) > MaxWatchActions {
			bad("watch_actions", "%d entries, at most %d are accepted", len(list), MaxWatchActions)
		} else {
			seen := map[string]bool{}
			for i, item := range list {
				f := fmt.Sprintf("watch_actions[%d]", i)
				var w map[string]json.RawMessage
				if json.Unmarshal(item, &w) != nil || w == nil {
					bad(f, `must be an object {"id","target","on_complete","cancel"?}, got %s`, echoRaw(item))
					continue
				}
				var wa WatchAction
				ok := true
				for _, k := range sortedKeys(w) {
					var s string
					if json.Unmarshal(w[k], &s) != nil {
						bad(f+"."+k, "must be a string, got %s", echoRaw(w[k]))
						ok = false
						continue
					}
					n := utf8.RuneCountInString(s)
					switch {
					case k != "id" && k != "target" && k != "on_complete" && k != "cancel":
						bad(f+"."+k, "unknown field; use id, target, on_complete and cancel")
						ok = false
						continue
					case strings.TrimSpace(s) == "":
						bad(f+"."+k, "must not be empty")
						ok = false
						continue
					case strings.ContainsFunc(s, isControl):
						_, r, _ := controlChar(s)
						bad(f+"."+k, "contains the control character %U; remove it", r)
						ok = false
						continue
					case n > MaxWatchField:
						bad(f+"."+k, "%d characters, at most %d: %s", n, MaxWatchField, clip.Echo(s))
						ok = false
						continue
					}
					switch k {
					case "id":
						wa.ID = s
					case "target":
						wa.Target = s
					case "on_complete":
						wa.OnComplete = s
					case "cancel":
						wa.Cancel = s
					}
				}
				for _, req := range []struct{ k, v string }{{"id", wa.ID}, {"target", wa.Target}, {"on_complete", wa.OnComplete}} {
					if _, given := w[req.k]; !given {
						bad(f+"."+req.k, "required")
						ok = false
					}
				}
				if ok && seen[wa.ID] {
					bad(f+".id", "duplicate id %s", clip.Echo(wa.ID))
					ok = false
				}
				seen[wa.ID] = true
				if ok {
					a.WatchActions = append(a.WatchActions, wa)
				}
			}
		}
	}
	known := append(slices.Clone(stringFields), "files_to_read", "watch_actions")
	for _, k := range sortedKeys(m) {
		if !slices.Contains(known, k) {
			bad(clip.Echo(k), "unknown argument; the arguments are %s", strings.Join(known, ", "))
		}
	}
	if len(errs) > 0 {
		return Args{}, errs
	}
	return a, nil
}

// isControl reports a character that must not be in an argument: what
// clip.IsControl reports but carriage return. ESC and CSI begin the escape
// sequences a terminal obeys (clear the screen, move the cursor, OSC 52
// writes the clipboard).
func isControl(r rune) bool { return r != '\r' && clip.IsControl(r) }

// controlChar is the first control character of s and its byte offset.
func controlChar(s string) (int, rune, bool) {
	for i, r := range s {
		if isControl(r) {
			return i, r, true
		}
	}
	return 0, 0, false
}

func echoRaw(v json.RawMessage) string {
	return clip.Echo(string(bytes.TrimSpace(v)))
}

// narrative is the size of the fields the 12 KiB narrative budget covers
// (every agent-written field but user_constraints and watch_actions).
func (a Args) narrative() (int, []string) {
	sizes := []struct {
		name string
		n    int
	}{{"goal", len(a.Goal)}, {"next_step", len(a.NextStep)}, {"facts", len(a.Facts)}, {"decisions", len(a.Decisions)},
		{"hypotheses", len(a.Hypotheses)}, {"open_items", len(a.OpenItems)}}
	files := 0
	for _, f := range a.FilesToRead {
		files += len(f) + 3
	}
	sizes = append(sizes, struct {
		name string
		n    int
	}{"files_to_read", files})
	total := 0
	var parts []string
	for _, s := range sizes {
		total += s.n
		if s.n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", s.name, s.n))
		}
	}
	return total, parts
}
