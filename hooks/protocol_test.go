package hooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

func TestParseMessage(t *testing.T) {
	for _, tc := range []struct {
		line string
		want message
		bulk int64
		code int
		id   string
	}{
		{line: `{"jsonrpc":"2.0","id":1,"method":"a.b","params":{"x":1},"timeoutMs":50,"bulk":3}`,
			want: message{JSONRPC: "2.0", ID: json.RawMessage(`1`), Method: "a.b", Params: json.RawMessage(`{"x":1}`), TimeoutMs: 50, Bulk: 3}, bulk: 3},
		{line: `{"jsonrpc":"2.0","method":"bye"}`, want: message{JSONRPC: "2.0", Method: "bye"}},
		{line: `{"jsonrpc":"2.0","id":1,"method":"a.b","timeoutMs":50,"deadline":1767225600000}`,
			want: message{JSONRPC: "2.0", ID: json.RawMessage(`1`), Method: "a.b", TimeoutMs: 50, Deadline: 1767225600000}},
		{line: `{"jsonrpc":"2.0","id":"x","result":{"ok":true}}`, want: message{JSONRPC: "2.0", ID: json.RawMessage(`"x"`), Result: json.RawMessage(`{"ok":true}`)}},
		{line: `{"jsonrpc":"2.0","id":null,"error":{"code":-32005,"message":"no"}}`, want: message{JSONRPC: "2.0", ID: json.RawMessage(`null`), Error: &Error{Code: -32005, Message: "no"}}},
		{line: `{"jsonrpc":"2.0","id":2,"method":"m","params":null}`, want: message{JSONRPC: "2.0", ID: json.RawMessage(`2`), Method: "m"}},
		{line: `{"jsonrpc":"2.0","id":2,"method":"m","params":[1]}`, want: message{JSONRPC: "2.0", ID: json.RawMessage(`2`), Method: "m", Params: json.RawMessage(`[1]`)}},
		{line: `{`, code: CodeParse, bulk: -1},
		{line: `[]`, code: CodeParse, bulk: -1},
		{line: `{"jsonrpc":"2.0","id":1,"method":"m","bulk":-1}`, code: CodeInvalidRequest, bulk: -1, id: "1"},
		{line: `{"jsonrpc":"2.0","id":1,"method":"m","bulk":"3"}`, code: CodeInvalidRequest, bulk: -1, id: "1"},
		{line: `{"jsonrpc":"2.0","id":1,"method":7,"bulk":3}`, code: CodeInvalidRequest, bulk: 3, id: "1"},
		{line: `{"jsonrpc":"2.0","id":true,"method":"m"}`, code: CodeInvalidRequest},
		{line: `{"id":1,"method":"m"}`, code: CodeInvalidRequest, id: "1"},
		{line: `{"jsonrpc":"2.0","id":1}`, code: CodeInvalidRequest, id: "1"},
		{line: `{"jsonrpc":"2.0","id":1,"method":"m","timeoutMs":1.5}`, code: CodeInvalidRequest, id: "1"},
		{line: `{"jsonrpc":"2.0","id":1,"method":"m","deadline":-5}`, code: CodeInvalidRequest, id: "1"},
		{line: `{"jsonrpc":"2.0","id":1,"method":"m","deadline":"soon"}`, code: CodeInvalidRequest, id: "1"},
		{line: `{"jsonrpc":"2.0","id":1,"error":"bad"}`, code: CodeInvalidRequest, id: "1"},
	} {
		m, bulk, perr, id := parseMessage([]byte(tc.line))
		code := 0
		if perr != nil {
			code = perr.Code
		}
		if tc.code == 0 {
			tc.id = string(tc.want.ID)
		}
		if code != tc.code || bulk != tc.bulk || string(id) != tc.id {
			t.Errorf("parseMessage(%s) = bulk %d, error %v, id %s; want bulk %d, code %d, id %s", tc.line, bulk, perr, id, tc.bulk, tc.code, tc.id)
		}
		if tc.code == 0 {
			if d := cmp.Diff(tc.want, m); d != "" {
				t.Errorf("parseMessage(%s) (-want +got):\n%s", tc.line, d)
			}
		}
	}
}

func TestIDFromHead(t *testing.T) {
	for _, tc := range []struct{ head, want string }{
		{`{"jsonrpc":"2.0","id":12,"method":"x","params":{"s":"xxxx`, "12"},
		{`{"id":"a b","params":{"s":"xx`, `"a b"`},
		{`{"jsonrpc":"2.0","method":"x","params":{"s":"xxxxx`, ""},
		{`{"params":{"id":3},"id":4`, ""}, // the id value is cut
		{`{"params":{"id":3},"id":4,`, "4"},
		{`nonsense`, ""},
	} {
		if got := string(idFromHead([]byte(tc.head))); got != tc.want {
			t.Errorf("idFromHead(%s) = %s, want %s", tc.head, got, tc.want)
		}
	}
}

