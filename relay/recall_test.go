package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pi-session/pi-session/session"
)

// builder writes a pi 1.6 session file entry by entry.
type builder struct {
	t     *testing.T
	lines []string
	n     int
	last  string
}

func newBuilder(t *testing.T) *builder {
	b := &builder{t: t}
	b.lines = append(b.lines, `{"type":"session","version":3,"id":"01a2b3c4-0000-7000-8000-000000000001","timestamp":"2026-12-01T10:00:00.000Z","cwd":"/work"}`)
	return b
}

// add appends an entry of type typ with the given members under parent
// (the previous entry when parent is "-") and returns its id.
func (b *builder) add(parent, typ string, members map[string]any) string {
	b.n++
	id := fmt.Sprintf("e%07d", b.n)
	if parent == "-" {
		parent = b.last
	}
	m := map[string]any{"type": typ, "id": id, "timestamp": fmt.Sprintf("2026-12-01T10:%02d:00.000Z", b.n%60)}
	if parent == "" {
		m["parentId"] = nil
	} else {
		m["parentId"] = parent
	}
	for k, v := range members {
		m[k] = v
	}
	line, err := json.Marshal(m)
	if err != nil {
		b.t.Fatal(err)
	}
	b.lines = append(b.lines, string(line))
	b.last = id
	return id
}

