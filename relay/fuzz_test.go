package relay

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pi-session/pi-session/clip"
	"github.com/pi-session/pi-session/jsonpos/jsonpostest"
)

// FuzzParseQuery: any query parses into at most maxQueryTerms distinct,
// non-empty, lowercased terms without control characters, each of a word
// of the query whose terms it lists; a query with a word that is no stop
// word searches for no stop word; and searching an index (a search, its
// rerank and snippets) or a payload with it never fails.
func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{"export functi", "ember-cache", "emberCache miss", "note.go relay", "HTTPServer utf8Len", "1796030340880", "ÜBER straße", "", "   ",
		"a_b-c.d/e", "\x00\xff\xfe", strings.Repeat("x", 3000), "how many branches network", "重複打刻 エラー 件数", "ＡＢＣ１２３ ｼｽﾃﾑ", "결제 실패 몇 건", "сколько запросов",
		"what is the", "ember\x1b[31mcache\x1b[0m", "4d6d038", "rotor_417", "日本語のテスト"} {
		f.Add(s)
	}
	ix := NewIndex()
	ix.add(0, -1, []byte(`"ember cache export function note go relay 42 straße 日本語のテスト"`))
	ix.add(1, -1, []byte(`[{"type":"text","text":"HTTPServer utf8Len emberCache rotor_417 ＡＢＣ１２３ 결제 실패"}]`))
	sc := &scope{ok: func(doc) bool { return true }}
	f.Fuzz(func(t *testing.T, q string) {
		pq := ParseQuery(q)
		if len(pq.Terms) > maxQueryTerms {
			t.Fatalf("ParseQuery(%q): %d terms", q, len(pq.Terms))
		}
		seen := map[string]bool{}
		for i, term := range pq.Terms {
			if term.Text == "" || seen[term.Text] {
				t.Fatalf("ParseQuery(%q): empty or repeated term %q", q, term.Text)
			}
			seen[term.Text] = true
			if utf8.ValidString(term.Text) && strings.ToLower(term.Text) != term.Text && !strings.ContainsRune(term.Text, utf8.RuneError) {
				// Some runes lowercase to a form that lowercases again (rare);
				// the term must at least be what lowerInto makes of it.
				if string(lowerInto(nil, []byte(term.Text))) != term.Text {
					t.Fatalf("ParseQuery(%q): term %q is not lowercased", q, term.Text)
				}
			}
			for _, r := range term.Text {
				if r < 0x20 || r == 0x7f {
					t.Fatalf("ParseQuery(%q): term %q holds a control character", q, term.Text)
				}
			}
			if term.Word < 0 || term.Word >= len(pq.Words) || !slices.Contains(pq.Words[term.Word].Terms, i) {
				t.Fatalf("ParseQuery(%q): term %d (%q) is not listed by its word %d", q, i, term.Text, term.Word)
			}
			if pq.Words[term.Word].Stop {
				t.Fatalf("ParseQuery(%q): stop word %q is searched for", q, pq.Words[term.Word].Text)
			}
		}
		hits, weights, exps := ix.search(pq, sc)
		if len(weights) != len(pq.Terms) || len(exps) != len(pq.Terms) {
			t.Fatalf("ParseQuery(%q): %d weights, %d expansions for %d terms", q, len(weights), len(exps), len(pq.Terms))
		}
		m := newMatcher(ix, pq, weights, exps)
		for _, h := range hits {
			for _, raw := range [][]byte{[]byte("ember cache 日本語のテスト rotor_417\nline two ＡＢＣ１２３"), nil, []byte("\n\n")} {
				if p, ok := m.best(raw); ok && (p.at < 0 || p.end > len(raw) || p.at > p.end) {
					t.Fatalf("ParseQuery(%q): place %+v outside a text of %d bytes", q, p, len(raw))
				}
			}
			_ = h
		}
		_ = ScanPayload([]byte("ember cache line\nHTTPServer 42\n"), pq.Terms, 3)
	})
}

// FuzzParseConfig: any file gives a configuration within the ranges, and
// never fails.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{`{}`, `{"enabled":false,"limits":{"total":600}}`, `{"auto":{"inputMinTokens":"x"}}`, `[]`, `null`, `{"limits":7}`, `{"tailMaxChars":1e400}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, _ := ParseConfig("", []byte(s))
		if c.Limits.Total < 500 || c.Limits.UserMessageEach < 40 || c.TailMaxChars < 0 || c.GitTimeoutMs < 0 || c.GitTimeoutMs > 600000 {
			t.Fatalf("ParseConfig(%q) = %+v: out of range", s, c)
		}
	})
}

// FuzzRecallArgs: any arguments give a limit of 1-30 and an offset >= 0.
func FuzzRecallArgs(f *testing.F) {
	for _, s := range []string{`{"query":"a","limit":5}`, `{"limit":-1e308,"offset":1e308}`, `{"entryId":null}`, `x`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a := ParseRecallArgs(json.RawMessage(s))
		if a.Limit < 1 || a.Limit > MaxLimit || a.Offset < 0 {
			t.Fatalf("ParseRecallArgs(%q) = %+v", s, a)
		}
	})
}

