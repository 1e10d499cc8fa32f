package session

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/pi-session/pi-session/golden"
)

// The fixtures in testdata/ were recorded from real pi 1.6.0 runs by
// testdata/record/record.sh: <name>.jsonl is the session file,
// <name>.requests.jsonl every request the model received, and <name>.pi.json
// what pi's own code builds from the file for every possible leaf.

var recorded = []string{"tools", "compaction", "retain-none", "context-edit", "branch"}

// request is one line of a <name>.requests.jsonl log.
type request struct {
	Request  int               `json:"request"`
	Session  bool              `json:"session"`
	LeafID   string            `json:"leafId"`
	Messages []json.RawMessage `json:"messages"`
}

func readRequests(t *testing.T, name string) []request {
	t.Helper()
	fd, err := os.Open(filepath.Join("testdata", name+".requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	var out []request
	sc := bufio.NewScanner(fd)
	sc.Buffer(nil, 1<<26)
	for sc.Scan() {
		var r request
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s.requests.jsonl: %v", name, err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// oracle is a <name>.pi.json file.
type oracle struct {
	Header json.RawMessage   `json:"header"`
	IDs    []string          `json:"ids"`
	Types  []string          `json:"types"`
	Leaf   int               `json:"leaf"`
	Leaves []oracleLeaf      `json:"leaves"`
	Msgs   []json.RawMessage `json:"messages"`
	LLM    []json.RawMessage `json:"llm"`
}

type oracleLeaf struct {
	Leaf    int   `json:"leaf"`
	Branch  []int `json:"branch"`
	Context []struct {
		Entry    int   `json:"entry"`
		Messages []int `json:"messages"`
	} `json:"context"`
	LLM            []int `json:"llm"`
	Tokens         int   `json:"tokens"`
	ContextTokens  int   `json:"contextTokens"`
	UsageTokens    int   `json:"usageTokens"`
	TrailingTokens int   `json:"trailingTokens"`
	LastUsageIndex *int  `json:"lastUsageIndex"`
	Model          *struct {
		Provider string `json:"provider"`
		ModelID  string `json:"modelId"`
	} `json:"model"`
	ThinkingLevel string `json:"thinkingLevel"`
}

func readOracle(t *testing.T, name string) *oracle {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".pi.json"))
	if err != nil {
		t.Fatal(err)
	}
	var o oracle
	if err := json.Unmarshal(b, &o); err != nil {
		t.Fatalf("%s.pi.json: %v", name, err)
	}
	return &o
}

func openFixture(t *testing.T, name string) *File {
	t.Helper()
	f, err := Open(filepath.Join("testdata", name+".jsonl"))
	if err != nil {
		t.Fatalf("Open(%s): %v", name, err)
	}
	return f
}

// values decodes JSON texts for a comparison that ignores formatting and
// member order.
func values(t *testing.T, raws []json.RawMessage) []any {
	t.Helper()
	out := make([]any, len(raws))
	for i, r := range raws {
		if err := json.Unmarshal(r, &out[i]); err != nil {
			t.Fatalf("invalid JSON %s: %v", r, err)
		}
	}
	return out
}

func raws(msgs []Message) []json.RawMessage {
	out := make([]json.RawMessage, len(msgs))
	for i, m := range msgs {
		out[i] = m.Raw
	}
	return out
}

// TestRequests checks that the projection of each recorded session, at the
// leaf each request was made from, is what pi sent to the model.
func TestRequests(t *testing.T) {
	for _, name := range recorded {
		t.Run(name, func(t *testing.T) {
			f := openFixture(t, name)
			if len(f.Diagnostics) > 0 {
				t.Errorf("Diagnostics = %v, want none", f.Diagnostics)
			}
			reqs := readRequests(t, name)
			if len(reqs) == 0 {
				t.Fatal("no requests recorded")
			}
			for _, r := range reqs {
				if !r.Session {
					continue
				}
				branch, err := f.Branch(r.LeafID)
				if err != nil {
					t.Fatalf("request %d: Branch(%q): %v", r.Request, r.LeafID, err)
				}
				got := values(t, LLMMessages(Project(branch)))
				if diff := cmp.Diff(values(t, r.Messages), got); diff != "" {
					t.Errorf("request %d: LLMMessages(Project(Branch(%q))) mismatch (-pi sent +got):\n%s", r.Request, r.LeafID, diff)
				}
			}
		})
	}
}

// TestMigratedRequests checks the hand-migrated version 1 and 2 files
// against the requests recorded for the sessions they were made from.
func TestMigratedRequests(t *testing.T) {
	for _, tc := range []struct{ name, from string }{{"v1", "compaction"}, {"v2", "branch"}} {
		t.Run(tc.name, func(t *testing.T) {
			f, from := openFixture(t, tc.name), openFixture(t, tc.from)
			if len(f.Diagnostics) > 0 {
				t.Errorf("Diagnostics = %v, want none", f.Diagnostics)
			}
			if len(f.Entries) != len(from.Entries) {
				t.Fatalf("%d entries, want %d as in %s", len(f.Entries), len(from.Entries), tc.from)
			}
			for _, r := range readRequests(t, tc.from) {
				// The files hold the same entries in the same order.
				at := slices.IndexFunc(from.Entries, func(e *Entry) bool { return e.ID == r.LeafID })
				branch, err := f.Branch(f.Entries[at].ID)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(values(t, r.Messages), values(t, LLMMessages(Project(branch)))); diff != "" {
					t.Errorf("request %d: projection mismatch (-pi sent +got):\n%s", r.Request, diff)
				}
			}
		})
	}
}

// TestOracle compares, for every leaf of every fixture, the branch, the
// context entries, the projection and the token estimates with what pi's
// own functions produced for the same file.
func TestOracle(t *testing.T) {
	for _, name := range append(slices.Clip(recorded), "v1", "v2", "damaged") {
		t.Run(name, func(t *testing.T) {
			f, o := openFixture(t, name), readOracle(t, name)
			var types []string
			for _, e := range f.Entries {
				types = append(types, e.Type)
			}
			if diff := cmp.Diff(o.Types, types); diff != "" {
				t.Fatalf("entry types mismatch (-pi +got):\n%s", diff)
			}
			index := make(map[*Entry]int)
			for i, e := range f.Entries {
				index[e] = i
				if name != "v1" && e.ID != o.IDs[i] {
					t.Errorf("entry %d: ID = %q, want %q", i, e.ID, o.IDs[i])
				}
			}
			if got := index[f.Leaf()]; got != o.Leaf {
				t.Errorf("Leaf() is entry %d, want %d", got, o.Leaf)
			}
			msgs, llm := values(t, o.Msgs), values(t, o.LLM)
			for _, want := range o.Leaves {
				leaf := f.Entries[want.Leaf]
				branch, err := f.Branch(leaf.ID)
				if err != nil {
					t.Fatalf("Branch(%q): %v", leaf.ID, err)
				}
				var got oracleLeaf
				got.Leaf = want.Leaf
				for _, e := range branch {
					got.Branch = append(got.Branch, index[e])
				}
				var wantMsgs, gotMsgs []any
				_, entries := projectEntries(branch)
				for _, p := range entries {
					got.Context = append(got.Context, struct {
						Entry    int   `json:"entry"`
						Messages []int `json:"messages"`
					}{Entry: index[p.entry], Messages: make([]int, len(p.messages))})
					gotMsgs = append(gotMsgs, values(t, raws(p.messages))...)
				}
				for i, c := range want.Context {
					for _, m := range c.Messages {
						wantMsgs = append(wantMsgs, msgs[m])
					}
					want.Context[i].Messages = make([]int, len(c.Messages))
				}
				var wantLLM []any
				for _, m := range want.LLM {
					wantLLM = append(wantLLM, llm[m])
				}
				projection := Project(branch)
				got.Tokens = EstimateTokens(projection)
				est := EstimateContextTokens(branch, projection)
				got.ContextTokens, got.UsageTokens, got.TrailingTokens = est.Tokens, est.UsageTokens, est.TrailingTokens
				if est.LastUsage >= 0 {
					got.LastUsageIndex = &est.LastUsage
				}
				s := CurrentSettings(branch)
				got.ThinkingLevel = s.ThinkingLevel
				if s.Provider != "" || s.ModelID != "" {
					got.Model = want.Model
				}
				want.LLM = nil
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("leaf %d (%s): mismatch (-pi +got):\n%s", want.Leaf, leaf.ID, diff)
				}
				if want.Model != nil && (s.Provider != want.Model.Provider || s.ModelID != want.Model.ModelID) {
					t.Errorf("leaf %d: CurrentSettings = %+v, want model %+v", want.Leaf, s, *want.Model)
				}
				if diff := cmp.Diff(wantMsgs, gotMsgs); diff != "" {
					t.Errorf("leaf %d (%s): projected messages mismatch (-pi +got):\n%s", want.Leaf, leaf.ID, diff)
				}
				if diff := cmp.Diff(wantLLM, values(t, LLMMessages(projection)), cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("leaf %d (%s): LLM messages mismatch (-pi +got):\n%s", want.Leaf, leaf.ID, diff)
				}
			}
		})
	}
}

// TestDamagedDiagnostics checks what is reported about the damaged fixture
// (pi reads the same file silently) against a golden file.
func TestDamagedDiagnostics(t *testing.T) {
	f := openFixture(t, "damaged")
	var b strings.Builder
	for _, d := range f.Diagnostics {
		fmt.Fprintf(&b, "%d\t%d\t%s\t%v\n", d.Line, d.Offset, d.Field, d)
	}
	golden.Check(t, filepath.Join("testdata", "damaged.diagnostics.golden"), b.String())
}
