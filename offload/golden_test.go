package offload

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-session/pi-session/golden"
)

// Test payloads, deterministic.

func buildLog(lines int) string {
	var b strings.Builder
	for i := 1; i <= lines; i++ {
		switch {
		case i%250 == 0:
			fmt.Fprintf(&b, "[%05d] ERROR pkg/server/handler.go:%d: request failed: connection refused\n", i, i%900)
		case i%40 == 0:
			fmt.Fprintf(&b, "[%05d] warning: deprecated flag --fast used by step %d\n", i, i)
		default:
			fmt.Fprintf(&b, "[%05d] building target //app/module_%d:lib (%d of %d)\n", i, i%97, i, lines)
		}
	}
	return b.String()
}

func buildJSON(items int) string {
	type item struct {
		ID     int      `json:"id"`
		Name   string   `json:"name"`
		Tags   []string `json:"tags"`
		Active bool     `json:"active"`
		Score  float64  `json:"score"`
	}
	doc := struct {
		Status string `json:"status"`
		Page   int    `json:"page"`
		Items  []item `json:"items"`
		Next   string `json:"next"`
	}{Status: "ok", Page: 1, Next: "https://api.example.test/items?page=2&cursor=abcdef"}
	for i := 0; i < items; i++ {
		doc.Items = append(doc.Items, item{ID: i, Name: fmt.Sprintf("item number %d", i), Tags: []string{"red", "large"}, Active: i%3 == 0, Score: float64(i) / 7})
	}
	b, _ := json.MarshalIndent(doc, "", "  ")
	return string(b)
}

func buildGrep(files, perFile int) string {
	var b strings.Builder
	for f := 0; f < files; f++ {
		for l := 0; l < perFile+f%3; l++ {
			fmt.Fprintf(&b, "src/module%02d/file_%d.go:%d:\treturn fmt.Errorf(\"handler %d: %%w\", err)\n", f, f, 10+l*7, l)
		}
	}
	return b.String()
}

func buildSections() string {
	var b strings.Builder
	for _, name := range []string{"stdout", "stderr", "summary"} {
		fmt.Fprintf(&b, "--- %s ---\n", name)
		for i := 0; i < 150; i++ {
			fmt.Fprintf(&b, "%s line %d: some output of the program that is long enough\n", name, i)
		}
	}
	return b.String()
}

func buildMarkdown(sections int) string {
	var b strings.Builder
	b.WriteString("# Report\n\nIntro text.\n")
	for i := 1; i <= sections; i++ {
		fmt.Fprintf(&b, "\n## Part %d\n\n", i)
		if i%2 == 0 {
			fmt.Fprintf(&b, "### Details of part %d\n\n", i)
		}
		for j := 0; j < 40; j++ {
			fmt.Fprintf(&b, "Paragraph %d of part %d, with enough words to fill a line of text.\n", j, i)
		}
		b.WriteString("```\n# not a heading inside a fence\n```\n")
	}
	return b.String()
}

func buildDiff(files int) string {
	var b strings.Builder
	for f := 0; f < files; f++ {
		fmt.Fprintf(&b, "diff --git a/pkg/f%d.go b/pkg/f%d.go\nindex 111..222 100644\n--- a/pkg/f%d.go\n+++ b/pkg/f%d.go\n@@ -1,40 +1,40 @@\n", f, f, f, f)
		for l := 0; l < 40; l++ {
			fmt.Fprintf(&b, "-\told line %d of file %d\n+\tnew line %d of file %d\n", l, f, l, f)
		}
	}
	return b.String()
}

func buildCompilerError() string {
	var b strings.Builder
	b.WriteString("$ go build ./...\n# github.com/example/app/pkg\n")
	for i := 0; i < 300; i++ {
		switch i % 50 {
		case 7:
			fmt.Fprintf(&b, "pkg/server.go:%d:12: undefined: handlerFunc%d\n", i, i)
		case 31:
			fmt.Fprintf(&b, "pkg/client.go:%d:3: cannot use x (variable of type int) as string value in argument\n", i)
		default:
			fmt.Fprintf(&b, "note: while compiling unit %d, the compiler visited a long list of packages\n", i)
		}
	}
	b.WriteString("FAIL\texit status 2\n")
	return b.String()
}

