package offload

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/pi-session/pi-session/gitexclude"
	"github.com/pi-session/pi-session/jsonscan"

	"github.com/pi-session/pi-session/clip"
)

// Options configure an Engine.
type Options struct {
	// Workspace is the workspace root (pi's cwd): the store lives in
	// <Workspace>/.pi/context-store and the configuration in
	// <Workspace>/.pi/context-engineer.json.
	Workspace string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// ArtifactDirs are the directories from which the full output of a
	// truncated result (pi's bash "Full output: <path>", Fabric's saved
	// text) may be read; nil means os.TempDir().
	ArtifactDirs []string
	// Log gets one line when storing starts failing (with the error) and
	// one when it works again; nil discards them.
	Log *slog.Logger
}

// Engine is the offload engine of one workspace. It is safe for concurrent
// use; several processes may run an Engine on the same workspace.
type Engine struct {
	ws, storeDir string
	now          func() time.Time
	cfg          *configLoader
	artifactDirs []string
	log          *slog.Logger

	openMu sync.Mutex
	store  *Store
	tel    *telemetry

	mu        sync.Mutex
	sessions  map[string]*sessionState
	storeDown bool // the last store failed: the outage is logged
	// dirWarning is said once to each session that stores: the store's
	// directory is a symbolic link (owndir).
	dirWarning  string
	excludeOnce sync.Once // keepOutOfGit
}

type sessionState struct {
	turn     int
	exposed  int64
	shown    map[string]bool   // handles whose preview the session saw
	offloads map[string]string // input fingerprint -> handle, of boundary offloads
	// programRead is the fingerprint of a handle a program read since the
	// last model-boundary result: that result derives from it.
	programRead string
	// storeDown: the session was told that storing fails, and is not told
	// again until storing has worked once.
	storeDown bool
	dirWarned bool // the session was told dirWarning
}

// New returns the engine of a workspace. Nothing is created on disk until a
// payload is stored or an event recorded.
func New(opt Options) (*Engine, error) {
	if opt.Workspace == "" {
		return nil, errors.New("offload: no workspace")
	}
	ws, err := filepath.Abs(opt.Workspace)
	if err != nil {
		return nil, fmt.Errorf("offload: workspace: %w", err)
	}
	now := opt.Now
	if now == nil {
		now = time.Now
	}
	dirs := opt.ArtifactDirs
	if dirs == nil {
		dirs = []string{os.TempDir()}
	}
	log := opt.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e := &Engine{
		ws:           ws,
		storeDir:     filepath.Join(ws, ".pi", "context-store"),
		now:          now,
		cfg:          &configLoader{path: ConfigPath(ws)},
		artifactDirs: dirs,
		log:          log,
		sessions:     map[string]*sessionState{},
	}
	tel, err := newTelemetry(e.storeDir, now)
	if err != nil {
		return nil, err
	}
	e.tel = tel
	return e, nil
}

// Close releases the store's lock file and the telemetry log.
func (e *Engine) Close() error {
	e.openMu.Lock()
	defer e.openMu.Unlock()
	var errs []error
	if e.store != nil {
		errs = append(errs, e.store.Close())
	}
	errs = append(errs, e.tel.close())
	return errors.Join(errs...)
}

// Config returns the effective configuration and its warnings.
func (e *Engine) Config() (Config, []string) { return e.cfg.get() }

func (e *Engine) openStore() (*Store, error) {
	e.openMu.Lock()
	defer e.openMu.Unlock()
	if e.store != nil {
		return e.store, nil
	}
	if err := os.MkdirAll(filepath.Join(e.ws, ".pi"), 0o755); err != nil {
		return nil, fmt.Errorf("offload: %w", err)
	}
	s, err := OpenStore(e.storeDir, e.now)
	if err != nil {
		return nil, err
	}
	e.store = s
	if w := s.Warning(); w != "" {
		e.log.Warn("offload store directory", "warning", w)
		e.mu.Lock()
		e.dirWarning = "pi-session offload: " + w + "."
		e.mu.Unlock()
	}
	e.keepOutOfGit()
	return s, nil
}

func (e *Engine) record(ev Event) {
	e.keepOutOfGit() // the log may be the first file of the store
	_ = e.tel.record(ev)
}

