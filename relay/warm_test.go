package relay

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pi-session/pi-session/hooks"
	"github.com/pi-session/pi-session/session"
)

// countingReader is the engine host's session cache (hooks.Sessions), with
// the number of calls counted.
func countingReader(calls *atomic.Int32) Reader {
	s := hooks.NewSessions(8)
	return func(path string, fn func(*session.File) error) error {
		calls.Add(1)
		return s.With(path, fn)
	}
}

// TestWarm: a warm-up indexes a session with a compaction in slices,
// letting go of the file between them, and the first recall then finds the
// index built: it reads nothing more.
func TestWarm(t *testing.T) {
	defer func(n int) { warmSlice = n }(warmSlice)
	warmSlice = 200 // bytes: one or two entries a slice
	s := buildRecallSession(t)
	var calls atomic.Int32
	read := countingReader(&calls)
	e := New(Options{AgentDir: t.TempDir()})
	defer e.Close()
	e.Warm(read, s.path)
	e.Warm(read, s.path) // one warm-up per file at a time
	e.wg.Wait()
	f, err := session.Open(s.path)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Indexed(s.path); got != len(f.Entries) {
		t.Fatalf("after the warm-up %d of %d entries are indexed", got, len(f.Entries))
	}
	if n := calls.Load(); n < 5 {
		t.Errorf("the warm-up held the file in %d slices, want one per slice of %d bytes", n, warmSlice)
	}
	ix := e.indexes[s.path].ix
	docs := len(ix.docs)
	text, err := e.Recall(context.Background(), read, RecallRequest{SessionID: "s1", SessionFile: s.path, Args: json.RawMessage(`{"query":"ember cache"}`)})
	if err != nil || firstHit(text) == "" {
		t.Fatalf("recall after the warm-up: %v\n%s", err, text)
	}
	if e.indexes[s.path].ix != ix || len(ix.docs) != docs {
		t.Errorf("the first recall rebuilt the index the warm-up made")
	}
}

// TestWarmNothingLeft: a session without a compaction has nothing out of
// the context, so no index is built for it.
func TestWarmNothingLeft(t *testing.T) {
	b := newBuilder(t)
	b.user("hello ember")
	b.assistant("hi")
	path, _, _ := b.open()
	var calls atomic.Int32
	e := New(Options{AgentDir: t.TempDir()})
	defer e.Close()
	e.Warm(countingReader(&calls), path)
	e.wg.Wait()
	if n := e.Indexed(path); n != 0 {
		t.Errorf("a session with nothing out of the context got an index of %d entries", n)
	}
}

// TestWarmAndRecallAtOnce: recalls while a warm-up runs answer as they
// would without it (run with -race: the index is updated by one at a time).
func TestWarmAndRecallAtOnce(t *testing.T) {
	defer func(n int) { warmSlice = n }(warmSlice)
	warmSlice = 100
	s := buildRecallSession(t)
	want := recallText(t, New(Options{AgentDir: t.TempDir()}), s.path, map[string]any{"query": "ember cache"})
	for round := 0; round < 20; round++ {
		var calls atomic.Int32
		read := countingReader(&calls)
		e := New(Options{AgentDir: t.TempDir()})
		var wg sync.WaitGroup
		texts := make([]string, 4)
		e.Warm(read, s.path)
		for i := range texts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				texts[i], _ = e.Recall(context.Background(), read, RecallRequest{SessionID: "s1", SessionFile: s.path, Args: json.RawMessage(`{"query":"ember cache"}`)})
			}()
		}
		wg.Wait()
		e.Close()
		for i, got := range texts {
			if got != want {
				t.Fatalf("round %d, recall %d during a warm-up:\n%s\nwant:\n%s", round, i, got, want)
			}
		}
	}
}

// TestWarmStopsAtClose: Close stops a warm-up and waits for it.
func TestWarmStopsAtClose(t *testing.T) {
	defer func(n int) { warmSlice = n }(warmSlice)
	warmSlice = 1
	s := buildRecallSession(t)
	var calls atomic.Int32
	e := New(Options{AgentDir: t.TempDir()})
	e.Warm(countingReader(&calls), s.path)
	e.Close()
	n := calls.Load()
	e.Warm(countingReader(&calls), s.path) // after Close: nothing starts
	e.wg.Wait()
	if calls.Load() != n {
		t.Errorf("a warm-up read the file after Close")
	}
}
