package budget

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/pi-session/pi-session/atomicfile"
	"github.com/pi-session/pi-session/gitexclude"
	"github.com/pi-session/pi-session/owndir"
	"github.com/pi-session/pi-session/regfile"
)

// Sidecar is the JSON file beside a handoff: the structured arguments and
// the automatic metadata, for the backstop and for tools.
type Sidecar struct {
	Version int    `json:"version"`
	ID      string `json:"id"` // <sessionId>-<n>
	// ToolCallID is the context_handoff call that wrote it: a host that
	// takes over after the writer died finds the handoff by it.
	ToolCallID string         `json:"toolCallId,omitempty"`
	Path       string         `json:"path"`
	Args       Args           `json:"args"`
	Metadata   Metadata       `json:"metadata"`
	Backoff    HandoffDetails `json:"backoff"`
	Launch     string         `json:"launchPrompt,omitempty"` // the launch prompt file

	// recovered says where a prior handoff's fields came from when not
	// from this sidecar: "markdown", or why nothing could be read.
	recovered string
	// excludeWarning says that .ai-work/ could not be listed in the
	// repository's exclude file (CreateHandoff; once a process).
	excludeWarning string
}

// HandoffDir is <repo root or cwd>/.ai-work/handoffs.
func HandoffDir(cwd string) string {
	base := cwd
	if root := RepoRoot(cwd, nil); root != "" {
		base = root
	}
	return filepath.Join(base, ".ai-work", "handoffs")
}

// NextN is one more than the highest handoff number of sessionID in dir,
// and at least after+1. A number is taken by its document
// (<sessionId>-<n>.md) or by its sidecar alone (<sessionId>-<n>.json: a
// handoff being written, or one a crash cut short).
func NextN(dir, sessionID string, after int) int {
	n := after
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, sessionID+"-") || strings.HasSuffix(name, ".launch-prompt.md") {
			continue
		}
		num, ok := strings.CutSuffix(name[len(sessionID)+1:], ".md")
		if !ok {
			num, ok = strings.CutSuffix(name[len(sessionID)+1:], ".json")
		}
		if k, err := strconv.Atoi(num); ok && err == nil && k > 0 && num[0] != '+' {
			n = max(n, k)
		}
	}
	return n + 1
}

// maxHandoffTries bounds how often a handoff is laid out again because
// another writer took the number it chose.
const maxHandoffTries = 64

// CreateHandoff writes a handoff of sessionID in dir under the next
// number after after that no writer, in this process or another, has
// taken: build lays out the sidecar and document of number n, and is
// called again with a later number when another writer took n meanwhile
// (a second pi on the same session). It returns what build made for the
// number written. An error of build is returned as is.
func CreateHandoff(dir, sessionID string, after int, build func(n int) (*Sidecar, string, error)) (*Sidecar, string, error) {
	// <repo>/.ai-work/handoffs: refused when someone else could write
	// there (a relaunch and the model read the handoff back).
	if _, err := owndir.Make(dir, 2); err != nil {
		return nil, "", fmt.Errorf("budget: handoff directory: %w", err)
	}
	// The whole .ai-work/ stays out of the user's commits: listed in the
	// repository's .git/info/exclude, once.
	excludeWarning := gitexclude.Add(filepath.Dir(dir))
	for try := 0; try < maxHandoffTries; try++ {
		n := NextN(dir, sessionID, after)
		sc, doc, err := build(n)
		if err != nil {
			return nil, "", err
		}
		err = WriteHandoff(dir, sc, doc)
		if err == nil {
			sc.excludeWarning = excludeWarning
			return sc, doc, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, "", err
		}
		after = n
	}
	return nil, "", fmt.Errorf("budget: no handoff number free in %s after %d tries: other writers of session %s keep taking them", dir, maxHandoffTries, sessionID)
}

// WriteHandoff writes the handoff sc names: its sidecar first, created
// exclusively (it takes the number: an error satisfying
// errors.Is(err, fs.ErrExist) when another writer has it), then (for a
// launch_prompt given as text) <id>.launch-prompt.md, then the document,
// created exclusively too; each atomically with mode 0600. The document is
// written last: it exists only when the rest does, and a writer that finds
// it complete finds the whole handoff. What a failure leaves of this
// number is removed again.
func WriteHandoff(dir string, sc *Sidecar, doc string) (err error) {
	if _, err := owndir.Make(dir, 2); err != nil {
		return fmt.Errorf("budget: handoff directory: %w", err)
	}
	lp := sc.Args.LaunchPrompt
	lpText := ""
	if lp != "" {
		if _, isPath := launchPromptFile(lp); isPath {
			st, err := os.Stat(lp)
			if err != nil || !st.Mode().IsRegular() {
				return fmt.Errorf("budget: launch_prompt %s is not an existing file: %v", lp, err)
			}
			sc.Launch = lp
		} else {
			lpText = lp
			sc.Launch = filepath.Join(dir, sc.ID+".launch-prompt.md")
		}
	}
	b, err := json.MarshalIndent(sc, "", "  ")
	if err != nil {
		return fmt.Errorf("budget: sidecar: %w", err)
	}
	side := strings.TrimSuffix(sc.Path, ".md") + ".json"
	if err := atomicfile.Create(side, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("budget: sidecar: %w", err)
	}
	defer func() {
		if err != nil {
			if lpText != "" {
				os.Remove(sc.Launch)
			}
			os.Remove(side) // created by this call: the number is this writer's
		}
	}()
	if lpText != "" {
		if err := atomicfile.WriteFile(sc.Launch, []byte(lpText), 0o600); err != nil {
			return fmt.Errorf("budget: launch prompt: %w", err)
		}
	}
	if err := atomicfile.Create(sc.Path, []byte(doc), 0o600); err != nil {
		return fmt.Errorf("budget: handoff: %w", err)
	}
	return nil
}

// findLimit bounds how many of a session's newest handoffs FindHandoff
// reads: the one it looks for was being written a moment ago.
const findLimit = 16

// FindHandoff looks in dir for the handoff of sessionID that the
// context_handoff call toolCallID wrote, among the newest findLimit. It
// returns its sidecar when the handoff is complete (its document exists
// and names it: WriteHandoff writes the document last), or, when only its
// sidecar is there, the sidecar's path.
func FindHandoff(dir, sessionID, toolCallID string) (complete *Sidecar, torn string) {
	var nums []int
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		num, ok := strings.CutPrefix(e.Name(), sessionID+"-")
		if !ok {
			continue
		}
		if num, ok = strings.CutSuffix(num, ".json"); !ok {
			continue
		}
		if k, err := strconv.Atoi(num); err == nil && k > 0 && strconv.Itoa(k) == num {
			nums = append(nums, k)
		}
	}
	slices.Sort(nums)
	for i := len(nums) - 1; i >= 0 && i >= len(nums)-findLimit; i-- {
		id := fmt.Sprintf("%s-%d", sessionID, nums[i])
		path := filepath.Join(dir, id+".md")
		sc, err := ReadSidecar(path)
		if err != nil || sc.ToolCallID != toolCallID || sc.ID != id || sc.Path != path {
			continue
		}
		doc, err := regfile.Read(path, maxHandoffRead)
		if err != nil || !strings.HasPrefix(string(doc), "# Handoff "+id+"\n") {
			return nil, strings.TrimSuffix(path, ".md") + ".json"
		}
		return sc, ""
	}
	return nil, ""
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
