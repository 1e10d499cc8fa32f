// Package regfile reads a regular file of bounded size, refusing a FIFO, a device or a directory instead of blocking on it or reading it forever.
package regfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrNotRegular marks a path that names no regular file.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge marks a file over the limit given to Read.
var ErrTooLarge = errors.New("file too large")

// Read returns the content of the regular file at path (a symbolic link
// to one is followed). A directory, a named pipe, a device or a socket is
// refused with ErrNotRegular without blocking (a FIFO with no writer
// would block an ordinary open forever), and a file of more than limit
// bytes with ErrTooLarge, so /dev/zero or a file that keeps growing
// cannot use memory without bound. Errors name the path.
func Read(path string, limit int64) ([]byte, error) {
	return read(path, limit, 0)
}

// ReadNoFollow is Read for a file in a directory of pi-session's own (a
// relay note): a symbolic link in its place is refused, never followed,
// so a link to /etc/passwd or to a key does not reach a model.
func ReadNoFollow(path string, limit int64) ([]byte, error) {
	data, err := read(path, limit, syscall.O_NOFOLLOW)
	if errors.Is(err, syscall.ELOOP) {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("a symbolic link, not followed: %w", ErrNotRegular)}
	}
	return data, err
}

func read(path string, limit int64, flags int) ([]byte, error) {
	f, err := open(path, flags)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > limit {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%d bytes, over the limit of %d: %w", fi.Size(), limit, ErrTooLarge)}
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("over the limit of %d bytes: %w", limit, ErrTooLarge)}
	}
	return data, nil
}

// Open opens the regular file at path for reading, refusing anything else
// as Read does, for a caller that reads only a part of it.
func Open(path string) (*os.File, error) {
	return open(path, 0)
}

// OpenNoFollow is Open for a file in a directory of pi-session's own: a
// symbolic link in its place is refused, never followed.
func OpenNoFollow(path string) (*os.File, error) {
	f, err := open(path, syscall.O_NOFOLLOW)
	if errors.Is(err, syscall.ELOOP) {
		return nil, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("a symbolic link, not followed: %w", ErrNotRegular)}
	}
	return f, err
}

func open(path string, flags int) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|flags, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%s: %w", Kind(fi.Mode()), ErrNotRegular)}
	}
	return f, nil
}

// Kind says what a file that is not a regular file is: "a directory",
// "a named pipe", "a socket", "a device", or "a special file" with its
// type letter.
func Kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file (" + m.Type().String() + ")"
}
