package status

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Entry is one record file as a reader sees it.
type Entry struct {
	SessionID string // from the file name
	Path      string
	ModTime   time.Time
	Record    *Record // nil when Err is set, but for a Mismatched record
	Err       error   // the file could not be read, is not a record, or names another session
	State     State   // Corrupt or Mismatched when Err is set
}

// List reads every record whose session id starts with prefix ("" for all)
// and classifies it with table. An unreadable or corrupt record is returned
// as an Entry with Err set and State Corrupt; the others are still listed.
// Entries are in session id order. The error is for an unreadable directory;
// a missing one holds no records.
func (s *Store) List(table ProcessTable, prefix string) ([]Entry, error) {
	names, err := s.recordNames()
	if err != nil {
		return nil, err
	}
	boot := table.BootID()
	cache := map[int]Process{}
	var out []Entry
	for _, name := range names {
		id := strings.TrimSuffix(name, ".json")
		if !strings.HasPrefix(id, prefix) {
			continue
		}
		e := Entry{SessionID: id, Path: filepath.Join(s.dir, name)}
		var fi fs.FileInfo
		e.Record, fi, e.Err = readRecord(e.Path)
		if fi != nil {
			e.ModTime = fi.ModTime()
		}
		if e.Err == nil {
			e.Err = matches(e.Record, e.Path, id)
			if e.Err != nil {
				e.State = Mismatched
				out = append(out, e)
				continue
			}
		}
		if e.Err != nil {
			e.State = Corrupt
			e.Record = nil
			out = append(out, e)
			continue
		}
		p, ok := cache[e.Record.PID]
		if !ok && e.Record.EndedAt == nil && e.Record.PID > 0 {
			p = table.Lookup(e.Record.PID)
			cache[e.Record.PID] = p
		}
		e.State = Classify(e.Record, p, boot)
		out = append(out, e)
	}
	return out, nil
}

// maxRecordSize bounds what a reader loads: a record is a few hundred bytes.
const maxRecordSize = 1 << 20

// readRecord reads and parses one record file and returns what fstat said
// about it (nil when it could not be opened).
func readRecord(path string) (*Record, fs.FileInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("status: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("status: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fi, fmt.Errorf("status: %s: not a regular file", path)
	}
	if fi.Size() > maxRecordSize {
		return nil, fi, &CorruptError{Path: path, What: fmt.Sprintf("%d bytes, more than a record's limit of %d", fi.Size(), maxRecordSize)}
	}
	b := make([]byte, fi.Size())
	if n, err := f.ReadAt(b, 0); n < len(b) {
		return nil, fi, fmt.Errorf("status: read %s: %w", path, err)
	}
	r, err := Parse(b)
	if err != nil {
		return nil, fi, inFile(err, path)
	}
	return r, fi, nil
}
