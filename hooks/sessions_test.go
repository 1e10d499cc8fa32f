package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pi-session/pi-session/session"
)

// TestDescribe reads a recorded session through the host, first half
// written, then all of it: the answers match the session package's own
// reading of the whole file, and a file pi has not written yet is empty.
func TestDescribe(t *testing.T) {
	data, err := os.ReadFile("../session/testdata/compaction.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "s.jsonl")
	h, _ := startHost(t, Config{})
	ctx := context.Background()
	c, err := Dial(ctx, h.Path(), Hello{Client: "test", SessionFile: path})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	describe := func() Describe {
		t.Helper()
		res, _, err := c.Call(ctx, "session.describe", DescribeParams{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var d Describe
		json.Unmarshal(res, &d)
		return d
	}
	if d := describe(); d.Exists || d.Entries != 0 {
		t.Errorf("describe before pi wrote the file = %+v", d)
	}
	half := bytes.Index(data[len(data)/2:], []byte("\n")) + len(data)/2 + 1
	os.WriteFile(path, data[:half], 0o600)
	first := describe()
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.Write(data[half:])
	f.Close()
	got := describe()

	sf, err := session.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	branch, _ := sf.Branch("")
	msgs := session.Project(branch)
	ct := session.EstimateContextTokens(branch, msgs)
	want := Describe{
		SessionFile: path, Exists: true, Entries: len(sf.Entries), Branch: len(branch), Messages: len(msgs),
		LLMMessages: len(session.LLMMessages(msgs)), Tokens: session.EstimateTokens(msgs),
		ContextTokens: ct.Tokens, UsageTokens: ct.UsageTokens, TrailingTokens: ct.TrailingTokens,
		LeafID: sf.Leaf().ID, Bytes: int64(len(data)),
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("describe after the whole file (-want +got):\n%s", d)
	}
	if first.Entries == 0 || first.Entries >= got.Entries || first.Bytes != int64(half) {
		t.Errorf("describe of the first half = %+v; want some of the %d entries, %d bytes", first, got.Entries, half)
	}
	// An earlier leaf is a shorter branch; an unknown one is an error.
	res, _, err := c.Call(ctx, "session.describe", DescribeParams{LeafID: branch[2].ID}, nil)
	var early Describe
	json.Unmarshal(res, &early)
	if err != nil || early.Branch != 3 || early.LeafID != branch[2].ID {
		t.Errorf("describe at the third entry = %+v, %v", early, err)
	}
	if _, _, err := c.Call(ctx, "session.describe", DescribeParams{LeafID: "nope"}, nil); codeOf(err) != CodeEngine {
		t.Errorf("describe at an unknown leaf = %v, want an engine error", err)
	}
}

// TestDescribeDiagnostics: describe lists the first diagnostics with file,
// line and field, the incomplete last line included, says where the rest
// are, and a file pi refuses is an error that says why.
func TestDescribeDiagnostics(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.jsonl")
	lines := `{"type":"session","version":3,"id":"s","timestamp":"2026-11-30T09:18:59.639Z","cwd":"/w"}` + "\n" +
		`{"type":"message","id":"a","parentId":null,"timestamp":"yesterday-ish","message":{"role":"user","content":42}}` + "\n"
	for i := 0; i < 6; i++ {
		lines += "not json\n"
	}
	lines += `{"type":"message","id":"b","par`
	os.WriteFile(path, []byte(lines), 0o600)
	h, _ := startHost(t, Config{})
	d, err := describeVia(t, h, path)
	if err != nil {
		t.Fatal(err)
	}
	want := []Problem{
		{Where: path + ":2", Line: 2, Field: "message.content", What: `"message.content" is a number, want a string or an array of content blocks (role "user"); pi keeps the entry as written: invalid field`},
		{Where: path + ":2", Line: 2, Field: "timestamp", What: `"timestamp" is "yesterday-ish", not an ISO 8601 time such as 2026-11-30T09:18:59.639Z: invalid field`},
		{Where: path + ":3:2", Line: 3, What: "invalid JSON: invalid character 'o' in literal null: malformed line"},
		{Where: path + ":4:2", Line: 4, What: "invalid JSON: invalid character 'o' in literal null: malformed line"},
		{Where: path + ":5:2", Line: 5, What: "invalid JSON: invalid character 'o' in literal null: malformed line"},
	}
	for i := range want {
		want[i].Text = "s.jsonl:" + strings.TrimPrefix(want[i].Where, path+":") + ": " + want[i].What
		if want[i].Field != "" {
			want[i].Text += " [" + want[i].Field + "]"
		}
	}
	if diff := cmp.Diff(want, d.Problems); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	if d.Diagnostics != 9 || d.Rest != "pi-session engine session "+path {
		t.Errorf("diagnostics %d, rest %q; want 9 (the incomplete line 9 included) and the command listing them", d.Diagnostics, d.Rest)
	}

	bom := filepath.Join(dir, "bom.jsonl")
	os.WriteFile(bom, []byte("\xef\xbb\xbf"+lines), 0o600)
	_, err = describeVia(t, h, bom)
	if err == nil || !strings.Contains(err.Error(), bom+":1: the file starts with a UTF-8 byte order mark") {
		t.Errorf("describe of a file with a BOM = %v, want the reason at line 1", err)
	}
}

// describeVia asks h for session.describe as a session of the file path.
func describeVia(t *testing.T, h *Host, path string) (Describe, error) {
	t.Helper()
	ctx := context.Background()
	c, err := Dial(ctx, h.Path(), Hello{Client: "test", SessionFile: path})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var d Describe
	res, _, err := c.Call(ctx, "session.describe", DescribeParams{}, nil)
	json.Unmarshal(res, &d)
	return d, err
}

// TestDescribeRewritten rewrites the session file in place (same inode,
// as pi does when it migrates an old file) between two describes: the
// second one reads the new content, not the entries of the first that
// are gone, and finds the new ones.
func TestDescribeRewritten(t *testing.T) {
	data, err := os.ReadFile("../session/testdata/compaction.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	h, _ := startHost(t, Config{})
	ctx := context.Background()
	c, err := Dial(ctx, h.Path(), Hello{Client: "test", SessionFile: path})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	describe := func() Describe {
		t.Helper()
		res, _, err := c.Call(ctx, "session.describe", DescribeParams{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var d Describe
		json.Unmarshal(res, &d)
		return d
	}
	before := describe()
	// The same file with its first message entry gone and the rest kept:
	// longer than nothing, shorter than before, then a copy of the
	// remaining entries appended under new ids, so it grows past it.
	lines := bytes.SplitAfter(data, []byte("\n"))
	var out bytes.Buffer
	out.Write(lines[0])
	for _, l := range lines[2:] {
		out.Write(l)
	}
	for i, l := range lines[2:] {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		var e map[string]any
		if json.Unmarshal(l, &e) != nil {
			continue
		}
		e["id"] = "copy" + strconv.Itoa(i)
		delete(e, "parentId")
		b, _ := json.Marshal(e)
		out.Write(append(b, '\n'))
	}
	fd, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	fd.Write(out.Bytes())
	fd.Close()
	got := describe()
	sf, err := session.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Entries != len(sf.Entries) || got.LeafID != sf.Leaf().ID || got.Bytes != int64(out.Len()) {
		t.Errorf("describe after the rewrite = %d entries, leaf %q, %d bytes; want %d, %q, %d (before: %d entries, leaf %q)",
			got.Entries, got.LeafID, got.Bytes, len(sf.Entries), sf.Leaf().ID, out.Len(), before.Entries, before.LeafID)
	}
}
