package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

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

// open writes the session to a temporary file and reads it back: the
// file's path, the File, and its branch to the last entry.
func (b *builder) open() (string, *session.File, []*session.Entry) {
	b.t.Helper()
	path := filepath.Join(b.t.TempDir(), "s.jsonl")
	b.write(path)
	f, err := session.Open(path)
	if err != nil {
		b.t.Fatal(err)
	}
	branch, err := f.Branch("")
	if err != nil {
		b.t.Fatal(err)
	}
	return path, f, branch
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
	// A hit shows about 200 characters on each side of the match.
	got := recallText(t, e, s.path, map[string]any{"query": "resolving symbol_400"})
	_, snip, _ := strings.Cut(got, "\n    ")
	snip, _, _ = strings.Cut(snip, "\n")
	if !strings.Contains(snip, "symbol_400") || len([]rune(snip)) > 2*snippetChars+80 || len([]rune(snip)) < snippetChars {
		t.Errorf("the snippet of a 30000-character entry has %d characters:\n%s", len([]rune(snip)), snip)
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
	// Words in nothing else find nothing; words also in other entries find
	// those, never the hidden ones.
	for _, q := range []string{"platypus", "tabs", "banana", "split"} {
		got := recallText(t, e, s.path, map[string]any{"query": q})
		if strings.Contains(got, "entryId") {
			t.Errorf("recall(%q) returned omitted, replaced, abandoned or in-context text:\n%s", q, got)
		}
	}
	hidden := []string{s.tabs, s.banana, s.last}
	for _, q := range []string{"platypus secret word", "never use tabs", "banana split with ember", "last question about the ember cache", "after the relay"} {
		got := recallText(t, e, s.path, map[string]any{"query": q, "limit": 30})
		for _, id := range hidden {
			if strings.Contains(got, "entryId "+id) {
				t.Errorf("recall(%q) returned hidden entry %s:\n%s", q, id, got)
			}
		}
		_, results, _ := strings.Cut(got, "\n\n") // after the query's echo and the words it matched
		for _, text := range []string{"platypus", "Never use tabs", "banana split", "last question", "after the relay"} {
			if strings.Contains(results, text) {
				t.Errorf("recall(%q) returned hidden text %q:\n%s", q, text, got)
			}
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
	var words []string // words nothing holds, each long: the answer lists them
	for i := 0; i < 40; i++ {
		words = append(words, fmt.Sprintf("%c%s", 'a'+i%26, strings.Repeat("q", 3000)))
	}
	if _, err := e.Note(context.Background(), openReader, DefaultConfig(), NoteRequest{SessionID: "s1", SessionFile: s.path, Token: "t"}); err != nil {
		t.Fatal(err)
	}
	for _, args := range []map[string]any{
		{"query": huge},
		{"query": strings.Join(words, " ")},
		{"query": strings.Repeat("x", 1<<20)},
		{"entryId": "note:1", "offset": 1 << 50},
		{"entryId": "note:1", "limit": huge, "scope": huge},
		{"entryId": s.bigLog, "offset": huge, "limit": 1e300},
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
		if strings.Contains(got, strings.Repeat("ember ", 100)) || strings.Contains(got, strings.Repeat("q", 300)) || strings.Contains(got, strings.Repeat("x", 300)) {
			t.Errorf("recall echoed an oversize argument whole: %.300s", got)
		}
		if _, ok := args["entryId"]; !ok && len([]rune(got)) > SearchCap {
			t.Errorf("recall(%.40v...): a search answered %d characters, over %d", args, len([]rune(got)), SearchCap)
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
		if r.N != want || r.Details.NotePath != filepath.Join(agent, "context-relay", "s1", fmt.Sprintf("%d.md", want)) || !r.Details.Relay || r.Details.Version != Version {
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
	got := ScanPayload(data, ParseQuery("ember-cache miss").Terms, 5)
	want := []PayloadHit{{Line: 2, Offset: 8, Text: "EMBER cache miss on shard 3"}, {Line: 4, Offset: 50, Text: "the Ember_Cache missed again"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("ScanPayload mismatch (-want +got):\n%s", d)
	}
	if got := ScanPayload(data, ParseQuery("ember miss").Terms, 1); len(got) != 1 {
		t.Errorf("ScanPayload with max 1 gave %d hits", len(got))
	}
	if got := ScanPayload(data, nil, 5); got != nil {
		t.Errorf("ScanPayload without terms = %v", got)
	}
}

// TestRecallLineage: scope "lineage" also searches the sessions this one
// was forked or continued from (parentSession), their whole branch, and
// names the session of each hit; without it, they are not searched.
func TestRecallLineage(t *testing.T) {
	dir := t.TempDir()
	grand := newBuilder(t)
	grand.lines[0] = `{"type":"session","version":3,"id":"g0000000-0000-7000-8000-000000000000","timestamp":"2026-11-01T10:00:00.000Z","cwd":"/work"}`
	grand.n = 200 // ids of its own
	inGrand := grand.user("the quokka habitat migration plan")
	grand.write(filepath.Join(dir, "grand.jsonl"))
	parent := newBuilder(t)
	parent.lines[0] = `{"type":"session","version":3,"id":"p0000000-0000-7000-8000-000000000000","timestamp":"2026-11-02T10:00:00.000Z","cwd":"/work","parentSession":"` + filepath.Join(dir, "grand.jsonl") + `"}`
	parent.n = 100
	inParent := parent.user("quokka counts in the parent session")
	parent.write(filepath.Join(dir, "parent.jsonl"))
	child := newBuilder(t)
	child.lines[0] = `{"type":"session","version":3,"id":"c0000000-0000-7000-8000-000000000000","timestamp":"2026-11-03T10:00:00.000Z","cwd":"/work","parentSession":"` + filepath.Join(dir, "parent.jsonl") + `"}`
	child.user("hello")
	path := filepath.Join(dir, "child.jsonl")
	child.write(path)
	e := New(Options{AgentDir: t.TempDir()})
	if got := recallText(t, e, path, map[string]any{"query": "quokka"}); strings.Contains(got, "entryId") {
		t.Errorf("recall without lineage searched ancestors:\n%s", got)
	}
	got := recallText(t, e, path, map[string]any{"query": "quokka", "scope": "lineage"})
	for _, want := range []string{"entryId " + inParent, "session p0000000-0000-7000-8000-000000000000", "entryId " + inGrand, "session g0000000-0000-7000-8000-000000000000", "and ancestor sessions"} {
		if !strings.Contains(got, want) {
			t.Errorf("recall with lineage lacks %q:\n%s", want, got)
		}
	}
	if got := recallText(t, e, path, map[string]any{"entryId": inGrand, "scope": "lineage"}); !strings.Contains(got, "quokka habitat migration plan") {
		t.Errorf("recall({entryId, scope: lineage}) of an ancestor's entry = %q", got)
	}
	// A cycle of parents ends the lineage: each session is searched once.
	grand.lines[0] = strings.Replace(grand.lines[0], `"cwd":"/work"`, `"cwd":"/work","parentSession":"`+path+`"`, 1)
	grand.write(filepath.Join(dir, "grand.jsonl"))
	if got := recallText(t, e, path, map[string]any{"query": "quokka", "scope": "lineage"}); strings.Count(got, "entryId "+inGrand) != 1 || strings.Count(got, "entryId "+inParent) != 1 {
		t.Errorf("with a cycle of parents:\n%s", got)
	}
	// So does a deleted ancestor.
	os.Remove(filepath.Join(dir, "grand.jsonl"))
	if got := recallText(t, e, path, map[string]any{"query": "quokka", "scope": "lineage"}); !strings.Contains(got, inParent) || strings.Contains(got, inGrand) {
		t.Errorf("with the grandparent deleted:\n%s", got)
	}
}

// TestRecallEntryIDWins: with both query and entryId, the entry is read.
func TestRecallEntryIDWins(t *testing.T) {
	s := buildRecallSession(t)
	e := New(Options{AgentDir: t.TempDir()})
	got := recallText(t, e, s.path, map[string]any{"query": "ember", "entryId": s.exportFn})
	if !strings.HasPrefix(got, "entry "+s.exportFn) || strings.Contains(got, "entries match") {
		t.Errorf("recall({query, entryId}) = %.300s, want the entry", got)
	}
}

// TestRecallImages: an image is "[image]" in snippets and entries, never
// its data.
func TestRecallImages(t *testing.T) {
	b := newBuilder(t)
	img := b.add("-", "message", map[string]any{"message": map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "text", "text": "the ember chart"},
		map[string]any{"type": "image", "data": "aGVsbG8gZW1iZXI=", "mimeType": "image/png"},
	}, "timestamp": 1}})
	kept := b.user("next")
	b.add("-", "compaction", map[string]any{"summary": "note", "firstKeptEntryId": kept, "tokensBefore": 10})
	path, _, _ := b.open()
	e := New(Options{AgentDir: t.TempDir()})
	for _, args := range []map[string]any{{"query": "ember chart"}, {"entryId": img}} {
		got := recallText(t, e, path, args)
		if !strings.Contains(got, "[image]") || strings.Contains(got, "aGVsbG8") || !strings.Contains(got, "the ember chart") {
			t.Errorf("recall(%v) = %q, want the text and [image]", args, got)
		}
	}
}

// TestRecallPayloadsVisible: lines of offloaded results are returned only
// when an entry the model sees names their handle: not for a result
// omitted with context_edit, nor for one that no entry of the branch names.
func TestRecallPayloadsVisible(t *testing.T) {
	b := newBuilder(t)
	shown := "ce_000000000000000000000001"
	hidden := "ce_000000000000000000000002"
	b.tool("bash", "build log stored as "+shown)
	gone := b.tool("bash", "secret log stored as "+hidden)
	b.add("-", "context_edit", map[string]any{"targetId": gone, "replacement": nil})
	kept := b.user("next")
	b.add("-", "compaction", map[string]any{"summary": "note", "firstKeptEntryId": kept, "tokensBefore": 10})
	path, _, _ := b.open()
	payloads := func(ctx context.Context, cwd, sessionID string, fn func(handle, source string, size int64, data []byte) error) error {
		for _, h := range []string{shown, hidden, "ce_000000000000000000000003"} {
			if err := fn(h, "bash", 100, []byte("x\nquokka replica lost in "+h+"\n")); err != nil {
				return err
			}
		}
		return nil
	}
	e := New(Options{AgentDir: t.TempDir(), Payloads: payloads})
	got := recallText(t, e, path, map[string]any{"query": "quokka replica"})
	if !strings.Contains(got, "quokka replica lost in "+shown) {
		t.Errorf("recall lacks the line of the visible offloaded result:\n%s", got)
	}
	if strings.Contains(got, hidden) || strings.Contains(got, "000000000003") {
		t.Errorf("recall returned lines of an omitted or unnamed offloaded result:\n%s", got)
	}
	// The hint reads the line itself, by its byte range.
	if want := `ctx_read({"id":"` + shown + `","offset":0,"length":3074})`; !strings.Contains(got, want) {
		t.Errorf("recall's hint is not %s:\n%s", want, got)
	}
}

// TestRecallPayloadHintRange: a hint's range read holds its line, with
// what stands before it, in a payload where the query's words are on
// every line.
func TestRecallPayloadHintRange(t *testing.T) {
	b := newBuilder(t)
	h := "ce_000000000000000000000001"
	b.tool("bash", "build log stored as "+h)
	kept := b.user("next")
	b.add("-", "compaction", map[string]any{"summary": "note", "firstKeptEntryId": kept, "tokensBefore": 10})
	path, _, _ := b.open()
	var log strings.Builder
	for i := 0; i < 3000; i++ {
		fmt.Fprintf(&log, "build step %d ok\n", i)
	}
	log.WriteString("build step 3000 ERROR linker ran out of memory\n")
	for i := 3001; i < 6000; i++ {
		fmt.Fprintf(&log, "build step %d ok\n", i)
	}
	data := []byte(log.String())
	payloads := func(ctx context.Context, cwd, sessionID string, fn func(handle, source string, size int64, data []byte) error) error {
		return fn(h, "bash", int64(len(data)), data)
	}
	e := New(Options{AgentDir: t.TempDir(), Payloads: payloads})
	got := recallText(t, e, path, map[string]any{"query": "build error"})
	m := regexp.MustCompile(`ctx_read\(\{"id":"` + h + `","offset":(\d+),"length":(\d+)\}\)`).FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("no range hint:\n%s", got)
	}
	off, _ := strconv.Atoi(m[1])
	n, _ := strconv.Atoi(m[2])
	window := string(data[off:min(len(data), off+n)])
	if !strings.Contains(window, "build step 3000 ERROR linker ran out of memory") || !strings.Contains(window, "build step 2999 ok") {
		t.Errorf("the hint's range [%d, +%d) does not hold the line and the one before:\n%s", off, n, window)
	}
}

// TestRecallNoteFiles: a note file that is a symbolic link (to a secret
// elsewhere), a FIFO or a directory is refused with its path and what it
// is; none is followed or blocks. A link to /etc/passwd was read out to
// the model, and a FIFO blocked recall forever.
func TestRecallNoteFiles(t *testing.T) {
	agent := t.TempDir()
	e := New(Options{AgentDir: agent, Git: func(context.Context, string, string) ([]string, error) { return nil, nil }})
	s := buildRecallSession(t)
	dir := e.Dir("s1")
	if err := os.MkdirAll(filepath.Join(dir, "3.md"), 0o700); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("the secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(dir, "1.md")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "2.md"), 0o600); err != nil {
		t.Fatal(err)
	}
	for n, want := range map[int]string{1: "a symbolic link, not followed", 2: "a named pipe", 3: "a directory"} {
		done := make(chan string, 1)
		go func() { done <- recallText(t, e, s.path, map[string]any{"entryId": fmt.Sprintf("note:%d", n)}) }()
		select {
		case got := <-done:
			if strings.Contains(got, "the secret") || !strings.Contains(got, filepath.Join(dir, fmt.Sprintf("%d.md", n))) || !strings.Contains(got, want) {
				t.Errorf("recall note:%d = %.300s, want an error naming the file and %q", n, got, want)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("recall note:%d still blocked after 20s", n)
		}
	}
}

// continues appends the custom entry a relaunched pi's session holds for
// the session it continues (pi-session's /handoff relaunch).
func (b *builder) continues(sessionFile string) {
	b.add("-", "custom", map[string]any{"customType": ContinuesType, "data": map[string]any{"sessionFile": sessionFile, "handoff": "/work/.ai-work/handoff.md"}})
}

// TestRecallLineageRelaunch: after a /handoff relaunch, scope "lineage"
// in the new session reaches the session before the relaunch (named by a
// pi-session:continues entry on the branch), and from there that one's
// own parentSession and continues entries; each session once, a missing
// file skipped, at most maxLineage ancestors. Without the scope, the
// answer says the lineage is there.
func TestRecallLineageRelaunch(t *testing.T) {
	dir := t.TempDir()
	file := func(name string) string { return filepath.Join(dir, name+".jsonl") }
	header := func(b *builder, id, parent string) {
		b.lines[0] = `{"type":"session","version":3,"id":"` + id + `","timestamp":"2026-11-01T10:00:00.000Z","cwd":"/work"`
		if parent != "" {
			b.lines[0] += `,"parentSession":"` + parent + `"`
		}
		b.lines[0] += "}"
	}
	// fork -> before (its parentSession) -> after (relaunched: continues before).
	fork := newBuilder(t)
	header(fork, "f0000000-0000-7000-8000-000000000000", "")
	fork.n = 300
	inFork := fork.user("rotor_417 was tuned in the forked session")
	fork.write(file("fork"))
	before := newBuilder(t)
	header(before, "b0000000-0000-7000-8000-000000000000", file("fork"))
	before.n = 200
	inBefore := before.tool("bash", "quokka habitat migration failed at shard 17")
	before.user("/handoff")
	before.write(file("before"))
	after := newBuilder(t)
	header(after, "a0000000-0000-7000-8000-000000000000", "")
	after.continues(file("before"))
	after.continues(file("gone")) // deleted since: skipped
	after.user("go on from the handoff")
	path := file("after")
	after.write(path)
	e := New(Options{AgentDir: t.TempDir()})

	got := recallText(t, e, path, map[string]any{"query": "quokka migration"})
	if strings.Contains(got, "entryId") || !strings.Contains(got, `scope: "lineage"`) {
		t.Errorf("recall without lineage searched the session before the relaunch, or did not say it is there:\n%s", got)
	}
	got = recallText(t, e, path, map[string]any{"query": "quokka migration", "scope": "lineage"})
	if firstHit(got) != inBefore || !strings.Contains(got, "session b0000000-0000-7000-8000-000000000000") {
		t.Errorf("recall with lineage did not reach the session before the relaunch:\n%s", got)
	}
	if got := recallText(t, e, path, map[string]any{"query": "rotor_417", "scope": "lineage"}); firstHit(got) != inFork {
		t.Errorf("recall with lineage did not reach the parent of the session before the relaunch:\n%s", got)
	}
	if got := recallText(t, e, path, map[string]any{"entryId": inBefore, "scope": "lineage"}); !strings.Contains(got, "quokka habitat migration failed") {
		t.Errorf("recall({entryId, scope: lineage}) of the session before the relaunch = %q", got)
	}

	// A cycle: the fork continues the relaunched session.
	fork.continues(path)
	fork.write(file("fork"))
	got = recallText(t, e, path, map[string]any{"query": "quokka rotor_417", "scope": "lineage", "limit": 30})
	if strings.Count(got, "entryId "+inBefore) != 1 || strings.Count(got, "entryId "+inFork) != 1 {
		t.Errorf("with a cycle of continues entries:\n%s", got)
	}

	// A long chain: at most maxLineage ancestors are read.
	prev := ""
	var ids []string
	for i := 0; i < maxLineage+4; i++ {
		b := newBuilder(t)
		header(b, fmt.Sprintf("c%07d-0000-7000-8000-000000000000", i), "")
		b.n = 1000 * (i + 1)
		if prev != "" {
			b.continues(prev)
		}
		ids = append(ids, b.user(fmt.Sprintf("chain link %d of the kalomi chain", i)))
		prev = file(fmt.Sprintf("chain%d", i))
		b.write(prev)
	}
	got = recallText(t, e, prev, map[string]any{"query": "kalomi chain", "scope": "lineage", "limit": 30})
	if n := strings.Count(got, "chain link"); n != maxLineage {
		t.Errorf("a chain of %d sessions: %d ancestors searched, want %d:\n%s", len(ids), n, maxLineage, got)
	}
}

// TestAncestors: the header's parentSession first, then the continues
// entries of the branch, latest first, each once; relative and empty
// names are left out, and so are entries off the branch.
func TestAncestors(t *testing.T) {
	b := newBuilder(t)
	b.lines[0] = `{"type":"session","version":3,"id":"x","timestamp":"2026-11-01T10:00:00.000Z","cwd":"/work","parentSession":"/s/parent.jsonl"}`
	b.continues("/s/first.jsonl")
	fork := b.last
	b.continues("relative.jsonl")
	b.continues("")
	b.continues("/s/second.jsonl")
	b.continues("/s/first.jsonl")
	b.add(fork, "custom", map[string]any{"customType": ContinuesType, "data": map[string]any{"sessionFile": "/s/off-branch.jsonl"}})
	b.add(b.last, "custom", map[string]any{"customType": "other", "data": map[string]any{"sessionFile": "/s/other.jsonl"}})
	_, f, _ := b.open()
	branch, err := f.Branch("e0000005")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/s/parent.jsonl", "/s/first.jsonl", "/s/second.jsonl"}
	if d := cmp.Diff(want, Ancestors(f, branch)); d != "" {
		t.Errorf("Ancestors mismatch (-want +got):\n%s", d)
	}
}

// TestRecallConcurrent: recalls of one session at once (a model's
// parallel tool calls) answer as they do one at a time (and, under -race,
// share the index without a race).
func TestRecallConcurrent(t *testing.T) {
	s := buildRecallSession(t)
	e := New(Options{AgentDir: t.TempDir()})
	queries := []string{"ember cache", "export functi", "resolving symbol_12", "removed by the user", "line 400"}
	want := map[string]string{}
	for _, q := range queries {
		want[q] = recallText(t, New(Options{AgentDir: t.TempDir()}), s.path, map[string]any{"query": q})
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8*len(queries))
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, q := range queries {
				raw, _ := json.Marshal(map[string]any{"query": q})
				got, err := e.Recall(context.Background(), openReader, RecallRequest{SessionID: "s1", SessionFile: s.path, Args: raw})
				if err != nil || got != want[q] {
					errs <- fmt.Sprintf("recall(%q) at once = %v\n%s\nwant\n%s", q, err, got, want[q])
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for m := range errs {
		t.Error(m)
	}
}

// TestRecallLineageUnreadable: an ancestor that cannot be read (a FIFO, a
// directory, a file without read permission for this user) is skipped
// with a note naming it and why; the other ancestors are still searched.
func TestRecallLineageUnreadable(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	asDir := filepath.Join(dir, "dir.jsonl")
	if err := os.Mkdir(asDir, 0o700); err != nil {
		t.Fatal(err)
	}
	before := newBuilder(t)
	before.lines[0] = `{"type":"session","version":3,"id":"b0000000-0000-7000-8000-000000000000","timestamp":"2026-11-01T10:00:00.000Z","cwd":"/work"}`
	before.n = 200
	inBefore := before.tool("bash", "quokka habitat migration failed at shard 17")
	before.write(filepath.Join(dir, "before.jsonl"))
	after := newBuilder(t)
	after.lines[0] = `{"type":"session","version":3,"id":"a0000000-0000-7000-8000-000000000000","timestamp":"2026-11-01T10:00:00.000Z","cwd":"/work","parentSession":"` + fifo + `"}`
	after.continues(filepath.Join(dir, "before.jsonl"))
	after.continues(asDir)
	after.user("go on")
	path := filepath.Join(dir, "after.jsonl")
	after.write(path)
	e := New(Options{AgentDir: t.TempDir()})
	for _, args := range []map[string]any{
		{"query": "quokka migration", "scope": "lineage"},
		{"entryId": "nope", "scope": "lineage"},
	} {
		done := make(chan string, 1)
		go func() { done <- recallText(t, e, path, args) }()
		var got string
		select {
		case got = <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("recall %v blocked on a FIFO ancestor", args)
		}
		if args["query"] != nil && firstHit(got) != inBefore {
			t.Errorf("recall %v did not search the readable ancestor:\n%s", args, got)
		}
		for _, want := range []string{"Not searched (cannot be read): ", fifo + " is a named pipe", asDir + " is a directory"} {
			if !strings.Contains(got, want) {
				t.Errorf("recall %v lacks %q:\n%s", args, want, got)
			}
		}
	}
	// The found entry needs no note.
	if got := recallText(t, e, path, map[string]any{"entryId": inBefore, "scope": "lineage"}); strings.Contains(got, "Not searched") {
		t.Errorf("recall of a found entry has the note:\n%s", got)
	}
}

// TestNoteDirTrust: notes are not written into, nor read from, a notes
// directory someone else could write to (the refusal says why and how to
// fix it); a notes directory that is a symbolic link to one of yours is
// used, after CheckDir's warning naming the link.
func TestNoteDirTrust(t *testing.T) {
	noGit := func(context.Context, string, string) ([]string, error) { return nil, nil }
	s := buildRecallSession(t)
	note := func(e *Engine) (NoteResult, error) {
		return e.Note(context.Background(), openReader, DefaultConfig(), NoteRequest{SessionID: "s1", SessionFile: s.path, Token: "t"})
	}
	for _, c := range []struct {
		name, rel string
		mode      os.FileMode
		want      string
	}{
		{"relay directory writable by others", "context-relay", 0o777, "context-relay is writable by others (mode 0777)"},
		{"session's directory writable by the group", "context-relay/s1", 0o770, "s1 is writable by its group (mode 0770)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			agent := t.TempDir()
			e := New(Options{AgentDir: agent, Git: noGit})
			if _, err := note(e); err != nil { // note 1, written while the directory was yours
				t.Fatal(err)
			}
			if err := os.Chmod(filepath.Join(agent, c.rel), c.mode); err != nil {
				t.Fatal(err)
			}
			_, err := note(e)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "fix: chmod go-w") {
				t.Errorf("Note = %v, want a refusal saying %q and the fix", err, c.want)
			}
			if _, err := os.Stat(filepath.Join(e.Dir("s1"), "2.md")); err == nil {
				t.Error("note 2 was written")
			}
			if got := recallText(t, e, s.path, map[string]any{"entryId": "note:1"}); strings.Contains(got, "# Handoff note 1") || !strings.Contains(got, c.want) {
				t.Errorf("recall note:1 = %.300s, want the refusal", got)
			}
			if _, err := e.CheckDir("s1"); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("CheckDir = %v, want the refusal", err)
			}
		})
	}
	t.Run("a link to a directory of yours", func(t *testing.T) {
		agent, elsewhere := t.TempDir(), t.TempDir()
		if err := os.Symlink(elsewhere, filepath.Join(agent, "context-relay")); err != nil {
			t.Fatal(err)
		}
		e := New(Options{AgentDir: agent, Git: noGit})
		w, err := e.CheckDir("s1")
		if err != nil || !strings.Contains(w, "context-relay is a symbolic link to "+elsewhere) {
			t.Fatalf("CheckDir = %q, %v; want a warning naming the link", w, err)
		}
		if w, _ := e.CheckDir("s1"); w != "" {
			t.Errorf("CheckDir warned twice: %q", w)
		}
		r, err := note(e)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(elsewhere, "s1", "1.md")); err != nil || r.N != 1 {
			t.Errorf("note 1 not written through the link: %v", err)
		}
	})
}
