package status

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pi-session/pi-session/atomicfile"
	"github.com/pi-session/pi-session/clip"
	"github.com/pi-session/pi-session/owndir"
	"github.com/pi-session/pi-session/paths"
	"golang.org/x/sys/unix"
)

// Store is the directory of status records, <stateDir>/status.
type Store struct {
	stateDir string
	dir      string
	now      func() time.Time
	table    ProcessTable // who is alive, for the ownership rule
}

// NewStore returns the store under stateDir (see paths.StateDir).
func NewStore(stateDir string) *Store {
	return &Store{stateDir: stateDir, dir: filepath.Join(stateDir, "status"), now: time.Now, table: System()}
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

// Errors of the store's writers, for errors.Is.
var (
	// ErrNotOwner: the record belongs to another live process.
	ErrNotOwner = errors.New("status: record owned by another live process")
	// ErrMismatch: the record's sessionId is not the one its file name
	// says. Such a record is left alone and shown by `pi-session status`.
	ErrMismatch = errors.New("status: record does not match its file name")
	// ErrBusy: another writer held the store's write lock too long.
	ErrBusy = errors.New("status: record store busy")
)

// lockWait bounds how long a writer waits for the store's write lock; a
// holder stopped with Ctrl+Z must not stop every other session's writes.
const lockWait = 2 * time.Second

// Write replaces the session's record atomically (mode 0600, directory
// 0700), when the writer owns it. r's process fields (PID, StartTicks,
// BootID) are the writer's identity; see Update for the ownership rule.
// Fields of the file on disk that this version does not know are carried
// over unless r sets them. A zero UpdatedAt is set to now.
func (s *Store) Write(r *Record) error {
	self := Identity{PID: r.PID, StartTicks: r.StartTicks, BootID: r.BootID}
	return s.Update(r.SessionID, self, func(old *Record) {
		extra := old.Extra
		*old = *r
		if len(extra) > 0 {
			old.Extra = make(map[string]json.RawMessage, len(extra)+len(r.Extra))
			maps.Copy(old.Extra, extra)
			maps.Copy(old.Extra, r.Extra)
		}
	})
}

// Update changes the session's record under the store's write lock: fn
// gets the record on disk (or a new one holding only the session id), and
// what it leaves is written with self as the record's process. A writer
// only replaces a record it owns: one whose process is self (same pid, and
// same start time and boot when both are known), or one without a live
// owner (ended, its pid dead or reused, or no pid). Otherwise nothing is
// written and the error is ErrNotOwner. A record whose sessionId is not the
// session's (ErrMismatch) or that is corrupt (ErrCorrupt) is left alone. A
// zero UpdatedAt is set to now.
func (s *Store) Update(sessionID string, self Identity, fn func(r *Record)) error {
	return s.change(sessionID, func(r *Record, path string, existed bool) error {
		if existed {
			if err := s.owned(r, self, path); err != nil {
				return err
			}
		}
		fn(r)
		r.PID, r.StartTicks, r.BootID = self.PID, self.StartTicks, self.BootID
		if r.PID > 0 {
			r.InvalidPID = nil
		}
		return nil
	})
}

// Patch changes fields of the session's record as it is on disk now,
// under the store's write lock, leaving its process (pid, start time,
// boot) as it is: for an engine that keeps some fields of a record up to
// date, without undoing what another writer changed since (a bye's end).
// A missing record is created holding only the session id; a record naming
// another session (ErrMismatch) or a corrupt one is left alone.
func (s *Store) Patch(sessionID string, fn func(r *Record)) error {
	return s.change(sessionID, func(r *Record, _ string, _ bool) error {
		pid, invalid, ticks, boot, start := r.PID, r.InvalidPID, r.StartTicks, r.BootID, r.ProcessStart
		fn(r)
		r.PID, r.InvalidPID, r.StartTicks, r.BootID, r.ProcessStart = pid, invalid, ticks, boot, start
		return nil
	})
}

// change is a read, fn, write of the session's record under the store's
// write lock. fn gets the record on disk, or a new one holding only the
// session id (existed false); a record naming another session or a corrupt
// one is not given to fn. A non-nil error from fn writes nothing. A zero
// UpdatedAt is set to now.
func (s *Store) change(sessionID string, fn func(r *Record, path string, existed bool) error) error {
	path, err := s.Path(sessionID)
	if err != nil {
		return err
	}
	return s.locked(func() error {
		r, err := readOwn(path, sessionID)
		existed := err == nil
		switch {
		case errIsNotExist(err):
			r = &Record{SessionID: sessionID}
		case err != nil:
			return err
		}
		if err := fn(r, path, existed); err != nil {
			return err
		}
		r.SessionID = sessionID
		if r.UpdatedAt.IsZero() {
			r.UpdatedAt = s.now().UTC()
		}
		return s.put(path, r)
	})
}

// owned checks that self may replace r, the record on disk.
func (s *Store) owned(r *Record, self Identity, path string) error {
	if sameProcess(r, self) {
		return nil
	}
	var p Process
	if r.EndedAt == nil && r.PID > 0 {
		p = s.table.Lookup(r.PID)
	}
	switch Classify(r, p, s.table.BootID()) {
	case Running:
		return fmt.Errorf("%w: %s belongs to %s, which is running (this writer is pid %d)", ErrNotOwner, path, r.PIDText(), self.PID)
	case Unknown:
		if r.PID > 0 { // alive as far as anyone can tell (EPERM, no start time)
			return fmt.Errorf("%w: %s belongs to %s, which may be running (this writer is pid %d)", ErrNotOwner, path, r.PIDText(), self.PID)
		}
	}
	return nil
}

// sameProcess reports whether the record's process is self: the same pid,
// and the same start time and boot where both sides know them.
func sameProcess(r *Record, self Identity) bool {
	if r.PID <= 0 || r.PID != self.PID {
		return false
	}
	if r.StartTicks != 0 && self.StartTicks != 0 && r.StartTicks != self.StartTicks {
		return false
	}
	return r.BootID == "" || self.BootID == "" || r.BootID == self.BootID
}

// put writes r to path atomically. On a full file system (or one over
// quota) the atomic write, which needs a new file, fails; a record that
// exists is then written over in place, when the blocks it holds already
// take the new text: a record changes by a few bytes (an end time, an
// exit status), so an end is recorded, not read later as a crash. That
// write is one pwrite(2), not atomic: a reader racing it may see the
// record corrupt for a moment.
func (s *Store) put(path string, r *Record) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	data = append(data, '\n')
	err = atomicfile.WriteFile(path, data, 0o600)
	if err != nil && noSpace(err) {
		ierr := overwrite(path, data)
		if ierr == nil {
			return nil
		}
		err = fmt.Errorf("%w; in place: %w", err, ierr)
	}
	if err != nil {
		return fmt.Errorf("status: write %s: %w", r.SessionID, err)
	}
	return nil
}

