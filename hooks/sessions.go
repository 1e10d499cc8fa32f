package hooks

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/pi-session/pi-session/session"
)

// Sessions keeps the session files engines read, so that a call reads
// only what pi appended since the last one (session.File.Update) instead
// of the whole file. It holds at most max files, dropping the least
// recently used. Safe for concurrent use; each file is used by one caller
// at a time.
type Sessions struct {
	max   int
	mu    sync.Mutex
	tick  uint64
	files map[string]*cachedFile
}

type cachedFile struct {
	mu   sync.Mutex
	f    *session.File
	used uint64
}

// NewSessions returns an empty cache holding up to max files.
func NewSessions(max int) *Sessions {
	return &Sessions{max: max, files: map[string]*cachedFile{}}
}

// With brings the session file at path up to date and calls fn with it.
// fn must not keep the *session.File after it returns. A file that was
// replaced, truncated or rewritten in place is read again from the start.
// A missing file is an error satisfying errors.Is(err, fs.ErrNotExist): pi
// writes a new session's file only after the first answer.
func (s *Sessions) With(path string, fn func(*session.File) error) error {
	c := s.get(path)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.f != nil {
		_, err := c.f.Update()
		if errors.Is(err, session.ErrReplaced) || errors.Is(err, session.ErrTruncated) || errors.Is(err, session.ErrRewritten) {
			c.f = nil
		} else if err != nil {
			return err
		}
	}
	if c.f == nil {
		f, err := session.Open(path)
		if err != nil {
			return err
		}
		c.f = f
	}
	return fn(c.f)
}

func (s *Sessions) get(path string) *cachedFile {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tick++
	c := s.files[path]
	if c == nil {
		if len(s.files) >= s.max {
			var oldest string
			for p, o := range s.files {
				if oldest == "" || o.used < s.files[oldest].used {
					oldest = p
				}
			}
			delete(s.files, oldest) // a caller still holding it finishes normally
		}
		c = &cachedFile{}
		s.files[path] = c
	}
	c.used = s.tick
	return c
}

// Describe is session.describe's answer: the shape of a session as the
// engines see it.
type Describe struct {
	SessionFile    string `json:"sessionFile"`
	Exists         bool   `json:"exists"` // false until pi writes the file
	Entries        int    `json:"entries"`
	Branch         int    `json:"branch"`   // entries from the root to the leaf
	Messages       int    `json:"messages"` // the projection pi builds for the model
	LLMMessages    int    `json:"llmMessages"`
	Tokens         int    `json:"tokens"`        // pi's estimate of the projected messages
	ContextTokens  int    `json:"contextTokens"` // pi's context size estimate (usage + trailing estimate)
	UsageTokens    int    `json:"usageTokens"`
	TrailingTokens int    `json:"trailingTokens"`
	// Diagnostics counts the problems found: lines pi would skip, tree
	// defects, fields pi keeps but cannot use as meant, an incomplete
	// last line. Problems are the first few; Rest says where to see all.
	Diagnostics int       `json:"diagnostics"`
	Problems    []Problem `json:"problems,omitempty"`
	Rest        string    `json:"rest,omitempty"`
	LeafID      string    `json:"leafId"`
	Bytes       int64     `json:"bytes"` // read so far
}

// Problem is one diagnostic of a session file.
type Problem struct {
	Where string `json:"where"` // "<file>:<line>", "<file>:<line>:<column>" for invalid JSON
	Line  int    `json:"line"`
	Field string `json:"field,omitempty"` // the member at fault; "" for the whole line
	What  string `json:"what"`            // what is wrong, without the position
	// Text is the line to show: "<file's base name>:<line>: <what> [field]".
	Text string `json:"text"`
}

// problemOf renders a diagnostic as a Problem.
func problemOf(d session.Diagnostic) Problem {
	p := Problem{Where: d.Where(), Line: d.Line, Field: d.Field, What: d.Err.Error()}
	p.Text = filepath.Base(d.File) + ":" + strconv.Itoa(d.Line) + ": " + p.What
	if d.Column > 0 {
		p.Text = filepath.Base(d.File) + ":" + strconv.Itoa(d.Line) + ":" + strconv.Itoa(d.Column) + ": " + p.What
	}
	if d.File == "" {
		p.Text = d.Where() + ": " + p.What
	}
	if p.Field != "" {
		p.Text += " [" + p.Field + "]"
	}
	return p
}

// ShownProblems is how many diagnostics session.describe lists.
const ShownProblems = 5

// DescribeParams are session.describe's params.
type DescribeParams struct {
	LeafID string `json:"leafId"` // "" for the file's last entry
}

// SessionEngine is the built-in engine "session": describe reads the
// caller's session file (from its hello) and reports its shape.
func SessionEngine() Engine {
	return Engine{Name: "session", Methods: map[string]Handler{"describe": describe}}
}

func describe(ctx context.Context, r *Request) (any, error) {
	var p DescribeParams
	if err := r.Decode(&p); err != nil {
		return nil, err
	}
	path := r.Peer.Hello.SessionFile
	out := Describe{SessionFile: path}
	if path == "" {
		return out, nil
	}
	err := r.Sessions().With(path, func(f *session.File) error {
		var err error
		out, err = DescribeFile(f, path, p.LeafID, ShownProblems)
		return err
	})
	if errors.Is(err, fs.ErrNotExist) {
		return Describe{SessionFile: path}, nil
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DescribeFile describes a session file read as f, from the entry leafID
// ("" for the last), listing its first shown diagnostics.
func DescribeFile(f *session.File, path, leafID string, shown int) (Describe, error) {
	out := Describe{SessionFile: path, Exists: true, Entries: len(f.Entries), Bytes: f.Offset()}
	all := f.AllDiagnostics()
	out.Diagnostics = len(all) + f.Omitted
	for _, d := range all[:min(shown, len(all))] {
		out.Problems = append(out.Problems, problemOf(d))
	}
	if out.Diagnostics > len(out.Problems) {
		out.Rest = "pi-session engine session " + shellQuote(path)
	}
	if len(f.Entries) == 0 {
		return out, nil
	}
	branch, err := f.Branch(leafID)
	if err != nil {
		return out, err
	}
	out.LeafID = branch[len(branch)-1].ID
	msgs := session.Project(branch)
	ct := session.EstimateContextTokens(branch, msgs)
	out.Branch, out.Messages = len(branch), len(msgs)
	out.LLMMessages = len(session.LLMMessages(msgs))
	out.Tokens = session.EstimateTokens(msgs)
	out.ContextTokens, out.UsageTokens, out.TrailingTokens = ct.Tokens, ct.UsageTokens, ct.TrailingTokens
	return out, nil
}

// shellQuote quotes a path for a command line a user can paste.
func shellQuote(s string) string {
	safe := s != ""
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("/._-+:@%,=", c)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
