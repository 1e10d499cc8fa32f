package status

import (
	"sort"
	"strings"
	"time"
)

// Defaults of a pruning pass, as context-budget prunes.
const (
	DefaultMaxAge    = 7 * 24 * time.Hour // only records strictly older are removed
	DefaultInterval  = 24 * time.Hour     // automatic passes at most this often
	DefaultLimit     = 5000               // records examined per pass
	DefaultBudget    = 200 * time.Millisecond
	DefaultStaleLock = 10 * time.Second
)

// Reason says why a pass removed or kept a record.
type Reason string

// Reasons. Only RemovedDead removes; every other reason keeps the record.
const (
	RemovedDead       Reason = "dead"            // older than the max age, pid confirmed dead (ESRCH), no retained marker
	KeptCurrent       Reason = "current"         // the session starting now
	KeptUnreadable    Reason = "unreadable"      // unreadable or corrupt record
	KeptMismatch      Reason = "mismatch"        // the record's sessionId is not its file name's
	KeptRecent        Reason = "recent"          // not strictly older than the max age
	KeptNoPID         Reason = "no-pid"          // missing or invalid pid
	KeptAlive         Reason = "alive"           // the pid is alive (perhaps reused: only ESRCH removes)
	KeptPIDUnknown    Reason = "pid-unknown"     // EPERM, or the process table did not answer
	KeptMarker        Reason = "marker-retained" // the session's relaunch marker still exists
	KeptMarkerUnknown Reason = "marker-unknown"  // the marker lookup failed
	KeptChanged       Reason = "changed"         // the file changed between examination and removal
	KeptRemoveFailed  Reason = "remove-failed"   // removing the file failed
)

// Describe says what the reason means, for people.
func (r Reason) Describe() string {
	switch r {
	case RemovedDead:
		return "older than 7 days and its pid is dead"
	case KeptCurrent:
		return "the current session"
	case KeptUnreadable:
		return "unreadable or corrupt"
	case KeptMismatch:
		return "its sessionId does not match its file name"
	case KeptRecent:
		return "not older than 7 days"
	case KeptNoPID:
		return "missing or invalid pid"
	case KeptAlive:
		return "its pid is alive"
	case KeptPIDUnknown:
		return "its pid's liveness is unknown (EPERM or no answer)"
	case KeptMarker:
		return "its relaunch marker is retained"
	case KeptMarkerUnknown:
		return "its relaunch marker could not be looked up"
	case KeptChanged:
		return "it changed during the pass"
	case KeptRemoveFailed:
		return "removing it failed"
	}
	return string(r)
}

// MarkerState answers whether a relaunch marker file still exists.
type MarkerState int

// Answers about one marker path.
const (
	MarkerUnknown  MarkerState = iota // the lookup failed, or was not made
	MarkerGone                        // no such file
	MarkerRetained                    // the file exists
)

// Candidate is what a pass learned about one record file.
type Candidate struct {
	Name      string // <sessionId>.json
	ModTime   time.Time
	Err       string // non-empty: unreadable or corrupt
	SessionID string // as recorded; may differ from the name or be empty
	Mismatch  bool   // SessionID is not the one the name says: left alone
	PID       int    // 0: missing or invalid
	Marker    string // the relaunch marker path; "" for none
}

// PruneInput is everything one pass decides from.
type PruneInput struct {
	Now     time.Time
	MaxAge  time.Duration
	Current string // the current session id, never removed
	Last    string // the greatest record name in the directory
	// Examined is the pass's window (see Window) or, when the pass ran out
	// of time, a prefix of it.
	Examined []Candidate
	PIDs     map[int]PIDState       // liveness answers; a missing pid is PIDUnknown
	Markers  map[string]MarkerState // marker answers; a missing path is MarkerUnknown
}

// Decision is the fate of one record.
type Decision struct {
	Name   string `json:"name"`
	Reason Reason `json:"reason"`
}

// PrunePlan is the outcome of one pass.
type PrunePlan struct {
	Remove []Decision
	Keep   []Decision
	Next   string // the cursor for the next pass; "" starts from the first name
}

// Window returns the names a pass examines: up to limit sorted names after
// cursor, or from the first name when none is after it.
func Window(names []string, cursor string, limit int) []string {
	i := sort.SearchStrings(names, cursor)
	if i < len(names) && names[i] == cursor {
		i++
	}
	if i >= len(names) {
		i = 0
	}
	return names[i:min(len(names), i+limit)]
}

// PlanPrune decides which examined records to remove. A record goes only
// when it is readable, not the current session, strictly older than MaxAge,
// has a valid pid confirmed dead, and has no relaunch marker that exists or
// could not be looked up. Next is the last examined name, or "" when that
// is the directory's last name (the next pass wraps).
func PlanPrune(in PruneInput) PrunePlan {
	var p PrunePlan
	for _, c := range in.Examined {
		r := decide(c, in)
		if r == RemovedDead {
			p.Remove = append(p.Remove, Decision{c.Name, r})
		} else {
			p.Keep = append(p.Keep, Decision{c.Name, r})
		}
	}
	if n := len(in.Examined); n > 0 {
		last := in.Examined[n-1].Name
		if last != in.Last {
			p.Next = last
		}
	}
	return p
}

func decide(c Candidate, in PruneInput) Reason {
	if r, ok := precheck(c, in.Now, in.MaxAge, in.Current); !ok {
		return r
	}
	switch in.PIDs[c.PID] {
	case PIDDead:
	case PIDAlive:
		return KeptAlive
	default:
		return KeptPIDUnknown
	}
	if c.Marker != "" {
		switch in.Markers[c.Marker] {
		case MarkerGone:
		case MarkerRetained:
			return KeptMarker
		default:
			return KeptMarkerUnknown
		}
	}
	return RemovedDead
}

// precheck applies the rules that need no process table or marker lookup;
// ok means the record's pid must be asked about.
func precheck(c Candidate, now time.Time, maxAge time.Duration, current string) (Reason, bool) {
	id := strings.TrimSuffix(c.Name, ".json")
	switch {
	case current != "" && (id == current || c.SessionID == current):
		return KeptCurrent, false
	case c.Err != "":
		return KeptUnreadable, false
	case c.Mismatch:
		return KeptMismatch, false
	case now.Sub(c.ModTime) <= maxAge:
		return KeptRecent, false
	case c.PID <= 0:
		return KeptNoPID, false
	}
	return "", true
}
