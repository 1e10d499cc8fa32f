package offload

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/pi-session/pi-session/atomicfile"
	"github.com/pi-session/pi-session/owndir"
)

// The store's layout under <workspace>/.pi/context-store:
//
//	blobs/<sha256 hex>   one payload, mode 0600, written to blobs/.tmp-<writer>-* and renamed
//	index.jsonl          append-only log of put and del records (compacted now and then)
//	lock                 flock'd by a process changing the store
//	live/<writer>        flock'd for as long as the Store that writes as <writer> is open
//
// A put appends its record before it renames the blob into place, both
// under the lock, so a writer killed in between leaves a record without a
// blob (dangling, removed), never a blob without a record; an unrecorded
// blob means the index was lost, and is adopted. A put may be pending: its
// handle is not handed out yet (the engine has still to answer pi), and
// until Confirm it belongs to its writer. A Store opening a directory
// removes what dead writers left: temporary blobs, dangling entries and
// pending entries nobody confirmed, whose handles no model ever saw.
//
// A handle is "ce_" and the first 24 hex digits of the payload's SHA-256, so
// identical payloads share one blob and one handle, and a blob whose index
// record was lost (a crash between rename and append, a corrupt index) can
// be adopted again from its name alone.

// Sentinel errors of payload lookups.
var (
	ErrNotFound = errors.New("offload: no such handle")
	ErrExpired  = errors.New("offload: payload expired")
)

const (
	handlePrefix = "ce_"
	handleHex    = 24
	// staleTemp is the age after which a temporary blob whose name has no
	// writer (written by an earlier version) is abandoned.
	staleTemp = time.Hour
	// scanEvery is how often a writing process re-checks the blob directory
	// for dangling entries, orphaned blobs and abandoned temporary files.
	scanEvery = 10 * time.Minute
	// keepTombstones bounds the del records kept by a compaction, so an
	// evicted handle is reported as expired rather than unknown.
	keepTombstones = 2000
)

// compactSlack is how many superseded index lines a store tolerates before
// a compaction rewrites the index (tests lower it).
var compactSlack = 1024

// storeHook, when set by a test, is called at named points of a put.
var storeHook func(stage string)

func hookAt(stage string) {
	if storeHook != nil {
		storeHook(stage)
	}
}

// Entry is the metadata of one stored payload.
type Entry struct {
	Handle  string `json:"h"`
	SHA     string `json:"sha"`
	Size    int64  `json:"size"`
	Time    int64  `json:"t"`              // unix milliseconds of the latest put
	Kind    string `json:"kind,omitempty"` // "text", "textBlocks", "json", "recovered"
	Source  string `json:"src,omitempty"`  // tool name or ctx_offload source
	Key     string `json:"key,omitempty"`  // ctx_offload key
	Session string `json:"session,omitempty"`
	// Full is the file the payload was copied from: the full output a tool
	// saved when it cut its result (pi's bash "Full output: <path>").
	Full string `json:"full,omitempty"`
	// Pending: the handle was not handed out yet; Writer, the writer it
	// belongs to until then (see Confirm).
	Pending bool   `json:"pending,omitempty"`
	Writer  string `json:"w,omitempty"`
}

// Meta describes a payload being stored. Pending keeps the entry its
// writer's until Confirm: should the writer die first, the next Store to
// open the directory removes it.
type Meta struct {
	Kind, Source, Key, Session string
	Full                       string // see Entry.Full
	Pending                    bool
}

// Limits are the store's retention rules, from the configuration.
type Limits struct {
	MaxBytes int64
	TTL      time.Duration
}

type record struct {
	Op string `json:"op"`
	Entry
	Why string `json:"why,omitempty"`
}

type tombstone struct {
	Time int64
	Why  string
}

// Store is a content-addressed payload store in one directory, shared by
// every process of a workspace. A Store is safe for concurrent use.
type Store struct {
	dir, blobs, index string
	now               func() time.Time

	mu       sync.Mutex
	lockF    *os.File
	entries  map[string]Entry
	tombs    map[string]tombstone
	ino      uint64
	off      int64
	lines    int
	bad      int
	lastScan time.Time
	writer   string   // this Store's name in live/ and in temporary blobs
	live     *os.File // live/<writer>, flock'd while the Store is open
	warning  string   // about the directory, from OpenStore
}

