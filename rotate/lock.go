package rotate

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/gofrs/flock"
)

// rotationLock is a held flock on <live>.lock beside the live file. The
// kernel releases it when its holder dies; what can go stale is a holder
// that stopped (SIGSTOP, a hung filesystem) while holding it. The file's
// mtime, set at acquisition, dates the lock.
type rotationLock struct {
	fl *flock.Flock
}

func (lk *rotationLock) unlock() { lk.fl.Close() }

// lock takes the rotation lock without waiting. It returns nil, nil when
// another process holds a lock younger than the policy's StaleLock. A
// stale lock is re-checked (still held, still the same file with the same
// mtime) before its file is removed and a fresh one taken.
func (l *Log) lock() (*rotationLock, error) {
	path := l.path + ".lock"
	for attempt := 0; attempt < 3; attempt++ {
		fl, ok, err := tryLock(path)
		if err != nil {
			return nil, err
		}
		if ok {
			return l.held(path, fl), nil
		}
		first, err := os.Stat(path)
		if err != nil {
			continue // removed by whoever broke it; try again
		}
		if l.now().Sub(first.ModTime()) < l.policy.StaleLock {
			return nil, nil
		}
		hook("stale")
		// Re-check: the holder may have released it, or another process may
		// already have broken it and taken a fresh one.
		if fl, ok, err := tryLock(path); err != nil {
			return nil, err
		} else if ok {
			return l.held(path, fl), nil
		}
		again, err := os.Stat(path)
		if err != nil || !os.SameFile(first, again) || !again.ModTime().Equal(first.ModTime()) {
			continue
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("rotate: break stale lock: %w", err)
		}
	}
	return nil, nil
}

// held dates a freshly taken lock and names its holder, for people reading
// the directory; neither is needed for correctness.
func (l *Log) held(path string, fl *flock.Flock) *rotationLock {
	if f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0); err == nil {
		f.WriteString(strconv.Itoa(os.Getpid()) + "\n")
		f.Close()
	}
	now := l.now()
	_ = os.Chtimes(path, now, now)
	return &rotationLock{fl: fl}
}

// tryLock flocks path without waiting and confirms that the locked file is
// still the one at path (a breaker may have removed it meanwhile).
func tryLock(path string) (*flock.Flock, bool, error) {
	fl := flock.New(path, flock.SetPermissions(0o600))
	ok, err := fl.TryLock()
	if err != nil {
		return nil, false, fmt.Errorf("rotate: lock %s: %w", path, err)
	}
	if !ok {
		return nil, false, nil
	}
	held, err1 := fl.Stat()
	at, err2 := os.Stat(path)
	if err1 != nil || err2 != nil || !os.SameFile(held, at) {
		fl.Close()
		return nil, false, nil
	}
	return fl, true, nil
}
