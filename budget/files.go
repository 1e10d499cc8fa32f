package budget

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/pi-session/pi-session/atomicfile"
	"github.com/pi-session/pi-session/owndir"
	"github.com/pi-session/pi-session/regfile"
)

// Sidecar is the JSON file beside a handoff: the structured arguments and
// the automatic metadata, for the backstop and for tools.
type Sidecar struct {
	Version  int            `json:"version"`
	ID       string         `json:"id"` // <sessionId>-<n>
	Path     string         `json:"path"`
	Args     Args           `json:"args"`
	Metadata Metadata       `json:"metadata"`
	Backoff  HandoffDetails `json:"backoff"`
	Launch   string         `json:"launchPrompt,omitempty"` // the launch prompt file

	// recovered says where a prior handoff's fields came from when not
	// from this sidecar: "markdown", or why nothing could be read.
	recovered string
}

// HandoffDir is <repo root or cwd>/.ai-work/handoffs.
func HandoffDir(cwd string) string {
	base := cwd
	if root := RepoRoot(cwd, nil); root != "" {
		base = root
	}
	return filepath.Join(base, ".ai-work", "handoffs")
}

// NextN is one more than the highest <sessionId>-<n>.md in dir, and at
// least after.
func NextN(dir, sessionID string, after int) int {
	n := after
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, sessionID+"-") || !strings.HasSuffix(name, ".md") || strings.HasSuffix(name, ".launch-prompt.md") {
			continue
		}
		if k, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(name, sessionID+"-"), ".md")); err == nil {
			n = max(n, k)
		}
	}
	return n + 1
}

// WriteHandoff writes the handoff, its sidecar and (for a launch_prompt
// given as text) <id>.launch-prompt.md, each atomically with mode 0600.
// The handoff is written last: it exists only when the rest does.
func WriteHandoff(dir string, sc *Sidecar, doc string) error {
	// <repo>/.ai-work/handoffs: refused when someone else could write
	// there (a relaunch and the model read the handoff back).
	if _, err := owndir.Make(dir, 2); err != nil {
		return fmt.Errorf("budget: handoff directory: %w", err)
	}
	if lp := sc.Args.LaunchPrompt; lp != "" {
		if _, isPath := launchPromptFile(lp); isPath {
			st, err := os.Stat(lp)
			if err != nil || !st.Mode().IsRegular() {
				return fmt.Errorf("budget: launch_prompt %s is not an existing file: %v", lp, err)
			}
			sc.Launch = lp
		} else {
			p := filepath.Join(dir, sc.ID+".launch-prompt.md")
			if err := atomicfile.WriteFile(p, []byte(lp), 0o600); err != nil {
				return fmt.Errorf("budget: launch prompt: %w", err)
			}
			sc.Launch = p
		}
	}
	b, err := json.MarshalIndent(sc, "", "  ")
	if err != nil {
		return fmt.Errorf("budget: sidecar: %w", err)
	}
	if err := atomicfile.WriteFile(strings.TrimSuffix(sc.Path, ".md")+".json", append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("budget: sidecar: %w", err)
	}
	if err := atomicfile.WriteFile(sc.Path, []byte(doc), 0o600); err != nil {
		return fmt.Errorf("budget: handoff: %w", err)
	}
	return nil
}

// maxSidecarBytes bounds a sidecar read back: the arguments are at most
// MaxArgsBytes, the metadata far less.
const maxSidecarBytes = 4 << 20

// ReadSidecar reads the sidecar of a handoff file.
func ReadSidecar(handoff string) (*Sidecar, error) {
	// The path comes from the session's entries: a FIFO or a device there
	// must not hang or flood the engine.
	// It is not trusted when someone else could have written it: a
	// sidecar owned by another user or writable by others, or a link.
	path := strings.TrimSuffix(handoff, ".md") + ".json"
	f, err := regfile.OpenNoFollow(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := owndir.CheckFile(path, fi); err != nil {
		return nil, fmt.Errorf("budget: sidecar not trusted: %w", err)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxSidecarBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxSidecarBytes {
		return nil, fmt.Errorf("budget: sidecar %s: over %d bytes: %w", path, maxSidecarBytes, regfile.ErrTooLarge)
	}
	var sc Sidecar
	if err := json.Unmarshal(b, &sc); err != nil {
		return nil, fmt.Errorf("budget: sidecar of %s: %w", handoff, err)
	}
	return &sc, nil
}

// Words is the token set of a handoff's narrative for duplicate back-off:
// lowercase Unicode words of goal, facts and next_step, sorted, unique.
func Words(a Args) []string {
	set := map[string]bool{}
	for _, f := range strings.FieldsFunc(strings.ToLower(a.Goal+" "+a.Facts+" "+a.NextStep), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsNumber(r)
	}) {
		set[f] = true
	}
	out := make([]string, 0, len(set))
	for w := range set {
		out = append(out, w)
	}
	slices.Sort(out)
	return out
}

// Jaccard is |a ∩ b| / |a ∪ b| of two sorted unique word lists.
func Jaccard(a, b []string) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	i, j, inter := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			inter++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}

// Backoff window and similarity.
const (
	BackoffWindow     = 15 * time.Minute
	BackoffSimilarity = 0.9
)

// Backoff decides whether a voluntary or idle handoff repeats the previous
// one: within 15 minutes, HEAD known and unchanged, narrative similarity
// over 0.9. It returns when another is allowed, or the zero time.
func Backoff(prev HandoffDetails, head string, words []string, now time.Time) time.Time {
	if prev.Path == "" || prev.WrittenAt.IsZero() || head == "" || prev.Head == "" || head != prev.Head {
		return time.Time{}
	}
	until := prev.WrittenAt.Add(BackoffWindow)
	if !now.Before(until) || Jaccard(prev.Words, words) <= BackoffSimilarity {
		return time.Time{}
	}
	return until
}
