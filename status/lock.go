package status

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/pi-session/pi-session/atomicfile"
)

// pruneLock is a held mkdir lock: the directory <status>/.prune.lock with an
// owner file naming the holder's process identity and a random token.
type pruneLock struct {
	dir   string
	token string
}

type lockOwner struct {
	PID        int       `json:"pid"`
	StartTicks uint64    `json:"startTicks,omitempty"`
	BootID     string    `json:"bootId,omitempty"`
	Token      string    `json:"token"`
	At         time.Time `json:"at"`
}

const lockName = ".prune.lock"

// lockView is what one look at a lock directory saw.
type lockView struct {
	fi    fs.FileInfo
	owner *lockOwner // nil: no owner file yet, or unreadable
}

func inspectLock(dir string) (lockView, bool) {
	fi, err := os.Lstat(dir)
	if err != nil {
		return lockView{}, false
	}
	v := lockView{fi: fi}
	if b, err := os.ReadFile(filepath.Join(dir, "owner")); err == nil {
		var o lockOwner
		if json.Unmarshal(b, &o) == nil {
			v.owner = &o
		}
	}
	return v, true
}

func (a lockView) same(b lockView) bool {
	if !os.SameFile(a.fi, b.fi) || !a.fi.ModTime().Equal(b.fi.ModTime()) {
		return false
	}
	if a.owner == nil || b.owner == nil {
		return a.owner == nil && b.owner == nil
	}
	return a.owner.Token == b.owner.Token
}

// lockPrune takes the prune lock without waiting; nil, nil means another
// pass holds it. A lock older than staleAfter is identity-rechecked before
// it is broken: it is left alone while its owner is the very process that
// took it (same pid, start time and boot), and removed only if a second
// look finds the same directory with the same owner token.
func (s *Store) lockPrune(self Identity, table ProcessTable, now time.Time, staleAfter time.Duration) (*pruneLock, error) {
	dir := filepath.Join(s.dir, lockName)
	for attempt := 0; attempt < 2; attempt++ {
		err := os.Mkdir(dir, 0o700)
		if err == nil {
			lk := &pruneLock{dir: dir, token: randomToken()}
			owner, _ := json.Marshal(lockOwner{PID: self.PID, StartTicks: self.StartTicks, BootID: self.BootID, Token: lk.token, At: now.UTC()})
			if err := atomicfile.WriteFile(filepath.Join(dir, "owner"), owner, 0o600); err != nil {
				os.RemoveAll(dir)
				return nil, fmt.Errorf("status: prune lock: %w", err)
			}
			return lk, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("status: prune lock: %w", err)
		}
		first, ok := inspectLock(dir)
		if !ok {
			continue // released meanwhile
		}
		if now.Sub(first.fi.ModTime()) <= staleAfter {
			return nil, nil
		}
		if o := first.owner; o != nil {
			rec := &Record{PID: o.PID, StartTicks: o.StartTicks, BootID: o.BootID}
			if o.PID > 0 && o.StartTicks != 0 && Classify(rec, table.Lookup(o.PID), table.BootID()) == Running {
				return nil, nil // its owner is alive: slow, not stale
			}
		}
		again, ok := inspectLock(dir)
		if !ok || !first.same(again) {
			continue
		}
		if err := removeAside(dir); err != nil {
			return nil, fmt.Errorf("status: break stale prune lock: %w", err)
		}
	}
	return nil, nil
}

// release removes the lock if it is still this one (a lock broken as stale
// and taken by another pass is left to that pass).
func (lk *pruneLock) release() error {
	v, ok := inspectLock(lk.dir)
	if !ok || v.owner == nil || v.owner.Token != lk.token {
		return nil
	}
	if err := removeAside(lk.dir); err != nil {
		return fmt.Errorf("status: release prune lock: %w", err)
	}
	return nil
}

// removeAside renames dir to a unique name before deleting it, so that a
// lock taken at the same path meanwhile is never half-deleted.
func removeAside(dir string) error {
	aside := dir + ".gone-" + randomToken()
	if err := os.Rename(dir, aside); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	return os.RemoveAll(aside)
}

func randomToken() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// errIsNotExist also covers ENOTDIR (a path component is a file).
func errIsNotExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}
