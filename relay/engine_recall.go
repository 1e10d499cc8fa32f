package relay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/pi-session/pi-session/clip"
	"github.com/pi-session/pi-session/session"
)

// RecallRequest is one recall call of a session.
type RecallRequest struct {
	SessionID   string
	SessionFile string
	Cwd         string
	LeafID      string // "" for the file's last entry
	Args        json.RawMessage
}

// maxLineage bounds the ancestor sessions scope "lineage" reads.
const maxLineage = 8

// MaxAnswer is the hard cap of every recall answer, in characters: a
// chunk of an entry with its header and the call that continues.
const MaxAnswer = ChunkChars + 1000

// Recall answers the recall tool. Its errors are about the session file
// (unreadable, a cycle); a bad argument is answered in the text. No answer
// is longer than MaxAnswer characters.
func (e *Engine) Recall(ctx context.Context, read Reader, req RecallRequest) (string, error) {
	text, err := e.recall(ctx, read, req)
	return clip.To(text, MaxAnswer), err
}

func (e *Engine) recall(ctx context.Context, read Reader, req RecallRequest) (string, error) {
	a := ParseRecallArgs(req.Args)
	if a.EntryID != "" {
		if n, ok := strings.CutPrefix(a.EntryID, "note:"); ok {
			k, err := strconv.Atoi(n)
			if err != nil || k < 1 {
				return fmt.Sprintf("recall: %q names no note; notes are note:1, note:2, ...", clip.Echo(a.EntryID)), nil
			}
			data, err := e.ReadNoteFile(req.SessionID, k)
			return ReadNote(k, data, err, a.Offset), nil
		}
	}
	if a.EntryID == "" && strings.TrimSpace(a.Query) == "" {
		return `recall: give query (words you remember of what left the context: any order, prefixes and parts of names work) or entryId (from a search result, or note:<n> for a handoff note); for example recall({"query": "ember cache error"})`, nil
	}
	if req.SessionFile == "" {
		return "recall: this session has no file yet, so nothing has left the context.", nil
	}
	paths := []string{req.SessionFile}
	var answer string
	var items []item
	var q Query
	if a.EntryID == "" {
		q = ParseQuery(a.Query)
		if len(q.Terms) == 0 {
			return render(a, q, nil, nil, 0), nil
		}
	}
	// The offloaded results first, so that reading the session can keep
	// only those whose handle the model sees on its branch.
	var payloads []PayloadHit
	if e.opt.Payloads != nil && a.EntryID == "" {
		// A line must hold every term, so not the whole form of a word
		// that splits (emberCache): its parts are terms.
		var terms []QueryTerm
		for _, t := range q.Terms {
			if t.Weight >= 1 {
				terms = append(terms, t)
			}
		}
		payloads = e.searchPayloads(ctx, req.Cwd, req.SessionID, terms)
	}
	var found uint32     // the query terms some source holds
	continues := false   // the session continues another (a fork, a relaunch)
	var skipped []string // ancestors that could not be read, and why
	for i := 0; i < len(paths) && i <= maxLineage; i++ {
		path := paths[i]
		current := i == 0
		err := read(path, func(f *session.File) error {
			leaf := ""
			if current {
				leaf = req.LeafID
			}
			branch, err := f.Branch(leaf)
			if err != nil {
				return err
			}
			src := Source{File: f, Branch: branch, Current: current}
			if f.Header != nil {
				src.Session = f.Header.ID
			}
			ancestors := Ancestors(f, branch)
			if current {
				continues = len(ancestors) > 0
			}
			if a.Lineage {
				for _, p := range ancestors {
					if !contains(paths, p) {
						paths = append(paths, p)
					}
				}
			}
			if a.EntryID != "" {
				if f.Entry(a.EntryID) != nil && answer == "" {
					answer = ReadEntry(a, []Source{src})
				}
				return nil
			}
			if current && len(payloads) > 0 {
				payloads = visiblePayloads(branch, payloads)
			}
			var unlock func()
			src.Index, unlock = e.index(path, f)
			got, holds := searchSource(src, q, a.Limit)
			unlock()
			items = append(items, got...)
			found |= holds
			return nil
		})
		if err != nil {
			if !current && errors.Is(err, fs.ErrNotExist) {
				continue // an ancestor that was deleted
			}
			if !current {
				// An ancestor that cannot be read (a FIFO, a directory,
				// no permission, a loop of parents) is skipped: the rest
				// of the lineage is still searched, and the answer says so.
				why := strings.TrimPrefix(err.Error(), "session: ")
				if !strings.Contains(why, path) {
					why = path + ": " + why
				}
				skipped = append(skipped, clip.Visible(clip.To(why, 600)))
				continue
			}
			if errors.Is(err, fs.ErrNotExist) {
				return "recall: this session's file is not written yet, so nothing has left the context.", nil
			}
			return "", err
		}
		if !a.Lineage {
			break
		}
	}
	if a.EntryID != "" {
		if answer == "" {
			answer = ReadEntry(a, nil) + skippedNote(skipped)
		}
		return answer, nil
	}
	text := render(a, q, items, payloads, found) + skippedNote(skipped)
	if continues && !a.Lineage && len(items) < a.Limit {
		text = clip.To(text+"\n\nThis session continues an earlier one (a fork or a relaunch after /handoff): recall({query, scope: \"lineage\"}) searches that one too.", SearchCap)
	}
	return text, nil
}

