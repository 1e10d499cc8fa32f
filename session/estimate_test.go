package session

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// Expected values in these tables were printed by Node 22 (String(x),
// JSON.stringify(x).length, x.length).

func TestJSNumber(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"0", "0"},
		{"-0", "0"},
		{"1", "1"},
		{"-1", "-1"},
		{"1.5", "1.5"},
		{"100", "100"},
		{"1e21", "1e+21"},
		{"1e20", "100000000000000000000"},
		{"123456789012345678901234", "1.2345678901234569e+23"},
		{"1e-7", "1e-7"},
		{"0.000001", "0.000001"},
		{"1.2345e-7", "1.2345e-7"},
		{"0.1", "0.1"},
		{"-0.0000012", "-0.0000012"},
		{"5e-324", "5e-324"},
		{"1.7976931348623157e308", "1.7976931348623157e+308"},
		{"1E400", "Infinity"},
		{"12.50", "12.5"},
		{"2.5e+3", "2500"},
	} {
		f, _ := strconv.ParseFloat(tc.in, 64)
		if got := jsNumber(f); got != tc.want {
			t.Errorf("jsNumber(%s) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestStringifyLen(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{`{"a":1,"b":[true,false,null],"c":"x"}`, 37},
		{`"\u00e9\ud83c\udf0d"`, 5},
		{`"\ud800"`, 8},
		{`"\udc00x"`, 9},
		{`"\u0001\b\n"`, 12},
		{`"\/"`, 3},
		{`"é🌍"`, 5},
		{`{ "k" : [ 1.50 , -0 , 1e2 ] }`, 17},
		{`"\u2028<>&"`, 6},
		{`"\ud83c\ud83c"`, 14},
		{`[1E400]`, 6},
		// Runs of plain ASCII around the eight bytes read at a time.
		{`"abcdefgh"`, 10},
		{`"abcdefghi\"jklmnopq"`, 21},
		{`"0123456789abcdef\ud83d\ude00rest of it"`, 30},
		{`"abcdefg\ud83dxyzxyzxyz"`, 24},
		{`"12345678\u0001abcdefghijklmnop"`, 32},
		{`"tab\there and more text é and then ascii again"`, 48},
		{`"xxxxxxx🌍yyyyyyyyyyyyyy"`, 25},
		// Runs of three-byte characters, read without decoding.
		{`"テストは必ず先に"`, 10},
		{`"\ud83dテスト"`, 11},
		{`"한국어 中文 ﾃｽﾄ\ud800"`, 18},
	} {
		if got := stringifyLen([]byte(tc.in)); got != tc.want {
			t.Errorf("stringifyLen(%s) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestJSLen(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{`""`, 0},
		{`"abc"`, 3},
		{`"\u00e9\ud83c\udf0d"`, 3},
		{`"\ud800"`, 1},
		{`"\u0001\b\n"`, 3},
		{`"é🌍"`, 3},
		{`"\u2028<>&"`, 4},
		{"\"a\xffb\"", 3},
		{`"テストは必ず先に"`, 8},
		{`"한국어 中文 ﾃｽﾄ"`, 10},
		{"\"\xed\xa0\x80\xe3\x81\"", 5}, // an encoded surrogate and a cut character: a unit a byte
		{"\"\xe3\x81\x82\xe3\"", 2},
	} {
		if got := jsLen([]byte(tc.in)); got != tc.want {
			t.Errorf("jsLen(%s) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestMessageTokens(t *testing.T) {
	for _, tc := range []struct {
		role, raw string
		want      int // ceil(chars/4)
	}{
		{"user", `{"role":"user","content":"abcde"}`, 2},
		{"user", `{"role":"user","content":[{"type":"text","text":"abcd"},{"type":"image","data":"x","mimeType":"image/png"}]}`, 1201},
		{"user", `{"role":"user","content":[{"type":"text","text":""}]}`, 0},
		{"assistant", `{"role":"assistant","content":[{"type":"thinking","thinking":"ab"},{"type":"toolCall","id":"1","name":"bash","arguments":{"command":"ls"}}]}`, 6}, // 2+4+16
		{"assistant", `{"role":"assistant","content":"not an array"}`, 0},
		{"toolResult", `{"role":"toolResult","content":[{"type":"text","text":"🌍🌍"}]}`, 1},
		{"custom", `{"role":"custom","content":"12345678"}`, 2},
		{"bashExecution", `{"role":"bashExecution","command":"ls","output":"a\nb"}`, 2},
		{"compactionSummary", `{"role":"compactionSummary","summary":"123456789"}`, 3},
		{"branchSummary", `{"role":"branchSummary","summary":"1234"}`, 1},
		{"system", `{"role":"system","content":"ab","sections":{"a":"cd","b":null,"c":""},"toolsAdded":[{"name":"x"}]}`, 5}, // 2+2+14
		{"unknown", `{"role":"unknown","content":"abcdef"}`, 0},
	} {
		m := Message{Role: tc.role, Raw: []byte(tc.raw)}
		if got := m.Tokens(); got != tc.want {
			t.Errorf("Message{%s}.Tokens() = %d, want %d", tc.raw, got, tc.want)
		}
	}
}

func TestCurrentSystemChars(t *testing.T) {
	sys := func(raw string) Message { return Message{Role: "system", Raw: []byte(raw)} }
	for _, tc := range []struct {
		name string
		msgs []Message
		want int
	}{
		{"none", []Message{{Role: "user", Raw: []byte(`{"role":"user","content":"x"}`)}}, 0},
		{"no timestamp, no tools", []Message{sys(`{"role":"system","content":"abc"}`)}, 0},
		{"null timestamp", []Message{sys(`{"role":"system","content":"abc","timestamp":null}`)}, 3},
		{
			"replayed",
			[]Message{
				sys(`{"role":"system","content":"ab","sections":{"p":"1234","q":"xy"},"toolsAdded":[{"name":"a","d":1},{"name":"b"}],"timestamp":1}`),
				sys(`{"role":"system","content":[{"type":"text","text":"c"},{"type":"text","text":"d"}],"sections":{"q":null,"p":"12"},"toolsRemoved":[{"name":"b"}],"timestamp":2}`),
			},
			// "ab\n\nc\nd" = 7, sections p = 2, tools [{"name":"a","d":1}] = 20 (checked with pi)
			7 + 2 + 20,
		},
	} {
		if got := currentSystemChars(tc.msgs); got != tc.want {
			t.Errorf("%s: currentSystemChars = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestAssistantUsage: the usage an assistant message reports counts unless
// it stopped aborted or in an error, wherever its members stand (both are
// found in one pass, after a content of any length).
func TestAssistantUsage(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want int
		ok   bool
	}{
		{`{"role":"assistant","usage":{"totalTokens":1120},"stopReason":"stop"}`, 1120, true},
		{`{"content":[{"type":"text","text":"` + strings.Repeat("x", 5000) + `"}],"role":"assistant","stopReason":"toolUse","usage":{"input":10,"output":100,"cacheRead":1000,"cacheWrite":10}}`, 1120, true},
		{`{"role":"assistant","stopReason":"aborted","usage":{"totalTokens":5}}`, 0, false},
		{`{"role":"assistant","usage":{"totalTokens":5},"stopReason":"error"}`, 0, false},
		{`{"role":"assistant","stopReason":"error","stopReason":"stop","usage":{"totalTokens":7}}`, 7, true},
		{`{"role":"assistant","usage":[1,2]}`, 0, false},
		{`{"role":"assistant","usage":{"totalTokens":0}}`, 0, false},
		{`{"role":"assistant"}`, 0, false},
	} {
		var m struct {
			Role string `json:"role"`
		}
		if err := json.Unmarshal([]byte(tc.raw), &m); err != nil {
			t.Fatal(err)
		}
		got, ok := assistantUsage(Message{Role: m.Role, Raw: json.RawMessage(tc.raw)})
		if got != tc.want || ok != tc.ok {
			t.Errorf("assistantUsage(%.80s) = %d, %v; want %d, %v", tc.raw, got, ok, tc.want, tc.ok)
		}
	}
}