func TestFrameReader(t *testing.T) {
	var stream bytes.Buffer
	writeFrame(&stream, &message{ID: json.RawMessage("1"), Method: "a.b"}, []byte("raw\nbytes\x00"))
	stream.WriteString("\n  \n")
	writeFrame(&stream, &message{ID: json.RawMessage("2"), Method: "c.d", Params: json.RawMessage(`{"s":"` + strings.Repeat("y", 100) + `"}`)}, nil)
	writeFrame(&stream, &message{ID: json.RawMessage("3"), Method: "e.f"}, bytes.Repeat([]byte("z"), 200))
	writeFrame(&stream, &message{ID: json.RawMessage("4"), Method: "g.h"}, nil)
	stream.WriteString(`{"jsonrpc":"2.0","id":5,"method":"cut"`)
	// One byte at a time: frames must not depend on how reads split the stream.
	fr := newFrameReader(iotest.OneByteReader(&stream), 64, 100)
	type got struct {
		ID   string
		Code int
		Bulk int
	}
	var frames []got
	var err error
	for {
		var f frame
		f, err = fr.next()
		if err != nil {
			break
		}
		g := got{ID: string(f.msg.ID), Bulk: len(f.bulk)}
		if f.err != nil {
			g.ID, g.Code = string(f.id), f.err.Code
		}
		frames = append(frames, g)
	}
	want := []got{{ID: "1", Bulk: 10}, {ID: "2", Code: CodeTooLarge}, {ID: "3", Code: CodeTooLarge}, {ID: "4"}}
	if d := cmp.Diff(want, frames); d != "" {
		t.Errorf("frames (-want +got):\n%s", d)
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("end of a stream cut inside a message = %v, want io.ErrUnexpectedEOF", err)
	}
}

// FuzzFrameReader feeds arbitrary streams to the reader: it must not panic,
// must not return more bulk than the limit, and every frame it returns
// without error must encode back to a message that parses the same.
func FuzzFrameReader(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"a.b","bulk":3}` + "\nabc" + `{"jsonrpc":"2.0","method":"bye"}` + "\n",
		`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n",
		`{"jsonrpc":"2.0","id":1,"method":"m","bulk":-1}` + "\n",
		`{"jsonrpc":"2.0","id":1,"method":"m","bulk":99999999999}` + "\nxx",
		"\n\n{}\n[1]\nnull\n",
		`{"jsonrpc":"2.0","id":"\u0000","method":"\ud800","params":{"a":[1,2,{"b":null}]},"timeoutMs":0}` + "\n",
		`{"jsonrpc":"2.0","id":2,"method":"m","timeoutMs":250,"deadline":1796083130215}` + "\n" + `{"jsonrpc":"2.0","id":3,"method":"m","deadline":-1}` + "\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fr := newFrameReader(bytes.NewReader(data), 256, 64)
		for i := 0; i < 1000; i++ {
			fm, err := fr.next()
			if len(fm.bulk) > 64 {
				t.Fatalf("bulk of %d bytes past the limit", len(fm.bulk))
			}
			if err != nil {
				return
			}
			if fm.err != nil {
				continue
			}
			var buf bytes.Buffer
			m := fm.msg
			if err := writeFrame(&buf, &m, fm.bulk); err != nil {
				t.Fatalf("re-encode %+v: %v", fm.msg, err)
			}
			again, err := newFrameReader(&buf, 1<<20, 64).next()
			if err != nil || again.err != nil {
				t.Fatalf("re-read %q: %v %v", buf.Bytes(), err, again.err)
			}
			if !bytes.Equal(again.bulk, fm.bulk) || again.msg.Method != fm.msg.Method || !jsonEqual(again.msg.ID, fm.msg.ID) || !jsonEqual(again.msg.Params, fm.msg.Params) {
				t.Fatalf("round trip changed the message: %+v -> %+v", fm.msg, again.msg)
			}
		}
	})
}

// FuzzRoundTrip: any method, params and bulk bytes survive the wire.
func FuzzRoundTrip(f *testing.F) {
	f.Add("session.describe", `{"leafId":"abc"}`, []byte{})
	f.Add("offload.put", `[]`, []byte("\n\x00\xff"))
	f.Fuzz(func(t *testing.T, method, params string, bulk []byte) {
		if method == "" || !json.Valid([]byte(params)) || (firstByte([]byte(params)) != '{' && firstByte([]byte(params)) != '[') {
			return
		}
		var buf bytes.Buffer
		if err := writeFrame(&buf, &message{ID: json.RawMessage("7"), Method: method, Params: json.RawMessage(params)}, bulk); err != nil {
			return // not representable (invalid UTF-8 is replaced, not an error)
		}
		fm, err := newFrameReader(&buf, 1<<20, 1<<20).next()
		if err != nil || fm.err != nil {
			t.Fatalf("read back: %v %v", err, fm.err)
		}
		if !bytes.Equal(fm.bulk, bulk) || !jsonEqual(fm.msg.Params, json.RawMessage(params)) || string(fm.msg.ID) != "7" {
			t.Fatalf("round trip: %+v, %q", fm.msg, fm.bulk)
		}
		if want, _ := json.Marshal(method); !jsonEqual(mustMarshal(fm.msg.Method), want) {
			t.Fatalf("method %q came back as %q", method, fm.msg.Method)
		}
	})
}

func mustMarshal(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func jsonEqual(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return cmp.Equal(x, y)
}