// skippedNote says which ancestor sessions were not searched, and why;
// "" when none was skipped.
func skippedNote(skipped []string) string {
	if len(skipped) == 0 {
		return ""
	}
	return clip.To("\n\nNot searched (cannot be read): "+strings.Join(skipped, "; ")+".", 2000)
}

// ContinuesType is the custom entry a relaunched pi's session holds for
// the session it continues (pi-session's /handoff relaunch): its data
// names the previous session file.
const ContinuesType = "pi-session:continues"

// Ancestors returns the session files a session continues, nearest
// first: its header's parentSession (a fork or a /new's parent), then the
// sessionFile of each pi-session:continues entry on the branch (a
// relaunch after /handoff), latest first. Relative or empty names are
// left out.
func Ancestors(f *session.File, branch []*session.Entry) []string {
	var out []string
	add := func(p string) {
		if filepath.IsAbs(p) && !contains(out, p) {
			out = append(out, p)
		}
	}
	if f.Header != nil && f.Header.ParentSession != "" {
		add(f.Header.ParentSession)
	}
	for i := len(branch) - 1; i >= 0; i-- {
		e := branch[i]
		if e.Type != "custom" {
			continue
		}
		if ct, _ := session.MemberString(e.Raw, "customType"); ct == ContinuesType {
			p, _ := session.MemberString(session.Member(e.Raw, "data"), "sessionFile")
			add(p)
		}
	}
	return out
}

// index returns the session's index brought up to date with f, locked:
// the caller searches it and then calls unlock. The caller holds f (its
// Reader's lock); the index's own lock is taken here, so a warm-up and a
// recall, or two recalls (parallel tool calls), never use it at once.
func (e *Engine) index(path string, f *session.File) (ix *Index, unlock func()) {
	s := e.slot(path)
	s.mu.Lock()
	s.ix.Update(f)
	return s.ix, s.mu.Unlock
}

// slot returns the index slot of path, making one (and dropping the least
// recently used beyond MaxIndexes) if there is none.
func (e *Engine) slot(path string) *indexSlot {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.tick++
	s := e.indexes[path]
	if s == nil {
		if len(e.indexes) >= e.opt.MaxIndexes {
			var oldest string
			for p, o := range e.indexes {
				if oldest == "" || o.used < e.indexes[oldest].used {
					oldest = p
				}
			}
			delete(e.indexes, oldest)
		}
		s = &indexSlot{ix: NewIndex()}
		e.indexes[path] = s
	}
	s.used = e.tick
	return s
}

// warmSlice is how many bytes of entries a warm-up indexes while it holds
// the session file: other readers of the file wait at most that long.
var warmSlice = 4 << 20

// Warm brings the recall index of the session file at path up to date in
// the background, a slice at a time, so that the first recall of a long
// session finds it built. It does nothing while nothing of the file has
// left a context (it has no compaction), and nothing when a warm-up of
// path is running already. Close stops it.
func (e *Engine) Warm(read Reader, path string) {
	e.mu.Lock()
	if e.closed || e.warming[path] || path == "" {
		e.mu.Unlock()
		return
	}
	e.warming[path] = true
	e.wg.Add(1)
	e.mu.Unlock()
	go func() {
		defer e.wg.Done()
		defer func() {
			e.mu.Lock()
			delete(e.warming, path)
			e.mu.Unlock()
		}()
		for first := true; e.stop.Err() == nil; first = false {
			done := true
			err := read(path, func(f *session.File) error {
				if first && !hasCompaction(f) {
					return nil
				}
				s := e.slot(path)
				s.mu.Lock()
				defer s.mu.Unlock()
				done = s.ix.UpdateSome(f, warmSlice)
				return nil
			})
			if err != nil || done {
				return
			}
			runtime.Gosched()
		}
	}()
}

