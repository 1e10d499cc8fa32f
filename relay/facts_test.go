package relay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestNoteMemberOrder: the note reads members where pi writes them first
// (role, toolName, content) and stops early, but a file whose objects have
// their members in another order (here sorted, as Go and jq write them)
// gives the same note.
func TestNoteMemberOrder(t *testing.T) {
	for _, fixture := range []string{"short", "long", "relayed", "branch"} {
		data, err := os.ReadFile(filepath.Join("testdata", fixture+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		var sorted bytes.Buffer
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var v any
			if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
				t.Fatal(err)
			}
			line, _ := json.Marshal(v) // maps: members sorted
			sorted.Write(append(line, '\n'))
		}
		path := filepath.Join(t.TempDir(), fixture+".jsonl")
		if err := os.WriteFile(path, sorted.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		want := composeFixture(t, fixture, DefaultConfig()).Text
		got, err := Compose(context.Background(), openReader, fakeGit, path, "", "", 0, DefaultConfig(), 2, "/agent/context-relay/"+fixture+"/2.md")
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, got.Text); d != "" {
			t.Errorf("%s with sorted members: the note differs (-pi's order +sorted):\n%s", fixture, d)
		}
	}
}
