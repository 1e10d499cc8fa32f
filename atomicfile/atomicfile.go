// Package atomicfile replaces files atomically: a reader sees the old content or the new, never a mix.
package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// WriteFile writes data to path through a temporary file in the same
// directory: write, chmod perm, fsync, rename over path, fsync the directory.
// A crash at any point leaves either the previous file or the new one, plus at
// most a stray temporary file named ".<base>.tmp-*" that RemoveStale cleans.
// The mode is always perm, whatever mode an existing file had.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	dir, tmp, err := writeTemp(path, data, perm)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("atomicfile: %w", err)
	}
	return SyncDir(dir)
}

// writeTemp writes data to a new temporary file beside path, named
// ".<base>.tmp-*": chmod perm, write, fsync, close. It returns the
// directory and the temporary file's name; on an error nothing is left.
func writeTemp(path string, data []byte, perm os.FileMode) (dir, tmp string, err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return "", "", fmt.Errorf("atomicfile: %w", err)
	}
	tmp = f.Name()
	fail := func(op string, err error) (string, string, error) {
		f.Close()
		os.Remove(tmp)
		return "", "", fmt.Errorf("atomicfile: %s %s: %w", op, tmp, err)
	}
	if err := f.Chmod(perm); err != nil {
		return fail("chmod", err)
	}
	if _, err := f.Write(data); err != nil {
		return fail("write", err)
	}
	if err := f.Sync(); err != nil {
		return fail("fsync", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return "", "", fmt.Errorf("atomicfile: close %s: %w", tmp, err)
	}
	return dir, tmp, nil
}

// SyncDir fsyncs a directory so that a rename or create inside it survives a
// crash of the machine.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("atomicfile: open dir: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("atomicfile: fsync dir %s: %w", dir, err)
	}
	return nil
}

// IsTemp reports whether name (a base name) is a temporary file left by
// WriteFile, so directory scans can skip it.
func IsTemp(name string) bool {
	if len(name) < 2 || name[0] != '.' {
		return false
	}
	for i := 1; i+5 <= len(name); i++ {
		if name[i:i+5] == ".tmp-" {
			return true
		}
	}
	return false
}

// Create writes data to path only when nothing is there yet, so that two
// writers, in one process or many, never take the same name: the data goes
// to a temporary file in the same directory (write, chmod perm, fsync),
// which is then published under path by a rename that does not replace,
// or, on a filesystem without one, a hard link; the directory is fsynced.
// A reader sees the whole file or none. When path exists the error
// satisfies errors.Is(err, fs.ErrExist) and nothing is changed. On a
// filesystem with neither (no hard links), path is created with O_EXCL and
// written in place: still exclusive, but a reader may see it partly
// written.
func Create(path string, data []byte, perm os.FileMode) (err error) {
	dir, tmp, err := writeTemp(path, data, perm)
	if err != nil {
		return err
	}
	defer os.Remove(tmp) // published under path, or failed: either way not needed
	switch err = publish(tmp, path); {
	case err == nil:
	case errors.Is(err, errNoPublish):
		if err = createInPlace(path, data, perm); err != nil {
			return err
		}
	default:
		return fmt.Errorf("atomicfile: %w", err)
	}
	return SyncDir(dir)
}

// exclusiveRename is renameNoReplace; tests replace it to take the other ways.
var exclusiveRename = renameNoReplace

// errNoPublish says the filesystem can neither rename without replacing
// nor link.
var errNoPublish = errors.New("atomicfile: no exclusive rename or link on this filesystem")

// publish gives the file tmp the name path unless path exists (fs.ErrExist
// then): renameNoReplace, else a hard link.
func publish(tmp, path string) error {
	err := exclusiveRename(tmp, path)
	if !errors.Is(err, errNoRenameNoReplace) {
		return err
	}
	err = os.Link(tmp, path)
	var le *os.LinkError
	if errors.As(err, &le) && (errors.Is(le.Err, syscall.EPERM) || errors.Is(le.Err, syscall.ENOTSUP) ||
		errors.Is(le.Err, syscall.EOPNOTSUPP) || errors.Is(le.Err, syscall.EMLINK) || errors.Is(le.Err, syscall.ENOSYS)) {
		return errNoPublish
	}
	return err
}

// createInPlace is Create's last resort: O_EXCL on path itself.
func createInPlace(path string, data []byte, perm os.FileMode) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("atomicfile: %w", err)
	}
	defer func() {
		if err != nil {
			os.Remove(path)
		}
	}()
	if err = f.Chmod(perm); err == nil {
		if _, err = f.Write(data); err == nil {
			err = f.Sync()
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("atomicfile: write %s: %w", path, err)
	}
	return nil
}
