package marker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/pi-session/pi-session/atomicfile"
)

// Why says why pi-session kept a marker instead of relaunching from it.
// pi-session writes it beside the marker (see WhyPath) when it refuses a
// relaunch, so that a list of retained markers can give the reason and
// tell whether the pi-session that kept it is gone.
type Why struct {
	Marker     string    `json:"marker"`               // the marker's path
	Reason     string    `json:"reason"`               // a short code (relaunch's Reason), e.g. "signaled"
	Message    string    `json:"message"`              // what went wrong, as pi-session said it
	At         time.Time `json:"at"`                   // when pi-session refused
	PID        int       `json:"pid"`                  // the pi-session that refused
	StartTicks uint64    `json:"startTicks,omitempty"` // its start time (clock ticks after boot)
	BootID     string    `json:"bootId,omitempty"`     // the boot it ran in
}

// MaxWhySize is the largest Why file read; pi-session's own are a few
// hundred bytes.
const MaxWhySize = 64 << 10

// WhyPath is where the Why of the marker at markerPath is kept:
// <pid>-<launch id>.json.why beside it (JSON, but not a marker name, see
// ParseName, and not matched by *.json).
func WhyPath(markerPath string) string { return markerPath + ".why" }

// WriteWhy stores w beside its marker, atomically with mode 0600.
func WriteWhy(w Why) error {
	b, err := json.MarshalIndent(w, "", "  ")
	if err != nil {
		return fmt.Errorf("marker: %w", err)
	}
	if err := atomicfile.WriteFile(WhyPath(w.Marker), append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("marker: write why: %w", err)
	}
	return nil
}

// ParseWhy decodes a Why file. Its errors name the field.
func ParseWhy(data []byte) (Why, error) {
	var w Why
	if len(data) > MaxWhySize {
		return Why{}, fmt.Errorf("marker: why: larger than %d bytes", MaxWhySize)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&w); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return Why{}, fmt.Errorf("marker: why: field %q: want %s, got %s", te.Field, te.Type, te.Value)
		}
		return Why{}, fmt.Errorf("marker: why: not a JSON object: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Why{}, errors.New("marker: why: data after the object")
	}
	if w.PID < 0 {
		return Why{}, fmt.Errorf("marker: why: field \"pid\": %d is not a pid", w.PID)
	}
	return w, nil
}

// Retained is a marker file found in a marker directory, with the Why
// pi-session wrote for it, if any.
type Retained struct {
	Path    string    // the marker
	Name    string    // its file name
	ModTime time.Time // the marker's
	PID     int       // the pid in its name
	Why     *Why      // nil: no Why (kept by an older pi-session, or written by another tool)
	WhyErr  error     // the Why file exists but cannot be read
}

// Since is when the marker was kept: its Why's time, else the file's.
func (r Retained) Since() time.Time {
	if r.Why != nil && !r.Why.At.IsZero() {
		return r.Why.At
	}
	return r.ModTime
}

// ListRetained lists the marker files in dir (names ParseName accepts),
// sorted by name, with their Why files; and the Why files whose marker is
// gone (orphans). A missing dir has none.
func ListRetained(dir string) (markers []Retained, orphans []string, err error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("marker: %w", err)
	}
	names := map[string]bool{}
	for _, e := range ents {
		names[e.Name()] = true
	}
	for _, e := range ents {
		name := e.Name()
		if base, ok := strings.CutSuffix(name, ".why"); ok {
			if _, _, isMarker := ParseName(base); isMarker {
				if !names[base] {
					orphans = append(orphans, filepath.Join(dir, name))
				}
				continue
			}
		}
		pid, _, ok := ParseName(name)
		if !ok {
			continue
		}
		r := Retained{Path: filepath.Join(dir, name), Name: name, PID: pid}
		fi, err := os.Lstat(r.Path)
		if err != nil {
			continue // gone meanwhile
		}
		r.ModTime = fi.ModTime()
		if b, err := readSmall(WhyPath(r.Path)); err == nil {
			w, err := ParseWhy(b)
			if err != nil {
				r.WhyErr = fmt.Errorf("%s: %w", WhyPath(r.Path), err)
			} else {
				r.Why = &w
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			r.WhyErr = err
		}
		markers = append(markers, r)
	}
	sort.Slice(markers, func(i, j int) bool { return markers[i].Name < markers[j].Name })
	sort.Strings(orphans)
	return markers, orphans, nil
}

// readSmall reads a regular file of at most MaxWhySize bytes, without
// following a symbolic link.
func readSmall(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("marker: %s: not a regular file", path)
	}
	return io.ReadAll(io.LimitReader(f, MaxWhySize+1))
}

// Owner is what is known of the pi-session that kept a marker.
type Owner int

// Answers about a marker's pi-session.
const (
	OwnerUnknown Owner = iota // cannot tell (no answer, EPERM, no pid)
	OwnerRunning              // still running: the marker may be in use
	OwnerGone                 // no longer running (a later process with its pid is not it)
)

// Fate is what a pruning pass does with a retained marker, and why.
type Fate string

// Fates. Only RemoveOld removes.
const (
	RemoveOld    Fate = "old"      // older than the max age, its pi-session gone
	KeepRecent   Fate = "recent"   // not older than the max age
	KeepRunning  Fate = "running"  // its pi-session still runs
	KeepUnknown  Fate = "unknown"  // whether its pi-session runs is unknown
	KeepNotOwned Fate = "not-ours" // its Why cannot be read: left alone
)

// Describe says what a fate means, for people.
func (f Fate) Describe() string {
	switch f {
	case RemoveOld:
		return "older than 7 days and its pi-session is gone"
	case KeepRecent:
		return "not older than 7 days"
	case KeepRunning:
		return "its pi-session still runs"
	case KeepUnknown:
		return "whether its pi-session runs is unknown"
	case KeepNotOwned:
		return "its reason file cannot be read"
	}
	return string(f)
}

// RetainedFate decides a marker's fate: it goes when it was kept strictly
// more than maxAge before now and the pi-session that kept it is gone.
func RetainedFate(r Retained, owner Owner, now time.Time, maxAge time.Duration) Fate {
	switch {
	case r.WhyErr != nil:
		return KeepNotOwned
	case now.Sub(r.Since()) <= maxAge:
		return KeepRecent
	case owner == OwnerRunning:
		return KeepRunning
	case owner != OwnerGone:
		return KeepUnknown
	}
	return RemoveOld
}

// RemoveRetained removes a marker and its Why file.
func RemoveRetained(markerPath string) error {
	if err := os.Remove(markerPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("marker: %w", err)
	}
	if err := os.Remove(WhyPath(markerPath)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("marker: %w", err)
	}
	return nil
}