// keepOutOfGit lists the store directory in the repository's
// .git/info/exclude, once an engine, before anything is written there, so
// payloads and telemetry stay out of the user's commits (.pi/ itself is
// pi's and may hold project settings meant to be committed). A file that
// cannot be written is a warning for the user, said with dirWarning.
func (e *Engine) keepOutOfGit() {
	e.excludeOnce.Do(func() {
		if w := gitexclude.Add(e.storeDir); w != "" {
			e.log.Warn("offload store exclude", "warning", w)
			e.mu.Lock()
			e.dirWarning = strings.TrimSpace(e.dirWarning + " pi-session offload: " + w + ".")
			e.mu.Unlock()
		}
	})
}

func (e *Engine) session(id string) *sessionState {
	s, ok := e.sessions[id]
	if !ok {
		s = &sessionState{turn: -1, shown: map[string]bool{}, offloads: map[string]string{}}
		e.sessions[id] = s
	}
	if len(s.shown) > 10000 {
		s.shown = map[string]bool{}
	}
	if len(s.offloads) > 10000 {
		s.offloads = map[string]string{}
	}
	return s
}

func limits(c Config) Limits { return Limits{MaxBytes: c.StoreMaxBytes, TTL: c.TTL()} }

// bytesOf views a string's bytes without copying; the result must not be
// modified.
func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// stringOf views bytes that are never modified as a string, without copying.
func stringOf(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// --- the tool-result boundary ---

// ContentBlock is one block of a tool result as the extension sends it.
// Only text blocks need their text; others (images) keep their position and
// may be sent as {"type":"image"} without data.
type ContentBlock struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
	// Raw, when not nil, is the text as bytes (the engine host receives
	// text as raw bytes after the JSON line); it is used instead of Text and
	// never modified.
	Raw []byte `json:"-"`
}

// bytes is the block's text.
func (b ContentBlock) bytes() []byte {
	if b.Raw != nil {
		return b.Raw
	}
	return bytesOf(b.Text)
}

// ToolResultRequest is pi's tool_result event, plus what the extension
// knows about the session.
type ToolResultRequest struct {
	SessionID        string          `json:"sessionId"`
	TurnIndex        int             `json:"turnIndex"`
	ToolName         string          `json:"toolName"`
	ToolCallID       string          `json:"toolCallId"`
	Input            json.RawMessage `json:"input,omitempty"`
	Content          []ContentBlock  `json:"content"`
	Details          json.RawMessage `json:"details,omitempty"`
	IsError          bool            `json:"isError"`
	ParentToolCallID string          `json:"parentToolCallId,omitempty"`
	// CtxReadActive: ctx_read is among the active tools. Without it a
	// handle could not be read, so results stay inline.
	CtxReadActive bool `json:"ctxReadActive"`
}

// OutBlock is one block of a replacement: new text, or the original block
// at Index kept as it was.
type OutBlock struct {
	Type  string `json:"type"` // "text" or "original"
	Text  string `json:"text,omitempty"`
	Index *int   `json:"index,omitempty"`
}

// Replacement is the engine's answer at the tool-result boundary.
type Replacement struct {
	Action        string     `json:"action"` // "keep" or "replace"
	Reason        string     `json:"reason,omitempty"`
	Strategy      string     `json:"strategy,omitempty"` // offload, turn-budget, error, edit
	Handle        string     `json:"handle,omitempty"`
	Content       []OutBlock `json:"content,omitempty"`
	OriginalBytes int64      `json:"originalBytes"`
	VisibleBytes  int64      `json:"visibleBytes,omitempty"`
	Warning       string     `json:"warning,omitempty"`
	// Notice is for the user, not the model: said once per outage of the
	// store, when a result stays inline because storing failed.
	Notice string `json:"notice,omitempty"`

	storeErr error // why storing failed (KeepStoreFailed)
}

// Reasons a result stays as it is.
const (
	KeepDisabled    = "disabled"
	KeepNested      = "nested call"
	KeepOwnTool     = "ctx tool result"
	KeepNoReader    = "ctx_read inactive"
	KeepSmall       = "below threshold"
	KeepSmallError  = "error below errorCompactionThreshold"
	KeepSmallSaving = "saving below minimumSavingsBytes"
	KeepStoreFailed = "storing failed"
	KeepNoText      = "no text"
)

