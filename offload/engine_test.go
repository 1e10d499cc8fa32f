package offload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pi-session/pi-session/jsonscan"

	"github.com/google/go-cmp/cmp"
)

func TestToolResultKeeps(t *testing.T) {
	ctx := context.Background()
	big := buildLog(1000) // ~57 KB
	tests := []struct {
		name   string
		config string
		req    func(r *ToolResultRequest)
		want   string
	}{
		{"disabled", `{"enabled":false}`, nil, KeepDisabled},
		{"nested call", "", func(r *ToolResultRequest) { r.ParentToolCallID = "fabric_1" }, KeepNested},
		{"own tool", "", func(r *ToolResultRequest) { r.ToolName = "ctx_read" }, KeepOwnTool},
		{"ctx_read inactive", "", func(r *ToolResultRequest) { r.CtxReadActive = false }, KeepNoReader},
		{"below threshold", "", func(r *ToolResultRequest) { r.Content = text(big[:16383]) }, KeepSmall},
		{"small error", "", func(r *ToolResultRequest) { r.IsError = true; r.Content = text(big[:4095]) }, KeepSmallError},
		{"saving too small", `{"minimumSavingsBytes":60000}`, nil, KeepSmallSaving},
		{"error saving too small", `{"minimumSavingsBytes":60000}`, func(r *ToolResultRequest) { r.IsError = true }, KeepSmallSaving},
		{"images only", "", func(r *ToolResultRequest) { r.Content = []ContentBlock{{Type: "image"}} }, KeepNoText},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := newTestEngine(t, tt.config)
			req := tr("bash", text(big))
			if tt.req != nil {
				tt.req(&req)
			}
			rep, err := e.ToolResult(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Action != "keep" || rep.Reason != tt.want || rep.Content != nil {
				t.Errorf("ToolResult = %s %q, want keep %q", rep.Action, rep.Reason, tt.want)
			}
		})
	}
	t.Run("at the threshold", func(t *testing.T) {
		e, _ := newTestEngine(t, "")
		if rep, _ := e.ToolResult(ctx, tr("bash", text(big[:16384]))); rep.Action != "replace" {
			t.Errorf("a result of exactly readOffloadThreshold bytes: %s %q, want replace", rep.Action, rep.Reason)
		}
	})
	t.Run("store failed", func(t *testing.T) {
		e, ws := newTestEngine(t, "")
		os.MkdirAll(filepath.Join(ws, ".pi"), 0o755)
		os.WriteFile(filepath.Join(ws, ".pi", "context-store"), []byte("not a directory"), 0o644)
		rep, _ := e.ToolResult(ctx, tr("bash", text(big)))
		if rep.Action != "keep" || rep.Reason != KeepStoreFailed {
			t.Errorf("ToolResult = %s %q, want keep %q", rep.Action, rep.Reason, KeepStoreFailed)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		e, _ := newTestEngine(t, "")
		c, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := e.ToolResult(c, tr("bash", text(big))); !errors.Is(err, context.Canceled) {
			t.Errorf("ToolResult on a cancelled context = %v", err)
		}
	})
}

func TestToolResultImagesKeepPositions(t *testing.T) {
	e, _ := newTestEngine(t, "")
	content := []ContentBlock{{Type: "image"}, {Type: "text", Text: buildLog(300)}, {Type: "image"}, {Type: "text", Text: buildLog(200)}}
	rep, _ := e.ToolResult(context.Background(), tr("browser", content))
	if rep.Action != "replace" {
		t.Fatalf("kept: %s", rep.Reason)
	}
	var kinds []string
	for _, c := range rep.Content {
		if c.Type == "original" {
			kinds = append(kinds, fmt.Sprintf("original %d", *c.Index))
		} else {
			kinds = append(kinds, "notice")
		}
	}
	if diff := cmp.Diff([]string{"original 0", "notice", "original 2"}, kinds); diff != "" {
		t.Errorf("blocks (-want +got):\n%s", diff)
	}
	// The payload is the textBlocks envelope, with the original positions.
	res, err := e.Read(context.Background(), ReadRequest{InProgram: true, Args: json.RawMessage(`{"id":"` + rep.Handle + `","jsonPath":"$.textBlocks[*].index"}`)})
	if err != nil || res.Text != "[\n1,\n3\n]" {
		t.Errorf("indices = %q, %v", res.Text, err)
	}
	res, err = e.Read(context.Background(), ReadRequest{InProgram: true, Args: json.RawMessage(`{"id":"` + rep.Handle + `","jsonPath":"$.textBlocks[1].text"}`)})
	if err != nil || res.Text != buildLog(200) {
		t.Errorf("block 1 differs: %d bytes, %v", len(res.Text), err)
	}
}

