package rotate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxLine is the longest line ReadLines passes on when given no limit.
const DefaultMaxLine = 64 << 20

// Fragment is a line ReadLines skipped because it is not one JSON value:
// typically what an append cut short (a full disk, a killed writer) left
// behind, or such a remnant with another writer's line glued to it.
type Fragment struct {
	File   string // the name given to ReadLines
	Line   int    // 1-based line number
	Offset int64  // byte offset of the line's first byte
	Size   int64  // the line's length, without its newline
	// Why says what is wrong: not a JSON line, longer than the limit, or,
	// for a last line without a newline, incomplete (it may still be being
	// written).
	Why string
}

func (f Fragment) String() string {
	return fmt.Sprintf("%s:%d: skipped %d bytes at offset %d: %s", f.File, f.Line, f.Size, f.Offset, f.Why)
}

// ReadLines reads the JSON lines of r (a log file named name, for the
// fragments' positions) in order and calls fn with each line that holds one
// JSON value, without its newline; the slice is valid only during the call.
// Every other non-empty line is skipped and reported to skip, so one broken
// line never hides the lines after it. Lines longer than maxLine bytes (0
// means DefaultMaxLine) are skipped without being held in memory. An error
// from fn stops the read and is returned; so is a read error.
func ReadLines(r io.Reader, name string, maxLine int, fn func(line []byte) error, skip func(Fragment)) error {
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	var off int64
	for n := 1; ; n++ {
		line = line[:0]
		var size int64
		over := false
		var err error
		for {
			var part []byte
			part, err = br.ReadSlice('\n')
			size += int64(len(part))
			if !over && len(line)+len(part) <= maxLine+1 {
				line = append(line, part...)
			} else {
				over, line = true, line[:0]
			}
			if !errors.Is(err, bufio.ErrBufferFull) {
				break
			}
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("rotate: read %s: %w", name, err)
		}
		ended := size > 0 && err == nil // a newline ends the line
		length := size
		if ended {
			length--
			line = bytes.TrimSuffix(line, []byte{'\n'})
		}
		over = over || length > int64(maxLine)
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if size == 0 {
			return nil
		}
		frag := Fragment{File: name, Line: n, Offset: off, Size: length}
		switch {
		case over:
			frag.Why = fmt.Sprintf("longer than the limit of %d bytes", maxLine)
		case len(bytes.TrimSpace(line)) == 0:
			frag.Why = ""
		case json.Valid(line):
			if ferr := fn(line); ferr != nil {
				return ferr
			}
			frag.Why = ""
		case !ended:
			frag.Why = "incomplete last line (no newline): an append cut short, or one still being written"
		default:
			frag.Why = "not a JSON line (the remains of an append cut short, or text another program wrote)"
		}
		if frag.Why != "" && skip != nil {
			skip(frag)
		}
		off += size
		if !ended {
			return nil
		}
	}
}
