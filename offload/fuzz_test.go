package offload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pi-session/pi-session/clip"
	"github.com/pi-session/pi-session/jsonpos/jsonpostest"
)

// FuzzReadQuery runs line queries with every option over arbitrary text and
// follows the cursors: pages end, no line shows twice, and the matching
// lines are exactly those a plain line-by-line check finds.
func FuzzReadQuery(f *testing.F) {
	f.Add("alpha\nbeta ERROR\n\ngamma error\r\nERROR", "ERROR", false, false, uint8(1), uint8(2), uint16(300))
	f.Add(strings.Repeat("x", 3000)+"needle\nneedle", "needle", false, true, uint8(0), uint8(1), uint16(256))
	f.Add("a1\nb22\nc333\n", `\d{2,}`, true, false, uint8(2), uint8(1), uint16(400))
	f.Add("ÄÖÜ äöü\nk K \u212a", "k", false, true, uint8(0), uint8(5), uint16(500))
	f.Fuzz(func(t *testing.T, text, query string, regex, fold bool, ctx, maxM uint8, budget uint16) {
		if len(text) > 1<<14 {
			return
		}
		// A hang inside one read would stall the fuzzer silently: crash
		// instead, so the input is reported.
		watchdog := time.AfterFunc(10*time.Second, func() { panic(fmt.Sprintf("readQuery hangs on %q, query %q", cutText(text, 200), query)) })
		defer watchdog.Stop()
		args, _ := json.Marshal(map[string]any{"id": testID, "query": query, "regex": regex, "ignoreCase": fold,
			"contextLines": int(ctx) % 5, "maxMatches": 1 + int(maxM)%8})
		a, err := ParseReadArgs(args)
		if err != nil {
			return
		}
		query = a.Query[0] // as JSON delivered it: invalid UTF-8 became U+FFFD
		var want []int
		var re *regexp.Regexp
		if regex {
			src := query
			if fold {
				src = "(?i)" + src
			}
			if re, err = regexp.Compile(src); err != nil {
				return
			}
		} else if fold && !isASCII(query) {
			re = regexp.MustCompile("(?i)" + regexp.QuoteMeta(query))
		}
		lines := strings.Split(text, "\n")
		if strings.HasSuffix(text, "\n") || text == "" {
			lines = lines[:len(lines)-1] // an empty payload has no lines
		}
		for i, l := range lines {
			var hit bool
			switch {
			case re != nil:
				hit = re.MatchString(strings.TrimSuffix(l, "\r"))
			case fold:
				hit = strings.Contains(string(asciiLower([]byte(l))), string(asciiLower([]byte(query))))
			default:
				hit = strings.Contains(l, query)
			}
			if hit {
				want = append(want, i+1)
			}
		}
		data := []byte(text)
		b := 256 + int(budget)%2000
		cursor := ""
		var got []int
		seen := map[int]bool{}
		for pages := 0; ; pages++ {
			if pages > len(data)+10 {
				t.Fatalf("pages never end")
			}
			a.Cursor = cursor
			res, err := readQuery(testID, data, a, b, true)
			if err != nil {
				if checkRE2(query) != nil {
					return
				}
				t.Fatalf("readQuery: %v", err)
			}
			if *res.Details.Result.TotalMatches != len(want) {
				t.Fatalf("totalMatches %d, want %d", *res.Details.Result.TotalMatches, len(want))
			}
			if len(want) == 0 {
				return
			}
			for _, l := range strings.Split(strings.TrimSuffix(res.Text, "\n"), "\n") {
				m := pageLine.FindStringSubmatch(l)
				if m == nil {
					continue
				}
				var n int
				fmt.Sscan(m[1], &n)
				if m[2] == "+" {
					continue
				}
				if seen[n] {
					t.Fatalf("line %d shown twice", n)
				}
				seen[n] = true
				if m[2] == ":" {
					got = append(got, n)
				}
			}
			if cursor = res.Details.Result.NextCursor; cursor == "" {
				break
			}
		}
		if !bytes.Equal([]byte(fmt.Sprint(got)), []byte(fmt.Sprint(want))) {
			t.Fatalf("matching lines %v, want %v", got, want)
		}
	})
}

// FuzzParseConfig reads arbitrary configuration files: no panic, at most
// maxConfigWarnings+1 warnings of bounded length, each starting with the
// file's name and a line number, and every option within its range.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{`{}`, `{"enabled": null}`, `{"enabled":false,"readOffloadThreshold":20000}`, "{\n\"a\": tru\n}",
		`[1]`, `{"storeMaxBytes": 1e400}`, `{"x":1,"x":2}`, "\ufeff{}", `{"offloadPreviewBytes": -0}`, `{"a":{"b":[1,{"c":null}]}} x`} {
		f.Add([]byte(s))
	}
	const name = "ws/.pi/context-engineer.json"
	pos := regexp.MustCompile(`^` + regexp.QuoteMeta(name) + `:[1-9][0-9]*(:[1-9][0-9]*)?: `)
	f.Fuzz(func(t *testing.T, data []byte) {
		c, warnings := ParseConfig(name, data)
		if len(warnings) > maxConfigWarnings+1 {
			t.Fatalf("%d warnings, want at most %d", len(warnings), maxConfigWarnings+1)
		}
		for _, w := range warnings {
			if !pos.MatchString(w) {
				t.Fatalf("warning %q does not start with %s:<line>:", w, name)
			}
			if len(w) > 2048 {
				t.Fatalf("warning of %d bytes: %.300q", len(w), w)
			}
		}
		got, _ := json.Marshal(c)
		var m map[string]any
		json.Unmarshal(got, &m)
		for _, o := range ConfigOptions {
			if o.Kind != "int" {
				continue
			}
			if v := int64(m[o.Name].(float64)); v < o.Min || v > o.Max {
				t.Fatalf("%s = %d, outside %d-%d", o.Name, v, o.Min, o.Max)
			}
		}
	})
}