// ownTools are the engine's own tools: their results are already bounded.
var ownTools = map[string]bool{"ctx_read": true, "ctx_summarize": true, "ctx_offload": true}

const (
	editDiffBytes     = 2048
	tinyResultBytes   = 1024
	turnPreviewBytes  = 512
	placeholderHandle = "ce_000000000000000000000000"
)

func keep(reason string, size int64) Replacement {
	return Replacement{Action: "keep", Reason: reason, OriginalBytes: size}
}

// ToolResult decides what the model sees of a tool result: the original,
// or a replacement that points to the exact original in the store. Errors
// are returned only for a cancelled context; every other failure keeps the
// original (Reason says why).
func (e *Engine) ToolResult(ctx context.Context, req ToolResultRequest) (Replacement, error) {
	if err := ctx.Err(); err != nil {
		return Replacement{}, err
	}
	cfg, _ := e.cfg.get()
	var texts []int
	var textBytes int64
	for i, b := range req.Content {
		if b.Type == "text" {
			texts = append(texts, i)
			textBytes += int64(len(b.bytes()))
		}
	}
	if !cfg.Enabled {
		return keep(KeepDisabled, textBytes), nil
	}
	if req.ParentToolCallID != "" {
		if textBytes >= cfg.ReadOffloadThreshold {
			e.record(Event{Session: req.SessionID, Type: "keep", Tool: req.ToolName, Reason: KeepNested, OriginalBytes: textBytes})
		}
		return keep(KeepNested, textBytes), nil
	}
	if ownTools[req.ToolName] {
		return keep(KeepOwnTool, textBytes), nil
	}
	inputFP := ""
	if len(req.Input) > 0 {
		inputFP = InputFP(req.ToolName, req.Input)
	}
	e.mu.Lock()
	st := e.session(req.SessionID)
	if st.turn != req.TurnIndex {
		st.turn, st.exposed = req.TurnIndex, 0
	}
	rerun := inputFP != "" && st.offloads[inputFP] != ""
	exposed := st.exposed
	e.mu.Unlock()
	if rerun {
		e.record(Event{Session: req.SessionID, Type: "rerun", Tool: req.ToolName, InputFP: inputFP})
	}

	rep, ev := e.decide(req, cfg, texts, textBytes, exposed)
	if rep.Action == "replace" && rep.Handle != "" {
		if gaveUp(ctx) {
			// pi has gone on with the result as it was (this host was
			// stopped, or slow): no handle reaches the model, so the
			// entry stays pending, its writer's, and is never confirmed.
			return Replacement{}, context.DeadlineExceeded
		}
		// The handle goes to the model: the entry is no longer its
		// writer's to discard. If that cannot be recorded, the result
		// stays as it was (a handle must not outlive this process alone).
		if err := e.confirm(rep.Handle); err != nil {
			rep, ev = e.storeFailed(err, textBytes)
		}
	}
	if rep.storeErr != nil {
		rep.Notice = e.outage(req.SessionID, rep.storeErr)
	} else if rep.Action == "replace" {
		e.stored(req.SessionID)
		rep.Notice = e.dirNotice(req.SessionID)
	}
	e.mu.Lock()
	derived := st.programRead
	st.programRead = ""
	e.mu.Unlock()
	if derived != "" {
		// A program read handles and returned this: its visible size is a
		// readback of them, and a notice tells the model to filter first.
		if rep.Action == "replace" && (rep.Strategy == "offload" || rep.Strategy == "turn-budget") {
			for i := range rep.Content {
				if rep.Content[i].Type == "text" {
					rep.Content[i].Text += fmt.Sprintf("\n[this program read offloaded handles and still returned %s: filter inside the program and return only what you need]", humanBytes(textBytes))
					rep.VisibleBytes = int64(len(rep.Content[i].Text))
					if ev != nil {
						ev.VisibleBytes = rep.VisibleBytes
					}
					break
				}
			}
		}
		visible := textBytes
		if rep.Action == "replace" {
			visible = rep.VisibleBytes
		}
		e.record(Event{Session: req.SessionID, Type: "program-output", Tool: req.ToolName, HandleFP: derived, ReturnedBytes: visible})
	}
	e.mu.Lock()
	if rep.Action == "replace" {
		st.exposed += rep.VisibleBytes
		if rep.Handle != "" {
			st.shown[rep.Handle] = true
			if inputFP != "" {
				st.offloads[inputFP] = rep.Handle
			}
		}
	} else {
		st.exposed += textBytes
	}
	e.mu.Unlock()
	if ev != nil {
		ev.Session, ev.Tool, ev.InputFP = req.SessionID, req.ToolName, inputFP
		e.record(*ev)
	}
	return rep, nil
}

