package offload

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var bigLimits = Limits{MaxBytes: 500_000_000, TTL: 7 * 24 * time.Hour}

func openTestStore(t *testing.T, dir string, now func() time.Time) *Store {
	t.Helper()
	s, err := OpenStore(dir, now)
	if err != nil {
		t.Fatalf("OpenStore: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func readBlob(t *testing.T, s *Store, h string) []byte {
	t.Helper()
	b, err := s.Open(h, 0)
	if err != nil {
		t.Fatalf("Open(%s): %v", h, err)
	}
	defer b.Close()
	return append([]byte(nil), b.Data...)
}

// verifyStore checks the store's invariants on disk: every blob holds the
// content its name says, every entry has its blob, and the private modes.
func verifyStore(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".tmp-") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, "blobs", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		if hex.EncodeToString(sum[:]) != e.Name() {
			t.Errorf("blob %s holds %d bytes whose SHA-256 is %x: truncated or damaged", e.Name(), len(data), sum)
		}
		if fi, _ := e.Info(); fi.Mode().Perm() != 0o600 {
			t.Errorf("blob %s has mode %v, want 0600", e.Name(), fi.Mode().Perm())
		}
	}
	for _, d := range []string{dir, filepath.Join(dir, "blobs")} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v (%v), want 0700", d, fi.Mode().Perm(), err)
		}
	}
	s, err := OpenStore(dir, time.Now)
	if err != nil {
		t.Fatalf("OpenStore after the fact: %v", err)
	}
	defer s.Close()
	es, _ := s.Entries()
	for _, e := range es {
		if _, err := os.Stat(filepath.Join(dir, "blobs", e.SHA)); err != nil {
			t.Errorf("entry %s has no blob: %v", e.Handle, err)
		}
	}
}

func TestStorePutDedup(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s := openTestStore(t, dir, newClock().now)
	data := payload(1, 1, 50_000)
	e1, existed, err := s.Put(data, Meta{Kind: "text", Source: "bash", Session: "a"}, bigLimits)
	if err != nil || existed {
		t.Fatalf("first Put = %v, existed %v", err, existed)
	}
	e2, existed, err := s.Put(data, Meta{Kind: "text", Source: "bash", Session: "b"}, bigLimits)
	if err != nil || !existed || e2.Handle != e1.Handle {
		t.Fatalf("second Put = %s, existed %v, %v; want %s, existed", e2.Handle, existed, err, e1.Handle)
	}
	e3, existed, err := s.PutStream(func(w io.Writer) error { _, err := w.Write(data); return err }, Meta{}, bigLimits)
	if err != nil || !existed || e3.Handle != e1.Handle {
		t.Fatalf("PutStream of the same data = %s, existed %v, %v; want %s, existed", e3.Handle, existed, err, e1.Handle)
	}
	blobs, _ := os.ReadDir(filepath.Join(dir, "blobs"))
	if len(blobs) != 1 {
		t.Errorf("blobs/ holds %d files, want 1", len(blobs))
	}
	if got := readBlob(t, s, e1.Handle); !bytes.Equal(got, data) {
		t.Errorf("Open returned %d bytes, want the %d stored", len(got), len(data))
	}
	if !ValidHandle(e1.Handle) || e1.Size != int64(len(data)) {
		t.Errorf("entry %+v: bad handle or size", e1)
	}
	verifyStore(t, dir)
}

func TestStoreLookupErrors(t *testing.T) {
	c := newClock()
	dir := t.TempDir()
	s := openTestStore(t, dir, c.now)
	a, _, err := s.Put(payload(1, 1, 1000), Meta{}, bigLimits)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lookup("ce_0123456789abcdef01234567", 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("Lookup(unknown) = %v, want ErrNotFound", err)
	}
	c.add(8 * 24 * time.Hour)
	if _, err := s.Lookup(a.Handle, bigLimits.TTL); !errors.Is(err, ErrExpired) {
		t.Errorf("Lookup(older than the TTL) = %v, want ErrExpired", err)
	}
	// The next put removes it; it is then reported as expired, not unknown.
	if _, _, err := s.Put(payload(2, 2, 1000), Meta{}, bigLimits); err != nil {
		t.Fatal(err)
	}
	_, err = s.Lookup(a.Handle, 0)
	if !errors.Is(err, ErrExpired) || !strings.Contains(err.Error(), "was expired") {
		t.Errorf("Lookup(removed) = %v, want ErrExpired saying it was expired", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "blobs", a.SHA)); !os.IsNotExist(err) {
		t.Errorf("the expired blob is still on disk: %v", err)
	}
}

