package relay

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pi-session/pi-session/atomicfile"
	"github.com/pi-session/pi-session/clip"
	"github.com/pi-session/pi-session/gcpace"
	"github.com/pi-session/pi-session/hostproc"
	"github.com/pi-session/pi-session/owndir"
	"github.com/pi-session/pi-session/regfile"
	"github.com/pi-session/pi-session/rotate"
	"github.com/pi-session/pi-session/session"
)

// Reader gives fn the session file at path, brought up to date (the engine
// host's session cache, or a plain session.Open for the command line).
type Reader func(path string, fn func(*session.File) error) error

// GitRunner returns the commits of the repository at dir since a time
// ("abc1234 subject", newest first).
type GitRunner func(ctx context.Context, dir, since string) ([]string, error)

// Payloads walks the offload store's payloads of one session: fn gets each
// payload's handle, the tool that made it, its size and its bytes (valid
// during the call).
type Payloads func(ctx context.Context, cwd, sessionID string, fn func(handle, source string, size int64, data []byte) error) error

// Options configure an Engine.
type Options struct {
	AgentDir string // notes go to <AgentDir>/context-relay/<sessionId>/<n>.md
	Git      GitRunner
	Payloads Payloads // nil: recall searches no offloaded results
	// MaxIndexes bounds the session indexes kept in memory (default 4).
	MaxIndexes int
}

// Engine is the relay engine of one engine host: notes, their files and
// the recall indexes of the sessions it serves. Safe for concurrent use.
type Engine struct {
	opt Options

	mu      sync.Mutex
	indexes map[string]*indexSlot // by session file path
	tick    uint64
	pending map[string]*pendingNote // by the extension's relay token
	locks   map[string]*sync.Mutex  // by session id: one note at a time

	// log is the relay log, opened at the first line (again after it
	// could not be: a full disk may have room later); under logMu.
	logMu sync.Mutex
	log   *rotate.Log
	// logLost marks the sessions told that their log lines are lost (by
	// session id), until a line of theirs is written again. Under mu.
	logLost map[string]bool

	warming map[string]bool // session files being indexed in the background
	wg      sync.WaitGroup  // the warm-ups running
	stop    context.Context // done at Close
	cancel  context.CancelFunc
	closed  bool
}

type indexSlot struct {
	mu   sync.Mutex
	ix   *Index
	used uint64
}

type pendingNote struct {
	path      string
	discarded bool
	at        time.Time
}

// New returns an Engine.
func New(opt Options) *Engine {
	if opt.Git == nil {
		opt.Git = RunGit
	}
	if opt.MaxIndexes <= 0 {
		opt.MaxIndexes = 4
	}
	stop, cancel := context.WithCancel(context.Background())
	return &Engine{opt: opt, indexes: map[string]*indexSlot{}, pending: map[string]*pendingNote{}, locks: map[string]*sync.Mutex{},
		warming: map[string]bool{}, logLost: map[string]bool{}, stop: stop, cancel: cancel}
}

// Dir is where the notes of a session are stored.
func (e *Engine) Dir(sessionID string) string {
	return filepath.Join(e.opt.AgentDir, "context-relay", sessionID)
}

// CheckDir checks the directories a session's notes go to, as writing
// and reading them will (owndir.Check): a warning to give once, or why
// notes can be neither written nor read there.
func (e *Engine) CheckDir(sessionID string) (string, error) {
	dir, levels := e.Dir(sessionID), 2
	if !safeID().MatchString(sessionID) {
		dir, levels = filepath.Dir(dir), 1
	}
	return owndir.Check(dir, levels)
}

// ConfigPath is <agentDir>/context-relay.json.
func ConfigPath(agentDir string) string { return filepath.Join(agentDir, "context-relay.json") }

