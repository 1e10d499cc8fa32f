package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-session/pi-session/pitest"
)

// damagedSession is a session pi 1.6 opens (its header is valid) with
// seven problems in it: a line pi skips, fields pi keeps but cannot use as
// meant, a compaction keeping an entry that is not there.
const damagedSession = `{"type":"session","version":3,"id":"01a22bc0-1a36-74a5-80f2-9894ba8d6c2a","timestamp":"2026-11-30T09:18:59.639Z","cwd":"WORK"}
{"type":"model_change","id":"m1","parentId":null,"timestamp":"2026-11-30T09:19:00.000Z","provider":"faux","modelId":"faux-1"}
{"type":"message","id":"u1","parentId":"m1","timestamp":"yesterday-ish","message":{"role":"user","content":"hello","timestamp":1}}
not json at all
{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-11-30T09:19:01.000Z","message":{"role":"assistant","content":[{"type":"text","text":"hi"}],"api":"faux","provider":"faux","model":"faux-1","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":2}}
{"type":"custom","id":"c1","parentId":"a1","timestamp":"later","customType":"x","data":{}}
{"type":"custom","id":"c2","parentId":"c1","timestamp":"much later","customType":"x","data":{}}
{"type":"custom","id":"c3","parentId":"c2","timestamp":"even later","customType":"x","data":{}}
{"type":"custom","id":"c4","parentId":"c3","timestamp":"never","customType":"x","data":{}}
{"type":"compaction","id":"k1","parentId":"c4","timestamp":"2026-11-30T09:19:02.000Z","summary":"S","firstKeptEntryId":"gone0001","tokensBefore":9}
`

// TestDescribeProblems: /pi-session shows the first problems of the
// session file with their line and field, and where to see the rest; when
// the engine cannot read the file, it says why.
func TestDescribeProblems(t *testing.T) {
	e := pitest.NewEnv(t)
	session := filepath.Join(e.Work, "damaged.jsonl")
	if err := os.WriteFile(session, []byte(strings.ReplaceAll(damagedSession, "WORK", e.Work)), 0o600); err != nil {
		t.Fatal(err)
	}
	rpc := pitest.StartRPC(t, e.Command(pitest.Binary(t), append(e.PiArgs(), "--session", session, "--mode", "rpc")...))
	mark := rpc.Prompt("/pi-session")
	report, _ := rpc.WaitFrom(mark, "the /pi-session report", func(r pitest.Record) bool {
		return r.IsNotify() && strings.Contains(r.Str("message"), "pi-session: connected")
	})
	text := report.Str("message")
	for _, want := range []string{
		"problems  7 in the file",
		"damaged.jsonl:3: \"timestamp\" is \"yesterday-ish\", not an ISO 8601 time",
		"[timestamp]",
		"damaged.jsonl:4:2: invalid JSON: invalid character 'o' in literal null: malformed line",
		"damaged.jsonl:6: \"timestamp\" is \"later\"",
		"2 more: pi-session engine session " + session,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/pi-session lacks %q:\n%s", want, text)
		}
	}

	// The file turns into one pi refuses (a byte order mark before the
	// header): the engine reads it anew and says why it cannot.
	data, _ := os.ReadFile(session)
	tmp := session + ".new"
	os.WriteFile(tmp, append([]byte("\xef\xbb\xbf"), data...), 0o600)
	if err := os.Rename(tmp, session); err != nil {
		t.Fatal(err)
	}
	mark = rpc.Prompt("/pi-session")
	report, _ = rpc.WaitFrom(mark, "the second /pi-session report", func(r pitest.Record) bool {
		return r.IsNotify() && strings.Contains(r.Str("message"), "pi-session: connected")
	})
	if text := report.Str("message"); !strings.Contains(text, "session.describe failed: session: "+session+":1: the file starts with a UTF-8 byte order mark") {
		t.Errorf("/pi-session does not say why describe failed:\n%s", text)
	}
	rpc.Close()
}