func (b *builder) user(text string) string {
	return b.add("-", "message", map[string]any{"message": map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": text}}, "timestamp": 1}})
}

func (b *builder) assistant(text string) string {
	return b.add("-", "message", map[string]any{"message": map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": text}}, "stopReason": "stop", "timestamp": 1}})
}

func (b *builder) tool(name, text string) string {
	return b.add("-", "message", map[string]any{"message": map[string]any{"role": "toolResult", "toolCallId": "c", "toolName": name, "content": []any{map[string]any{"type": "text", "text": text}}, "isError": false, "timestamp": 1}})
}

func (b *builder) write(path string) {
	if err := os.WriteFile(path, []byte(strings.Join(b.lines, "\n")+"\n"), 0o600); err != nil {
		b.t.Fatal(err)
	}
}

// recallSession builds a session in which most entries left the context
// through a relay-like compaction; some were omitted or replaced with
// context_edit, and one lies on an abandoned branch.
type recallSession struct {
	path                                                      string
	relayNote, exportFn, emberLog, tabs, secret, banana, last string
	bigLog, bigText                                           string
}

func buildRecallSession(t *testing.T) recallSession {
	b := newBuilder(t)
	var s recallSession
	b.user("Please look at src/relay/note.go and the emberCache type")
	s.relayNote = b.last
	s.exportFn = b.assistant("export function renderNote(facts) lays out the note; it reads the ember_cache layout")
	s.emberLog = b.tool("bash", "build log\nERROR: ember-cache miss rate 42% at 1796030340880\nok")
	var big strings.Builder
	for i := 0; big.Len() < 30000; i++ {
		fmt.Fprintf(&big, "line %d of the linker trace: resolving symbol_%d\n", i, i)
	}
	s.bigLog, s.bigText = b.tool("bash", big.String()), big.String()
	fork := b.assistant("ember notes: ember ember ember")
	s.tabs = b.user("Never use tabs. The ember module matters.")
	b.add("-", "context_edit", map[string]any{"targetId": s.tabs, "replacement": nil})
	s.secret = b.assistant("The secret word is platypus")
	b.add("-", "context_edit", map[string]any{"targetId": s.secret, "replacement": map[string]any{"content": "The word was removed by the user."}})
	s.last = b.user("last question about the ember cache")
	b.assistant("last answer")
	b.add("-", "compaction", map[string]any{"summary": "note", "firstKeptEntryId": s.last, "tokensBefore": 100, "details": map[string]any{"relay": true}})
	leaf := b.last
	// An abandoned branch from the fork.
	s.banana = b.add(fork, "message", map[string]any{"message": map[string]any{"role": "user", "content": "banana split with ember", "timestamp": 1}})
	// Back to the main branch: the leaf is the last entry pi reads, so the
	// main branch continues after the abandoned one.
	b.add(leaf, "message", map[string]any{"message": map[string]any{"role": "user", "content": "after the relay", "timestamp": 1}})
	s.path = filepath.Join(t.TempDir(), "s.jsonl")
	b.write(s.path)
	return s
}

func recallText(t *testing.T, e *Engine, path string, args map[string]any) string {
	t.Helper()
	raw, _ := json.Marshal(args)
	text, err := e.Recall(context.Background(), openReader, RecallRequest{SessionID: "s1", SessionFile: path, Args: raw})
	if err != nil {
		t.Fatal(err)
	}
	return text
}

// firstHit is the entryId of the first result of a search answer.
func firstHit(text string) string {
	_, after, ok := strings.Cut(text, "[1] entryId ")
	if !ok {
		return ""
	}
	id, _, _ := strings.Cut(after, " ")
	return id
}

func TestRecallTolerant(t *testing.T) {
	s := buildRecallSession(t)
	e := New(Options{AgentDir: t.TempDir()})
	tests := []struct {
		query, want string
	}{
		{"export functi", s.exportFn},        // prefixes
		{"functi EXPORT", s.exportFn},        // another order and case
		{"exporting renderNote", s.exportFn}, // a stem, camelCase
		{"ember-cache miss", s.emberLog},     // another separator than the text
		{"ember_cache miss", s.emberLog},
		{"emberCache miss", s.emberLog},
		{"note.go relay", s.relayNote}, // base name plus a directory word
		{"embercache type", s.relayNote},
		{"1796030340880", s.emberLog}, // a long number the index leaves out
		{"resolving symbol_123", s.bigLog},
		{"removed by the user", s.secret}, // the replacement stands in for its entry
	}
	for _, tt := range tests {
		got := recallText(t, e, s.path, map[string]any{"query": tt.query})
		if id := firstHit(got); id != tt.want {
			t.Errorf("recall(%q): first hit %q, want %q\n%s", tt.query, id, tt.want, got)
		}
	}
	// Ranked: "ember" is in many entries; the one that says it most, in the
	// fewest words, is first.
	if got := recallText(t, e, s.path, map[string]any{"query": "ember"}); firstHit(got) == s.relayNote {
		t.Errorf("recall(ember) ranks the single mention first:\n%s", got)
	}
}

func TestRecallNeverReturnsHidden(t *testing.T) {
	s := buildRecallSession(t)
	e := New(Options{AgentDir: t.TempDir()})
	for _, q := range []string{"platypus", "secret word", "tabs", "never use", "banana", "split", "last question", "after the relay"} {
		got := recallText(t, e, s.path, map[string]any{"query": q})
		if strings.Contains(got, "entryId") {
			t.Errorf("recall(%q) returned omitted, replaced, abandoned or in-context text:\n%s", q, got)
		}
	}
	for id, want := range map[string]string{
		s.tabs:   "was omitted from the context",
		s.banana: "is not on the current branch",
		"nope":   "no entry",
	} {
		got := recallText(t, e, s.path, map[string]any{"entryId": id})
		if !strings.Contains(got, want) || strings.Contains(got, "banana split") || strings.Contains(got, "Never use tabs") {
			t.Errorf("recall({entryId: %q}) = %q, want %q and nothing of the entry", id, got, want)
		}
	}
	if got := recallText(t, e, s.path, map[string]any{"entryId": s.secret}); !strings.Contains(got, "removed by the user") || strings.Contains(got, "platypus") {
		t.Errorf("recall of a replaced entry = %q, want its replacement", got)
	}
}

func TestRecallEntryChunks(t *testing.T) {
	s := buildRecallSession(t)
	e := New(Options{AgentDir: t.TempDir()})
	var all strings.Builder
	offset := 0
	for i := 0; i < 10; i++ {
		got := recallText(t, e, s.path, map[string]any{"entryId": s.bigLog, "offset": offset})
		head, body, _ := strings.Cut(got, "\n")
		if !strings.HasPrefix(head, "entry "+s.bigLog) {
			t.Fatalf("chunk header %q", head)
		}
		body, next, more := strings.Cut(body, "\n[more: recall(")
		all.WriteString(body)
		if !more {
			break
		}
		if n := len([]rune(body)); n != ChunkChars {
			t.Errorf("chunk at %d has %d characters, want %d", offset, n, ChunkChars)
		}
		fmt.Sscanf(next[strings.Index(next, `"offset":`)+9:], "%d", &offset)
	}
	if all.String() != s.bigText {
		t.Errorf("the chunks (%d bytes) do not add up to the entry's text (%d bytes); tail %q", all.Len(), len(s.bigText), all.String()[all.Len()-60:])
	}
}

func TestRecallArgs(t *testing.T) {
	tests := []struct {
		raw  string
		want RecallArgs
	}{
		{`{"query":"a b"}`, RecallArgs{Query: "a b", Limit: 8}},
		{`{"query":"a","entryId":"x","limit":100,"offset":-5}`, RecallArgs{Query: "a", EntryID: "x", Limit: 30}},
		{`{"limit":0,"offset":12000,"scope":"lineage"}`, RecallArgs{Limit: 1, Offset: 12000, Lineage: true}},
		{`{"query":5,"entryId":["x"],"limit":"7","scope":true}`, RecallArgs{Limit: 8}},
		{`not json`, RecallArgs{Limit: 8}},
	}
	for _, tt := range tests {
		if d := cmp.Diff(tt.want, ParseRecallArgs(json.RawMessage(tt.raw))); d != "" {
			t.Errorf("ParseRecallArgs(%s) mismatch (-want +got):\n%s", tt.raw, d)
		}
	}
}

func TestRecallOversize(t *testing.T) {
	s := buildRecallSession(t)
	e := New(Options{AgentDir: t.TempDir()})
	huge := strings.Repeat("ember ", 20000)
	for _, args := range []map[string]any{
		{"query": huge},
		{"query": huge, "limit": 30},
		{"entryId": huge},
		{"entryId": "note:" + strings.Repeat("9", 5000)},
		{"query": "line", "limit": 30},
		{"entryId": s.bigLog, "offset": 1 << 50},
		{"scope": huge, "query": "ember"},
	} {
		got := recallText(t, e, s.path, args)
		if n := len([]rune(got)); n > ChunkChars+400 {
			t.Errorf("recall(%.40v...) answered %d characters", args, n)
		}
		if strings.Contains(got, strings.Repeat("ember ", 100)) {
			t.Errorf("recall echoed an oversize argument whole")
		}
	}
	if got := recallText(t, e, s.path, map[string]any{"query": "line", "limit": 30}); len([]rune(got)) > SearchCap {
		t.Errorf("a search answered %d characters, over %d", len([]rune(got)), SearchCap)
	}
}

// TestRecallIncremental: a second recall reads only what was appended.
func TestRecallIncremental(t *testing.T) {
	s := buildRecallSession(t)
	e := New(Options{AgentDir: t.TempDir()})
	f, err := session.Open(s.path)
	if err != nil {
		t.Fatal(err)
	}
	read := func(p string, fn func(*session.File) error) error {
		if _, err := f.Update(); err != nil {
			return err
		}
		return fn(f)
	}
	ask := func(q string) string {
		raw, _ := json.Marshal(map[string]any{"query": q})
		text, err := e.Recall(context.Background(), read, RecallRequest{SessionID: "s1", SessionFile: s.path, Args: raw})
		if err != nil {
			t.Fatal(err)
		}
		return text
	}
	ask("ember")
	first := e.Indexed(s.path)
	if first != len(f.Entries) {
		t.Fatalf("indexed %d of %d entries", first, len(f.Entries))
	}
	ix := e.indexes[s.path].ix
	docs := len(ix.docs)
	// pi appends a new exchange and a second relay.
	fd, _ := os.OpenFile(s.path, os.O_APPEND|os.O_WRONLY, 0)
	last := f.Entries[len(f.Entries)-1].ID
	fmt.Fprintf(fd, `{"type":"message","id":"n1","parentId":%q,"timestamp":"2026-12-01T11:00:00.000Z","message":{"role":"user","content":"quokka habitat","timestamp":2}}`+"\n", last)
	fmt.Fprintf(fd, `{"type":"message","id":"n2","parentId":"n1","timestamp":"2026-12-01T11:00:01.000Z","message":{"role":"user","content":"new tail","timestamp":2}}`+"\n")
	fmt.Fprintf(fd, `{"type":"compaction","id":"n3","parentId":"n2","timestamp":"2026-12-01T11:00:02.000Z","summary":"note 2","firstKeptEntryId":"n2","tokensBefore":9}`+"\n")
	fd.Close()
	if got := ask("quokka"); firstHit(got) != "n1" {
		t.Errorf("recall after the file grew did not find the new entry:\n%s", got)
	}
	if e.indexes[s.path].ix != ix || len(ix.docs) != docs+2 {
		t.Errorf("the index was rebuilt (or grew by %d documents, want 2)", len(ix.docs)-docs)
	}
}

// TestStoreDiscardRace: Discard and a note being stored run at once, over
// and over; whenever Discard ran, no note file is left.
func TestStoreDiscardRace(t *testing.T) {
	dir := t.TempDir()
	e := New(Options{AgentDir: dir})
	for i := 0; i < 300; i++ {
		token := fmt.Sprintf("t%d", i)
		path := filepath.Join(dir, fmt.Sprintf("%d.md", i))
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); _ = e.store(context.Background(), token, path, []byte("note")) }()
		go func() { defer wg.Done(); e.Discard(token) }()
		wg.Wait()
		if _, err := os.Stat(path); err == nil {
			t.Fatalf("round %d: a discarded relay left its note", i)
		}
	}
	// A cancelled request stores nothing.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := e.store(ctx, "c", filepath.Join(dir, "c.md"), []byte("x")); err == nil {
		t.Error("store with a cancelled context succeeded")
	}
	if _, err := os.Stat(filepath.Join(dir, "c.md")); err == nil {
		t.Error("a cancelled relay left its note")
	}
}

func TestNoteNumbering(t *testing.T) {
	agent := t.TempDir()
	e := New(Options{AgentDir: agent, Git: func(context.Context, string, string) ([]string, error) { return nil, nil }})
	s := buildRecallSession(t)
	for want := 1; want <= 3; want++ {
		r, err := e.Note(context.Background(), openReader, DefaultConfig(), NoteRequest{SessionID: "s1", SessionFile: s.path, Token: fmt.Sprint(want)})
		if err != nil {
			t.Fatal(err)
		}
		if r.N != want || r.Details.NotePath != filepath.Join(agent, "context-relay", "s1", fmt.Sprintf("%d.md", want)) || !r.Details.Relay {
			t.Errorf("note %d: %+v", want, r)
		}
		st, err := os.Stat(r.Details.NotePath)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("note file %s: %v %v", r.Details.NotePath, err, st)
		}
	}
	if got := recallText(t, e, s.path, map[string]any{"entryId": "note:2"}); !strings.Contains(got, "# Handoff note 2") {
		t.Errorf("recall note:2 = %.200s", got)
	}
	if _, err := e.Note(context.Background(), openReader, DefaultConfig(), NoteRequest{SessionID: "../x", SessionFile: s.path, Token: "z"}); err == nil {
		t.Error("a session id with a path separator was accepted")
	}
}

func TestScanPayload(t *testing.T) {
	data := []byte("ok line\nEMBER cache miss on shard 3\nembercache ok\nthe Ember_Cache missed again\r\nlast\n")
	got := ScanPayload(data, ParseQuery("ember-cache miss"), 5)
	want := []PayloadHit{{Line: 2, Text: "EMBER cache miss on shard 3"}, {Line: 4, Text: "the Ember_Cache missed again"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("ScanPayload mismatch (-want +got):\n%s", d)
	}
	if got := ScanPayload(data, ParseQuery("ember miss"), 1); len(got) != 1 {
		t.Errorf("ScanPayload with max 1 gave %d hits", len(got))
	}
	if got := ScanPayload(data, nil, 5); got != nil {
		t.Errorf("ScanPayload without terms = %v", got)
	}
}