var safeID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`) })

// NoteRequest asks for the note of a relay.
type NoteRequest struct {
	SessionID        string `json:"-"`
	SessionFile      string `json:"-"`
	Cwd              string `json:"-"`
	LeafID           string `json:"leafId"`
	FirstKeptEntryID string `json:"firstKeptEntryId"` // pi's own cut point (preparation.firstKeptEntryId)
	TokensBefore     int    `json:"tokensBefore"`
	// Token names this relay so that Discard can remove its note, even one
	// whose answer the extension never received (an abort raced it).
	Token string `json:"token"`
}

// NoteDetails are the compaction's details.
type NoteDetails struct {
	Relay    bool   `json:"relay"`
	Version  int    `json:"version"`
	NotePath string `json:"notePath"`
}

// NoteResult is the compaction pi appends, and what the note holds.
type NoteResult struct {
	Summary          string      `json:"summary"`
	FirstKeptEntryID string      `json:"firstKeptEntryId"`
	TokensBefore     int         `json:"tokensBefore"`
	Details          NoteDetails `json:"details"`
	N                int         `json:"n"`
	NoteChars        int         `json:"noteChars"`
}

// Prepared is a note laid out, not yet stored.
type Prepared struct {
	Text         string
	KeptFrom     string
	N            int
	Path         string
	TokensBefore int // as given, or estimated from the branch when not
}

// Compose lays out the note of the branch ending at leafID of the file at
// path: facts are gathered from the file, git is asked (outside the file's
// lock), and the note is laid out for note number n stored at notePath.
func Compose(ctx context.Context, read Reader, git GitRunner, path, leafID, piFirstKept string, tokensBefore int, cfg Config, n int, notePath string) (Prepared, error) {
	d, err := draft(ctx, read, git, path, leafID, piFirstKept, tokensBefore, cfg)
	if err != nil {
		return Prepared{}, err
	}
	return d.layout(n, notePath), nil
}

// noteDraft is what a note is laid out from, before its number is known.
type noteDraft struct {
	facts        Facts
	logs         []GitLog
	kept         string
	tokensBefore int
	limits       Limits
}

// draft gathers the facts of a note and asks git.
func draft(ctx context.Context, read Reader, git GitRunner, path, leafID, piFirstKept string, tokensBefore int, cfg Config) (noteDraft, error) {
	var facts Facts
	var kept string
	err := read(path, func(f *session.File) error {
		branch, err := f.Branch(leafID)
		if err != nil {
			return err
		}
		if len(branch) == 0 {
			return errors.New("relay: the session has no entries yet")
		}
		if size := branchBytes(branch); size > 16<<20 {
			// Reading a note makes short-lived garbage beside the session
			// held in memory: collected sooner, the peak stays near the
			// session's own size.
			defer gcpace.Sooner()()
		}
		v := newView(branch)
		v.lim = cfg.Limits
		kept = v.keptFrom(piFirstKept, cfg.TailMaxChars)
		if kept == "" {
			return errors.New("relay: nothing to keep: no user message and no cut point from pi")
		}
		facts = v.gather(f.Header, kept)
		if tokensBefore <= 0 {
			tokensBefore = session.EstimateContextTokens(branch, session.Project(branch)).Tokens
		}
		return nil
	})
	if err != nil {
		return noteDraft{}, err
	}
	return noteDraft{facts: facts, logs: gitLogs(ctx, git, facts, cfg), kept: kept, tokensBefore: tokensBefore, limits: cfg.Limits}, nil
}

// layout is the note as note number n stored at notePath (the note names
// both).
func (d noteDraft) layout(n int, notePath string) Prepared {
	text := Layout(d.facts, d.logs, nil, NoteMeta{N: n, Path: notePath, TokensBefore: d.tokensBefore, KeptFrom: d.kept}, d.limits)
	return Prepared{Text: text, KeptFrom: d.kept, N: n, Path: notePath, TokensBefore: d.tokensBefore}
}

// branchBytes is the size of the branch's lines.
func branchBytes(branch []*session.Entry) int {
	n := 0
	for _, e := range branch {
		n += len(e.Raw)
	}
	return n
}

// gitLogs asks git for the commits since the session started in the cwd
// and in the worktrees subagents used, each under the timeout; failures
// are left out.
func gitLogs(ctx context.Context, git GitRunner, f Facts, cfg Config) []GitLog {
	if git == nil || f.Started == "" || cfg.GitTimeoutMs <= 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(cfg.GitTimeoutMs)*time.Millisecond)
	defer cancel()
	var out []GitLog
	dirs := append([]string{f.Cwd}, f.Worktrees...)
	for _, d := range dirs {
		if d == "" {
			continue
		}
		commits, err := git(ctx, d, f.Started)
		if err != nil || len(commits) == 0 {
			continue
		}
		out = append(out, GitLog{Dir: d, Commits: commits})
	}
	return out
}

// RunGit runs git log in dir.
func RunGit(ctx context.Context, dir, since string) ([]string, error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("relay: git: %s is not a directory", dir)
	}
	cmd := exec.CommandContext(ctx, "git", "-C", dir, "log", "--since="+since, "--format=%h %s", "-n", "50", "--no-color")
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0")
	out, err := hostproc.Output(cmd)
	if err != nil {
		return nil, fmt.Errorf("relay: git log in %s: %w", dir, err)
	}
	var commits []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l != "" {
			commits = append(commits, l)
		}
	}
	return commits, nil
}

// Note lays out the note of a relay and stores it. The note is stored only
// while the request's context is live and its token was not discarded, and
// removed if either ends before Note returns: an aborted relay leaves no
// note file. Its number is taken exclusively: another engine host (a
// second pi on the same session) relaying at the same moment gets the next
// one, so every compaction points at its own note.
func (e *Engine) Note(ctx context.Context, read Reader, cfg Config, req NoteRequest) (NoteResult, error) {
	if !safeID().MatchString(req.SessionID) {
		return NoteResult{}, fmt.Errorf("relay: session id %q cannot name a directory", clip.Echo(req.SessionID))
	}
	if req.Token == "" {
		return NoteResult{}, errors.New("relay: note: no token")
	}
	lock := e.sessionLock(req.SessionID)
	lock.Lock()
	defer lock.Unlock()
	d, err := draft(ctx, read, e.opt.Git, req.SessionFile, req.LeafID, req.FirstKeptEntryID, req.TokensBefore, cfg)
	if err != nil {
		return NoteResult{}, err
	}
	dir := e.Dir(req.SessionID)
	var p Prepared
	for try := 0; ; try++ {
		n, err := takeNumber(dir)
		if err != nil {
			return NoteResult{}, err
		}
		p = d.layout(n, filepath.Join(dir, strconv.Itoa(n)+".md"))
		err = e.store(ctx, req.Token, p.Path, []byte(p.Text))
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) {
			return NoteResult{}, err
		}
		// Another host took n since takeNumber looked (its counter could
		// not be locked, or an older pi-session): lay the note out again
		// under the next number.
		if try == maxNoteTries-1 {
			return NoteResult{}, fmt.Errorf("relay: no note number free after %d tries in %s: other relays of this session keep taking them; try /relay again", maxNoteTries, dir)
		}
	}
	return NoteResult{
		Summary:          p.Text,
		FirstKeptEntryID: p.KeptFrom,
		TokensBefore:     p.TokensBefore,
		Details:          NoteDetails{Relay: true, Version: Version, NotePath: p.Path},
		N:                p.N,
		NoteChars:        runes(p.Text),
	}, nil
}

// maxNoteTries bounds how often a relay lays its note out again because
// another host took the number it chose.
const maxNoteTries = 64

// store writes a note under its token, creating the file exclusively (an
// error satisfying errors.Is(err, fs.ErrExist) when the number is taken).
// Writing and Discard exclude each other, so whichever comes second sees
// the other's effect.
func (e *Engine) store(ctx context.Context, token, path string, data []byte) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.prunePending()
	p := e.pending[token]
	if p != nil && p.discarded {
		return errors.New("relay: the relay was cancelled")
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("relay: the relay was cancelled: %w", err)
	}
	// <agentDir>/context-relay/<sessionId>: refused when someone else
	// could write there (the note is read back, by recall and the model).
	if _, err := owndir.Make(filepath.Dir(path), 2); err != nil {
		return fmt.Errorf("relay: notes: %w", err)
	}
	if err := atomicfile.Create(path, data, 0o600); err != nil {
		return fmt.Errorf("relay: store note: %w", err)
	}
	e.pending[token] = &pendingNote{path: path, at: time.Now()}
	if err := ctx.Err(); err != nil {
		os.Remove(path)
		e.pending[token].discarded = true
		return fmt.Errorf("relay: the relay was cancelled: %w", err)
	}
	return nil
}

// Discard removes the note of a relay that did not complete (aborted, or
// the compaction failed). A token not seen yet is remembered, so a note
// still being laid out is never stored. It reports whether a file was
// removed.
func (e *Engine) Discard(token string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.pending[token]
	if p == nil {
		e.pending[token] = &pendingNote{discarded: true, at: time.Now()}
		return false
	}
	removed := false
	if !p.discarded && p.path != "" {
		removed = os.Remove(p.path) == nil
	}
	p.discarded = true
	return removed
}

// prunePending forgets tokens older than an hour. Called with e.mu held.
func (e *Engine) prunePending() {
	for t, p := range e.pending {
		if time.Since(p.at) > time.Hour {
			delete(e.pending, t)
		}
	}
}

func (e *Engine) sessionLock(id string) *sync.Mutex {
	e.mu.Lock()
	defer e.mu.Unlock()
	l := e.locks[id]
	if l == nil {
		l = &sync.Mutex{}
		e.locks[id] = l
	}
	return l
}

var noteName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([0-9]{1,9})\.md$`) })

