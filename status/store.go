package status

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pi-session/pi-session/atomicfile"
	"github.com/pi-session/pi-session/paths"
)

// Store is the directory of status records, <stateDir>/status.
type Store struct {
	stateDir string
	dir      string
	now      func() time.Time
}

// NewStore returns the store under stateDir (see paths.StateDir).
func NewStore(stateDir string) *Store {
	return &Store{stateDir: stateDir, dir: filepath.Join(stateDir, "status"), now: time.Now}
}

// StoreFromEnv returns the store of the environment's state directory:
// PI_CONTEXT_BUDGET_STATE_DIR or <agentDir>/context-budget.
func StoreFromEnv(getenv paths.Getenv) *Store { return NewStore(paths.StateDir(getenv)) }

// Dir is the records' directory.
func (s *Store) Dir() string { return s.dir }

// StateDir is the directory holding the records' directory and events.jsonl.
func (s *Store) StateDir() string { return s.stateDir }

// ErrBadSessionID is returned for a session id that cannot name a file.
var ErrBadSessionID = errors.New("status: invalid session id")

// Path is the record file of a session.
func (s *Store) Path(sessionID string) (string, error) {
	if !ValidSessionID(sessionID) {
		return "", fmt.Errorf("%w %q", ErrBadSessionID, sessionID)
	}
	return filepath.Join(s.dir, sessionID+".json"), nil
}

// Write replaces the session's record atomically (mode 0600, directory
// 0700). Fields of the file on disk that this version does not know are
// carried over unless r sets them. A zero UpdatedAt is set to now.
func (s *Store) Write(r *Record) error {
	path, err := s.Path(r.SessionID)
	if err != nil {
		return err
	}
	if r.UpdatedAt.IsZero() {
		r.UpdatedAt = s.now().UTC()
	}
	out := *r
	if b, err := os.ReadFile(path); err == nil {
		if old, err := Parse(b); err == nil && len(old.Extra) > 0 {
			out.Extra = make(map[string]json.RawMessage, len(old.Extra)+len(r.Extra))
			for k, v := range old.Extra {
				out.Extra[k] = v
			}
			for k, v := range r.Extra {
				out.Extra[k] = v
			}
		}
	}
	data, err := json.MarshalIndent(&out, "", "  ")
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("status: %w", err)
	}
	if err := atomicfile.WriteFile(path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("status: write %s: %w", r.SessionID, err)
	}
	return nil
}

// Read returns the session's record.
func (s *Store) Read(sessionID string) (*Record, error) {
	path, err := s.Path(sessionID)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	r, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, path)
	}
	return r, nil
}

// End records a clean end of the session at the given time, so that a
// reader seeing its pid dead reports it exited rather than crashed.
func (s *Store) End(sessionID string, at time.Time) error {
	r, err := s.Read(sessionID)
	if err != nil {
		return err
	}
	at = at.UTC()
	r.EndedAt, r.UpdatedAt = &at, at
	return s.Write(r)
}

// recordNames lists the record files in the store, sorted; a missing
// directory holds none. Temporary files of atomic writes, hidden files
// (the prune lock and throttle) and other names are skipped.
func (s *Store) recordNames() ([]string, error) {
	d, err := os.Open(s.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	defer d.Close()
	all, err := d.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("status: read %s: %w", s.dir, err)
	}
	names := all[:0]
	for _, n := range all {
		if IsRecordName(n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names, nil
}

// IsRecordName reports whether a file name in the status directory names a
// record: <sessionId>.json with a valid session id.
func IsRecordName(name string) bool {
	id, ok := strings.CutSuffix(name, ".json")
	return ok && ValidSessionID(id) && !atomicfile.IsTemp(name)
}