// FuzzIndex: any JSON text indexed in a few documents is found as the
// brute-force oracle finds it, for any query, and nothing panics.
func FuzzIndex(f *testing.F) {
	f.Add([]byte(`"ember cache export function"`), []byte(`[{"type":"text","text":"HTTPServer utf8Len emberCache"}]`), "ember")
	f.Add([]byte(`{"command":"grep x","output":"l\u00e9t\ud83d\ude00 1234567 deadbeef1234abcd"}`), []byte(`"Über straße"`), "deadbeef1234abcd über")
	f.Add([]byte(`[{"type":"image","data":"AAAA"}]`), []byte(`"`+strings.Repeat("long", 20)+`"`), "image long")
	f.Fuzz(func(t *testing.T, a, b []byte, q string) {
		raws := [][]byte{a, b, a}
		ix := NewIndex()
		for i, raw := range raws {
			ix.add(int32(i), -1, raw)
		}
		want := newOracle(raws).search(ParseQuery(q))
		hits, _, _ := ix.search(ParseQuery(q), &scope{ok: func(doc) bool { return true }})
		if len(hits) != len(want) {
			t.Fatalf("query %q: %d hits, the oracle %d", q, len(hits), len(want))
		}
		for _, h := range hits {
			if s, ok := want[int(ix.docs[h.id].entry)]; !ok || math.Abs(s-h.score) > 1e-6*math.Max(1, s) {
				t.Fatalf("query %q: doc %d scores %v, the oracle %v (%v)", q, ix.docs[h.id].entry, h.score, s, ok)
			}
		}
	})
}

var (
	unknownRE  = regexp.MustCompile(`^c\.json:\d+:\d+: (?:field "(?:[^"\\]|\\.)*"|key ""): unknown key, ignored \((?:did you mean|the keys here are) `)
	repeatedRE = regexp.MustCompile(`^c\.json:\d+:\d+: (?:field "(?:[^"\\]|\\.)*"|key ""): given twice \(first at line \d+, column \d+\): the last one is used$`)
)

// FuzzConfigKeys: every unknown key of context-relay.json, at any depth
// the file's keys are known, and every key given twice in one object, at
// any depth, is reported with its line and its dotted name, and nothing
// else is called unknown. The keys come from jsonpostest's own scanner.
func FuzzConfigKeys(f *testing.F) {
	for _, s := range []string{
		"{\"enabeld\": false}", "{\"limits\": {\"totl\": 1, \"total\": 600, \"total\": 700}}", "{\"auto\": {\"onInput\": false, \"x\": {\"y\": 1, \"y\": 2}}}",
		"\xef\xbb\xbf{\"enabled\": false, \"enabled\": true}", "{\"a\": [{\"b\": 1, \"b\": 2}], \"limits\": 7}", "{\"enabled\": {\"enabled\": 1}}",
		"{\n\"limits\": {\n\"chain\": 1,\n\"\\u00e9\": 2}}",
	} {
		f.Add(s)
	}
	known := map[string][]string{ // by the keys above, each after a NUL
		"":           {"enabled", "tailMaxChars", "gitTimeoutMs", "limits", "auto"},
		"\x00limits": {"total", "userMessages", "userMessageEach", "chain", "answer", "subagents", "files", "commands", "task", "git", "extra"},
		"\x00auto":   {"onInput", "inputMinTokens", "beforeExpiry", "expiryMinTokens", "minGrowthTokens"},
	}
	f.Fuzz(func(t *testing.T, s string) {
		keys, ok := jsonpostest.Keys([]byte(s))
		if !ok {
			return
		}
		_, warn := ParseConfig("c.json", []byte(s))
		unknown, repeated := jsonpostest.Expected(keys, func(k jsonpostest.Key) (bool, bool) {
			names, checked := known[jsonpostest.Above(k)]
			return checked, slices.Contains(names, k.Key)
		})
		at := func(what string) func(jsonpostest.Key) []string {
			return func(k jsonpostest.Key) []string {
				if k.Path() == "" {
					return []string{fmt.Sprintf("c.json:%d:", k.Line), `key "": ` + what}
				}
				return []string{fmt.Sprintf("c.json:%d:", k.Line), fmt.Sprintf("field %q: %s", clip.Echo(k.Path()), what)}
			}
		}
		if miss := jsonpostest.Missing(warn, unknown, at("unknown key, ignored")); miss != nil {
			t.Fatalf("ParseConfig(%q): unknown keys not reported: %+v\nwarnings: %q", s, miss, warn)
		}
		if miss := jsonpostest.Missing(warn, repeated, at("given twice")); miss != nil {
			t.Fatalf("ParseConfig(%q): repeated keys not reported: %+v\nwarnings: %q", s, miss, warn)
		}
		if n := jsonpostest.Count(warn, unknownRE); n != len(unknown) {
			t.Fatalf("ParseConfig(%q): %d unknown-key warnings, want %d: %q", s, n, len(unknown), warn)
		}
		if n := jsonpostest.Count(warn, repeatedRE); n != len(repeated) {
			t.Fatalf("ParseConfig(%q): %d repeated-key warnings, want %d: %q", s, n, len(repeated), warn)
		}
	})
}
