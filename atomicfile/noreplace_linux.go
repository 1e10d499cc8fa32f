package atomicfile

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// errNoRenameNoReplace says the kernel or filesystem has no RENAME_NOREPLACE.
var errNoRenameNoReplace = errors.New("atomicfile: no RENAME_NOREPLACE")

// renameNoReplace renames from to to unless to exists (renameat2 with
// RENAME_NOREPLACE).
func renameNoReplace(from, to string) error {
	err := unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, unix.RENAME_NOREPLACE)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.ENOTSUP):
		return errNoRenameNoReplace
	}
	return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
}