// hasCompaction reports whether some entry of f is a compaction: before
// one, nothing has left the context and recall has nothing to search.
func hasCompaction(f *session.File) bool {
	for _, e := range f.Entries {
		if e.Type == "compaction" {
			return true
		}
	}
	return false
}

// Indexed reports how many entries of the file at path the engine has
// indexed (0 when it has none): a second recall reads only what was
// appended.
func (e *Engine) Indexed(path string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	if s := e.indexes[path]; s != nil {
		return s.ix.Entries()
	}
	return 0
}

// Payload search bounds.
const (
	maxPayloadHits = 10
	perPayloadHits = 3
)

// searchPayloads finds the lines of the session's offloaded results that
// hold every query term (the same tolerant matching as entries).
func (e *Engine) searchPayloads(ctx context.Context, cwd, sessionID string, terms []QueryTerm) []PayloadHit {
	var out []PayloadHit
	_ = e.opt.Payloads(ctx, cwd, sessionID, func(handle, source string, size int64, data []byte) error {
		if len(out) >= maxPayloadHits {
			return errors.New("enough")
		}
		for _, h := range ScanPayload(data, terms, min(perPayloadHits, maxPayloadHits-len(out))) {
			h.Handle, h.Source, h.Size = handle, source, size
			out = append(out, h)
		}
		return ctx.Err()
	})
	return out
}

// visiblePayloads keeps the hits of the payloads whose handle an entry the
// model sees on the branch names (the offloaded result itself, or a later
// ctx_read): an offloaded result omitted with context_edit, or left on an
// abandoned branch, is not returned, like its entry.
func visiblePayloads(branch []*session.Entry, hits []PayloadHit) []PayloadHit {
	seen := map[string]bool{}
	v := newView(branch)
	for _, e := range branch {
		content, ok := v.visible(e)
		if !ok {
			continue
		}
		for _, h := range hits {
			if !seen[h.Handle] && bytes.Contains(content, []byte(h.Handle)) {
				seen[h.Handle] = true
			}
		}
	}
	var out []PayloadHit
	for _, h := range hits {
		if seen[h.Handle] {
			out = append(out, h)
		}
	}
	return out
}

// ScanPayload returns up to max lines of data holding every query term
// (the query's terms without its stop words).
// Lines are found by their longest term in three spellings (as typed,
// Capitalized, UPPER), then checked word by word.
func ScanPayload(data []byte, terms []QueryTerm, max int) []PayloadHit {
	if len(terms) == 0 || max <= 0 {
		return nil
	}
	anchor := terms[0]
	for _, t := range terms {
		if len(t.Text) > len(anchor.Text) {
			anchor = t
		}
	}
	needle := anchor.Text
	if anchor.Indexable && anchor.Stem != "" {
		needle = anchor.Stem
	}
	variants := [][]byte{[]byte(needle)}
	if up := strings.ToUpper(needle); up != needle {
		variants = append(variants, []byte(strings.ToUpper(needle[:1])+needle[1:]), []byte(up))
	}
	var out []PayloadHit
	line := int64(1)
	counted := 0
	pos := 0
	for pos < len(data) && len(out) < max {
		at := -1
		for _, v := range variants {
			if i := bytes.Index(data[pos:], v); i >= 0 && (at < 0 || i < at) {
				at = i
			}
		}
		if at < 0 {
			break
		}
		at += pos
		start := bytes.LastIndexByte(data[:at], '\n') + 1
		end := bytes.IndexByte(data[at:], '\n')
		if end < 0 {
			end = len(data)
		} else {
			end += at
		}
		if lineHas(data[start:end], terms) {
			line += int64(bytes.Count(data[counted:start], []byte{'\n'}))
			counted = start
			out = append(out, PayloadHit{Line: line, Offset: int64(start), Text: strings.TrimRight(string(data[start:min(end, start+600)]), "\r")})
		}
		pos = end + 1
	}
	return out
}

// lineHas reports whether every query term matches a word of the line.
func lineHas(line []byte, terms []QueryTerm) bool {
	for _, q := range terms {
		found := false
		if !q.Indexable {
			found = bytes.Contains(bytes.ToLower(line), []byte(q.Text))
		} else {
			words(line, func(w []byte, _ int) bool {
				var low []byte
				splitWord(w, &low, func(t []byte) {
					if !found && q.matches(t) > 0 {
						found = true
					}
				})
				return !found
			})
		}
		if !found {
			return false
		}
	}
	return true
}
