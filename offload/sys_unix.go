//go:build unix

package offload

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

func inode(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}

// mapFile maps a whole file read-only. Blobs are never modified in place
// (they are written under a temporary name and renamed), so a mapping never
// sees a file shrink under it.
func mapFile(f *os.File, size int64) ([]byte, func() error, error) {
	if size == 0 {
		return nil, func() error { return nil }, nil
	}
	if int64(int(size)) != size {
		return nil, nil, fmt.Errorf("offload: %s: too large to map", f.Name())
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("offload: map %s: %w", f.Name(), err)
	}
	return data, func() error { return unix.Munmap(data) }, nil
}

// lockFile takes an exclusive flock on f, waiting for it.
func lockFile(f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if err != unix.EINTR {
			return err
		}
	}
}

func unlockFile(f *os.File) error { return unix.Flock(int(f.Fd()), unix.LOCK_UN) }

// tryLockFile takes an exclusive flock on f if nobody holds one.
func tryLockFile(f *os.File) bool {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err != unix.EINTR {
			return err == nil
		}
	}
}