func newTestEngine(t *testing.T, config string) (*Engine, string) {
	t.Helper()
	ws := t.TempDir()
	if config != "" {
		os.MkdirAll(filepath.Join(ws, ".pi"), 0o755)
		if err := os.WriteFile(ConfigPath(ws), []byte(config), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e, err := New(Options{Workspace: ws, Now: newClock().now, ArtifactDirs: []string{ws}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e, ws
}

func text(s string) []ContentBlock { return []ContentBlock{{Type: "text", Text: s}} }

func tr(tool string, content []ContentBlock) ToolResultRequest {
	return ToolResultRequest{SessionID: "s1", ToolName: tool, ToolCallID: "call", Content: content, CtxReadActive: true}
}

// renderReplacement is the golden form of a decision.
func renderReplacement(r Replacement) string {
	var b strings.Builder
	fmt.Fprintf(&b, "action=%s strategy=%s reason=%q original=%d visible=%d warning=%q\n", r.Action, r.Strategy, r.Reason, r.OriginalBytes, r.VisibleBytes, r.Warning)
	for _, c := range r.Content {
		if c.Type == "original" {
			fmt.Fprintf(&b, "=== original block %d\n", *c.Index)
			continue
		}
		fmt.Fprintf(&b, "=== text (%d bytes)\n%s\n", len(c.Text), c.Text)
	}
	return b.String()
}

// checkGolden compares got with testdata/golden/<name>.txt (-update
// rewrites it).
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", "golden", name+".txt"), got)
}

func TestNoticeGolden(t *testing.T) {
	ctx := context.Background()
	long := strings.Repeat("minified{a:1,b:[2,3],c:'x'};", 1500)
	tests := []struct {
		name    string
		tool    string
		content []ContentBlock
		isError bool
		input   string
	}{
		{"lines_build_log", "bash", text(buildLog(3000)), false, ""},
		{"json_object", "fetch", text(buildJSON(400)), false, ""},
		{"json_array", "fetch", text(`[` + strings.TrimSuffix(strings.Repeat(`{"id":1,"path":"/a/b/c","size":12345},`, 600), ",") + `]`), false, ""},
		{"sections_fabric", "fabric_exec", text(buildSections()), false, ""},
		{"markdown_headings", "read", text(buildMarkdown(7)), false, ""},
		{"markdown_outline", "read", text(buildMarkdown(30)), false, ""},
		{"grep_by_file", "grep", text(buildGrep(60, 5)), false, ""},
		{"diff_outline", "bash", text(buildDiff(12)), false, ""},
		{"single_long_line", "bash", text(long), false, ""},
		{"text_blocks_with_image", "fabric_exec", []ContentBlock{{Type: "text", Text: buildLog(200)}, {Type: "image"}, {Type: "text", Text: buildJSON(50)}}, false, ""},
		{"error_compaction", "bash", text(buildCompilerError()), true, ""},
		{"edit_compaction", "apply_patch", text("Applied the patch to 12 files.\n" + buildDiff(12)), false, `{"patch":"..."}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := newTestEngine(t, "")
			req := tr(tt.tool, tt.content)
			req.IsError = tt.isError
			if tt.input != "" {
				req.Input = json.RawMessage(tt.input)
			}
			rep, err := e.ToolResult(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Action != "replace" {
				t.Fatalf("kept: %s", rep.Reason)
			}
			checkGolden(t, "notice_"+tt.name, renderReplacement(rep))
			// The notice saves at least minimumSavingsBytes and its calls work.
			if rep.OriginalBytes-rep.VisibleBytes < 256 {
				t.Errorf("saving %d < 256", rep.OriginalBytes-rep.VisibleBytes)
			}
			for _, call := range noticeCalls(rep) {
				res, err := e.Read(ctx, ReadRequest{SessionID: "s1", Args: json.RawMessage(call)})
				if err != nil {
					t.Errorf("the notice's call %s fails: %v", call, err)
					continue
				}
				if len(res.Text) >= 16384 {
					t.Errorf("the notice's call %s returns %d bytes, not below the threshold", call, len(res.Text))
				}
				if strings.HasPrefix(res.Text, "No ") {
					t.Errorf("the notice's call %s finds nothing", call)
				}
			}
		})
	}
}

// noticeCalls extracts the ctx_read({...}) calls of a replacement.
func noticeCalls(r Replacement) []string {
	var out []string
	for _, c := range r.Content {
		s := c.Text
		for {
			i := strings.Index(s, "ctx_read(")
			if i < 0 {
				break
			}
			s = s[i+len("ctx_read("):]
			j := strings.Index(s, "})")
			if j < 0 {
				break
			}
			call := s[:j+1]
			if !strings.Contains(call, `"..."`) {
				out = append(out, call)
			}
			s = s[j:]
		}
	}
	return out
}

func TestRepeatedHandleOmitsPreview(t *testing.T) {
	e, _ := newTestEngine(t, "")
	ctx := context.Background()
	req := tr("bash", text(buildLog(1000)))
	first, _ := e.ToolResult(ctx, req)
	second, _ := e.ToolResult(ctx, req)
	if first.Handle != second.Handle {
		t.Fatalf("handles %s and %s for the same payload", first.Handle, second.Handle)
	}
	checkGolden(t, "notice_repeat", renderReplacement(second))
	if second.VisibleBytes >= first.VisibleBytes/2 {
		t.Errorf("the repeat notice is %d bytes, the first %d: the preview was not omitted", second.VisibleBytes, first.VisibleBytes)
	}
	// Another session sees the preview.
	req.SessionID = "s2"
	if third, _ := e.ToolResult(ctx, req); third.VisibleBytes != first.VisibleBytes {
		t.Errorf("another session's notice is %d bytes, want %d as the first", third.VisibleBytes, first.VisibleBytes)
	}
}