func TestPlanCleanup(t *testing.T) {
	now := time.UnixMilli(1_000_000_000)
	ent := func(h string, size int64, age time.Duration) Entry {
		return Entry{Handle: h, Size: size, Time: now.Add(-age).UnixMilli()}
	}
	tests := []struct {
		name    string
		entries []Entry
		lim     Limits
		keep    string
		want    []Removal
	}{
		{"nothing to do", []Entry{ent("a", 10, time.Minute)}, Limits{MaxBytes: 100, TTL: time.Hour}, "", nil},
		{"expired go first", []Entry{ent("a", 10, 2*time.Hour), ent("b", 10, time.Minute)}, Limits{MaxBytes: 100, TTL: time.Hour}, "",
			[]Removal{{"a", "expired"}}},
		{"oldest first over the cap", []Entry{ent("c", 40, 1*time.Minute), ent("a", 40, 3*time.Minute), ent("b", 40, 2*time.Minute), ent("d", 40, 0)},
			Limits{MaxBytes: 100}, "", []Removal{{"a", "evicted"}, {"b", "evicted"}}},
		{"never the newest, even alone over the cap", []Entry{ent("a", 10, time.Minute), ent("big", 500, 0)}, Limits{MaxBytes: 100}, "big",
			[]Removal{{"a", "evicted"}}},
		{"the newest is never expired", []Entry{ent("a", 10, 3*time.Hour)}, Limits{MaxBytes: 100, TTL: time.Hour}, "", nil},
		{"keep breaks a tie of times", []Entry{ent("a", 60, 0), ent("b", 60, 0)}, Limits{MaxBytes: 100}, "a", []Removal{{"b", "evicted"}}},
		{"expired and evicted", []Entry{ent("old", 10, 5*time.Hour), ent("a", 50, 3*time.Minute), ent("b", 50, 2*time.Minute), ent("c", 50, 0)},
			Limits{MaxBytes: 100, TTL: time.Hour}, "", []Removal{{"old", "expired"}, {"a", "evicted"}}},
	}
	for _, tt := range tests {
		got := PlanCleanup(tt.entries, now, tt.lim, tt.keep)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: PlanCleanup (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestStoreCapEvictsOldestFirst(t *testing.T) {
	c := newClock()
	dir := t.TempDir()
	s := openTestStore(t, dir, c.now)
	lim := Limits{MaxBytes: 3500, TTL: time.Hour}
	var hs []string
	for i := 0; i < 3; i++ {
		e, _, err := s.Put(payload(i, i, 1000), Meta{}, lim)
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, e.Handle)
		c.add(time.Second)
	}
	// Storing the first payload again makes it the newest.
	if _, _, err := s.Put(payload(0, 0, 1000), Meta{}, lim); err != nil {
		t.Fatal(err)
	}
	c.add(time.Second)
	d, _, err := s.Put(payload(3, 3, 1000), Meta{}, lim)
	if err != nil {
		t.Fatal(err)
	}
	var live []string
	es, _ := s.Entries()
	for _, e := range es {
		live = append(live, e.Handle)
	}
	want := []string{d.Handle, hs[0], hs[2]} // newest first; hs[1] was the oldest
	if diff := cmp.Diff(want, live); diff != "" {
		t.Errorf("live entries after eviction (-want +got):\n%s", diff)
	}
	if _, err := s.Lookup(hs[1], 0); !errors.Is(err, ErrExpired) || !strings.Contains(err.Error(), "evicted") {
		t.Errorf("Lookup(evicted) = %v, want ErrExpired naming the eviction", err)
	}
	// A payload larger than the cap is refused, nothing is evicted for it.
	if _, _, err := s.Put(payload(9, 9, 4000), Meta{}, lim); err == nil {
		t.Error("Put of a payload over storeMaxBytes succeeded")
	}
	verifyStore(t, dir)
}

func TestStoreCorruptIndexRecovered(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir, time.Now)
	a, _, _ := s.Put(payload(1, 1, 3000), Meta{Source: "bash"}, bigLimits)
	b, _, _ := s.Put(payload(2, 2, 3000), Meta{Source: "bash"}, bigLimits)
	s.Close()
	index := filepath.Join(dir, "index.jsonl")
	f, err := os.OpenFile(index, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("garbage\x00\xff\n{\"op\":\"put\",\"h\":\"ce_zz\"}\n{\"op\":\"put\",\"h\":\"" + a.Handle + `","sha":"00`) // a torn last line
	f.Close()

	s2 := openTestStore(t, dir, time.Now)
	for i, e := range []Entry{a, b} {
		if got := readBlob(t, s2, e.Handle); !bytes.Equal(got, payload(i+1, i+1, 3000)) {
			t.Errorf("payload %s differs after the corruption", e.Handle)
		}
	}
	c, _, err := s2.Put(payload(3, 3, 3000), Meta{Source: "probe"}, bigLimits)
	if err != nil {
		t.Fatalf("Put after corruption: %v", err)
	}
	raw, _ := os.ReadFile(index)
	if bytes.Contains(raw, []byte("garbage")) {
		t.Errorf("the index still holds the garbage after a put compacted it:\n%s", raw)
	}
	s3 := openTestStore(t, dir, time.Now)
	for _, h := range []string{a.Handle, b.Handle} {
		if _, err := s3.Lookup(h, 0); err != nil {
			t.Errorf("Lookup(%s) after recovery: %v", h, err)
		}
	}
	// The record appended after the torn line is whole: its metadata survives.
	if e, err := s3.Lookup(c.Handle, 0); err != nil || e.Source != "probe" {
		t.Errorf("Lookup(c) = %+v, %v; want its record with source probe", e, err)
	}
	verifyStore(t, dir)
}

func TestStoreLostIndexAdoptsBlobs(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir, time.Now)
	a, _, _ := s.Put(payload(1, 1, 3000), Meta{}, bigLimits)
	b, _, _ := s.Put(payload(2, 2, 3000), Meta{}, bigLimits)
	s.Close()
	os.Remove(filepath.Join(dir, "index.jsonl"))
	os.Remove(filepath.Join(dir, "blobs", b.SHA)) // and b's blob is gone too
	os.WriteFile(filepath.Join(dir, "blobs", ".tmp-123"), []byte("half a payload"), 0o600)
	old := time.Now().Add(-2 * time.Hour)
	os.Chtimes(filepath.Join(dir, "blobs", ".tmp-123"), old, old)

	s2 := openTestStore(t, dir, time.Now)
	if _, err := s2.Lookup(a.Handle, 0); !errors.Is(err, ErrNotFound) {
		t.Fatalf("before any write, Lookup = %v; want ErrNotFound (opening writes nothing)", err)
	}
	if err := s2.Maintain(bigLimits); err != nil {
		t.Fatal(err)
	}
	e, err := s2.Lookup(a.Handle, 0)
	if err != nil || e.Kind != "recovered" {
		t.Errorf("after maintenance Lookup(a) = %+v, %v; want the adopted blob", e, err)
	}
	if _, err := s2.Lookup(b.Handle, 0); err == nil {
		t.Errorf("Lookup(b) succeeded without its blob")
	}
	if _, err := os.Stat(filepath.Join(dir, "blobs", ".tmp-123")); !os.IsNotExist(err) {
		t.Errorf("an abandoned temporary file survived the cleanup")
	}
}

func TestStoreDanglingEntryRemoved(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir, time.Now)
	a, _, _ := s.Put(payload(1, 1, 3000), Meta{}, bigLimits)
	os.Remove(filepath.Join(dir, "blobs", a.SHA))
	if _, err := s.Open(a.Handle, 0); !errors.Is(err, ErrExpired) {
		t.Errorf("Open(dangling) = %v, want ErrExpired", err)
	}
	if err := s.Maintain(bigLimits); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lookup(a.Handle, 0); !errors.Is(err, ErrExpired) || !strings.Contains(err.Error(), "dangling") {
		t.Errorf("Lookup after cleanup = %v, want ErrExpired (dangling)", err)
	}
}