// FuzzConfigKeys: every unknown setting (and legacy one), and every key
// set twice in one object at any depth, is reported at its line, and no
// other key is called unknown; the keys come from jsonpostest's scanner.
// Inputs with more warnings than are listed are left out.
func FuzzConfigKeys(f *testing.F) {
	for _, s := range []string{`{"enabeld": false}`, `{"enabled": true, "enabled": false, "storeDir": 1}`, "\ufeff{\"x\": {\"y\": 1, \"y\": 2}}",
		`{"": 1, "": 2}`, "{\n\"notifyOnStart\": [{\"a\": 1}, {\"a\": 2, \"a\": 3}]}"} {
		f.Add([]byte(s))
	}
	const name = "ws/.pi/context-engineer.json"
	unknownRE := regexp.MustCompile(`^` + regexp.QuoteMeta(name) + `:\d+: .*: unknown setting, ignored(?: \((?:did you mean "[^"]*"\?|the settings are [^()]*)\))?$`)
	repeatedRE := regexp.MustCompile(`^` + regexp.QuoteMeta(name) + `:\d+: .*: set again \(first on line \d+\); the last value counts$`)
	f.Fuzz(func(t *testing.T, data []byte) {
		keys, ok := jsonpostest.Keys(data)
		if !ok {
			return
		}
		_, warnings := ParseConfig(name, data)
		if len(warnings) > maxConfigWarnings {
			return
		}
		unknown, repeated := jsonpostest.Expected(keys, func(k jsonpostest.Key) (bool, bool) {
			return len(k.Parent) == 0, configOption(k.Key) != nil || legacyOptions[k.Key]
		})
		var legacy []jsonpostest.Key
		for _, k := range keys {
			if len(k.Parent) == 0 && legacyOptions[k.Key] {
				legacy = append(legacy, k)
			}
		}
		at := func(what string) func(jsonpostest.Key) []string {
			return func(k jsonpostest.Key) []string {
				return []string{fmt.Sprintf("%s:%d: %s: %s", name, k.Line, clip.Echo(k.Path()), what)}
			}
		}
		for _, c := range []struct {
			keys []jsonpostest.Key
			what string
		}{{unknown, "unknown setting, ignored"}, {repeated, "set again"}, {legacy, "a setting of earlier versions, ignored"}} {
			if miss := jsonpostest.Missing(warnings, c.keys, at(c.what)); miss != nil {
				t.Fatalf("ParseConfig(%q): not reported as %q: %+v\nwarnings: %q", data, c.what, miss, warnings)
			}
		}
		if n := jsonpostest.Count(warnings, unknownRE); n != len(unknown) {
			t.Fatalf("ParseConfig(%q): %d unknown-setting warnings, want %d: %q", data, n, len(unknown), warnings)
		}
		if n := jsonpostest.Count(warnings, repeatedRE); n != len(repeated) {
			t.Fatalf("ParseConfig(%q): %d set-again warnings, want %d: %q", data, n, len(repeated), warnings)
		}
	})
}

// FuzzBlocksPreview: the preview of text blocks built from the blocks in
// memory is the one built from their stored envelope.
func FuzzBlocksPreview(f *testing.F) {
	f.Add("first block\nwith lines\n", "second \xff\xfe block\t\"quoted\"\n", 300)
	f.Add("", "x", 2048)
	f.Add(strings.Repeat("héllo wörld\n", 500), strings.Repeat("\x00\x1f", 300), 512)
	f.Fuzz(func(t *testing.T, a, b string, budget int) {
		budget = 256 + abs(budget)%4096
		req := ToolResultRequest{Content: []ContentBlock{{Type: "text", Text: a}, {Type: "image"}, {Type: "text", Raw: []byte(b)}}}
		var env bytes.Buffer
		if err := writeEnvelope(&env, req, []int{0, 2}); err != nil {
			t.Fatal(err)
		}
		want, ok := blocksPreview(env.Bytes(), budget)
		if !ok {
			t.Fatalf("no blocks in %q", env.Bytes())
		}
		if got := blocksPreviewOf(req, []int{0, 2}, budget); got != want {
			t.Fatalf("from memory:\n%+v\nfrom the envelope:\n%+v", got, want)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
