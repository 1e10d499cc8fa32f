package hooks

import (
	"context"
	"errors"
	"io/fs"
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
// replaced or truncated is read again from the start. A missing file is
// an error satisfying errors.Is(err, fs.ErrNotExist): pi writes a new
// session's file only after the first answer.
func (s *Sessions) With(path string, fn func(*session.File) error) error {
	c := s.get(path)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.f != nil {
		_, err := c.f.Update()
		if errors.Is(err, session.ErrReplaced) || errors.Is(err, session.ErrTruncated) {
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
	Diagnostics    int    `json:"diagnostics"` // lines pi would skip, tree defects
	LeafID         string `json:"leafId"`
	Bytes          int64  `json:"bytes"` // read so far
}

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
		out.Exists = true
		out.Entries = len(f.Entries)
		out.Diagnostics = len(f.Diagnostics)
		out.Bytes = f.Offset()
		if len(f.Entries) == 0 {
			return nil
		}
		branch, err := f.Branch(p.LeafID)
		if err != nil {
			return err
		}
		out.LeafID = branch[len(branch)-1].ID
		msgs := session.Project(branch)
		ct := session.EstimateContextTokens(branch, msgs)
		out.Branch, out.Messages = len(branch), len(msgs)
		out.LLMMessages = len(session.LLMMessages(msgs))
		out.Tokens = session.EstimateTokens(msgs)
		out.ContextTokens, out.UsageTokens, out.TrailingTokens = ct.Tokens, ct.UsageTokens, ct.TrailingTokens
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}