// gaveUp reports whether the caller stopped waiting: its context ended, or
// its deadline passed (a host continued after SIGSTOP sees the time before
// its timers have fired).
func gaveUp(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

// confirm makes a stored entry the model's: see Store.Confirm.
func (e *Engine) confirm(handle string) error {
	s, err := e.openStore()
	if err != nil {
		return err
	}
	return s.Confirm(handle)
}

// storeFailed is the decision when storing failed: the result stays, and
// the event records the kind of error.
func (e *Engine) storeFailed(err error, textBytes int64) (Replacement, *Event) {
	rep := keep(KeepStoreFailed, textBytes)
	rep.storeErr = err
	return rep, &Event{Type: "keep", Reason: KeepStoreFailed, OriginalBytes: textBytes, Error: storeErrorClass(err)}
}

// outage notes a failed store: the first failure of an outage is logged
// with its error, and each session gets one notice per outage, which
// outage returns ("" when the session was told already).
func (e *Engine) outage(session string, err error) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.storeDown {
		e.storeDown = true
		e.log.Warn("offload store failed", "dir", e.storeDir, "err", err.Error())
	}
	st := e.session(session)
	if st.storeDown {
		return ""
	}
	st.storeDown = true
	return fmt.Sprintf("pi-session offload: large tool results stay in the context: the store %s cannot be written (%s). Storing resumes by itself once it works again.",
		e.storeDir, clip.Visible(clip.To(strings.TrimPrefix(err.Error(), "offload: "), 800)))
}

// dirNotice is the store directory's warning for a session's first
// stored result ("" once said, or when there is none).
func (e *Engine) dirNotice(session string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.session(session)
	if e.dirWarning == "" || st.dirWarned {
		return ""
	}
	st.dirWarned = true
	return e.dirWarning
}

// stored ends the session's outage, and the engine's.
func (e *Engine) stored(session string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.storeDown {
		e.storeDown = false
		e.log.Info("offload store works again", "dir", e.storeDir)
	}
	e.session(session).storeDown = false
}

// storeErrorClass names a storage error for telemetry.
func storeErrorClass(err error) string {
	switch {
	case errors.Is(err, syscall.ENOSPC):
		return "no-space"
	case errors.Is(err, syscall.EDQUOT):
		return "quota"
	case errors.Is(err, syscall.EFBIG):
		return "file-too-large"
	case errors.Is(err, syscall.EROFS):
		return "read-only"
	case errors.Is(err, fs.ErrPermission):
		return "permission"
	}
	return "io"
}

// noteProgramRead remembers that a program of the session read a handle.
func (e *Engine) noteProgramRead(session, handle string) {
	e.mu.Lock()
	e.session(session).programRead = HandleFP(handle)
	e.mu.Unlock()
}

// TurnStart resets the session's turn budget (pi's turn_start).
func (e *Engine) TurnStart(ctx context.Context, sessionID string, turnIndex int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.session(sessionID)
	st.turn, st.exposed = turnIndex, 0
	return ctx.Err()
}

func joinTexts(req ToolResultRequest, texts []int) []byte {
	if len(texts) == 1 {
		return req.Content[texts[0]].bytes()
	}
	var b bytes.Buffer
	for i, t := range texts {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.Write(req.Content[t].bytes())
	}
	return b.Bytes()
}

