package offload

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

// Oversize values for an argument: a 256 KB string of each kind a model
// may send, a 256 KB number, a huge array and a deep object.
var oversize = map[string]json.RawMessage{
	"string":       mustJSON(strings.Repeat("x", 1<<18)),
	"multibyte":    mustJSON(strings.Repeat("é🌍", 1<<16)),
	"regex-string": mustJSON(strings.Repeat(`(a|b)*\d+[`, 1<<15)),
	"jsonpath":     mustJSON("$." + strings.Repeat("a", 1<<18)),
	"jsonpath-bad": mustJSON("$." + strings.Repeat("a.", 1<<17) + "!"),
	"number":       json.RawMessage(strings.Repeat("9", 1<<18)),
	"array":        json.RawMessage("[" + strings.Repeat(`"term",`, 1<<15) + `"term"]`),
	"object":       json.RawMessage(strings.Repeat(`{"a":`, 5000) + "1" + strings.Repeat("}", 5000)),
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// TestOversizeArguments calls every tool with an oversize value for each
// of its parameters (and an oversize unknown parameter), at the model
// boundary and inside a program, and checks that the answer, result or
// error, stays under its hard cap.
func TestOversizeArguments(t *testing.T) {
	e, _ := newTestEngine(t, "")
	ctx := context.Background()
	m := e.Methods()
	rep, err := e.ToolResult(ctx, tr("bash", text(buildLog(3000))))
	if err != nil || rep.Action != "replace" {
		t.Fatalf("no handle to read: %v %+v", err, rep)
	}
	doc := `{"items":[` + strings.Repeat(`{"name":"a","v":1},`, 2000) + `{"name":"z"}]}`
	jrep, err := e.ToolResult(ctx, tr("bash", text(doc)))
	if err != nil || jrep.Action != "replace" {
		t.Fatalf("no JSON handle: %v %+v", err, jrep)
	}
	tools := []struct {
		method string
		params []string
		base   map[string]json.RawMessage // valid arguments the oversize one is added to
	}{
		{"read", []string{"id", "offset", "length", "query", "regex", "ignoreCase", "contextLines", "maxMatches", "cursor", "section", "jsonPath"},
			map[string]json.RawMessage{"id": mustJSON(rep.Handle)}},
		{"read", []string{"query", "cursor", "ignoreCase", "contextLines", "maxMatches", "regex"},
			map[string]json.RawMessage{"id": mustJSON(rep.Handle), "query": mustJSON("ERROR")}},
		{"read", []string{"jsonPath", "offset", "length"}, map[string]json.RawMessage{"id": mustJSON(jrep.Handle), "jsonPath": mustJSON("$.items")}},
		{"summarize", []string{"id", "text", "mode", "maxTokens"}, map[string]json.RawMessage{}},
		{"summarize", []string{"mode", "maxTokens"}, map[string]json.RawMessage{"id": mustJSON(rep.Handle)}},
		{"offload", []string{"key", "source", "data"}, map[string]json.RawMessage{"data": mustJSON("x")}},
	}
	for _, tool := range tools {
		for _, param := range append(tool.params, strings.Repeat("p", 1<<18)) {
			for kind, value := range oversize {
				for _, inProgram := range []bool{false, true} {
					args := map[string]json.RawMessage{}
					for k, v := range tool.base {
						args[k] = v
					}
					args[param] = value
					raw, _ := json.Marshal(map[string]any{"sessionId": "s1", "inProgram": inProgram, "args": args})
					out, err := m[tool.method](ctx, raw)
					name := fmt.Sprintf("%s %s=%s (program %v)", tool.method, clipName(param), kind, inProgram)
					checkAnswer(t, name, out, err, answerCap(16384, inProgram))
				}
			}
		}
	}

	// The case of the report: a JSONPath that matches nothing is not echoed whole.
	raw, _ := json.Marshal(map[string]any{"args": map[string]any{"id": jrep.Handle, "jsonPath": "$." + strings.Repeat("a", 1<<20)}})
	out, err := m["read"](ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	if s := out.(ReadResult).Text; len(s) > 1000 || !strings.Contains(s, "No value of") || !strings.Contains(s, "…(1048578 chars)") {
		t.Errorf("a 1 MB JSONPath that matches nothing answered %d bytes: %.300q", len(s), s)
	}
}

// TestOversizeCommands gives /ce oversize arguments and an oversize,
// many-keyed configuration: every answer stays under maxCommandBytes.
func TestOversizeCommands(t *testing.T) {
	var cfg strings.Builder
	cfg.WriteString("{")
	for i := 0; i < 20000; i++ {
		fmt.Fprintf(&cfg, `"%s%d": %d,`, strings.Repeat("k", 40), i, i)
	}
	cfg.WriteString(`"enabled": true}`)
	e, ws := newTestEngine(t, cfg.String())
	ctx := context.Background()
	for i := 0; i < 300; i++ {
		e.ToolResult(ctx, tr("bash", text(fmt.Sprintf("%d %s", i, buildLog(400)))))
		e.record(Event{Session: fmt.Sprintf("session-%05d-%s", i, strings.Repeat("s", 300)), Type: "read", Mode: "range"})
	}
	m := e.Methods()
	for name, p := range map[string]string{
		"status":   `{"sessionId":"s1","all":true}`,
		"trace":    `{"all":true,"limit":1000000000}`,
		"settings": ``,
		"start":    ``,
		"clear":    `{"store":true}`,
	} {
		out, err := m[name](ctx, json.RawMessage(p))
		checkAnswer(t, name, out, err, maxCommandBytes)
	}
	if _, err := os.Stat(ws); err != nil {
		t.Fatal(err)
	}
}

func clipName(s string) string {
	if len(s) > 20 {
		return fmt.Sprintf("<%d bytes>", len(s))
	}
	return s
}

// checkAnswer checks a method's answer: a text under max and a whole JSON
// encoding not far over it, or an error under maxErrorBytes.
func checkAnswer(t *testing.T, name string, out any, err error, max int) {
	t.Helper()
	if err != nil {
		if n := len(err.Error()); n > maxErrorBytes {
			t.Errorf("%s: error of %d bytes: %.200q", name, n, err.Error())
		}
		return
	}
	b, _ := json.Marshal(out)
	var v struct {
		Text    string `json:"text"`
		Warning string `json:"warning"`
	}
	json.Unmarshal(b, &v)
	if len(v.Text) > max || len(v.Warning) > max {
		t.Errorf("%s: text of %d bytes, cap %d: %.200q", name, len(v.Text)+len(v.Warning), max, v.Text)
	}
	if len(b) > max+64<<10 {
		t.Errorf("%s: answer of %d bytes: %.300s", name, len(b), b)
	}
}
