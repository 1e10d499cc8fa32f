//go:build !linux

package rotate

import "os"

// renameNoReplace renames from to to, failing rather than replacing an
// existing to (checked, not atomic, where the kernel has no RENAME_NOREPLACE).
func renameNoReplace(from, to string) error {
	if _, err := os.Lstat(to); err == nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: os.ErrExist}
	}
	return os.Rename(from, to)
}
