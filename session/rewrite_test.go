package session

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// rewriteInPlace writes data over path through the same inode, as pi's
// _rewriteFile does (open "w": truncate, then write), and moves its mtime
// on so that a coarse clock cannot hide the write.
func rewriteInPlace(t *testing.T, path string, data []byte) {
	t.Helper()
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	fd, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fd.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := fd.Close(); err != nil {
		t.Fatal(err)
	}
	later := before.ModTime().Add(time.Second)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(path)
	if !os.SameFile(before, after) {
		t.Fatal("the rewrite made a new inode")
	}
}

// lines is a session of n custom entries, each padded to about size bytes.
func lines(prefix string, n, size int) []byte {
	var b bytes.Buffer
	b.WriteString(hdr + "\n")
	parent := ""
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("%s%d", prefix, i)
		e := ent(id, parent)
		if pad := size - len(e); pad > 0 {
			e = strings.Replace(e, `"customType":"t"`, `"customType":"t","data":"`+strings.Repeat("x", pad)+`"`, 1)
		}
		b.WriteString(e + "\n")
		parent = id
	}
	return b.Bytes()
}

// TestUpdateRewritten rewrites a session file in place in the ways it
// happens (pi migrating an old file, an editor saving into the same inode,
// a tool that truncates and writes) and checks Update notices it, and that
// a file that was only touched or appended to is not taken for rewritten.
func TestUpdateRewritten(t *testing.T) {
	base := lines("a", 200, 120) // 24 KB: windows do not cover the middle
	flip := func(data []byte, at int) []byte {
		out := bytes.Clone(data)
		i := bytes.IndexByte(out[at:], 'x') + at
		out[i] = 'y'
		return out
	}
	cases := []struct {
		name      string
		rewrite   []byte // nil: only touch the file
		rewritten bool
		entries   int // after Update, when not rewritten
	}{
		{"other entries, longer", lines("b", 300, 120), true, 0},
		{"other entries, same length", lines("c", 200, 120), true, 0},
		{"one entry dropped, others appended", append(bytes.Clone(base[:len(base)/2]), lines("d", 150, 120)[len(hdr)+1:]...), true, 0},
		{"one byte changed in the middle, same length", flip(base, len(base)/2), true, 0},
		{"one byte changed in the first line", flip(base, len(hdr)+10), true, 0},
		{"one byte changed just before the end", flip(base, len(base)-100), true, 0},
		{"same content, touched", nil, false, 200},
		{"same content written again", base, false, 200},
		{"same content and more", lines("a", 220, 120), false, 220},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.jsonl")
			if err := os.WriteFile(path, base, 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			if c.rewrite == nil {
				later := time.Now().Add(time.Minute)
				if err := os.Chtimes(path, later, later); err != nil {
					t.Fatal(err)
				}
			} else {
				rewriteInPlace(t, path, c.rewrite)
			}
			_, err = f.Update()
			if c.rewritten {
				if !errors.Is(err, ErrRewritten) {
					t.Fatalf("Update = %v, want ErrRewritten", err)
				}
				if len(f.Entries) != 200 {
					t.Errorf("a failed Update changed the File: %d entries", len(f.Entries))
				}
				return
			}
			if err != nil {
				t.Fatalf("Update = %v, want no error", err)
			}
			if len(f.Entries) != c.entries {
				t.Errorf("%d entries after Update, want %d", len(f.Entries), c.entries)
			}
		})
	}
}

// TestFingerprint follows files written in random pieces (lines cut
// anywhere, some lines longer than an arena) and checks that after every
// Update the fingerprint is exactly the first and last bytes read and the
// sum of all of them, so that the windows compared are the right ones.
func TestFingerprint(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 1))
	for round := 0; round < 6; round++ {
		var data bytes.Buffer
		data.WriteString(hdr + "\n")
		parent := ""
		for i := 0; data.Len() < 3<<20; i++ {
			id := fmt.Sprintf("e%d", i)
			size := 50 + rng.IntN(3000)
			if rng.IntN(40) == 0 {
				size = 1<<20 + rng.IntN(1<<20) // a line longer than an arena
			}
			e := ent(id, parent)
			e = strings.Replace(e, `"customType":"t"`, `"customType":"t","data":"`+strings.Repeat("z", size)+`"`, 1)
			data.WriteString(e + "\n")
			parent = id
		}
		all := data.Bytes()
		path := filepath.Join(t.TempDir(), "s.jsonl")
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		for written := 0; written < len(all); {
			n := min(len(all)-written, 1+rng.IntN(600<<10))
			appendTo(t, path, string(all[written:written+n]))
			written += n
			if _, err := f.Update(); err != nil {
				t.Fatalf("round %d, %d bytes written: Update: %v", round, written, err)
			}
			p, off := f.printed, f.Offset()
			read := all[:off]
			if p.off != off {
				t.Fatalf("fingerprint at %d, read %d", p.off, off)
			}
			if want := read[:min(len(read), printWindow)]; !bytes.Equal(p.head, want) {
				t.Fatalf("round %d at %d: head is not the first %d bytes read", round, off, len(want))
			}
			if len(p.tail) == 0 && off > 0 || !bytes.HasSuffix(read, p.tail) || len(p.tail) > printWindow {
				t.Fatalf("round %d at %d: tail of %d bytes is not the end of what was read", round, off, len(p.tail))
			}
			if got, want := p.sum, crc32.Checksum(read, castagnoli); got != want {
				t.Fatalf("round %d at %d: sum %08x, want %08x", round, off, got, want)
			}
		}
		fresh, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(ids(fresh.Entries), ids(f.Entries)); diff != "" {
			t.Fatalf("round %d: followed entries differ from a fresh Open (-fresh +followed):\n%s", round, diff)
		}
	}
}

// BenchmarkUpdateIdle is an Update that finds nothing new, the common
// case of a per-turn hook: with the rewrite check, two reads of 4 KiB.
func BenchmarkUpdateIdle(b *testing.B) {
	path := filepath.Join(b.TempDir(), "s.jsonl")
	if err := os.WriteFile(path, lines("a", 2000, 400), 0o600); err != nil {
		b.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if n, err := f.Update(); err != nil || n != 0 {
			b.Fatalf("Update = %d, %v", n, err)
		}
	}
}
