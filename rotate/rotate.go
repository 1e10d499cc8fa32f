// Package rotate appends JSON lines to logs shared by many processes and rotates them by size.
package rotate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pi-session/pi-session/owndir"
)

// Defaults of a Policy's zero fields.
const (
	DefaultMaxBytes  = 20 << 20 // 20 MiB
	DefaultKeep      = 5
	DefaultStaleLock = 10 * time.Second
)

// Policy says when a log rotates and how many archives it keeps.
type Policy struct {
	// MaxBytes: the live file rotates before the next append once it holds
	// at least this many bytes. Zero means DefaultMaxBytes.
	MaxBytes int64
	// Keep is how many archives survive a rotation, besides the live file.
	// Zero means DefaultKeep.
	Keep int
	// StaleLock is the age after which a held rotation lock is re-checked
	// and broken. Zero means DefaultStaleLock.
	StaleLock time.Duration
}

// The policies of the budget engine's two logs.
var (
	Events = Policy{MaxBytes: DefaultMaxBytes, Keep: 5}
	Turns  = Policy{MaxBytes: DefaultMaxBytes, Keep: 2}
)

func (p Policy) withDefaults() Policy {
	if p.MaxBytes <= 0 {
		p.MaxBytes = DefaultMaxBytes
	}
	if p.Keep <= 0 {
		p.Keep = DefaultKeep
	}
	if p.StaleLock <= 0 {
		p.StaleLock = DefaultStaleLock
	}
	return p
}

// ErrNotJSON is returned by Append for a line that is not one JSON value.
var ErrNotJSON = errors.New("rotate: line is not a JSON value")

// testHook, when set by a test, is called at named points of a rotation.
var testHook func(stage string)

func hook(stage string) {
	if testHook != nil {
		testHook(stage)
	}
}

// Log appends lines to one live file, <dir>/<base>.jsonl. Any number of Logs,
// in any number of processes, may append to the same file: every line is
// written with one write(2) on an O_APPEND descriptor, so lines are never
// interleaved on a local filesystem. An append cut short (a full disk, a
// killed writer) leaves a fragment that costs only its own line: a line that
// lands glued to it is written again on a line of its own, and ReadLines
// skips the fragment with a warning. Rotation renames the live file to an
// archive, so a descriptor opened just before keeps appending to that
// archive and nothing is lost; only deleting archives beyond Keep discards
// history. A Log is safe for concurrent use.
type Log struct {
	path   string
	dir    string
	live   string // base name of the live file
	policy Policy
	now    func() time.Time

	// OnRotateError, if set (before the first append), is called with each
	// failed rotation, under the Log's lock. A failed rotation never fails
	// the append that triggered it; the next append past a one-second retry
	// delay tries again.
	OnRotateError func(error)

	mu         sync.Mutex
	f          *os.File
	dev, ino   uint64
	buf        []byte
	appends    uint64
	retryAfter time.Time
}

// New returns a Log appending to path, which must end in ".jsonl". Nothing is
// opened until the first append.
func New(path string, p Policy) (*Log, error) {
	if !strings.HasSuffix(path, ".jsonl") || filepath.Base(path) == ".jsonl" {
		return nil, fmt.Errorf("rotate: %s: log name must end in .jsonl", path)
	}
	return &Log{
		path:   path,
		dir:    filepath.Dir(path),
		live:   filepath.Base(path),
		policy: p.withDefaults(),
		now:    time.Now,
	}, nil
}

// Append writes line, one JSON value, as one line. A trailing newline is
// optional; a value spread over several lines is compacted onto one.
func (l *Log) Append(line []byte) error {
	line = bytes.TrimRight(line, "\r\n")
	if !json.Valid(line) {
		return ErrNotJSON
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = l.buf[:0]
	if bytes.IndexByte(line, '\n') >= 0 || bytes.IndexByte(line, '\r') >= 0 {
		var b bytes.Buffer
		if err := json.Compact(&b, line); err != nil {
			return ErrNotJSON
		}
		l.buf = append(l.buf, b.Bytes()...)
	} else {
		l.buf = append(l.buf, line...)
	}
	l.buf = append(l.buf, '\n')
	return l.write(l.buf)
}

// AppendJSON marshals v and appends it as one line.
func (l *Log) AppendJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("rotate: marshal: %w", err)
	}
	return l.Append(b)
}

// Close closes the live file's descriptor. A closed Log may append again.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closeFile()
}

func (l *Log) closeFile() error {
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	if err != nil {
		return fmt.Errorf("rotate: close %s: %w", l.path, err)
	}
	return nil
}

// write appends one complete line, rotating first when the live file is full.
func (l *Log) write(line []byte) error {
	size, err := l.current()
	if err != nil {
		return err
	}
	if size >= l.policy.MaxBytes && !l.now().Before(l.retryAfter) {
		if err := l.rotate(); err != nil {
			l.retryAfter = l.now().Add(time.Second)
			if l.OnRotateError != nil {
				l.OnRotateError(err)
			}
		}
		if _, err := l.current(); err != nil {
			return err
		}
	}
	hook("checked")
	return l.appendLine(line)
}

// maxGlued bounds how often appendLine writes a line again after finding
// it glued to another writer's cut-short line.
const maxGlued = 3