// replaceTexts puts text where the first text block was and keeps every
// non-text block in place.
func replaceTexts(req ToolResultRequest, text string) ([]OutBlock, []int) {
	var out []OutBlock
	var kept []int
	placed := false
	for i, b := range req.Content {
		if b.Type == "text" {
			if !placed {
				out = append(out, OutBlock{Type: "text", Text: text})
				placed = true
			}
			continue
		}
		out = append(out, OutBlock{Type: "original", Index: ptr(i)})
		kept = append(kept, i)
	}
	return out, kept
}

func (e *Engine) decide(req ToolResultRequest, cfg Config, texts []int, textBytes int64, exposed int64) (Replacement, *Event) {
	if len(texts) == 0 {
		return keep(KeepNoText, 0), nil
	}
	large := func(reason string) (Replacement, *Event) {
		return keep(reason, textBytes), &Event{Type: "keep", Reason: reason, OriginalBytes: textBytes}
	}
	if !req.CtxReadActive {
		if textBytes >= min(cfg.ReadOffloadThreshold, cfg.ErrorCompactionThreshold) {
			return large(KeepNoReader)
		}
		return keep(KeepNoReader, textBytes), nil
	}
	if req.IsError {
		if textBytes < cfg.ErrorCompactionThreshold {
			return keep(KeepSmallError, textBytes), nil
		}
		return e.compactError(req, cfg, texts, textBytes)
	}
	var input map[string]any
	_ = json.Unmarshal(req.Input, &input)
	if cfg.CompactEditResults && editLike(req.ToolName, input) {
		if rep, ev, ok := e.compactEdit(req, cfg, texts, textBytes); ok {
			return rep, ev
		}
	}
	if len(texts) == 1 {
		if rep, ev, ok := e.completeTruncated(req, cfg, texts, textBytes); ok {
			return rep, ev
		}
	}
	strategy := "offload"
	if textBytes < cfg.ReadOffloadThreshold {
		if cfg.TurnBudgetBytes > 0 && textBytes >= tinyResultBytes && exposed+textBytes > cfg.TurnBudgetBytes {
			strategy = "turn-budget"
		} else {
			return keep(KeepSmall, textBytes), nil
		}
	}
	return e.offload(req, cfg, texts, textBytes, strategy, "", "")
}

// offload stores the text blocks (one raw text, or a textBlocks envelope)
// and replaces them with a notice.
func (e *Engine) offload(req ToolResultRequest, cfg Config, texts []int, textBytes int64, strategy, warning, note string) (Replacement, *Event) {
	s, err := e.openStore()
	if err != nil {
		return e.storeFailed(err, textBytes)
	}
	meta := pendingMeta(req)
	var ent Entry
	var dedup bool
	if len(texts) == 1 {
		ent, dedup, err = s.Put(req.Content[texts[0]].bytes(), meta, limits(cfg))
	} else {
		meta.Kind = "textBlocks"
		ent, dedup, err = s.PutStream(func(w io.Writer) error { return writeEnvelope(w, req, texts) }, meta, limits(cfg))
	}
	if err != nil {
		return e.storeFailed(err, textBytes)
	}
	if len(texts) > 1 {
		// The preview comes from the blocks in memory, not the stored
		// envelope read back.
		budget := previewBudget(cfg, strategy)
		return e.notice(req, cfg, ent, blocksPreviewOf(req, texts, budget), nil, dedup, textBytes, strategy, warning, note)
	}
	// The stored bytes are in memory already.
	return e.noticeFor(req, cfg, s, ent, req.Content[texts[0]].bytes(), dedup, textBytes, strategy, warning, note)
}

// noticeFor builds the notice of a stored entry and checks the saving.
// data, when not nil, is the stored payload in memory; otherwise the blob
// is mapped.
func (e *Engine) noticeFor(req ToolResultRequest, cfg Config, s *Store, ent Entry, data []byte, dedup bool, textBytes int64, strategy, warning, note string) (Replacement, *Event) {
	if data == nil {
		blob, err := s.Open(ent.Handle, 0)
		if err != nil {
			return e.storeFailed(err, textBytes)
		}
		defer blob.Close()
		data = blob.Data
	}
	pv := buildPreview(data, ent.Kind == "textBlocks", previewBudget(cfg, strategy))
	return e.notice(req, cfg, ent, pv, data, dedup, textBytes, strategy, warning, note)
}

