package hooks

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBlocksRoundTrip(t *testing.T) {
	in := []Block{{Type: "text", Text: "héllo\n"}, {Type: "image", Data: "AAAA", MimeType: "image/png"}, {Type: "text", Text: ""}, {Type: "text", Text: "\x00{}"}}
	packed, bulk := PackBlocks(in)
	wire, _ := json.Marshal(packed)
	if want := `[{"type":"text","bytes":7},{"type":"image","data":"AAAA","mimeType":"image/png"},{"type":"text","bytes":0},{"type":"text","bytes":3}]`; string(wire) != want {
		t.Errorf("packed = %s, want %s", wire, want)
	}
	var back []Block
	json.Unmarshal(wire, &back)
	out, err := UnpackBlocks(back, bulk)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(in, out); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}
	for _, tc := range []struct {
		wire string
		bulk string
	}{
		{`[{"type":"text","bytes":4}]`, "abc"},
		{`[{"type":"text","bytes":-1}]`, ""},
		{`[{"type":"text","bytes":1}]`, "ab"},
	} {
		var bs []Block
		json.Unmarshal([]byte(tc.wire), &bs)
		if _, err := UnpackBlocks(bs, []byte(tc.bulk)); err == nil {
			t.Errorf("UnpackBlocks(%s, %q) = nil error, want one", tc.wire, tc.bulk)
		}
	}
	// Inline text (no bytes) is accepted as it is.
	var inline []Block
	json.Unmarshal([]byte(`[{"type":"text","text":"x"}]`), &inline)
	if out, err := UnpackBlocks(inline, nil); err != nil || out[0].Text != "x" {
		t.Errorf("inline text = %v, %v", out, err)
	}
}

// TestToolResultHook runs a tool_result engine through the host: the patch
// comes back with its text in the bulk bytes.
func TestToolResultHook(t *testing.T) {
	mark := Engine{Name: "mark", Hooks: map[string]string{"tool_result": "toolResult"}, Methods: map[string]Handler{
		"toolResult": func(ctx context.Context, r *Request) (any, error) {
			tr, err := DecodeToolResult(r)
			if err != nil {
				return nil, err
			}
			return ToolResultPatch{Content: []Block{{Type: "text", Text: tr.ToolName + " said " + tr.Content[0].Text}}}.Reply(), nil
		},
	}}
	h, _ := startHost(t, Config{}, mark)
	c := dial(t, h)
	blocks, bulk := PackBlocks([]Block{{Type: "text", Text: "42\n"}})
	res, rbulk, err := c.Call(context.Background(), "mark.toolResult", ToolResult{ToolName: "bash", Content: blocks}, bulk)
	if err != nil {
		t.Fatal(err)
	}
	var patch struct{ Content []Block }
	json.Unmarshal(res, &patch)
	got, err := UnpackBlocks(patch.Content, rbulk)
	if err != nil || len(got) != 1 || got[0].Text != "bash said 42\n" {
		t.Errorf("patch = %s + %q -> %v, %v", res, rbulk, got, err)
	}
}

// FuzzUnpackBlocks: any blocks and bytes either unpack so that every byte
// is accounted for, or fail; never panic.
func FuzzUnpackBlocks(f *testing.F) {
	f.Add(`[{"type":"text","bytes":3},{"type":"image","data":"x"}]`, []byte("abc"))
	f.Add(`[{"type":"text","bytes":9007199254740993}]`, []byte("abc"))
	f.Fuzz(func(t *testing.T, wire string, bulk []byte) {
		var bs []Block
		if json.Unmarshal([]byte(wire), &bs) != nil {
			return
		}
		out, err := UnpackBlocks(bs, bulk)
		if err != nil {
			return
		}
		n := 0
		for i, b := range out {
			if bs[i].Bytes != nil {
				n += len(b.Text)
			}
		}
		if n != len(bulk) {
			t.Fatalf("unpacked %d text bytes from %d bulk bytes", n, len(bulk))
		}
	})
}