// appendLine writes line, which ends in a newline, so that it is a line of
// its own whatever other writers left behind. An append cut short (a full
// disk, a kill) leaves a fragment without a newline, and the next line
// written lands glued to it. Writes to one file are serialized by the
// kernel, so the byte just before this write's first byte is final: when it
// is not a newline, the line was glued to a fragment and is written again,
// now after a newline (the glued line is one fragment readers skip, see
// ReadLines). When this writer's own append fails, it ends its fragment with
// a newline if it can; otherwise the next writer's check mends it. Either
// way a failed or interrupted append costs at most its own line. (The end
// of the file cannot be checked before writing instead: a size read while
// another write is under way shows a line half written.)
func (l *Log) appendLine(line []byte) error {
	fd := int(l.f.Fd())
	hook("writing")
	for glued := 0; ; glued++ {
		n, err := writeOnce(fd, line)
		short := err == nil && n != len(line)
		if short {
			err = errors.New("short write")
		}
		if err != nil {
			if n > 0 {
				// Best effort; else the next writer ends it. Its error
				// says why the write was short (a full disk).
				if _, nlErr := writeOnce(fd, []byte{'\n'}); nlErr != nil && short {
					err = fmt.Errorf("short write: %w", nlErr)
				}
			}
			return fmt.Errorf("rotate: append %s: wrote %d of %d bytes: %w", l.path, max(n, 0), len(line), err)
		}
		end, err := unix.Seek(fd, 0, io.SeekCurrent)
		start := end - int64(len(line))
		if err != nil || start <= 0 || endsLine(fd, start) {
			return nil
		}
		if glued == maxGlued {
			return fmt.Errorf("rotate: append %s: the line was glued to cut-short lines of other writers %d times", l.path, glued+1)
		}
	}
}

// writeOnce is one write(2): unlike os.File.Write it never writes the rest
// of a short write in a second call, where another writer's line could land
// between the two parts.
func writeOnce(fd int, b []byte) (int, error) {
	for {
		n, err := unix.Write(fd, b)
		if err != unix.EINTR {
			return n, err
		}
	}
}

// endsLine reports whether the byte before offset off of fd is a newline.
// When it cannot be read the answer is yes: nothing to mend.
func endsLine(fd int, off int64) bool {
	var b [1]byte
	n, err := unix.Pread(fd, b[:], off-1)
	return n != 1 || err != nil || b[0] == '\n'
}

// pathCheckEvery bounds how many appends may go by without looking at the
// path itself (see current).
const pathCheckEvery = 64

// current makes l.f the file now at l.path, reopening when another process
// rotated it away, and returns that file's size. Rotation only renames a
// full file, so the held file needs a look at the path (a stat by name,
// several times the cost of the fstat) only once it is full, unlinked, or
// every pathCheckEvery appends in case another process rotates at a lower
// limit. Until then lines land in the archive: history kept, not lost.
func (l *Log) current() (int64, error) {
	if l.f != nil {
		var held, at unix.Stat_t
		if err := unix.Fstat(int(l.f.Fd()), &held); err != nil {
			return 0, fmt.Errorf("rotate: stat %s: %w", l.path, err)
		}
		l.appends++
		if held.Nlink > 0 && held.Size < l.policy.MaxBytes && l.appends%pathCheckEvery != 0 {
			return held.Size, nil
		}
		err := unix.Stat(l.path, &at)
		if err == nil && uint64(at.Dev) == l.dev && uint64(at.Ino) == l.ino {
			return held.Size, nil
		}
		if err != nil && !errors.Is(err, unix.ENOENT) {
			return 0, fmt.Errorf("rotate: stat %s: %w", l.path, err)
		}
		l.closeFile()
	}
	// A log directory someone else could write to is refused (they could
	// put a link where the log goes); owndir's rule, as for every
	// directory pi-session writes into.
	if _, err := owndir.Make(l.dir, 1); err != nil {
		return 0, fmt.Errorf("rotate: %w", err)
	}
	f, err := os.OpenFile(l.path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600) // read: see endsLine
	if err != nil {
		return 0, fmt.Errorf("rotate: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return 0, fmt.Errorf("rotate: stat %s: %w", l.path, err)
	}
	l.f, l.dev, l.ino = f, uint64(st.Dev), uint64(st.Ino)
	return st.Size, nil
}

// rotate renames the live file to a new archive and deletes archives beyond
// Keep, under the rotation lock. A contended lock skips rotation: the caller
// appends to the full file and a later append tries again.
func (l *Log) rotate() error {
	lk, err := l.lock()
	if err != nil || lk == nil {
		return err
	}
	defer lk.unlock()
	hook("locked")

	var st unix.Stat_t
	if err := unix.Stat(l.path, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return fmt.Errorf("rotate: stat %s: %w", l.path, err)
	}
	if st.Size < l.policy.MaxBytes {
		return nil // another process rotated while we waited
	}
	names, err := readNames(l.dir)
	if err != nil {
		return err
	}
	plan := Plan(l.live, names, l.now(), l.policy)
	hook("planned")

	// The lock may have been broken while this process stalled: rename only
	// the very file the plan was made for.
	var again unix.Stat_t
	if err := unix.Stat(l.path, &again); err != nil || again.Ino != st.Ino || again.Dev != st.Dev {
		return nil
	}
	if err := renameNoReplace(l.path, filepath.Join(l.dir, plan.Archive)); err != nil {
		return fmt.Errorf("rotate: %w", err)
	}
	hook("renamed")
	var errs []error
	for _, name := range plan.Remove {
		if err := os.Remove(filepath.Join(l.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("rotate: prune archive: %w", err))
		}
	}
	return errors.Join(errs...)
}

func readNames(dir string) ([]string, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("rotate: %w", err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("rotate: read dir %s: %w", dir, err)
	}
	return names, nil
}