// previewBudget is the size of a notice's preview.
func previewBudget(cfg Config, strategy string) int {
	if strategy == "turn-budget" {
		return min(int(cfg.OffloadPreviewBytes), turnPreviewBytes)
	}
	return int(cfg.OffloadPreviewBytes)
}

// notice builds the notice of a stored entry from its preview and checks
// the saving; data is the stored payload when it is a single text.
func (e *Engine) notice(req ToolResultRequest, cfg Config, ent Entry, pv preview, data []byte, dedup bool, textBytes int64, strategy, warning, note string) (Replacement, *Event) {
	lines := totalLines(data)
	if ent.Kind == "textBlocks" {
		lines = 0
		for _, b := range req.Content {
			if b.Type == "text" {
				lines += totalLines(b.bytes())
			}
		}
	}
	e.mu.Lock()
	repeat := e.session(req.SessionID).shown[ent.Handle]
	e.mu.Unlock()
	in := noticeInput{tool: req.ToolName, handle: ent.Handle, stored: ent.Size, lines: lines, repeat: repeat, pv: pv,
		warning: warning, note: note, pageBytes: pageBudget(cfg.ReadOffloadThreshold, false), strategy: strategy}
	text := renderNotice(in)
	out, kept := replaceTexts(req, text)
	in.kept = kept
	text = renderNotice(in)
	out, _ = replaceTexts(req, text)
	if textBytes-int64(len(text)) < cfg.MinimumSavingsBytes {
		return keep(KeepSmallSaving, textBytes), &Event{Type: "keep", Reason: KeepSmallSaving, OriginalBytes: textBytes}
	}
	ev := &Event{Type: "offload", Strategy: strategy, Shape: pv.shape, OriginalBytes: textBytes, StoredBytes: ent.Size,
		VisibleBytes: int64(len(text)), HandleFP: HandleFP(ent.Handle), Repeat: repeat, Dedup: dedup}
	switch {
	case note != "":
		ev.Artifact = "recovered"
	case warning != "":
		ev.Artifact = "unrecovered"
	}
	return Replacement{Action: "replace", Strategy: strategy, Handle: ent.Handle, Content: out,
		OriginalBytes: textBytes, VisibleBytes: int64(len(text)), Warning: warning}, ev
}

// pendingMeta describes a tool result being stored: pending until the
// decision to show its handle is confirmed (see Store.Confirm).
func pendingMeta(req ToolResultRequest) Meta {
	return Meta{Kind: "text", Source: req.ToolName, Session: req.SessionID, Pending: true}
}

// writeEnvelope writes {"textBlocks":[{"index":i,"text":"..."},...]}.
func writeEnvelope(w io.Writer, req ToolResultRequest, texts []int) error {
	if _, err := io.WriteString(w, `{"textBlocks":[`); err != nil {
		return err
	}
	for n, i := range texts {
		sep := ""
		if n > 0 {
			sep = ","
		}
		if _, err := fmt.Fprintf(w, `%s{"index":%d,"text":`, sep, i); err != nil {
			return err
		}
		if err := jsonscan.WriteString(w, stringOf(req.Content[i].bytes())); err != nil {
			return err
		}
		if _, err := io.WriteString(w, "}"); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, "]}")
	return err
}

func (e *Engine) compactError(req ToolResultRequest, cfg Config, texts []int, textBytes int64) (Replacement, *Event) {
	text := joinTexts(req, texts)
	budget := int(cfg.ErrorCompactionPreviewBytes)
	probe := renderErrorNotice(req.ToolName, placeholderHandle, text, budget)
	if textBytes-int64(len(probe)) < cfg.MinimumSavingsBytes {
		return keep(KeepSmallSaving, textBytes), &Event{Type: "keep", Reason: KeepSmallSaving, OriginalBytes: textBytes}
	}
	// A failing command whose output the tool truncated: store the complete
	// output when its full-output file is valid.
	ent, artifact, err := e.storeFullOutput(req, cfg, texts)
	if err != nil {
		return e.storeFailed(err, textBytes)
	}
	var full int64
	switch artifact {
	case "recovered":
		full = ent.Size
	case "unrecovered":
		full = reportedFullBytes(req.Details, textBytes)
	}
	notice := strings.ReplaceAll(probe, placeholderHandle, ent.Handle)
	if artifact != "" {
		notice += fmt.Sprintf("\n[%s showed only part of its output; the handle holds the complete output (%d bytes)]", orDefault(req.ToolName, "the tool"), ent.Size)
	}
	out, _ := replaceTexts(req, notice)
	return Replacement{Action: "replace", Strategy: "error", Handle: ent.Handle, Content: out, OriginalBytes: textBytes, VisibleBytes: int64(len(notice))},
		&Event{Type: "offload", Strategy: "error", Shape: "diagnostics", OriginalBytes: textBytes, StoredBytes: ent.Size, VisibleBytes: int64(len(notice)), HandleFP: HandleFP(ent.Handle), Artifact: artifact, FullBytes: full}
}