// NextNote is one more than the highest note number in dir.
func NextNote(dir string) int {
	ents, _ := os.ReadDir(dir)
	n := 0
	for _, d := range ents {
		if m := noteName().FindStringSubmatch(d.Name()); m != nil {
			k, _ := strconv.Atoi(m[1])
			n = max(n, k)
		}
	}
	return n + 1
}

// maxNoteBytes bounds a note file read back: a note is at most
// Limits.Total characters, far below this.
const maxNoteBytes = 16 << 20

// ReadNoteFile reads note n of a session.
func (e *Engine) ReadNoteFile(sessionID string, n int) ([]byte, error) {
	if !safeID().MatchString(sessionID) {
		return nil, fmt.Errorf("relay: session id %q cannot name a directory", clip.Echo(sessionID))
	}
	// The note directory is the relay's own: a note in a directory someone
	// else could write to is not read, a link there is not followed, and
	// a FIFO or a device is refused rather than read.
	if _, err := owndir.Check(e.Dir(sessionID), 2); err != nil {
		return nil, fmt.Errorf("relay: notes: %w", err)
	}
	data, err := regfile.ReadNoFollow(filepath.Join(e.Dir(sessionID), strconv.Itoa(n)+".md"), maxNoteBytes)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no note %d (this session's relays wrote %d)", n, NextNote(e.Dir(sessionID))-1)
	}
	return data, err
}