func TestTurnBudget(t *testing.T) {
	e, _ := newTestEngine(t, `{"turnBudgetBytes":20000}`)
	ctx := context.Background()
	r := func(turn int, size int, seed int) Replacement {
		req := tr("bash", text(buildLog(size / 40)[:size]))
		req.Content[0].Text = fmt.Sprintf("seed %d\n", seed) + req.Content[0].Text
		req.TurnIndex = turn
		rep, err := e.ToolResult(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	if rep := r(1, 12000, 1); rep.Action != "keep" {
		t.Fatalf("first result of the turn: %s, want keep", rep.Action)
	}
	if rep := r(1, 500, 2); rep.Action != "keep" {
		t.Errorf("a tiny result over the budget: %s, want keep", rep.Action)
	}
	rep := r(1, 12000, 3)
	if rep.Action != "replace" || rep.Strategy != "turn-budget" || !strings.Contains(rep.Content[0].Text, "this turn's text budget is spent") {
		t.Errorf("a result over the turn budget: %s %s", rep.Action, rep.Strategy)
	}
	if rep.VisibleBytes > 1200 {
		t.Errorf("turn-budget notice is %d bytes; its preview should be small", rep.VisibleBytes)
	}
	if err := e.TurnStart(ctx, "s1", 2); err != nil {
		t.Fatal(err)
	}
	if rep := r(2, 12000, 4); rep.Action != "keep" {
		t.Errorf("after turn_start: %s, want keep", rep.Action)
	}
}

func TestTruncatedOutputArtifact(t *testing.T) {
	ctx := context.Background()
	full := buildLog(3000)
	tail := full[len(full)-30000:]
	tail = tail[strings.IndexByte(tail, '\n')+1:]
	t.Run("recovered", func(t *testing.T) {
		e, ws := newTestEngine(t, "")
		path := filepath.Join(ws, "pi-bash-1.log")
		os.WriteFile(path, []byte(full), 0o600)
		req := tr("bash", text(tail+"\n[Showing lines 2500-3000 of 3000 (50.0KB limit). Full output: "+path+"]"))
		req.Details = json.RawMessage(`{"truncation":{"truncated":true},"fullOutputPath":"` + path + `"}`)
		rep, _ := e.ToolResult(ctx, req)
		if rep.Action != "replace" || !strings.Contains(rep.Content[0].Text, "[note: bash showed only part of its output; this handle holds the complete output") {
			t.Fatalf("ToolResult = %s: %.300s", rep.Action, rep.Content[0].Text)
		}
		res, err := e.Read(ctx, ReadRequest{InProgram: true, Args: json.RawMessage(`{"id":"` + rep.Handle + `","offset":0}`)})
		if err != nil || !strings.HasPrefix(full, res.Text) || len(res.Text) < 100000 {
			t.Errorf("the handle does not hold the full output: %d bytes, %v", len(res.Text), err)
		}
	})
	for _, tt := range []struct{ name, path, content, why string }{
		{"missing", "/gone.log", "", "the file is gone"},
		{"other content", "other.log", "unrelated", "the file does not hold the visible output"},
		{"outside temp", "/etc/hostname", "", "the file is outside the temporary directory"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e, ws := newTestEngine(t, "")
			path := tt.path
			if !filepath.IsAbs(path) || tt.name == "missing" {
				path = filepath.Join(ws, tt.path)
			}
			if tt.content != "" {
				os.WriteFile(path, []byte(strings.Repeat(tt.content, 10000)), 0o600)
			}
			req := tr("fabric_exec", text(tail+"\n\n[Output truncated. Full output: "+path+"]"))
			rep, _ := e.ToolResult(ctx, req)
			if rep.Action != "replace" || !strings.Contains(rep.Warning, "the full output was not recovered ("+tt.why) {
				t.Errorf("ToolResult = %s, warning %q; want a warning with %q", rep.Action, rep.Warning, tt.why)
			}
			if !strings.HasPrefix(rep.Content[0].Text, "[warning: fabric_exec truncated its output") {
				t.Errorf("the notice does not start with the warning: %.200s", rep.Content[0].Text)
			}
		})
	}
}

func TestReadThroughEngine(t *testing.T) {
	c := newClock()
	ws := t.TempDir()
	e, err := New(Options{Workspace: ws, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	payload := buildLog(20000) // ~1.2 MB
	rep, _ := e.ToolResult(ctx, tr("bash", text(payload)))
	read := func(inProgram bool, args string) (ReadResult, error) {
		return e.Read(ctx, ReadRequest{SessionID: "s1", InProgram: inProgram, Args: json.RawMessage(strings.ReplaceAll(args, "H", rep.Handle))})
	}
	// Boundary reads of every mode stay below the threshold.
	for _, args := range []string{`{"id":"H","offset":0,"length":1000000}`, `{"id":"H","query":"building","maxMatches":500}`, `{"id":"H","query":"ERROR"}`} {
		res, err := read(false, args)
		if err != nil || len(res.Text) >= 16384 {
			t.Errorf("%s: %d bytes, %v; want below 16384", args, len(res.Text), err)
		}
	}
	res, err := read(true, `{"id":"H","offset":0,"length":1000000}`)
	if err != nil || len(res.Text) != 512<<10 || res.Text != payload[:512<<10] {
		t.Errorf("program read: %d bytes, %v; want the first 512 KiB", len(res.Text), err)
	}
	for _, tt := range []struct {
		args string
		want error
	}{
		{`{"id":"ce_000000000000000000000000","offset":0}`, ErrNotFound},
		{`{"id":"H","offset":99999999}`, ErrBadArgument},
		{`{"id":"H","query":"(?=x)","regex":true}`, ErrBadRegex},
		{`{"id":"H","jsonPath":"$["}`, ErrBadJSONPath},
	} {
		if _, err := read(false, tt.args); !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.args, err, tt.want)
		}
	}
	c.add(8 * 24 * time.Hour)
	if _, err := read(false, `{"id":"H","offset":0}`); !errors.Is(err, ErrExpired) {
		t.Errorf("read after the TTL: %v, want ErrExpired", err)
	}
}

func TestStatusFigures(t *testing.T) {
	e, _ := newTestEngine(t, "")
	ctx := context.Background()
	input := json.RawMessage(`{"command":"make"}`)
	req := tr("bash", text(buildLog(600))) // ~34 KB
	req.Input = input
	a, _ := e.ToolResult(ctx, req)
	req.Content = text(buildLog(300))
	b, _ := e.ToolResult(ctx, req) // the same call run again
	other := tr("grep", text(buildGrep(60, 5)))
	other.SessionID = "s2"
	c, _ := e.ToolResult(ctx, other)
	read := func(session string, inProgram bool, args string) {
		if _, err := e.Read(ctx, ReadRequest{SessionID: session, InProgram: inProgram, Args: json.RawMessage(args)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, off := range []int{0, 15000, 30000, 0, 15000} {
		read("s1", false, `{"id":"`+a.Handle+`","offset":`+fmt.Sprint(off)+`}`)
	}
	read("s1", true, `{"id":"`+a.Handle+`","offset":0}`)
	read("s1", false, `{"id":"`+a.Handle+`","query":"no such text"}`)
	read("s1", false, `{"id":"`+c.Handle+`","query":"module01"}`)
	e.Read(ctx, ReadRequest{SessionID: "s1", Args: json.RawMessage(`{"id":"nope"}`)})
	e.Summarize(ctx, SummarizeRequest{SessionID: "s1", Args: json.RawMessage(`{"id":"` + b.Handle + `"}`)})

	st, err := e.Status(ctx, StatusRequest{SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	f := st.Figures
	got := []int64{int64(f.Offloads), int64(f.Reruns), int64(f.HandlesOffloaded), int64(f.HandlesRead), int64(f.Reads.Total), int64(f.Reads.InProgram),
		int64(f.Reads.Range), int64(f.Reads.RangeFromZero), int64(f.Reads.Query), int64(f.Reads.QueryNoMatch), int64(f.Reads.Errors), int64(f.Summaries)}
	want := []int64{2, 1, 2, 2, 9, 1, 6, 3, 2, 1, 1, 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("offloads, reruns, offloaded, read, reads, inProgram, range, from0, query, noMatch, errors, summaries (-want +got):\n%s", diff)
	}
	if f.NetTokensSaved >= 0 || f.NetTokensSaved != f.MainTokensPrevented-f.ReadbackTokens {
		t.Errorf("net %d = prevented %d - readback %d; want negative after five pages", f.NetTokensSaved, f.MainTokensPrevented, f.ReadbackTokens)
	}
	all, _ := e.Status(ctx, StatusRequest{All: true})
	if all.Figures.Offloads != 3 || all.Figures.Sessions != 2 || len(all.Sessions) != 2 {
		t.Errorf("--all: %d offloads in %d sessions (%d listed), want 3 in 2", all.Figures.Offloads, all.Figures.Sessions, len(all.Sessions))
	}
	if !strings.Contains(st.Text, "so -6,285 saved net") || !strings.Contains(st.Text, "1 call run again anyway") || !strings.Contains(st.Text, "1 in a program") {
		t.Errorf("status text:\n%s", st.Text)
	}
	tr, _ := e.Trace(ctx, TraceRequest{SessionID: "s1", Limit: 3})
	if len(tr.Events) != 3 || tr.Events[2].Type != "summarize" {
		t.Errorf("trace: %+v", tr.Events)
	}
	// Telemetry never holds payload or query text.
	raw, _ := os.ReadFile(filepath.Join(e.storeDir, "context-events.jsonl"))
	for _, secret := range []string{"building target", "no such text", "module01", a.Handle, `"make"`} {
		if strings.Contains(string(raw), secret) {
			t.Errorf("telemetry holds %q", secret)
		}
	}
	cl, err := e.Clear(ctx, ClearRequest{})
	if err != nil || cl.TelemetryFiles != 1 {
		t.Errorf("Clear = %+v, %v", cl, err)
	}
	if st, _ := e.Status(ctx, StatusRequest{All: true}); st.Figures.Offloads != 0 || st.Store.Entries != 3 {
		t.Errorf("after clear: %d offloads, %d payloads; want 0 and 3", st.Figures.Offloads, st.Store.Entries)
	}
	if cl, _ := e.Clear(ctx, ClearRequest{Store: true}); cl.PayloadsRemoved != 3 {
		t.Errorf("clear --store removed %d payloads", cl.PayloadsRemoved)
	}
}

func TestSettingsWarnings(t *testing.T) {
	e, _ := newTestEngine(t, `{"readOffloadThreshold":"big","strict":true,"turnBudgetBytes":30000}`)
	s, err := e.Settings(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "settings", strings.ReplaceAll(s.Text, s.Path, "<workspace>/.pi/context-engineer.json"))
	if s.Config.ReadOffloadThreshold != 16384 || s.Config.TurnBudgetBytes != 30000 || len(s.Warnings) != 2 {
		t.Errorf("settings = %+v", s)
	}
}

func TestOffloadAndSearch(t *testing.T) {
	e, _ := newTestEngine(t, "")
	ctx := context.Background()
	res, err := e.Offload(ctx, OffloadRequest{SessionID: "s1", Args: json.RawMessage(`{"key":"large-json","source":"read","data":"alpha\nbeta needle\ngamma"}`)})
	if err != nil || !ValidHandle(res.Details.ID) || res.Details.Bytes != 23 {
		t.Fatalf("Offload = %+v, %v", res, err)
	}
	obj, err := e.Offload(ctx, OffloadRequest{Args: json.RawMessage(`{"data":{"a":[1,2,"needle"]}}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Offload(ctx, OffloadRequest{Args: json.RawMessage(`{"key":"x"}`)}); !errors.Is(err, ErrBadArgument) {
		t.Errorf("Offload without data: %v", err)
	}
	r, err := e.Read(ctx, ReadRequest{InProgram: true, Args: json.RawMessage(`{"id":"` + obj.Details.ID + `","jsonPath":"$.a[2]"}`)})
	if err != nil || r.Text != "needle" {
		t.Errorf("jsonPath on an offloaded object = %q, %v", r.Text, err)
	}
	sr, err := e.Search(ctx, SearchRequest{Query: json.RawMessage(`"needle"`)})
	if err != nil {
		t.Fatal(err)
	}
	if len(sr.Payloads) != 2 || len(sr.Hits) != 2 {
		t.Errorf("Search = %+v", sr)
	}
	hits := map[string]SearchHit{}
	for _, h := range sr.Hits {
		hits[h.Handle] = h
	}
	if h := hits[res.Details.ID]; h.Offset != 6 || h.Line != 2 || h.Text != "beta needle" {
		t.Errorf("hit = %+v", h)
	}
	if h := hits[obj.Details.ID]; h.Offset != 0 || h.Text != `{"a":[1,2,"needle"]}` {
		t.Errorf("hit = %+v", h)
	}
	sr, _ = e.Search(ctx, SearchRequest{Query: json.RawMessage(`"NEEDLE"`), IgnoreCase: true, SessionID: "s1"})
	if len(sr.Hits) != 1 {
		t.Errorf("session-filtered search: %+v", sr)
	}
}

func TestSummarize(t *testing.T) {
	e, _ := newTestEngine(t, "")
	ctx := context.Background()
	code := "package main\n\nimport (\n\t\"fmt\"\n)\n\n// Run runs.\nfunc Run(x int) error {\n\treturn nil\n}\n\ntype T struct {\n\tA int\n}\n\nfunc (t *T) M() {}\n"
	for _, tt := range []struct{ name, args string }{
		{"json", `{"text":` + jsonscan.Quote(buildJSON(30)) + `}`},
		{"log", `{"text":` + jsonscan.Quote(buildLog(500)) + `,"maxTokens":200}`},
		{"code", `{"text":` + jsonscan.Quote(code) + `,"mode":"code"}`},
	} {
		res, err := e.Summarize(ctx, SummarizeRequest{Args: json.RawMessage(tt.args)})
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		checkGolden(t, "summary_"+tt.name, res.Text)
	}
	for _, args := range []string{`{}`, `{"text":"x","id":"ce_000000000000000000000000"}`, `{"text":"x","mode":"fancy"}`, `{"text":"x","maxTokens":10}`} {
		if _, err := e.Summarize(ctx, SummarizeRequest{Args: json.RawMessage(args)}); !errors.Is(err, ErrBadArgument) {
			t.Errorf("Summarize(%s) = %v, want an argument error", args, err)
		}
	}
}

func TestMethodsRoundTrip(t *testing.T) {
	e, _ := newTestEngine(t, "")
	m := e.Methods()
	ctx := context.Background()
	params, _ := json.Marshal(map[string]any{"sessionId": "s", "turnIndex": 0, "toolName": "bash", "toolCallId": "c", "input": map[string]any{},
		"content": []any{map[string]any{"type": "text", "text": buildLog(500)}}, "isError": false, "ctxReadActive": true})
	out, err := m["toolResult"](ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(out)
	var rep Replacement
	json.Unmarshal(b, &rep)
	if rep.Action != "replace" || !ValidHandle(rep.Handle) {
		t.Fatalf("toolResult answered %s", b)
	}
	for name, p := range map[string]string{
		"read":      `{"sessionId":"s","args":{"id":"` + rep.Handle + `","query":"ERROR"}}`,
		"summarize": `{"args":{"id":"` + rep.Handle + `"}}`,
		"offload":   `{"args":{"data":"x"}}`,
		"search":    `{"query":"ERROR"}`,
		"status":    `{"sessionId":"s"}`,
		"trace":     `{"all":true}`,
		"settings":  ``,
		"turnStart": `{"sessionId":"s","turnIndex":1}`,
		"clear":     `{}`,
	} {
		if _, err := m[name](ctx, json.RawMessage(p)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := m["read"](ctx, json.RawMessage(`{"args":`)); err == nil {
		t.Error("read with broken params succeeded")
	}
}

// A program that reads handles and still returns a large result: the
// notice says to filter first, and its output counts as a readback.
func TestProgramOutputDerivedFromHandles(t *testing.T) {
	e, _ := newTestEngine(t, "")
	ctx := context.Background()
	a, _ := e.ToolResult(ctx, tr("bash", text(buildLog(1000))))
	if _, err := e.Read(ctx, ReadRequest{SessionID: "s1", InProgram: true, Args: json.RawMessage(`{"id":"` + a.Handle + `","offset":0}`)}); err != nil {
		t.Fatal(err)
	}
	before, _ := e.Status(ctx, StatusRequest{SessionID: "s1"})
	rep, _ := e.ToolResult(ctx, tr("fabric_exec", text(buildLog(900))))
	if rep.Action != "replace" || !strings.Contains(rep.Content[0].Text, "[this program read offloaded handles and still returned") {
		t.Fatalf("program result: %s %.200s", rep.Action, rep.Content[0].Text)
	}
	after, _ := e.Status(ctx, StatusRequest{SessionID: "s1"})
	if got, want := after.Figures.ReadbackTokens-before.Figures.ReadbackTokens, tokens(rep.VisibleBytes); got != want {
		t.Errorf("readback grew by %d tokens, want %d (the visible program output)", got, want)
	}
	// Only once: the next result is not derived from the read.
	if rep, _ := e.ToolResult(ctx, tr("bash", text(buildLog(800)))); strings.Contains(rep.Content[0].Text, "this program read") {
		t.Error("a later result still carries the program note")
	}
}

// A failing command whose output bash truncated: the compacted error points
// to the complete output.
func TestErrorCompactionRecoversFullOutput(t *testing.T) {
	e, ws := newTestEngine(t, "")
	full := buildCompilerError() + buildCompilerError()
	path := filepath.Join(ws, "pi-bash-2.log")
	os.WriteFile(path, []byte(full), 0o600)
	visible := full[len(full)-20000:]
	visible = visible[strings.IndexByte(visible, '\n')+1:]
	req := tr("bash", text(visible+"\n\n[Showing lines 300-604 of 604. Full output: "+path+"]"))
	req.IsError = true
	rep, _ := e.ToolResult(context.Background(), req)
	if rep.Strategy != "error" || !strings.Contains(rep.Content[0].Text, "the handle holds the complete output ("+fmt.Sprint(len(full))+" bytes)") {
		t.Fatalf("ToolResult = %s/%s: %.300s", rep.Action, rep.Strategy, rep.Content[0].Text)
	}
	res, err := e.Read(context.Background(), ReadRequest{InProgram: true, Args: json.RawMessage(`{"id":"` + rep.Handle + `","offset":0}`)})
	if err != nil || res.Text != full {
		t.Errorf("the handle holds %d bytes, want the %d of the full output (%v)", len(res.Text), len(full), err)
	}
}

// Text given as raw bytes (as the engine host receives it) is stored the
// same as text given as a string.
func TestRawBlocksEqualTextBlocks(t *testing.T) {
	ctx := context.Background()
	a, b := buildLog(500), buildJSON(100)
	for _, content := range [][2][]ContentBlock{
		{text(a), {{Type: "text", Raw: []byte(a)}}},
		{{{Type: "text", Text: a}, {Type: "image"}, {Type: "text", Text: b}}, {{Type: "text", Raw: []byte(a)}, {Type: "image"}, {Type: "text", Raw: []byte(b)}}},
	} {
		e1, _ := newTestEngine(t, "")
		e2, _ := newTestEngine(t, "")
		r1, _ := e1.ToolResult(ctx, tr("bash", content[0]))
		r2, _ := e2.ToolResult(ctx, tr("bash", content[1]))
		if r1.Action != "replace" || r1.Handle != r2.Handle || r1.Content[0].Text != r2.Content[0].Text {
			t.Errorf("text: %s %s; raw: %s %s", r1.Action, r1.Handle, r2.Action, r2.Handle)
		}
	}
}

// Asking for status, settings or a trace creates nothing in the workspace.
func TestQueriesCreateNothing(t *testing.T) {
	e, ws := newTestEngine(t, "")
	ctx := context.Background()
	e.Status(ctx, StatusRequest{All: true})
	e.Settings(ctx)
	e.Trace(ctx, TraceRequest{All: true})
	if _, err := os.Stat(filepath.Join(ws, ".pi")); !os.IsNotExist(err) {
		t.Errorf("the workspace has .pi after status, settings and trace: %v", err)
	}
}

// TestStatusSkipsCutShortTelemetry: an append to the telemetry log cut short
// (a full disk, a killed host) costs only its own line: the events around
// it still count, and /ce status says where the fragment is.
func TestStatusSkipsCutShortTelemetry(t *testing.T) {
	e, _ := newTestEngine(t, "")
	ctx := context.Background()
	if _, err := e.ToolResult(ctx, tr("bash", text(buildLog(600)))); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(e.storeDir, "context-events.jsonl")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"v":1,"type":"offload","session":"s1","bytesBef`) // cut short
	f.Close()
	if _, err := e.ToolResult(ctx, tr("bash", text(buildLog(700)))); err != nil {
		t.Fatal(err)
	}
	st, err := e.Status(ctx, StatusRequest{SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if st.Figures.Offloads != 2 || st.BadEvents != 1 {
		t.Errorf("%d offloads, %d bad lines; want both offloads counted and the one fragment skipped", st.Figures.Offloads, st.BadEvents)
	}
	if want := "(1 unreadable telemetry line skipped; the first: context-events.jsonl:2: skipped"; !strings.Contains(st.Text, want) {
		t.Errorf("status text lacks %q:\n%s", want, st.Text)
	}
}

// stoppedCtx is the context of a request on a host that was stopped past
// the request's deadline and has just been continued: the deadline has
// passed, but its timer has not fired yet.
type stoppedCtx struct{ context.Context }

func (stoppedCtx) Deadline() (time.Time, bool) { return time.Now().Add(-time.Second), true }

// TestToolResultCallerGone: a result stored for a caller that has gone on
// without the answer is never confirmed, so no handle is made that the
// model never saw; a caller still waiting gets its handle.
func TestToolResultCallerGone(t *testing.T) {
	e, ws := newTestEngine(t, "")
	log := buildLog(3000)
	if _, err := e.ToolResult(stoppedCtx{context.Background()}, tr("bash", text(log))); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ToolResult for a caller past its deadline = %v, want context.DeadlineExceeded", err)
	}
	confirmed := func() []string {
		s, err := OpenStore(filepath.Join(ws, ".pi", "context-store"), time.Now)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ents, err := s.Entries()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, en := range ents {
			if !en.Pending {
				out = append(out, en.Handle)
			}
		}
		return out
	}
	if got := confirmed(); len(got) != 0 {
		t.Errorf("confirmed handles after a caller gave up: %v, want none", got)
	}
	rep, err := e.ToolResult(context.Background(), tr("bash", text(log)))
	if err != nil || rep.Action != "replace" {
		t.Fatalf("ToolResult = %+v, %v", rep, err)
	}
	if d := cmp.Diff([]string{rep.Handle}, confirmed()); d != "" {
		t.Errorf("confirmed handles (-want +got):\n%s", d)
	}
}