func startChild(t *testing.T, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	return cmd
}

func TestStoreTwoProcessesWriteAtOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	const n = 60
	// Compact often, so compactions race with the other writers' appends.
	defer func(old int) { compactSlack = old }(compactSlack)
	compactSlack = 0
	var cmds []*exec.Cmd
	for w := 0; w < 2; w++ {
		cmd := startChild(t, "OFFLOAD_CHILD=put", "OFFLOAD_STORE="+dir, "OFFLOAD_WRITER="+strconv.Itoa(w), "OFFLOAD_N="+strconv.Itoa(n), "OFFLOAD_COMPACT_SLACK=0")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	// This process writes too.
	s := openTestStore(t, dir, time.Now)
	for i := 0; i < n; i++ {
		if _, _, err := s.Put(payload(2, i, 1500+i), Meta{}, bigLimits); err != nil {
			t.Errorf("Put: %v", err)
		}
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("writer: %v", err)
		}
	}
	s2 := openTestStore(t, dir, time.Now)
	es, _ := s2.Entries()
	want := map[string][]byte{}
	for w := 0; w < 3; w++ {
		for i := 0; i < n; i++ {
			var data []byte
			switch {
			case w == 2:
				data = payload(2, i, 1500+i)
			case i%3 == 0:
				data = payload(-1, i, 3000)
			default:
				data = payload(w, i, 2000+i*37)
			}
			sum := sha256.Sum256(data)
			want[HandleOf(sum[:])] = data
		}
	}
	if len(es) != len(want) {
		t.Errorf("%d entries after three writers, want %d", len(es), len(want))
	}
	for _, e := range es {
		if e.Kind == "recovered" {
			t.Errorf("entry %s lost its record (adopted from its blob): a compaction raced an append", e.Handle)
		}
	}
	for h, data := range want {
		if got := readBlob(t, s2, h); !bytes.Equal(got, data) {
			t.Errorf("payload %s differs", h)
		}
	}
	if s2.bad != 0 {
		t.Errorf("the index has %d unreadable lines", s2.bad)
	}
	verifyStore(t, dir)
}