// LogEntry is one line of <agentDir>/context-relay/log.jsonl.
type LogEntry struct {
	At           string `json:"at"`
	SessionID    string `json:"sessionId"`
	Trigger      string `json:"trigger"` // manual, input or expiry
	TokensBefore int    `json:"tokensBefore"`
	NoteChars    int    `json:"noteChars"`
	KeptFrom     string `json:"keptFrom"`
	OK           bool   `json:"ok"`
	Error        string `json:"error,omitempty"`
}

// LogPath is <agentDir>/context-relay/log.jsonl, the relays' log.
func (e *Engine) LogPath() string { return filepath.Join(e.opt.AgentDir, "context-relay", "log.jsonl") }

// Log appends one relay to the log, through rotate (5 MiB, 3 archives). A
// line that cannot be written (a full disk, a directory that is not
// writable) is lost, and err says why; warning is what the session's user
// is told about it, once: it is set for the first lost line of a session,
// and again only after one of its lines was written.
func (e *Engine) Log(l LogEntry) (warning string, err error) {
	if err = e.appendLog(l); err == nil {
		e.mu.Lock()
		delete(e.logLost, l.SessionID)
		e.mu.Unlock()
		return "", nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.logLost[l.SessionID] {
		return "", err
	}
	e.logLost[l.SessionID] = true
	return fmt.Sprintf("the relay log %s could not be written (%s); relays go on without their log lines, and this is said once", clip.Echo(e.LogPath()), clip.Visible(cause(err))), err
}

// appendLog writes one line to the log, opening it first when it is not.
func (e *Engine) appendLog(l LogEntry) error {
	e.logMu.Lock()
	defer e.logMu.Unlock()
	if e.log == nil {
		if _, err := owndir.Make(filepath.Dir(e.LogPath()), 1); err != nil {
			return fmt.Errorf("relay: log: %w", err)
		}
		lg, err := rotate.New(e.LogPath(), rotate.Policy{MaxBytes: 5 << 20, Keep: 3})
		if err != nil {
			return fmt.Errorf("relay: log: %w", err)
		}
		e.log = lg
	}
	if err := e.log.AppendJSON(l); err != nil {
		return fmt.Errorf("relay: log: %w", err)
	}
	return nil
}

// cause is what the user is told of err: the system's own word when it
// comes from a system call ("no space left on device"), else all of it.
func cause(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	return err.Error()
}

// Close stops the warm-ups, waits for them, and releases the log.
func (e *Engine) Close() error {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	e.cancel()
	e.wg.Wait()
	e.logMu.Lock()
	defer e.logMu.Unlock()
	if e.log != nil {
		return e.log.Close()
	}
	return nil
}
