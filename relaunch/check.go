package relaunch

import (
	"io/fs"
	"os"
	"syscall"
)

// OS checks files on the real filesystem. Stat follows symbolic links, so a
// handoff may be a link to a regular file.
type OS struct{}

// Stat is os.Stat.
func (OS) Stat(path string) (fs.FileInfo, error) { return os.Stat(path) }

// Readable opens path for reading without blocking and closes it again.
func (OS) Readable(path string) error {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	return f.Close()
}
