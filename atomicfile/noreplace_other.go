//go:build !linux

package atomicfile

import "errors"

// errNoRenameNoReplace: elsewhere Create publishes with a hard link.
var errNoRenameNoReplace = errors.New("atomicfile: no RENAME_NOREPLACE")

func renameNoReplace(from, to string) error { return errNoRenameNoReplace }