// Warning is what OpenStore found to say about the store's directory (a
// symbolic link: where it leads), the first time this process opened it;
// "" otherwise.
func (s *Store) Warning() string { return s.warning }

// OpenStore opens (creating when needed, mode 0700) the store in dir. It
// reads the index and removes what writers that died left behind (see
// Sweep); it stores nothing.
func OpenStore(dir string, now func() time.Time) (*Store, error) {
	s := &Store{dir: dir, blobs: filepath.Join(dir, "blobs"), index: filepath.Join(dir, "index.jsonl"), now: now}
	// <dir> and <dir>/blobs: refused when someone else could write there
	// (payloads are read back into the model's context); a link is used
	// and said once (Warning).
	w, err := owndir.Make(s.blobs, 2)
	if err != nil {
		return nil, fmt.Errorf("offload: store: %w", err)
	}
	s.warning = w
	for _, d := range []string{dir, s.blobs} {
		if err := os.Chmod(d, 0o700); err != nil {
			return nil, fmt.Errorf("offload: store: %w", err)
		}
	}
	if err := s.locked(func() error { return s.sweep(false) }); err != nil {
		if s.lockF != nil {
			s.lockF.Close()
		}
		return nil, err
	}
	return s, nil
}

// Dir is the store's directory.
func (s *Store) Dir() string { return s.dir }

// Close releases the lock file and the writer's name: pending entries not
// confirmed by now are removed by the next Store to open the directory.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	if s.live != nil {
		os.Remove(s.live.Name())
		errs = append(errs, s.live.Close())
		s.live = nil
	}
	if s.lockF != nil {
		errs = append(errs, s.lockF.Close())
		s.lockF = nil
	}
	return errors.Join(errs...)
}

func (s *Store) liveDir() string { return filepath.Join(s.dir, "live") }

// randomHex is n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// ensureWriter gives the Store its writer name: a file in live/ that it
// keeps flock'd while open, created under the store's lock so that a sweep
// never sees it unlocked.
func (s *Store) ensureWriter() (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.live != nil {
		return s.writer, nil
	}
	if err := s.lock(); err != nil {
		return "", err
	}
	defer s.unlock()
	if _, err := owndir.Make(s.liveDir(), 1); err != nil {
		return "", fmt.Errorf("offload: store: %w", err)
	}
	for {
		name := randomHex(8)
		f, err := os.OpenFile(filepath.Join(s.liveDir(), name), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("offload: store: %w", err)
		}
		if err := lockFile(f); err != nil {
			f.Close()
			os.Remove(f.Name())
			return "", fmt.Errorf("offload: store: %w", err)
		}
		s.writer, s.live = name, f
		return name, nil
	}
}

// liveWriters reports which writers in live/ are open: their file is
// flock'd. The files of dead writers are removed. Called under the lock.
func (s *Store) liveWriters() map[string]bool {
	alive := map[string]bool{}
	if s.writer != "" {
		alive[s.writer] = true
	}
	ents, err := os.ReadDir(s.liveDir())
	if err != nil {
		return alive
	}
	for _, d := range ents {
		name := d.Name()
		if alive[name] {
			continue
		}
		f, err := os.Open(filepath.Join(s.liveDir(), name))
		if err != nil {
			continue
		}
		if tryLockFile(f) {
			os.Remove(f.Name()) // its Store is gone: nobody holds the lock
		} else {
			alive[name] = true
		}
		f.Close()
	}
	return alive
}

// tempWriter is the writer named in a temporary blob's name
// (.tmp-<writer>-<random>), or "" for names of earlier versions.
func tempWriter(name string) string {
	rest, ok := strings.CutPrefix(name, ".tmp-")
	if !ok {
		return ""
	}
	w, _, ok := strings.Cut(rest, "-")
	if !ok || len(w) != 16 {
		return ""
	}
	return w
}

// HandleOf is the handle of a payload with the given SHA-256.
func HandleOf(sum []byte) string { return handlePrefix + hex.EncodeToString(sum)[:handleHex] }

