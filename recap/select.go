package recap

import (
	"errors"
	"fmt"

	"github.com/pi-session/pi-session/session"
)

// ErrBaselineGone means the entry a run started after is no longer on the
// branch (the user moved to another branch, the session was rewritten):
// the run boundary is cleared without a recap.
var ErrBaselineGone = errors.New("the run's baseline entry is not on the branch")

// Run says which entries a recap covers.
type Run struct {
	// LeafID is the end of the branch; "" means the file's last entry.
	LeafID string `json:"leafId"`
	// After is the baseline: the leaf when the first run of the batch
	// began. The run is every entry after it on the branch. nil means the
	// session had no entries then: the whole branch.
	After *string `json:"after"`
	// Last selects the last run instead: from the last user message on
	// the branch to the leaf (the command line's default).
	Last bool `json:"last"`
	// Starts are the leaves when each later run of the batch began (the
	// first began after After): the transcript marks where each run starts,
	// so the recap can tell which request each part of the work was for.
	Starts []string `json:"starts,omitempty"`
}

// Select returns the run's entries, in order, and the branch they are on.
func Select(f *session.File, r Run) (run, branch []*session.Entry, err error) {
	if len(f.Entries) == 0 {
		return nil, nil, nil
	}
	branch, err = f.Branch(r.LeafID)
	if err != nil {
		return nil, nil, fmt.Errorf("recap: %w", err)
	}
	switch {
	case r.Last:
		for i := len(branch) - 1; i >= 0; i-- {
			if e := branch[i]; e.Type == "message" && e.Role == "user" {
				return branch[i:], branch, nil
			}
		}
		return nil, branch, nil
	case r.After == nil:
		return branch, branch, nil
	}
	for i, e := range branch {
		if e.ID == *r.After {
			return branch[i+1:], branch, nil
		}
	}
	return nil, branch, fmt.Errorf("recap: entry %q: %w", *r.After, ErrBaselineGone)
}