// noSpace reports whether err says the file system has no room for a
// write: full, over quota, or past the writer's file size limit.
func noSpace(err error) bool {
	return errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) || errors.Is(err, unix.EFBIG)
}

// overwrite writes data over the record at path in place, padded with
// spaces to the file's length (JSON allows white space after the value),
// only when the blocks the file holds take it: a write that needs a new
// block on a full file system could stop half way.
func overwrite(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return errors.New("not a regular file")
	}
	if int64(len(data)) < st.Size {
		pad := bytes.Repeat([]byte{' '}, int(st.Size)-len(data))
		data = append(append(data[:len(data)-1:len(data)-1], pad...), '\n')
	}
	if held := st.Blocks * 512; int64(len(data)) > held {
		return fmt.Errorf("%d bytes do not fit in the %d the record holds", len(data), held)
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		return err
	}
	return f.Sync()
}

// locked runs fn holding the store's write lock, <status>/.records.lock
// (flock: the kernel releases it when its holder dies). It waits in a
// blocking flock, woken as soon as the holder lets go, but at most
// lockWait: a holder stopped with Ctrl+Z must not stop every other
// session's writes (ErrBusy then).
func (s *Store) locked(fn func() error) error {
	// <state dir>/status: refused when someone else could write there (a
	// record says which pi runs and is read back by pi-session status).
	if _, err := owndir.Make(s.dir, 2); err != nil {
		return fmt.Errorf("status: %w", err)
	}
	path := filepath.Join(s.dir, writeLockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("status: lock: %w", err)
	}
	fd := int(f.Fd())
	got := make(chan error, 1)
	go func() {
		for {
			err := unix.Flock(fd, unix.LOCK_EX)
			if err != unix.EINTR {
				got <- err
				return
			}
		}
	}()
	timer := time.NewTimer(lockWait)
	defer timer.Stop()
	select {
	case err := <-got:
		if err != nil {
			f.Close()
			return fmt.Errorf("status: lock %s: %w", path, err)
		}
	case <-timer.C:
		go func() { <-got; f.Close() }() // a lock taken after all is let go at once
		return fmt.Errorf("%w: %s held for more than %s", ErrBusy, path, lockWait)
	}
	defer f.Close() // closing the descriptor releases the lock
	return fn()
}

const writeLockName = ".records.lock"

// Read returns the session's record. Besides the file system's errors it
// fails with a *CorruptError (errors.Is ErrCorrupt) naming file, line and
// field, or ErrMismatch when the record names another session.
func (s *Store) Read(sessionID string) (*Record, error) {
	path, err := s.Path(sessionID)
	if err != nil {
		return nil, err
	}
	return readOwn(path, sessionID)
}

// readOwn reads the record at path, which must be session sessionID's.
func readOwn(path, sessionID string) (*Record, error) {
	r, _, err := readRecord(path)
	if err != nil {
		return nil, err
	}
	if err := matches(r, path, sessionID); err != nil {
		return nil, err
	}
	return r, nil
}

// matches checks that a record's sessionId is the one its file name says.
func matches(r *Record, path, sessionID string) error {
	if r.SessionID == sessionID {
		return nil
	}
	return &mismatchError{path: path, recorded: r.SessionID, name: sessionID}
}

// mismatchError is ErrMismatch with the file and both ids.
type mismatchError struct{ path, recorded, name string }

func (e *mismatchError) Error() string {
	if e.recorded == "" {
		return fmt.Sprintf("status: %s has no sessionId, but its name says %q; left alone", e.path, e.name)
	}
	return fmt.Sprintf("status: %s holds sessionId %q, but its name says %q; left alone", e.path, clip.To(e.recorded, 80), e.name)
}

func (e *mismatchError) Is(target error) bool { return target == ErrMismatch }

// End records a clean end of the session at the given time, so that a
// reader seeing its pid dead reports it exited rather than crashed. Only
// the record's own process may end it (ErrNotOwner otherwise).
func (s *Store) End(sessionID string, self Identity, at time.Time) error {
	return s.change(sessionID, func(r *Record, path string, existed bool) error {
		if !existed {
			return fmt.Errorf("status: %s: %w", path, fs.ErrNotExist)
		}
		if !sameProcess(r, self) {
			return fmt.Errorf("%w: %s belongs to %s, not to the ending pid %d", ErrNotOwner, path, r.PIDText(), self.PID)
		}
		at = at.UTC()
		r.EndedAt, r.UpdatedAt = &at, at
		return nil
	})
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