// A writer killed at any point leaves a store that opens, with the payload
// complete or absent, and the next Store to open the directory removes
// what the dead writer left: its temporary blob, a record whose blob it
// never renamed, and a pending entry it never confirmed (a handle no model
// saw). A confirmed entry, or one stored without Pending, stays.
func TestStoreWriterKilledMidWrite(t *testing.T) {
	const size = 4 << 20
	want := payload(7, 7, size)
	sum := sha256.Sum256(want)
	h := HandleOf(sum[:])
	tests := []struct {
		stage   string
		pending bool
		present bool
	}{
		{"temp-open", false, false},
		{"half", false, false},
		{"temp-written", false, false},
		{"appended", false, false},
		{"renamed", false, true},
		{"stored", false, true},
		{"half", true, false},
		{"appended", true, false},
		{"renamed", true, false},
		{"stored", true, false},
		{"confirmed", true, true},
	}
	for _, tt := range tests {
		name := tt.stage
		if tt.pending {
			name += "/pending"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			env := []string{"OFFLOAD_CHILD=hang", "OFFLOAD_STORE=" + dir, "OFFLOAD_STAGE=" + tt.stage, "OFFLOAD_SIZE=" + strconv.Itoa(size)}
			if tt.pending {
				env = append(env, "OFFLOAD_PENDING=1")
			}
			cmd := startChild(t, env...)
			out, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil || line != "at "+tt.stage+"\n" {
				t.Fatalf("child said %q, %v", line, err)
			}
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()

			s := openTestStore(t, dir, time.Now)
			check := func(when string) bool {
				b, err := s.Open(h, 0)
				if errors.Is(err, ErrNotFound) || errors.Is(err, ErrExpired) {
					return false
				}
				if err != nil {
					t.Fatalf("%s: Open = %v", when, err)
				}
				defer b.Close()
				if !bytes.Equal(b.Data, want) {
					t.Fatalf("%s: the payload is %d bytes, not the %d written: truncated", when, len(b.Data), len(want))
				}
				return true
			}
			if present := check("after the kill"); present != tt.present {
				t.Errorf("after a kill at %s the payload is present: %v, want %v", tt.stage, present, tt.present)
			}
			left, _ := filepath.Glob(filepath.Join(dir, "blobs", ".tmp-*"))
			live, _ := filepath.Glob(filepath.Join(dir, "live", "*"))
			if len(left)+len(live) > 0 {
				t.Errorf("the dead writer's files survive the next start: %v %v", left, live)
			}
			if !tt.present {
				if _, err := os.Stat(filepath.Join(dir, "blobs", hex.EncodeToString(sum[:]))); err == nil {
					t.Errorf("the blob of an entry removed at the start is still there")
				}
			}
			if err := s.Maintain(bigLimits); err != nil {
				t.Fatal(err)
			}
			if present := check("after cleanup"); present != tt.present {
				t.Errorf("after cleanup the payload is present: %v, want %v", present, tt.present)
			}
			verifyStore(t, dir)
		})
	}
}

