package session

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"io"
	"os"
)

// A rewrite in place (pi's own migration of an old file, an editor that
// saves into the same inode, a tool's truncate-and-write) keeps the inode,
// so [File.Update] cannot tell it from os.SameFile; what was read may no
// longer be in the file. The File keeps a fingerprint of the bytes it consumed:
// the first and the last printWindow of them, and a CRC-32C of them all,
// taken from the Reader's arenas (never re-read from the file, which may
// already hold something else). Update compares both windows with the
// file (two small reads) before reading on, and the whole sum when the
// file changed without growing (mtime or size moved, no append), the one
// case where the windows can match a changed file in normal use.

// printWindow is the size of the windows compared on every Update.
const printWindow = 4 << 10

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// fingerprint is what the Reader keeps of the bytes it consumed.
type fingerprint struct {
	on       bool
	sum      uint32 // CRC-32C of the consumed bytes before buf[sumAt]
	sumAt    int
	head     []byte // the first consumed bytes, up to printWindow (in an arena)
	prevTail []byte // the consumed end of the previous arena, up to printWindow
}

// printArena folds the consumed bytes of the current arena into the print
// (the sum, the head while the arena starts the file); the Reader calls it
// before it leaves an arena and when a read ends.
func (r *Reader) printArena() {
	p := &r.fp
	p.sum = crc32.Update(p.sum, castagnoli, r.buf[p.sumAt:r.start])
	p.sumAt = r.start
	if len(p.head) < printWindow && r.off == int64(r.start) { // this arena starts the file
		p.head = r.buf[:min(r.start, printWindow):min(r.start, printWindow)]
	}
}

// leaveArena is called by fill before it starts a new arena.
func (r *Reader) leaveArena() {
	r.printArena()
	r.fp.prevTail = r.buf[max(0, r.start-printWindow):r.start]
	r.fp.sumAt = 0
}

// snapshot is the fingerprint of everything consumed so far.
type snapshot struct {
	off  int64
	sum  uint32
	head []byte
	tail []byte // the last consumed bytes before off
}

func (r *Reader) snapshot() snapshot {
	r.printArena()
	p := &r.fp
	tail := r.buf[max(0, r.start-printWindow):r.start]
	if need := printWindow - len(tail); need > 0 && len(p.prevTail) > 0 && int64(len(tail)) < r.off {
		more := p.prevTail[max(0, len(p.prevTail)-need):]
		tail = append(append(make([]byte, 0, len(more)+len(tail)), more...), tail...)
	}
	return snapshot{off: r.off, sum: p.sum, head: p.head, tail: tail}
}

// rewritten reports how the file fd no longer holds what s printed: ""
// when it does. info is the file's state now, was its state when s was
// taken; scratch is a buffer of at least printWindow bytes.
func (s snapshot) rewritten(fd io.ReaderAt, info, was os.FileInfo, scratch []byte) (string, error) {
	if s.off == 0 {
		return "", nil
	}
	same := func(at int64, want []byte) (bool, error) {
		got := scratch[:len(want)]
		n, err := fd.ReadAt(got, at)
		if n < len(got) {
			if err == io.EOF {
				return false, nil
			}
			return false, err
		}
		return bytes.Equal(got, want), nil
	}
	if ok, err := same(0, s.head); err != nil || !ok {
		return fmt.Sprintf("its first %d bytes changed", len(s.head)), err
	}
	if ok, err := same(s.off-int64(len(s.tail)), s.tail); err != nil || !ok {
		return fmt.Sprintf("the %d bytes before offset %d, where reading stopped, changed", len(s.tail), s.off), err
	}
	if info.Size() > was.Size() || info.Size() == was.Size() && info.ModTime().Equal(was.ModTime()) {
		return "", nil // appended to, or untouched
	}
	// Written to without growing: check the whole sum.
	h := crc32.New(castagnoli)
	if _, err := io.Copy(h, io.NewSectionReader(fd, 0, s.off)); err != nil {
		return "", err
	}
	if h.Sum32() != s.sum {
		return fmt.Sprintf("the %d bytes already read changed (the file was written to without growing)", s.off), nil
	}
	return "", nil
}
