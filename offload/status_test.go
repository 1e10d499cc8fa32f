package offload

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var cmpIgnoreStored = cmpopts.IgnoreFields(StoredResult{}, "Stored")

func itoa(n int) string { return strconv.Itoa(n) }

// TestRenderFigures pins /ce status's figures in plain words: what the
// tools produced (with what a tool had cut), what the model saw instead,
// the tokens kept out and read back, with correct plurals and no field
// names.
func TestRenderFigures(t *testing.T) {
	for _, tt := range []struct {
		name   string
		events []Event
		want   string
	}{
		{
			name: "nothing yet",
			want: "No tool result was kept out of the model's context yet.\n" +
				"Tokens kept out of the context (about 4 bytes each): 0, the results less the notices\n" +
				"Tokens read back: 0, so 0 saved net\n" +
				"ctx_read: 0 calls\n",
		},
		{
			// The demo's build log: pi's bash cut 1,212,902 bytes to the
			// 51,288 its result held and saved the whole to a file, which
			// the engine stored; the model saw a 2,573-byte notice and read
			// back 1,502 bytes with one query.
			name: "a result pi's bash cut",
			events: []Event{
				{Session: "s", Type: "offload", Tool: "bash", Strategy: "offload", OriginalBytes: 51288, StoredBytes: 1212902, FullBytes: 1212902, VisibleBytes: 2573, HandleFP: "h1", Artifact: "recovered"},
				{Session: "s", Type: "read", Tool: "ctx_read", Mode: "query", HandleFP: "h1", ReturnedBytes: 1502},
			},
			want: "Tool results kept out of the model's context: 1\n" +
				"  the tools produced:    1,212,902 bytes (1.2 MiB) in full\n" +
				"  their results held:    51,288 bytes (50.1 KiB): bash cut 1 output to fit its limit\n" +
				"  the model saw instead: 2,573 bytes (2.5 KiB) of notices\n" +
				"Tokens kept out of the context (about 4 bytes each): 12,178, the results less the notices; 302,582 counting what bash had cut\n" +
				"Tokens read back: 376, so 11,802 saved net\n" +
				"Later: 1 of 1 result read back; 0 calls run again anyway\n" +
				"ctx_read: 1 call (1 query)\n",
		},
		{
			name: "whole results of several kinds, one run again",
			events: []Event{
				{Session: "s", Type: "offload", Tool: "grep", Strategy: "offload", OriginalBytes: 40000, VisibleBytes: 2000, HandleFP: "h1"},
				{Session: "s", Type: "offload", Tool: "grep", Strategy: "offload", OriginalBytes: 40000, VisibleBytes: 2000, HandleFP: "h1", Repeat: true},
				{Session: "s", Type: "offload", Tool: "bash", Strategy: "error", OriginalBytes: 9000, VisibleBytes: 1000, HandleFP: "h2"},
				{Session: "s", Type: "rerun", Tool: "grep"},
				{Session: "s", Type: "keep", Tool: "read", Reason: KeepNoReader, OriginalBytes: 30000},
				{Session: "s", Type: "read", Mode: "range", FromZero: true, HandleFP: "h1", ReturnedBytes: 16000},
				{Session: "s", Type: "read", Mode: "range", HandleFP: "h1", ReturnedBytes: 16000},
				{Session: "s", Type: "read", Mode: "query", HandleFP: "h2", Matches: new(int)},
				{Session: "s", Type: "read-error", Error: "not-found"},
				{Session: "s", Type: "summarize", HandleFP: "h2", ReturnedBytes: 400},
			},
			want: "Tool results kept out of the model's context: 3 (1 error output, 2 large outputs), 1 result already seen in this session\n" +
				"  the tools returned:    89,000 bytes (86.9 KiB)\n" +
				"  the model saw instead: 5,000 bytes (4.9 KiB) of notices\n" +
				"Large results left in the context: 1 (ctx_read was not an active tool)\n" +
				"Tokens kept out of the context (about 4 bytes each): 21,000, the results less the notices\n" +
				"Tokens read back: 8,100, so 12,900 saved net\n" +
				"Later: 2 of 2 results read back; 1 call run again anyway\n" +
				"ctx_read: 4 calls (2 byte ranges (1 from the start), 1 query (1 matched nothing), 1 error); ctx_summarize: 1 call\n",
		},
		{
			name: "a cut result whose full size is unknown",
			events: []Event{
				{Session: "s", Type: "offload", Tool: "fabric_exec", Strategy: "offload", OriginalBytes: 30000, VisibleBytes: 3000, HandleFP: "h1", Artifact: "unrecovered"},
				{Session: "s", Type: "offload", Tool: "bash", Strategy: "offload", OriginalBytes: 50000, FullBytes: 90000, VisibleBytes: 3000, HandleFP: "h2", Artifact: "unrecovered"},
			},
			want: "Tool results kept out of the model's context: 2\n" +
				"  the tools produced:    at least 120,000 bytes (117.2 KiB) in full; the full size of 1 cut output is unknown\n" +
				"  their results held:    80,000 bytes (78.1 KiB): bash and fabric_exec cut 2 outputs to fit their limits\n" +
				"  the model saw instead: 6,000 bytes (5.9 KiB) of notices\n" +
				"Tokens kept out of the context (about 4 bytes each): 18,500, the results less the notices; 28,500 counting what bash and fabric_exec had cut\n" +
				"Tokens read back: 0, so 18,500 saved net\n" +
				"Later: 0 of 2 results read back; 0 calls run again anyway\n" +
				"ctx_read: 0 calls\n",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			renderFigures(&b, Tally(tt.events, "s"))
			if diff := cmp.Diff(tt.want, b.String()); diff != "" {
				t.Errorf("renderFigures (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDays(t *testing.T) {
	for d, want := range map[time.Duration]string{
		7 * 24 * time.Hour:      "7 days",
		24 * time.Hour:          "1 day",
		36 * time.Hour:          "36 hours",
		time.Hour:               "1 hour",
		90 * time.Minute:        "90 minutes",
		1500 * time.Millisecond: "1 second",
	} {
		if got := days(d); got != want {
			t.Errorf("days(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestGrouped(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1212902: "1,212,902", -11802: "-11,802", 123456789: "123,456,789"} {
		if got := grouped(n); got != want {
			t.Errorf("grouped(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestStatusCutOutput: a result pi's bash cut, with its full output in a
// file: /ce status says what the tool produced, what its result held, what
// the model saw, and where the full output is (the handle and the file),
// and says so when the file is gone.
func TestStatusCutOutput(t *testing.T) {
	ctx := context.Background()
	e, ws := newTestEngine(t, "")
	full := buildLog(3000)
	tail := full[len(full)-30000:]
	tail = tail[strings.IndexByte(tail, '\n')+1:]
	path := filepath.Join(ws, "pi-bash-1.log")
	os.WriteFile(path, []byte(full), 0o600)
	result := tail + "\n\n[Showing lines 2500-3000 of 3000 (50.0KB limit). Full output: " + path + "]"
	req := tr("bash", text(result))
	req.Details = json.RawMessage(`{"truncation":{"truncated":true,"totalBytes":` + itoa(len(full)) + `},"fullOutputPath":"` + path + `"}`)
	rep, _ := e.ToolResult(ctx, req)
	if rep.Action != "replace" {
		t.Fatalf("ToolResult = %s", rep.Action)
	}
	st, err := e.Status(ctx, StatusRequest{SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	f := st.Figures
	if f.ToolBytes != int64(len(full)) || f.OriginalBytes != int64(len(result)) || f.VisibleBytes != rep.VisibleBytes || f.CutResults != 1 || f.CutUnknown != 0 {
		t.Errorf("figures: produced %d, held %d, seen %d, cut %d (unknown %d); want %d, %d, %d, 1 (0)", f.ToolBytes, f.OriginalBytes, f.VisibleBytes, f.CutResults, f.CutUnknown, len(full), len(result), rep.VisibleBytes)
	}
	want := []StoredResult{{Handle: rep.Handle, Source: "bash", Bytes: int64(len(full)), Full: path}}
	if diff := cmp.Diff(want, st.Results, cmpIgnoreStored); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	for _, line := range []string{
		"  the tools produced:    " + grouped(int64(len(full))) + " bytes",
		"  their results held:    " + grouped(int64(len(result))) + " bytes",
		"  the model saw instead: " + grouped(rep.VisibleBytes) + " bytes",
		"  " + rep.Handle + ": bash, " + grouped(int64(len(full))) + " bytes (" + humanBytes(int64(len(full))) + "); the tool's full-output file: " + path + "\n",
		"Store (.pi/context-store): 1 result, ",
		"each kept 7 days after it was stored\n",
	} {
		if !strings.Contains(st.Text, line) {
			t.Errorf("status lacks %q:\n%s", line, st.Text)
		}
	}
	for _, internal := range []string{"mainTokensPrevented", "netTokensSaved", "readbackTokens", "payloads", "168h"} {
		if strings.Contains(st.Text, internal) {
			t.Errorf("status holds %q:\n%s", internal, st.Text)
		}
	}
	os.Remove(path)
	st, _ = e.Status(ctx, StatusRequest{SessionID: "s1"})
	if !strings.Contains(st.Text, path+" (gone now; the handle keeps the copy)\n") {
		t.Errorf("status with the file gone:\n%s", st.Text)
	}
	// Another session's results are not this session's.
	if other, _ := e.Status(ctx, StatusRequest{SessionID: "s2"}); len(other.Results) != 0 || strings.Contains(other.Text, rep.Handle) {
		t.Errorf("another session lists %v", other.Results)
	}
}

// TestStatusUnrecoveredSize: a cut result whose file is gone counts with the
// full size the tool reported (pi's truncation.totalBytes).
func TestStatusUnrecoveredSize(t *testing.T) {
	ctx := context.Background()
	e, ws := newTestEngine(t, "")
	tail := buildLog(600)
	path := filepath.Join(ws, "gone.log")
	req := tr("bash", text(tail+"\n\n[Showing lines 400-1000 of 1000. Full output: "+path+"]"))
	req.Details = json.RawMessage(`{"truncation":{"truncated":true,"totalBytes":123456},"fullOutputPath":"` + path + `"}`)
	if rep, _ := e.ToolResult(ctx, req); rep.Action != "replace" || rep.Warning == "" {
		t.Fatalf("ToolResult = %s, warning %q", rep.Action, rep.Warning)
	}
	st, _ := e.Status(ctx, StatusRequest{SessionID: "s1"})
	if st.Figures.ToolBytes != 123456 || st.Figures.CutUnknown != 0 || len(st.Results) != 1 || st.Results[0].Full != "" {
		t.Errorf("produced %d (unknown %d), results %+v; want 123456 (0), one without a file", st.Figures.ToolBytes, st.Figures.CutUnknown, st.Results)
	}
}
