//go:build !unix

package offload

import (
	"io"
	"os"
)

func inode(fi os.FileInfo) uint64 { return 0 }

// mapFile reads the whole file where memory mapping is not available.
func mapFile(f *os.File, size int64) ([]byte, func() error, error) {
	data := make([]byte, size)
	if _, err := io.ReadFull(io.NewSectionReader(f, 0, size), data); err != nil {
		return nil, nil, err
	}
	return data, func() error { return nil }, nil
}

// lockFile is a no-op where flock is not available: one process per store.
func lockFile(f *os.File) error   { return nil }
func unlockFile(f *os.File) error { return nil }

// tryLockFile cannot tell without flock: every writer counts as alive.
func tryLockFile(f *os.File) bool { return false }
