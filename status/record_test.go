package status

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/pi-session/pi-session/golden"
)

func i64(n int64) *int64 { return &n }

func tp(t time.Time) *time.Time { return &t }

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func fullRecord() *Record {
	return &Record{
		SessionID: "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", SessionFile: "/home/u/.pi/agent/sessions/x.jsonl",
		Cwd: "/home/u/repo", Model: "anthropic/claude-x", Role: RoleMain,
		Tokens: i64(312000), Floor: i64(41000),
		Thresholds:          &Thresholds{Soft: 300000, Handoff: 400000, Hard: 600000, MinProgress: 50000},
		EffectiveThresholds: &Thresholds{Soft: 300000, Handoff: 400000, Hard: 600000},
		LastHandoff:         "/home/u/repo/.ai-work/handoffs/x-2.md", LastHandoffAt: tp(t0.Add(-time.Hour)), HandoffCount: 2,
		EffectiveMode: "observe", ConfiguredMode: "enforce", Phase: "soft-notified", Action: "notify",
		Projected: true, Fallback: "", WrapperOwned: true, RelaunchMarker: "/home/u/.pi/agent/relaunch/123-abc.json",
		PID: 123, StartTicks: 456789, BootID: "3f1c0a9e-0000-4000-8000-000000000001", ProcessStart: tp(t0.Add(-2 * time.Hour)),
		Version: "0.1.0", UpdatedAt: t0,
	}
}