// storeFullOutput stores the complete output of a truncated single-text
// result from its valid full-output file ("recovered"), else the text
// blocks themselves ("", or "unrecovered" when truncated).
func (e *Engine) storeFullOutput(req ToolResultRequest, cfg Config, texts []int) (Entry, string, error) {
	if len(texts) == 1 {
		text := req.Content[texts[0]].bytes()
		if path, fragment, truncated := artifactPath(text, req.Details); truncated {
			if f, size, err := openArtifact(path, fragment, e.artifactDirs, cfg.StoreMaxBytes); err == nil {
				defer f.Close()
				if s, err := e.openStore(); err == nil {
					meta := pendingMeta(req)
					meta.Full = filepath.Clean(path)
					ent, _, err := s.PutStream(func(w io.Writer) error {
						_, err := io.Copy(w, io.NewSectionReader(f, 0, size))
						return err
					}, meta, limits(cfg))
					if err == nil {
						return ent, "recovered", nil
					}
				}
			}
			ent, err := e.storeTexts(req, cfg, texts)
			return ent, "unrecovered", err
		}
	}
	ent, err := e.storeTexts(req, cfg, texts)
	return ent, "", err
}

func (e *Engine) storeTexts(req ToolResultRequest, cfg Config, texts []int) (Entry, error) {
	s, err := e.openStore()
	if err != nil {
		return Entry{}, err
	}
	meta := pendingMeta(req)
	if len(texts) == 1 {
		ent, _, err := s.Put(req.Content[texts[0]].bytes(), meta, limits(cfg))
		return ent, err
	}
	meta.Kind = "textBlocks"
	ent, _, err := s.PutStream(func(w io.Writer) error { return writeEnvelope(w, req, texts) }, meta, limits(cfg))
	return ent, err
}

func (e *Engine) compactEdit(req ToolResultRequest, cfg Config, texts []int, textBytes int64) (Replacement, *Event, bool) {
	if len(texts) != 1 {
		return Replacement{}, nil, false
	}
	text := req.Content[texts[0]].bytes()
	at := diffStart(text)
	if at < 0 || len(text)-at < editDiffBytes {
		return Replacement{}, nil, false
	}
	ack := string(text[:at])
	if strings.TrimSpace(ack) == "" {
		ack = fmt.Sprintf("%s succeeded.", orDefault(req.ToolName, "The edit"))
	}
	notice := renderEditNotice(ack, placeholderHandle, text[at:], at)
	if textBytes-int64(len(notice)) < cfg.MinimumSavingsBytes {
		return Replacement{}, nil, false
	}
	ent, err := e.storeTexts(req, cfg, texts)
	if err != nil {
		rep, ev := e.storeFailed(err, textBytes)
		return rep, ev, true
	}
	notice = strings.ReplaceAll(notice, placeholderHandle, ent.Handle)
	out, _ := replaceTexts(req, notice)
	return Replacement{Action: "replace", Strategy: "edit", Handle: ent.Handle, Content: out, OriginalBytes: textBytes, VisibleBytes: int64(len(notice))},
		&Event{Type: "offload", Strategy: "edit", Shape: "diff", OriginalBytes: textBytes, StoredBytes: ent.Size, VisibleBytes: int64(len(notice)), HandleFP: HandleFP(ent.Handle)}, true
}