// ValidHandle reports whether h has the form of a handle.
func ValidHandle(h string) bool {
	if len(h) != len(handlePrefix)+handleHex || !strings.HasPrefix(h, handlePrefix) {
		return false
	}
	for _, c := range h[len(handlePrefix):] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func validSHA(name string) bool {
	if len(name) != 64 {
		return false
	}
	for _, c := range name {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// refresh brings the in-memory index up to date with the file: it reads only
// the lines appended since the last refresh, or everything after a
// compaction replaced the file. Called with s.mu held.
func (s *Store) refresh() error {
	f, err := os.Open(s.index)
	if errors.Is(err, fs.ErrNotExist) {
		s.reset(0)
		return nil
	}
	if err != nil {
		return fmt.Errorf("offload: store index: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("offload: store index: %w", err)
	}
	if ino := inode(fi); ino != s.ino || fi.Size() < s.off || s.entries == nil {
		s.reset(ino)
	}
	if fi.Size() == s.off {
		return nil
	}
	r := bufio.NewReaderSize(io.NewSectionReader(f, s.off, fi.Size()-s.off), 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			// A line without its newline is being appended, or was torn
			// by a crash: leave it for the next refresh or compaction.
			break
		}
		s.off += int64(len(line))
		s.apply(line)
	}
	return nil
}

func (s *Store) reset(ino uint64) {
	s.entries, s.tombs = map[string]Entry{}, map[string]tombstone{}
	s.ino, s.off, s.lines, s.bad = ino, 0, 0, 0
}

func (s *Store) apply(line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	s.lines++
	var r record
	if err := json.Unmarshal(line, &r); err != nil || !ValidHandle(r.Handle) {
		s.bad++
		return
	}
	switch r.Op {
	case "put":
		if !validSHA(r.SHA) || HandleOf(mustHex(r.SHA)) != r.Handle || r.Size < 0 {
			s.bad++
			return
		}
		if old, ok := s.entries[r.Handle]; ok {
			if old.Time > r.Time {
				r.Time = old.Time
			}
			if !old.Pending {
				r.Pending, r.Writer = false, "" // confirmed once, confirmed for good
			}
		}
		s.entries[r.Handle] = r.Entry
		delete(s.tombs, r.Handle)
	case "del":
		if e, ok := s.entries[r.Handle]; ok && e.Time > r.Time {
			return // a put newer than this del (clock skew between processes)
		}
		delete(s.entries, r.Handle)
		s.tombs[r.Handle] = tombstone{Time: r.Time, Why: r.Why}
	default:
		s.bad++
	}
}

func mustHex(s string) []byte {
	b, _ := hex.DecodeString(s)
	return b
}

func (s *Store) blobPath(sha string) string { return filepath.Join(s.blobs, sha) }

// lock takes the store's cross-process lock; s.mu must be held.
func (s *Store) lock() error {
	if s.lockF == nil {
		f, err := os.OpenFile(filepath.Join(s.dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return fmt.Errorf("offload: store lock: %w", err)
		}
		s.lockF = f
	}
	if err := lockFile(s.lockF); err != nil {
		return fmt.Errorf("offload: store lock: %w", err)
	}
	return nil
}

func (s *Store) unlock() { unlockFile(s.lockF) }

// appendRecords writes records to the index as one write(2), after a newline
// if a crashed writer left the file without one. Called under the lock.
func (s *Store) appendRecords(recs []record) error {
	if len(recs) == 0 {
		return nil
	}
	var buf bytes.Buffer
	f, err := os.OpenFile(s.index, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("offload: store index: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, fi.Size()-1); err == nil && last[0] != '\n' {
			buf.WriteByte('\n')
		}
	}
	for _, r := range recs {
		b, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("offload: store index: %w", err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("offload: store index: %w", err)
	}
	return nil
}

// Put stores data and returns its entry, and whether an identical payload
// was already stored. The entry's time becomes now, so a payload stored again
// is the newest and is not evicted. Cleanup of expired, over-budget, dangling
// and orphaned entries runs before Put returns.
func (s *Store) Put(data []byte, meta Meta, lim Limits) (Entry, bool, error) {
	sum := sha256.Sum256(data)
	sha := hex.EncodeToString(sum[:])
	if lim.MaxBytes > 0 && int64(len(data)) > lim.MaxBytes {
		return Entry{}, false, fmt.Errorf("offload: payload of %d bytes exceeds storeMaxBytes %d", len(data), lim.MaxBytes)
	}
	if meta.Pending {
		if _, err := s.ensureWriter(); err != nil {
			return Entry{}, false, err
		}
	}
	for attempt := 0; ; attempt++ {
		var tmp string
		if !s.blobOK(sha, int64(len(data))) {
			var err error
			if tmp, err = s.writeTemp(func(w io.Writer) error { _, err := w.Write(data); return err }, nil); err != nil {
				return Entry{}, false, err
			}
		}
		e, existed, retry, err := s.commit(sha, int64(len(data)), tmp, meta, lim)
		if !retry || attempt > 2 {
			return e, existed, err
		}
	}
}

// PutStream stores what write writes, hashing it on the way to a temporary
// file: memory stays bounded whatever the size.
func (s *Store) PutStream(write func(io.Writer) error, meta Meta, lim Limits) (Entry, bool, error) {
	h := sha256.New()
	tmp, err := s.writeTemp(write, h)
	if err != nil {
		return Entry{}, false, err
	}
	fi, err := os.Stat(tmp)
	if err != nil {
		os.Remove(tmp)
		return Entry{}, false, fmt.Errorf("offload: store: %w", err)
	}
	if lim.MaxBytes > 0 && fi.Size() > lim.MaxBytes {
		os.Remove(tmp)
		return Entry{}, false, fmt.Errorf("offload: payload of %d bytes exceeds storeMaxBytes %d", fi.Size(), lim.MaxBytes)
	}
	e, existed, _, err := s.commit(hex.EncodeToString(h.Sum(nil)), fi.Size(), tmp, meta, lim)
	return e, existed, err
}

func (s *Store) blobOK(sha string, size int64) bool {
	fi, err := os.Stat(s.blobPath(sha))
	return err == nil && fi.Mode().IsRegular() && fi.Size() == size
}

// writeTemp writes a complete, fsynced temporary blob, named after the
// Store's writer so that a sweep can tell whether its writer is alive.
func (s *Store) writeTemp(write func(io.Writer) error, h io.Writer) (name string, err error) {
	writer, err := s.ensureWriter()
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp(s.blobs, ".tmp-"+writer+"-*")
	if err != nil {
		return "", fmt.Errorf("offload: store: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err = f.Chmod(0o600); err != nil {
		return "", fmt.Errorf("offload: store: %w", err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	var w io.Writer = bw
	if h != nil {
		w = io.MultiWriter(bw, h)
	}
	hookAt("temp-open")
	if err = write(w); err != nil {
		return "", fmt.Errorf("offload: store: write: %w", err)
	}
	if err = bw.Flush(); err != nil {
		return "", fmt.Errorf("offload: store: write: %w", err)
	}
	hookAt("temp-written")
	if err = f.Sync(); err != nil {
		return "", fmt.Errorf("offload: store: fsync: %w", err)
	}
	if err = f.Close(); err != nil {
		return "", fmt.Errorf("offload: store: %w", err)
	}
	return f.Name(), nil
}

// commit makes a payload visible: rename of its temporary blob (if any),
// then its put record, under the lock. retry is set when the blob, found
// present before the lock, was evicted meanwhile.
func (s *Store) commit(sha string, size int64, tmp string, meta Meta, lim Limits) (e Entry, existed, retry bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.lock(); err != nil {
		if tmp != "" {
			os.Remove(tmp)
		}
		return Entry{}, false, false, err
	}
	defer s.unlock()
	if err := s.refresh(); err != nil {
		if tmp != "" {
			os.Remove(tmp)
		}
		return Entry{}, false, false, err
	}
	handle := HandleOf(mustHex(sha))
	_, existed = s.entries[handle]
	if tmp == "" && !s.blobOK(sha, size) {
		return Entry{}, false, true, nil
	}
	if tmp != "" && s.blobOK(sha, size) {
		os.Remove(tmp) // another process stored the same payload meanwhile
		tmp = ""
	}
	now := s.now().UnixMilli()
	if old, ok := s.entries[handle]; ok && old.Time >= now {
		now = old.Time + 1 // keep the newest put the newest, even on a coarse clock
	}
	e = Entry{Handle: handle, SHA: sha, Size: size, Time: now, Kind: meta.Kind, Source: meta.Source, Key: meta.Key, Session: meta.Session, Full: meta.Full}
	if meta.Pending {
		e.Pending, e.Writer = true, s.writer // Put and PutStream made sure there is one
	}
	// The record goes first: a writer killed before the rename leaves a
	// record without its blob, which a sweep removes as dangling.
	if err := s.appendRecords([]record{{Op: "put", Entry: e}}); err != nil {
		if tmp != "" {
			os.Remove(tmp)
		}
		return Entry{}, false, false, err
	}
	hookAt("appended")
	if tmp != "" {
		if err := os.Rename(tmp, s.blobPath(sha)); err != nil {
			os.Remove(tmp)
			s.appendRecords([]record{{Op: "del", Entry: Entry{Handle: handle, SHA: sha, Time: now}, Why: "failed"}})
			s.refresh()
			return Entry{}, false, false, fmt.Errorf("offload: store: %w", err)
		}
		hookAt("renamed")
		if err := atomicfile.SyncDir(s.blobs); err != nil {
			return Entry{}, false, false, fmt.Errorf("offload: store: %w", err)
		}
	}
	if err := s.refresh(); err != nil {
		return Entry{}, false, false, err
	}
	if cur, ok := s.entries[handle]; ok {
		e = cur // a confirmed entry stays confirmed
	}
	if err := s.cleanup(lim, handle); err != nil {
		return e, existed, false, err
	}
	return e, existed, false, nil
}

// Confirm records that a pending entry's handle was handed out: it stays
// whatever becomes of its writer. Confirming a confirmed or unknown
// handle does nothing.
func (s *Store) Confirm(handle string) error {
	return s.locked(func() error {
		e, ok := s.entries[handle]
		if !ok || !e.Pending {
			return nil
		}
		e.Pending, e.Writer = false, ""
		if err := s.appendRecords([]record{{Op: "put", Entry: e}}); err != nil {
			return err
		}
		return s.refresh()
	})
}

// locked runs fn with s.mu and the store's lock held, the index up to date.
func (s *Store) locked(fn func() error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.lock(); err != nil {
		return err
	}
	defer s.unlock()
	if err := s.refresh(); err != nil {
		return err
	}
	return fn()
}

// Removal is one entry the cleanup plan removes, and why.
type Removal struct {
	Handle string
	Why    string // "expired" or "evicted"
}

// PlanCleanup decides which entries go: those older than lim.TTL, then the
// oldest while the total exceeds lim.MaxBytes. The newest entry (latest
// time; keep breaks ties) is never removed.
func PlanCleanup(entries []Entry, now time.Time, lim Limits, keep string) []Removal {
	es := append([]Entry(nil), entries...)
	sort.Slice(es, func(i, j int) bool {
		if es[i].Time != es[j].Time {
			return es[i].Time < es[j].Time
		}
		if es[i].Handle == keep || es[j].Handle == keep {
			return es[j].Handle == keep
		}
		return es[i].Handle < es[j].Handle
	})
	if len(es) == 0 {
		return nil
	}
	newest := es[len(es)-1].Handle
	var out []Removal
	var total int64
	var live []Entry
	for _, e := range es {
		if e.Handle != newest && lim.TTL > 0 && now.UnixMilli()-e.Time > lim.TTL.Milliseconds() {
			out = append(out, Removal{e.Handle, "expired"})
			continue
		}
		live = append(live, e)
		total += e.Size
	}
	for _, e := range live {
		if lim.MaxBytes <= 0 || total <= lim.MaxBytes || e.Handle == newest {
			break
		}
		out = append(out, Removal{e.Handle, "evicted"})
		total -= e.Size
	}
	return out
}

// cleanup applies PlanCleanup and, every scanEvery, reconciles the index
// with the blob directory. Called under the lock with s.mu held.
func (s *Store) cleanup(lim Limits, keep string) error {
	var errs []error
	if s.lastScan.IsZero() || s.now().Sub(s.lastScan) >= scanEvery {
		s.lastScan = s.now()
		if err := s.sweep(true); err != nil {
			errs = append(errs, err)
		}
	}
	list := make([]Entry, 0, len(s.entries))
	for _, e := range s.entries {
		list = append(list, e)
	}
	plan := PlanCleanup(list, s.now(), lim, keep)
	if err := s.remove(plan); err != nil {
		errs = append(errs, err)
	}
	if s.lines > 2*len(s.entries)+compactSlack || s.bad > 0 {
		if err := s.compact(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// remove records the removals, then deletes their blobs: a crash in between
// leaves blobs that the next scan deletes because their tombstones are newer.
func (s *Store) remove(plan []Removal) error {
	if len(plan) == 0 {
		return nil
	}
	now := s.now().UnixMilli()
	recs := make([]record, 0, len(plan))
	var shas []string
	for _, r := range plan {
		e, ok := s.entries[r.Handle]
		if !ok {
			continue
		}
		t := now
		if e.Time > t {
			t = e.Time // a del must not be older than the put it removes
		}
		recs = append(recs, record{Op: "del", Entry: Entry{Handle: r.Handle, SHA: e.SHA, Time: t}, Why: r.Why})
		shas = append(shas, e.SHA)
	}
	if err := s.appendRecords(recs); err != nil {
		return err
	}
	if err := s.refresh(); err != nil {
		return err
	}
	var errs []error
	for _, sha := range shas {
		if err := os.Remove(s.blobPath(sha)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("offload: store: %w", err))
		}
	}
	return errors.Join(errs...)
}

// sweep removes what dead writers left: their temporary blobs, dangling
// entries (a record whose blob is gone or has the wrong size) and their
// pending entries, which no model saw. With adopt it also adopts complete
// blobs that no record names (a lost or damaged index) and deletes blobs
// of removed entries. Called under the lock with s.mu held.
func (s *Store) sweep(adopt bool) error {
	ents, err := os.ReadDir(s.blobs)
	if err != nil {
		return fmt.Errorf("offload: store: %w", err)
	}
	alive := s.liveWriters()
	present := map[string]int64{}
	var adopted []record
	now := s.now()
	bySHA := map[string]string{}
	for h, e := range s.entries {
		bySHA[e.SHA] = h
	}
	for _, d := range ents {
		name := d.Name()
		info, err := d.Info()
		if err != nil {
			continue
		}
		if strings.HasPrefix(name, ".tmp-") {
			w := tempWriter(name)
			if w != "" && !alive[w] || w == "" && now.Sub(info.ModTime()) > staleTemp {
				os.Remove(filepath.Join(s.blobs, name))
			}
			continue
		}
		if !validSHA(name) || !info.Mode().IsRegular() {
			continue
		}
		present[name] = info.Size()
		if _, ok := bySHA[name]; ok || !adopt {
			continue
		}
		h := HandleOf(mustHex(name))
		if t, ok := s.tombs[h]; ok && t.Time >= info.ModTime().UnixMilli() {
			os.Remove(filepath.Join(s.blobs, name))
			continue
		}
		adopted = append(adopted, record{Op: "put", Entry: Entry{Handle: h, SHA: name, Size: info.Size(), Time: info.ModTime().UnixMilli(), Kind: "recovered"}})
	}
	var plan []Removal
	for h, e := range s.entries {
		switch size, ok := present[e.SHA]; {
		case !ok || size != e.Size:
			plan = append(plan, Removal{h, "dangling"})
		case e.Pending && !alive[e.Writer]:
			plan = append(plan, Removal{h, "discarded unseen"})
		}
	}
	sort.Slice(plan, func(i, j int) bool { return plan[i].Handle < plan[j].Handle })
	// A dangling entry's blob is absent or wrong: removing it by name is
	// right in both cases (a wrong-size blob is not the payload).
	if err := s.remove(plan); err != nil {
		return err
	}
	if err := s.appendRecords(adopted); err != nil {
		return err
	}
	return s.refresh()
}

// compact rewrites the index with one record per live entry plus the newest
// tombstones. Readers in other processes notice the new inode and reload.
func (s *Store) compact() error {
	var buf bytes.Buffer
	es := make([]Entry, 0, len(s.entries))
	for _, e := range s.entries {
		es = append(es, e)
	}
	sort.Slice(es, func(i, j int) bool {
		return es[i].Time < es[j].Time || es[i].Time == es[j].Time && es[i].Handle < es[j].Handle
	})
	type tomb struct {
		h string
		tombstone
	}
	ts := make([]tomb, 0, len(s.tombs))
	for h, t := range s.tombs {
		ts = append(ts, tomb{h, t})
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Time > ts[j].Time || ts[i].Time == ts[j].Time && ts[i].h < ts[j].h })
	if len(ts) > keepTombstones {
		ts = ts[:keepTombstones]
	}
	for i := len(ts) - 1; i >= 0; i-- {
		b, _ := json.Marshal(record{Op: "del", Entry: Entry{Handle: ts[i].h, Time: ts[i].Time}, Why: ts[i].Why})
		buf.Write(b)
		buf.WriteByte('\n')
	}
	for _, e := range es {
		b, _ := json.Marshal(record{Op: "put", Entry: e})
		buf.Write(b)
		buf.WriteByte('\n')
	}
	if err := atomicfile.WriteFile(s.index, buf.Bytes(), 0o600); err != nil {
		return fmt.Errorf("offload: store: compact index: %w", err)
	}
	s.reset(0)
	return s.refresh()
}

// Blob is an open stored payload. Data is valid until Close.
type Blob struct {
	Entry
	Data  []byte
	close func() error
	f     *os.File
}

// Close releases the payload's mapping.
func (b *Blob) Close() error {
	err := b.close()
	if cerr := b.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Lookup returns the entry of a handle. An unknown handle gives ErrNotFound;
// a handle removed by cleanup, or older than ttl, gives ErrExpired.
func (s *Store) Lookup(handle string, ttl time.Duration) (Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refresh(); err != nil {
		return Entry{}, err
	}
	e, ok := s.entries[handle]
	if !ok {
		if t, ok := s.tombs[handle]; ok {
			return Entry{}, fmt.Errorf("%w: %s was %s %s", ErrExpired, handle, t.Why, time.UnixMilli(t.Time).UTC().Format(time.RFC3339))
		}
		return Entry{}, fmt.Errorf("%w: %s", ErrNotFound, handle)
	}
	if ttl > 0 && s.now().UnixMilli()-e.Time > ttl.Milliseconds() {
		return Entry{}, fmt.Errorf("%w: %s was stored %s, more than storeTtlMs ago", ErrExpired, handle, time.UnixMilli(e.Time).UTC().Format(time.RFC3339))
	}
	return e, nil
}

// Open maps the payload of a handle.
func (s *Store) Open(handle string, ttl time.Duration) (*Blob, error) {
	e, err := s.Lookup(handle, ttl)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(s.blobPath(e.SHA))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: the payload of %s is no longer in the store", ErrExpired, handle)
	}
	if err != nil {
		return nil, fmt.Errorf("offload: store: %w", err)
	}
	fi, err := f.Stat()
	if err != nil || fi.Size() != e.Size {
		f.Close()
		return nil, fmt.Errorf("%w: the payload of %s is damaged (size changed)", ErrExpired, handle)
	}
	data, unmap, err := mapFile(f, e.Size)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &Blob{Entry: e, Data: data, close: unmap, f: f}, nil
}

// Entries lists the live entries, newest first.
func (s *Store) Entries() ([]Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refresh(); err != nil {
		return nil, err
	}
	es := make([]Entry, 0, len(s.entries))
	for _, e := range s.entries {
		es = append(es, e)
	}
	sort.Slice(es, func(i, j int) bool {
		return es[i].Time > es[j].Time || es[i].Time == es[j].Time && es[i].Handle < es[j].Handle
	})
	return es, nil
}

// Clear removes every payload.
func (s *Store) Clear() (int, error) {
	var plan []Removal
	err := s.locked(func() error {
		for h := range s.entries {
			plan = append(plan, Removal{h, "cleared"})
		}
		sort.Slice(plan, func(i, j int) bool { return plan[i].Handle < plan[j].Handle })
		if err := s.remove(plan); err != nil {
			return err
		}
		return s.compact()
	})
	if err != nil {
		return 0, err
	}
	return len(plan), nil
}

// Maintain runs the cleanup now (it otherwise runs as payloads are stored).
func (s *Store) Maintain(lim Limits) error {
	return s.locked(func() error {
		s.lastScan = time.Time{}
		return s.cleanup(lim, "")
	})
}