// A pending entry of a writer that is still open stays however often other
// Stores open the directory, and a confirmed entry is not made pending
// again by a later pending put of the same payload.
func TestStorePendingOfLiveWriter(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir, time.Now)
	e, _, err := s.Put(payload(1, 1, 3000), Meta{Pending: true}, bigLimits)
	if err != nil || !e.Pending {
		t.Fatalf("Put pending = %+v, %v", e, err)
	}
	s2 := openTestStore(t, dir, time.Now)
	if _, err := s2.Lookup(e.Handle, 0); err != nil {
		t.Fatalf("another Store's start removed a live writer's pending entry: %v", err)
	}
	if err := s.Confirm(e.Handle); err != nil {
		t.Fatal(err)
	}
	if e2, _, _ := s2.Put(payload(1, 1, 3000), Meta{Pending: true}, bigLimits); e2.Pending {
		t.Errorf("a pending put made a confirmed entry pending again: %+v", e2)
	}
	s.Close()
	s2.Close()
	s3 := openTestStore(t, dir, time.Now)
	if _, err := s3.Lookup(e.Handle, 0); err != nil {
		t.Errorf("a confirmed entry was removed after its writers closed: %v", err)
	}
	p, _, _ := s3.Put(payload(2, 2, 3000), Meta{Pending: true}, bigLimits)
	s3.Close()
	s4 := openTestStore(t, dir, time.Now)
	if _, err := s4.Lookup(p.Handle, 0); !errors.Is(err, ErrExpired) || !strings.Contains(err.Error(), "discarded unseen") {
		t.Errorf("a pending entry of a closed writer: Lookup = %v, want ErrExpired (discarded unseen)", err)
	}
	verifyStore(t, dir)
}

func TestStoreWriterKilledAtRandom(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 5; i++ {
		cmd := startChild(t, "OFFLOAD_CHILD=loop", "OFFLOAD_STORE="+dir, "OFFLOAD_SIZE="+strconv.Itoa(2<<20))
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		bufio.NewReader(out).ReadString('\n')
		time.Sleep(time.Duration(r.IntN(40)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		verifyStore(t, dir)
	}
	s := openTestStore(t, dir, time.Now)
	if err := s.Maintain(bigLimits); err != nil {
		t.Fatal(err)
	}
	es, _ := s.Entries()
	for _, e := range es {
		data := readBlob(t, s, e.Handle)
		if int64(len(data)) != e.Size {
			t.Errorf("entry %s: %d bytes, want %d", e.Handle, len(data), e.Size)
		}
	}
	verifyStore(t, dir)
}