func TestParseRoundTrip(t *testing.T) {
	r := fullRecord()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse(b)
	if err != nil {
		t.Fatalf("Parse(Marshal(r)) error: %v", err)
	}
	if diff := cmp.Diff(r, got); diff != "" {
		t.Errorf("Parse(Marshal(r)) mismatch (-want +got):\n%s", diff)
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		corrupt bool
		pid     int
		extra   []string
	}{
		{name: "minimal", in: `{"sessionId":"a","pid":42}`, pid: 42},
		{name: "pid missing", in: `{"sessionId":"a"}`, pid: 0},
		{name: "pid zero", in: `{"pid":0}`, pid: 0},
		{name: "pid negative", in: `{"pid":-7}`, pid: 0},
		{name: "pid fraction", in: `{"pid":1.5}`, pid: 0},
		{name: "pid string", in: `{"pid":"42"}`, pid: 0},
		{name: "pid too large", in: `{"pid":99999999999}`, pid: 0},
		{name: "pid null", in: `{"pid":null}`, pid: 0},
		{name: "unknown fields kept", in: `{"pid":1,"newField":{"a":[1,2]},"other":"x"}`, pid: 1, extra: []string{"newField", "other"}},
		{name: "key case is exact", in: `{"PID":5}`, pid: 0, extra: []string{"PID"}},
		{name: "null tokens", in: `{"tokens":null,"floor":null}`},
		{name: "not json", in: `{"pid":1`, corrupt: true},
		{name: "empty", in: ``, corrupt: true},
		{name: "array", in: `[1,2]`, corrupt: true},
		{name: "null", in: `null`, corrupt: true},
		{name: "string", in: `"x"`, corrupt: true},
		{name: "wrong type cwd", in: `{"cwd":7}`, corrupt: true},
		{name: "wrong type tokens", in: `{"tokens":"many"}`, corrupt: true},
		{name: "wrong type thresholds", in: `{"thresholds":[1]}`, corrupt: true},
		{name: "bad time", in: `{"updatedAt":"yesterday"}`, corrupt: true},
		{name: "negative ticks", in: `{"startTicks":-1}`, corrupt: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Parse([]byte(tc.in))
			if tc.corrupt {
				if !errors.Is(err, ErrCorrupt) {
					t.Errorf("Parse(%s) = %+v, %v; want ErrCorrupt", tc.in, r, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%s): %v", tc.in, err)
			}
			if r.PID != tc.pid {
				t.Errorf("Parse(%s).PID = %d, want %d", tc.in, r.PID, tc.pid)
			}
			var keys []string
			for k := range r.Extra {
				keys = append(keys, k)
			}
			if diff := cmp.Diff(tc.extra, keys, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
				t.Errorf("Parse(%s).Extra keys (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestMarshalKeepsExtraFields(t *testing.T) {
	r, err := Parse([]byte(`{"sessionId":"s","pid":3,"zeta":{"deep":[true,null]},"alpha":"a"}`))
	if err != nil {
		t.Fatal(err)
	}
	r.Cwd = "/w"
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("Marshal wrote invalid JSON %s: %v", b, err)
	}
	if string(m["zeta"]) != `{"deep":[true,null]}` || string(m["alpha"]) != `"a"` || string(m["cwd"]) != `"/w"` {
		t.Errorf("Marshal = %s; want zeta, alpha kept and cwd updated", b)
	}
	// Extra never overrides a known field.
	r.Extra["pid"] = json.RawMessage(`999`)
	b, _ = json.Marshal(r)
	if back, err := Parse(b); err != nil || back.PID != 3 {
		t.Errorf("Extra[pid] leaked into %s", b)
	}
	r.Extra["bad"] = json.RawMessage(`{`)
	if _, err := json.Marshal(r); err == nil {
		t.Errorf("Marshal with an invalid Extra value succeeded")
	}
}

func TestValidSessionID(t *testing.T) {
	for id, want := range map[string]bool{
		"0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b": true,
		"abc_DEF.1":                            true,
		"":                                     false,
		".hidden":                              false,
		"..":                                   false,
		"a/b":                                  false,
		"a b":                                  false,
		"a\x00":                                false,
		string(make([]byte, 201)):              false,
	} {
		if got := ValidSessionID(id); got != want {
			t.Errorf("ValidSessionID(%q) = %v, want %v", id, got, want)
		}
	}
}

// FuzzParse checks that Parse never panics, and that what it accepts
// survives Marshal and Parse unchanged, unknown fields included.
func FuzzParse(f *testing.F) {
	full, _ := json.Marshal(fullRecord())
	for _, s := range []string{
		string(full),
		`{"sessionId":"a","pid":42,"endedAt":"2026-01-02T03:04:05.006+01:00"}`,
		`{"pid":"x","extra":{"nested":[1,2,{"k":null}]},"tokens":null}`,
		`{"thresholds":{"soft":1,"handoff":2,"hard":3},"unknown":1e400}`,
		`{"a":1,"a":2}`,
		`[]`, `null`, `{`, `"\ud800"`,
		`{"PID":5,"Cwd":"x"}`, `{"p\u0069d":7}`, `{"tokens":"many"}`, ` { "a" : [ "]" , {"}":1} ] , "b":-1.5e3 } `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Parse(data)
		exact, exactErr := parseByField(data)
		if (err == nil) != (exactErr == nil) {
			t.Fatalf("Parse(%q) error %v, exact path error %v", data, err, exactErr)
		}
		if err == nil {
			if diff := cmp.Diff(exact, r, cmp.Transformer("compact", compactRaw)); diff != "" {
				t.Fatalf("Parse(%q) differs from the exact path (-exact +fast):\n%s", data, diff)
			}
		}
		if err != nil {
			var ce *CorruptError
			if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Parse error %v is not a *CorruptError", err)
			}
			if ce.Pos.Line < 1 || ce.Pos.Line > bytes.Count(data, []byte{'\n'})+1 || ce.Pos.Column < 1 {
				t.Fatalf("Parse(%q) error %q has no place in the input (%v)", data, err, ce.Pos)
			}
			if msg := err.Error(); len(msg) > 300 || !strings.Contains(msg, fmt.Sprintf("line %d, column %d", ce.Pos.Line, ce.Pos.Column)) {
				t.Fatalf("Parse(%q) error %q is unbounded or lacks its line", data, msg)
			}
			return
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("Marshal(Parse(%q)): %v", data, err)
		}
		again, err := Parse(b)
		if err != nil {
			t.Fatalf("Parse(Marshal(Parse(%q)) = %s): %v", data, b, err)
		}
		if diff := cmp.Diff(r, again, cmp.Transformer("compact", compactRaw)); diff != "" {
			t.Fatalf("round trip of %q changed the record (-first +second):\n%s", data, diff)
		}
	})
}

func compactRaw(raw json.RawMessage) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "invalid:" + string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// TestParseGolden: every record fixture in testdata/records with the
// diagnostic a reader gets, as `pi-session status` shows it.
func TestParseGolden(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "records", "*.json"))
	if len(files) == 0 {
		t.Fatal("no fixtures")
	}
	var b strings.Builder
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(file)
		r, err := Parse(data)
		switch {
		case err != nil:
			fmt.Fprintf(&b, "%-24s %v\n", name, inFile(err, name))
		default:
			fmt.Fprintf(&b, "%-24s ok, %s\n", name, r.PIDText())
		}
	}
	golden.Check(t, filepath.Join("testdata", "records.golden"), b.String())
}

// TestParseReportsTheFirstFieldEveryTime: a record with several wrong
// fields is reported by its first wrong field in file order, every time.
func TestParseReportsTheFirstFieldEveryTime(t *testing.T) {
	data := []byte(`{"updatedAt":"yesterday-ish","cwd":42,"tokens":"many","model":7,"role":[],"floor":{},"handoffCount":"x","phase":1}`)
	for i := 0; i < 100; i++ {
		_, err := Parse(data)
		if got, want := fmt.Sprint(err), `status: corrupt record: line 1, column 14: field "updatedAt": want a time like "2026-01-02T03:04:05Z", got "yesterday-ish"`; got != want {
			t.Fatalf("run %d: Parse = %s, want %s", i, got, want)
		}
	}
}
