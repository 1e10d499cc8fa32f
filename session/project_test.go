package session

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// line builds an entry line: a JSON object with type, id and parentId
// followed by the members in rest (a JSON object body without braces).
func line(typ, id, parent, rest string) string {
	p := "null"
	if parent != "" {
		p = `"` + parent + `"`
	}
	s := `{"type":"` + typ + `","id":"` + id + `","parentId":` + p + `,"timestamp":"2026-01-02T03:04:05.678Z"`
	if rest != "" {
		s += "," + rest
	}
	return s + "}"
}

func parseLines(t *testing.T, lines ...string) *File {
	t.Helper()
	f, err := Parse(strings.NewReader(hdr + "\n" + strings.Join(lines, "\n") + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Diagnostics {
		// Cases about edits and compactions that name no entry are
		// read as pi reads them; the warning is tested in diagnostics_test.go.
		if !errors.Is(d, ErrUnknownTarget) {
			t.Fatalf("Diagnostics = %v", f.Diagnostics)
		}
	}
	return f
}

const ms = "1767323045678" // 2026-01-02T03:04:05.678Z

func TestProject(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines []string
		leaf  string
		msgs  []string // projected AgentMessages
		llm   []string // what the provider gets
	}{
		{
			name: "null content",
			lines: []string{
				line("message", "s", "", `"message":{"role":"system","content":null,"timestamp":0}`),
				line("message", "u", "s", `"message":{"role":"user","timestamp":1}`),
			},
			msgs: []string{`{"role":"system","content":"","timestamp":0}`, `{"role":"user","timestamp":1,"content":[]}`},
		},
		{
			name: "custom message",
			lines: []string{
				line("custom_message", "c1", "", `"customType":"x","content":"hi","display":true,"details":{"k":1}`),
				line("custom_message", "c2", "c1", `"customType":"x","content":null,"display":false`),
				line("custom_message", "c3", "c2", `"content":[{"type":"text","text":"t"}]`),
			},
			msgs: []string{
				`{"role":"custom","customType":"x","content":"hi","display":true,"details":{"k":1},"timestamp":` + ms + `}`,
				`{"role":"custom","customType":"x","content":[],"display":false,"timestamp":` + ms + `}`,
				`{"role":"custom","content":[{"type":"text","text":"t"}],"timestamp":` + ms + `}`,
			},
			llm: []string{
				`{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":` + ms + `}`,
				`{"role":"user","content":[],"timestamp":` + ms + `}`,
				`{"role":"user","content":[{"type":"text","text":"t"}],"timestamp":` + ms + `}`,
			},
		},
		{
			name: "branch summaries",
			lines: []string{
				line("branch_summary", "b1", "", `"fromId":"z","summary":"went left"`),
				line("branch_summary", "b2", "b1", `"fromId":"z","summary":""`),
				line("branch_summary", "b3", "b2", `"fromId":"root"`),
			},
			msgs: []string{`{"role":"branchSummary","summary":"went left","fromId":"z","timestamp":` + ms + `}`},
			llm: []string{`{"role":"user","content":[{"type":"text","text":"The following is a summary of a branch that this conversation came back from:\n\n<summary>\n` +
				`went left</summary>"}],"timestamp":` + ms + `}`},
		},
		{
			name: "compaction keeps from firstKeptEntryId, drops system messages there",
			lines: []string{
				line("message", "s", "", `"message":{"role":"system","content":"p","timestamp":0}`),
				line("message", "u1", "s", `"message":{"role":"user","content":"one","timestamp":1}`),
				line("message", "s2", "u1", `"message":{"role":"system","content":"q","timestamp":2}`),
				line("message", "u2", "s2", `"message":{"role":"user","content":"two","timestamp":3}`),
				line("compaction", "c", "u2", `"summary":"S","firstKeptEntryId":"u1","tokensBefore":9,"systemMessage":{"role":"system","content":"p\n\nq","timestamp":4}`),
				line("message", "u3", "c", `"message":{"role":"user","content":"three","timestamp":5}`),
			},
			msgs: []string{
				`{"role":"system","content":"p\n\nq","timestamp":4}`,
				`{"role":"compactionSummary","summary":"S","tokensBefore":9,"timestamp":` + ms + `}`,
				`{"role":"user","content":"one","timestamp":1}`,
				`{"role":"user","content":"two","timestamp":3}`,
				`{"role":"user","content":"three","timestamp":5}`,
			},
		},
		{
			name: "retain-none compaction",
			lines: []string{
				line("message", "u1", "", `"message":{"role":"user","content":"one","timestamp":1}`),
				line("compaction", "c", "u1", `"summary":"S","firstKeptEntryId":"c","tokensBefore":9`),
			},
			msgs: []string{`{"role":"compactionSummary","summary":"S","tokensBefore":9,"timestamp":` + ms + `}`},
			llm: []string{`{"role":"user","content":[{"type":"text","text":"The conversation history before this point was compacted into the following summary:\n\n<summary>\n` +
				`S\n</summary>"}],"timestamp":` + ms + `}`},
		},
		{
			name: "unknown firstKeptEntryId keeps nothing",
			lines: []string{
				line("message", "u1", "", `"message":{"role":"user","content":"one","timestamp":1}`),
				line("compaction", "c", "u1", `"summary":"S","firstKeptEntryId":"nope","tokensBefore":9`),
			},
			msgs: []string{`{"role":"compactionSummary","summary":"S","tokensBefore":9,"timestamp":` + ms + `}`},
		},
		{
			name: "context edits: latest wins, string content normalized for assistants",
			lines: []string{
				line("message", "u", "", `"message":{"role":"user","content":"q","timestamp":1}`),
				line("message", "a", "u", `"message":{"role":"assistant","content":[{"type":"text","text":"x"}],"timestamp":2}`),
				line("context_edit", "e1", "a", `"targetId":"a","replacement":null`),
				line("context_edit", "e2", "e1", `"targetId":"a","replacement":{"content":"y"}`),
				line("context_edit", "e3", "e2", `"targetId":"u","replacement":{"content":"q2"}`),
			},
			msgs: []string{
				`{"role":"user","content":"q2","timestamp":1}`,
				`{"role":"assistant","content":[{"type":"text","text":"y"}],"timestamp":2}`,
			},
		},
		{
			name: "context edits before the leaf only",
			lines: []string{
				line("message", "u", "", `"message":{"role":"user","content":"q","timestamp":1}`),
				line("context_edit", "e1", "u", `"targetId":"u","replacement":null`),
			},
			leaf: "u",
			msgs: []string{`{"role":"user","content":"q","timestamp":1}`},
		},
		{
			name: "context edit of a compaction",
			lines: []string{
				line("message", "u1", "", `"message":{"role":"user","content":"one","timestamp":1}`),
				line("compaction", "c", "u1", `"summary":"S","firstKeptEntryId":"u1","tokensBefore":9,"systemMessage":{"role":"system","content":"p","timestamp":4}`),
				line("context_edit", "e1", "c", `"targetId":"c","replacement":{"content":"ignored"}`),
			},
			msgs: []string{
				`{"role":"system","content":"p","timestamp":4}`,
				`{"role":"compactionSummary","summary":"S","tokensBefore":9,"timestamp":` + ms + `}`,
				`{"role":"user","content":"one","timestamp":1}`,
			},
		},
		{
			name: "context edit dropping a compaction",
			lines: []string{
				line("message", "u1", "", `"message":{"role":"user","content":"one","timestamp":1}`),
				line("compaction", "c", "u1", `"summary":"S","firstKeptEntryId":"u1","tokensBefore":9`),
				line("context_edit", "e1", "c", `"targetId":"c","replacement":null`),
			},
			msgs: []string{`{"role":"user","content":"one","timestamp":1}`},
		},
		{
			name: "bash executions",
			lines: []string{
				line("message", "b1", "", `"message":{"role":"bashExecution","command":"ls","output":"a\nb","exitCode":0,"cancelled":false,"truncated":false,"timestamp":1}`),
				line("message", "b2", "b1", `"message":{"role":"bashExecution","command":"false","output":"","exitCode":1,"cancelled":false,"truncated":true,"fullOutputPath":"/tmp/o","timestamp":2}`),
				line("message", "b3", "b2", `"message":{"role":"bashExecution","command":"sleep","output":"","exitCode":null,"cancelled":true,"truncated":false,"timestamp":3}`),
				line("message", "b4", "b3", `"message":{"role":"bashExecution","command":"x","output":"y","exitCode":0,"cancelled":false,"truncated":false,"excludeFromContext":true,"timestamp":4}`),
			},
			llm: []string{
				"{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Ran `ls`\\n```\\na\\nb\\n```\"}],\"timestamp\":1}",
				"{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Ran `false`\\n(no output)\\n\\nCommand exited with code 1\\n\\n[Output truncated. Full output: /tmp/o]\"}],\"timestamp\":2}",
				"{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Ran `sleep`\\n(no output)\\n\\n(command cancelled)\"}],\"timestamp\":3}",
			},
		},
		{
			name: "entries outside the context",
			lines: []string{
				line("model_change", "m", "", `"provider":"p","modelId":"x"`),
				line("custom", "c", "m", `"customType":"t","data":{}`),
				line("label", "l", "c", `"targetId":"m","label":"here"`),
				line("session_info", "i", "l", `"name":"n"`),
				line("usage", "us", "i", `"kind":"cache_warm","provider":"p","model":"x","usage":{}`),
				line("some_future_type", "f", "us", `"payload":[1]`),
				line("message", "odd", "f", `"message":{"role":"futureRole","content":"?"}`),
			},
			msgs: []string{`{"role":"futureRole","content":"?"}`},
			llm:  []string{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := parseLines(t, tc.lines...)
			branch, err := f.Branch(tc.leaf)
			if err != nil {
				t.Fatal(err)
			}
			msgs := Project(branch)
			if tc.msgs != nil {
				if diff := cmp.Diff(jsonValues(t, tc.msgs), values(t, raws(msgs))); diff != "" {
					t.Errorf("Project mismatch (-want +got):\n%s", diff)
				}
			}
			if tc.llm != nil {
				if diff := cmp.Diff(jsonValues(t, tc.llm), values(t, LLMMessages(msgs))); diff != "" {
					t.Errorf("LLMMessages mismatch (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func jsonValues(t *testing.T, ss []string) []any {
	t.Helper()
	r := make([]json.RawMessage, len(ss))
	for i, s := range ss {
		r[i] = json.RawMessage(s)
	}
	return values(t, r)
}

func TestBranch(t *testing.T) {
	f, err := Parse(strings.NewReader(strings.Join([]string{
		hdr, ent("a", ""), ent("b", "a"), ent("c", "a"), ent("o", "missing"), ent("p", "o"),
		ent("x", "y"), ent("y", "x"), ent("z", "b"),
	}, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		leaf string
		want []string
		err  error
	}{
		{"", []string{"a", "b", "z"}, nil},
		{"c", []string{"a", "c"}, nil},
		{"p", []string{"o", "p"}, nil},
		{"y", nil, ErrCycle},
		{"nope", nil, ErrUnknownEntry},
	} {
		branch, err := f.Branch(tc.leaf)
		if !errors.Is(err, tc.err) {
			t.Errorf("Branch(%q) error = %v, want %v", tc.leaf, err, tc.err)
		}
		if diff := cmp.Diff(tc.want, ids(branch)); diff != "" {
			t.Errorf("Branch(%q) mismatch (-want +got):\n%s", tc.leaf, diff)
		}
	}
	empty, err := Parse(strings.NewReader(hdr))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := empty.Branch(""); b != nil || err != nil || empty.Leaf() != nil {
		t.Errorf("Branch of a file without entries = %v, %v", b, err)
	}
}

func TestCurrentSettings(t *testing.T) {
	f := parseLines(t,
		line("model_change", "m", "", `"provider":"p","modelId":"x"`),
		line("thinking_level_change", "t", "m", `"thinkingLevel":"high"`),
		line("message", "a", "t", `"message":{"role":"assistant","content":[],"provider":"q","model":"y"}`),
		line("model_change", "m2", "a", `"provider":"r","modelId":"z"`),
	)
	for _, tc := range []struct {
		leaf string
		want Settings
	}{
		{"m", Settings{"p", "x", "off"}},
		{"a", Settings{"q", "y", "high"}},
		{"m2", Settings{"r", "z", "high"}},
	} {
		if got := CurrentSettings(must(f.Branch(tc.leaf))); got != tc.want {
			t.Errorf("CurrentSettings(Branch(%q)) = %+v, want %+v", tc.leaf, got, tc.want)
		}
	}
	if got := CurrentSettings(nil); got != (Settings{ThinkingLevel: "off"}) {
		t.Errorf("CurrentSettings(nil) = %+v", got)
	}
}

func TestMigrateV1(t *testing.T) {
	f, err := Parse(strings.NewReader(strings.Join([]string{
		`{"type":"session","id":"old","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}`,
		`{"type":"message","timestamp":"t","message":{"role":"user","content":"one","timestamp":1}}`,
		`garbage`,
		`{"type":"message","timestamp":"t","message":{"role":"hookMessage","customType":"h","content":"hook","display":true,"timestamp":2}}`,
		`{"type":"compaction","timestamp":"t","summary":"S1","firstKeptEntryIndex":1,"tokensBefore":5}`,
		`{"type":"compaction","timestamp":"t","summary":"S2","firstKeptEntryIndex":0,"tokensBefore":5}`,
		`{"type":"compaction","timestamp":"t","summary":"S3","firstKeptEntryIndex":9,"tokensBefore":5}`,
		`{"type":"compaction","timestamp":"t","summary":"S4","firstKeptEntryIndex":5,"tokensBefore":5}`,
	}, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	if f.Header.Version != 1 {
		t.Errorf("Header.Version = %d, want 1", f.Header.Version)
	}
	var got []string
	for _, e := range f.Entries {
		got = append(got, e.ID+" "+e.ParentID+" "+e.Role+" "+string(e.Raw))
	}
	// The same as pi's migrateSessionEntries gives, but for pi's random ids:
	// firstKeptEntryIndex counts parsed lines, header included.
	want := []string{
		`00000002  user {"type":"message","timestamp":"t","message":{"role":"user","content":"one","timestamp":1},"id":"00000002","parentId":null}`,
		`00000004 00000002 custom {"type":"message","timestamp":"t","message":{"role":"custom","customType":"h","content":"hook","display":true,"timestamp":2},"id":"00000004","parentId":"00000002"}`,
		`00000005 00000004  {"type":"compaction","timestamp":"t","summary":"S1","tokensBefore":5,"id":"00000005","parentId":"00000004","firstKeptEntryId":"00000002"}`,
		`00000006 00000005  {"type":"compaction","timestamp":"t","summary":"S2","tokensBefore":5,"id":"00000006","parentId":"00000005"}`,
		`00000007 00000006  {"type":"compaction","timestamp":"t","summary":"S3","tokensBefore":5,"id":"00000007","parentId":"00000006"}`,
		`00000008 00000007  {"type":"compaction","timestamp":"t","summary":"S4","tokensBefore":5,"id":"00000008","parentId":"00000007","firstKeptEntryId":"00000007"}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("migrated entries mismatch (-want +got):\n%s", diff)
	}
}

func TestDecode(t *testing.T) {
	for _, name := range append(recorded, "v1", "v2", "damaged") {
		f := openFixture(t, name)
		for _, e := range f.Entries {
			p, err := e.Decode()
			if err != nil {
				t.Errorf("%s: Decode(%s line %d): %v", name, e.Type, e.Line, err)
				continue
			}
			switch p := p.(type) {
			case *MessageEntry:
				if p.Message.Role != e.Role && !(e.Role == "custom" && p.Message.Role == "custom") {
					t.Errorf("%s line %d: role %q, want %q", name, e.Line, p.Message.Role, e.Role)
				}
			case *UnknownEntry:
				if string(p.Raw) != string(e.Raw) {
					t.Errorf("%s line %d: unknown entry Raw changed", name, e.Line)
				}
			}
		}
		for _, m := range Project(must(f.Branch(""))) {
			if _, err := m.Decode(); err != nil {
				t.Errorf("%s: Message.Decode: %v", name, err)
			}
		}
	}

	f := parseLines(t,
		line("context_edit", "e", "", `"targetId":"x","replacement":{"content":"new"}`),
		line("compaction", "c", "e", `"summary":"S","firstKeptEntryId":"c","tokensBefore":7,"fromHook":true,"details":{"a":1}`),
		line("label", "l", "c", `"targetId":"x"`),
	)
	want := []Payload{
		&ContextEditEntry{TargetID: "x", Replacement: &Replacement{Content: Content{Blocks: []Block{{Type: "text", Text: "new"}}, String: true}}},
		&CompactionEntry{Summary: "S", FirstKeptEntryID: "c", TokensBefore: 7, FromHook: true, Details: json.RawMessage(`{"a":1}`)},
		&LabelEntry{TargetID: "x"},
	}
	for i, e := range f.Entries {
		p, err := e.Decode()
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want[i], p); diff != "" {
			t.Errorf("Decode(%s) mismatch (-want +got):\n%s", e.Type, diff)
		}
	}
}
