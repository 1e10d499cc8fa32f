package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
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
