package offload

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pi-session/pi-session/jsonpath"
)

const testID = "ce_0123456789abcdef01234567"

func mustArgs(t *testing.T, js string) ReadArgs {
	t.Helper()
	a, err := ParseReadArgs(json.RawMessage(js))
	if err != nil {
		t.Fatalf("ParseReadArgs(%s): %v", js, err)
	}
	return a
}

func TestParseReadArgsErrors(t *testing.T) {
	tests := []struct{ args, arg, want string }{
		{`{}`, "id", "is required"},
		{`{"id":"abc"}`, "id", "ce_ followed by 24 hex digits"},
		{`{"id":42}`, "id", "must be a string, got the number 42"},
		{`{"id":"` + testID + `","offset":-1}`, "offset", "must be an integer of at least 0, got -1"},
		{`{"id":"` + testID + `","offset":1.5}`, "offset", "must be an integer"},
		{`{"id":"` + testID + `","offset":"ten"}`, "offset", `got the string "ten"`},
		{`{"id":"` + testID + `","length":0}`, "length", "an integer of at least 1"},
		{`{"id":"` + testID + `","query":7}`, "query", "a string or an array of strings, got the number 7"},
		{`{"id":"` + testID + `","query":[]}`, "query", "1 to 32 terms"},
		{`{"id":"` + testID + `","query":["a",""]}`, "query", "term 1 is empty"},
		{`{"id":"` + testID + `","query":"a","contextLines":50}`, "contextLines", "from 0 to 20"},
		{`{"id":"` + testID + `","query":"a","maxMatches":0}`, "maxMatches", "from 1 to 500"},
		{`{"id":"` + testID + `","query":"a","regex":"maybe"}`, "regex", "true or false"},
		{`{"id":"` + testID + `","query":"a","offset":5}`, "offset", "does not combine with query"},
		{`{"id":"` + testID + `","query":"a","section":"x"}`, "query", "separate modes"},
		{`{"id":"` + testID + `","cursor":"q1.x"}`, "cursor", "belongs to a query"},
		{`{"id":"` + testID + `","section":" "}`, "section", "is empty"},
		{`{"id":"` + testID + `","colour":1}`, "colour", "unknown argument"},
		{`[1]`, "arguments", "must be a JSON object"},
	}
	for _, tt := range tests {
		_, err := ParseReadArgs(json.RawMessage(tt.args))
		var ae *ArgError
		if !errors.As(err, &ae) || ae.Arg != tt.arg || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrBadArgument) {
			t.Errorf("ParseReadArgs(%s) = %v; want an ArgError on %s containing %q", tt.args, err, tt.arg, tt.want)
		}
	}
	a := mustArgs(t, `{"id":" `+testID+` ","query":["x","y"],"regex":"true","contextLines":"3"}`)
	want := ReadArgs{ID: testID, Query: []string{"x", "y"}, QueryArray: true, Regex: true, ContextLines: 3, MaxMatches: defaultMaxMatches}
	if diff := cmp.Diff(want, a); diff != "" {
		t.Errorf("ParseReadArgs (-want +got):\n%s", diff)
	}
}

func TestReadRange(t *testing.T) {
	data := []byte("héllo wörld\nline two\nline three\n")
	tests := []struct {
		name       string
		args       string
		budget     int
		wantText   string
		wantOffset int64
		wantNext   *int64
	}{
		{"whole", `{"offset":0}`, 1000, string(data), 0, nil},
		{"mid-rune start moves forward", `{"offset":2,"length":4}`, 1000, "llo ", 3, ptr(int64(7))},
		{"mid-rune end moves back", `{"offset":0,"length":2}`, 1000, "h", 0, ptr(int64(1))},
		{"budget cuts at a line end", `{"offset":0}`, 24, "héllo wörld\nline two\n", 0, ptr(int64(23))},
		{"explicit length is exact", `{"offset":0,"length":16}`, 1000, "héllo wörld\nli", 0, ptr(int64(16))},
	}
	for _, tt := range tests {
		a := mustArgs(t, `{"id":"`+testID+`",`+tt.args[1:])
		res, err := readRange(testID, data, a, tt.budget, true)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		m := res.Details.Result
		if res.Text != tt.wantText || m.Offset != tt.wantOffset || !cmp.Equal(m.NextOffset, tt.wantNext) {
			t.Errorf("%s: readRange = %q at %d next %v; want %q at %d next %v", tt.name, res.Text, m.Offset, deref(m.NextOffset), tt.wantText, tt.wantOffset, deref(tt.wantNext))
		}
	}
	_, err := readRange(testID, data, mustArgs(t, `{"id":"`+testID+`","offset":99}`), 100, false)
	var ae *ArgError
	if !errors.As(err, &ae) || ae.Arg != "offset" || !strings.Contains(err.Error(), "valid offsets are 0 to 33") {
		t.Errorf("offset past the end: %v", err)
	}
	res, _ := readRange(testID, data, mustArgs(t, `{"id":"`+testID+`","offset":14,"length":5}`), 100, false)
	if want := "[" + testID + " bytes 14-19 of 34, lines 2-2; nextOffset 19]\nline "; res.Text != want {
		t.Errorf("boundary text = %q, want %q", res.Text, want)
	}
}

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

// logText is n lines; every line i with i%every == 0 says ERROR.
func logText(n, every int) []byte {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if i%every == 0 {
			fmt.Fprintf(&b, "line %d ERROR something broke\n", i)
		} else {
			fmt.Fprintf(&b, "line %d ok\n", i)
		}
	}
	return []byte(b.String())
}

func TestReadQueryMergedWindows(t *testing.T) {
	data := logText(20, 4) // matches on 4, 8, 12, 16, 20
	a := mustArgs(t, `{"id":"`+testID+`","query":"ERROR","contextLines":1}`)
	res, err := readQuery(testID, data, a, 10000, true)
	if err != nil {
		t.Fatal(err)
	}
	want := "3-line 3 ok\n4:line 4 ERROR something broke\n5-line 5 ok\n--\n7-line 7 ok\n8:line 8 ERROR something broke\n9-line 9 ok\n--\n" +
		"11-line 11 ok\n12:line 12 ERROR something broke\n13-line 13 ok\n--\n15-line 15 ok\n16:line 16 ERROR something broke\n17-line 17 ok\n--\n" +
		"19-line 19 ok\n20:line 20 ERROR something broke\n"
	if diff := cmp.Diff(want, res.Text); diff != "" {
		t.Errorf("contextLines 1 (-want +got):\n%s", diff)
	}
	a = mustArgs(t, `{"id":"`+testID+`","query":"ERROR","contextLines":2}`)
	res, _ = readQuery(testID, data, a, 10000, true)
	// Windows of 2 lines around matches 4 apart touch: one block, each line once.
	var wantB strings.Builder
	for i := 2; i <= 20; i++ {
		if i%4 == 0 {
			fmt.Fprintf(&wantB, "%d:line %d ERROR something broke\n", i, i)
		} else {
			fmt.Fprintf(&wantB, "%d-line %d ok\n", i, i)
		}
	}
	if diff := cmp.Diff(wantB.String(), res.Text); diff != "" {
		t.Errorf("contextLines 2 (-want +got):\n%s", diff)
	}
	if m := res.Details.Result; *m.TotalMatches != 5 || m.ReturnedMatches != 5 || m.NextCursor != "" || m.TotalLines != 20 {
		t.Errorf("meta = %+v", m)
	}
}

// pageLine is one rendered line of a query page.
var pageLine = regexp.MustCompile(`^(\d+)([:+-])(.*)$`)

// readAllPages follows cursors and rebuilds what was shown: line number ->
// text (continuations appended), and the matching line numbers in order.
func readAllPages(t *testing.T, data []byte, args string, budget int) (map[int]string, []int, int) {
	t.Helper()
	shown := map[int]string{}
	var matches []int
	cursor := ""
	pages := 0
	for {
		js := args
		if cursor != "" {
			js = strings.TrimSuffix(args, "}") + `,"cursor":"` + cursor + `"}`
		}
		res, err := readQuery(testID, data, mustArgs(t, js), budget, true)
		if err != nil {
			t.Fatalf("page %d: %v", pages, err)
		}
		pages++
		if len(res.Text) > budget {
			t.Fatalf("page %d is %d bytes, over the budget %d", pages, len(res.Text), budget)
		}
		for _, l := range strings.Split(strings.TrimSuffix(res.Text, "\n"), "\n") {
			if l == "--" || l == "" {
				continue
			}
			m := pageLine.FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("page %d: unexpected line %q", pages, l)
			}
			n, _ := strconv.Atoi(m[1])
			switch m[2] {
			case "+":
				if _, ok := shown[n]; !ok {
					t.Fatalf("continuation of line %d that was not started", n)
				}
				shown[n] += m[3]
			default:
				if _, ok := shown[n]; ok {
					t.Fatalf("line %d shown twice", n)
				}
				shown[n] = m[3]
				if m[2] == ":" {
					matches = append(matches, n)
				}
			}
		}
		cursor = res.Details.Result.NextCursor
		if cursor == "" {
			return shown, matches, pages
		}
		if pages > 10000 {
			t.Fatal("too many pages")
		}
	}
}

func TestReadQueryCursorPaging(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 30; trial++ {
		var b strings.Builder
		var lines []string
		n := 50 + r.IntN(200)
		for i := 1; i <= n; i++ {
			l := fmt.Sprintf("row %d", i)
			if r.IntN(5) == 0 {
				l += " needle"
			}
			l += strings.Repeat(" pad", r.IntN(20))
			lines = append(lines, l)
			b.WriteString(l + "\n")
		}
		data := []byte(b.String())
		ctx := r.IntN(4)
		maxM := 1 + r.IntN(6)
		budget := 1500 + r.IntN(1000) // a window always fits: context is complete
		args := fmt.Sprintf(`{"id":%q,"query":"needle","contextLines":%d,"maxMatches":%d}`, testID, ctx, maxM)
		shown, matches, _ := readAllPages(t, data, args, budget)
		var want []int
		for i, l := range lines {
			if strings.Contains(l, "needle") {
				want = append(want, i+1)
			}
		}
		if diff := cmp.Diff(want, matches); diff != "" {
			t.Fatalf("trial %d: matches across pages (-want +got):\n%s", trial, diff)
		}
		for _, m := range want {
			if shown[m] != lines[m-1] {
				t.Errorf("trial %d: line %d shown as %q", trial, m, shown[m])
			}
			for k := max(1, m-ctx); k <= min(n, m+ctx); k++ {
				if _, ok := shown[k]; !ok && k < m {
					t.Errorf("trial %d: context line %d of match %d missing", trial, k, m)
				}
			}
		}
	}
}

func TestReadQueryPagesOversizedLines(t *testing.T) {
	long := strings.Repeat("αβγ needle δ ", 3000) // ~ 45 KB, multibyte
	data := []byte("first\n" + long + "\nmiddle needle\n" + strings.Repeat("x", 5000) + "needle\nlast\n")
	args := fmt.Sprintf(`{"id":%q,"query":"needle","contextLines":1}`, testID)
	shown, matches, pages := readAllPages(t, data, args, 4000)
	if diff := cmp.Diff([]int{2, 3, 4}, matches); diff != "" {
		t.Errorf("matches (-want +got):\n%s", diff)
	}
	if shown[2] != long {
		t.Errorf("the long line came back as %d bytes, want %d", len(shown[2]), len(long))
	}
	if shown[4] != strings.Repeat("x", 5000)+"needle" {
		t.Errorf("line 4 came back as %d bytes", len(shown[4]))
	}
	if pages < 12 {
		t.Errorf("%d pages for 50 KB at 4 KB a page", pages)
	}
	if _, ok := shown[1]; !ok {
		t.Error("the context line before the long line is missing")
	}
}

func TestReadQueryTotalsAndModes(t *testing.T) {
	data := logText(1000, 10)
	tests := []struct {
		args  string
		total int
	}{
		{`"query":"ERROR"`, 100},
		{`"query":"error"`, 0},
		{`"query":"error","ignoreCase":true`, 100},
		{`"query":["line 5 ","line 7 "]`, 2},
		{`"query":"^line \\d+0 ","regex":true`, 100},
		{`"query":"(a+)+$","regex":true`, 0},
		{`"query":"ok$","regex":true`, 900},
		{`"query":"LINE [0-9]+5 OK","regex":true,"ignoreCase":true`, 99},
		{`"query":["broke$","^line 1 "],"regex":true`, 101},
	}
	for _, tt := range tests {
		res, err := readQuery(testID, data, mustArgs(t, `{"id":"`+testID+`",`+tt.args+`}`), 100000, true)
		if err != nil {
			t.Errorf("%s: %v", tt.args, err)
			continue
		}
		if got := *res.Details.Result.TotalMatches; got != tt.total {
			t.Errorf("%s: totalMatches %d, want %d", tt.args, got, tt.total)
		}
	}
}

// A case-folded literal finds a match across the seam of its lowercase window.
func TestFoldAcrossWindowSeam(t *testing.T) {
	data := []byte(strings.Repeat("a", foldWindow-3) + "NeEdLe\n")
	m := newLiteralMatcher([]string{"needle"}, true)
	if _, _, at, ok := m.next(data, 0); !ok || at != foldWindow-3 {
		t.Errorf("next = %d, %v; want the match at %d", at, ok, foldWindow-3)
	}
	if n := countMatches(m, append(data, data...), 0); n != 2 {
		t.Errorf("countMatches = %d, want 2", n)
	}
}

func TestReadQueryNoMatchHints(t *testing.T) {
	data := []byte("Connection refused by host\nretrying connection\nfatal: gave up\n")
	tests := []struct {
		args string
		want string
	}{
		{`"query":"connection Refused"`, "No line of " + testID + " matches \"connection Refused\" (literal, case-sensitive, 3 lines scanned).\n" +
			"- 1 lines match ignoring case: add \"ignoreCase\": true.\n" +
			"- Lines matching each word of the phrase: \"connection\" 1, \"Refused\" 0. The query [\"connection\"] alone finds them."},
		{`"query":"fatal: .* up"`, "No line of " + testID + " matches \"fatal: .* up\" (literal, case-sensitive, 3 lines scanned).\n" +
			"- \"fatal: .* up\" looks like a regex but was matched as literal text: add \"regex\": true.\n" +
			"- Lines matching each word of the phrase: \"fatal\" 1, \"*\" 0, \"up\" 1. The array query [\"fatal\",\"up\"] finds lines with any of them."},
		{`"query":"timeout"`, "No line of " + testID + " matches \"timeout\" (literal, case-sensitive, 3 lines scanned).\n" +
			"- Try a shorter term, or read the outline of the notice and a byte range."},
	}
	for _, tt := range tests {
		res, err := readQuery(testID, data, mustArgs(t, `{"id":"`+testID+`",`+tt.args+`}`), 10000, false)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, res.Text); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.args, diff)
		}
	}
}

func TestRegexErrors(t *testing.T) {
	tests := []struct{ pattern, want string }{
		{`foo(?=bar)`, "lookahead (?=...)"},
		{`(?<!x)y`, "negative lookbehind"},
		{`(a)\1`, `backreference \1`},
		{`a++`, "possessive quantifier"},
		{`(?>a)`, "atomic group"},
		{`(a`, "missing closing )"},
		{`a{2,1}`, "invalid repeat count"},
	}
	for _, tt := range tests {
		_, err := queryMatcher([]string{tt.pattern}, true, false)
		if !errors.Is(err, ErrBadRegex) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("queryMatcher(%q) = %v; want ErrBadRegex naming %q", tt.pattern, err, tt.want)
		}
		if strings.Contains(tt.want, "(") && !strings.Contains(err.Error(), "query array") {
			t.Errorf("queryMatcher(%q): the error does not suggest the query array: %v", tt.pattern, err)
		}
	}
}

func TestCursorErrors(t *testing.T) {
	data := logText(100, 2)
	res, _ := readQuery(testID, data, mustArgs(t, `{"id":"`+testID+`","query":"ERROR","maxMatches":2}`), 10000, true)
	cur := res.Details.Result.NextCursor
	if cur == "" {
		t.Fatal("no cursor")
	}
	for _, args := range []string{
		`{"id":"` + testID + `","query":"ok","cursor":"` + cur + `"}`,
		`{"id":"` + testID + `","query":"ERROR","contextLines":3,"cursor":"` + cur + `"}`,
		`{"id":"` + testID + `","query":"ERROR","cursor":"q1.AAAA"}`,
		`{"id":"` + testID + `","query":"ERROR","cursor":"nonsense"}`,
	} {
		_, err := readQuery(testID, data, mustArgs(t, args), 10000, true)
		var ae *ArgError
		if !errors.As(err, &ae) || ae.Arg != "cursor" {
			t.Errorf("%s: %v, want a cursor error", args, err)
		}
	}
}

// Case-folded multi-term search across many windows agrees with a plain
// lowercase scan of each line.
func TestFoldMultiTermAcrossWindows(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var b strings.Builder
	words := []string{"Alpha", "BETA", "gamma", "DeLtA"}
	for b.Len() < 3*foldWindow {
		fmt.Fprintf(&b, "line %d", r.IntN(1000))
		for k := r.IntN(3); k > 0; k-- {
			if r.IntN(20) == 0 {
				fmt.Fprintf(&b, " %s", words[r.IntN(len(words))])
			} else {
				b.WriteString(" filler")
			}
		}
		b.WriteByte('\n')
	}
	data := []byte(b.String())
	terms := []string{"alpha", "delta"}
	want := 0
	for _, l := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		l = strings.ToLower(l)
		if strings.Contains(l, "alpha") || strings.Contains(l, "delta") {
			want++
		}
	}
	if got := countMatches(newLiteralMatcher(terms, true), data, 0); got != want {
		t.Errorf("countMatches = %d, want %d", got, want)
	}
}

func TestLowerASCIIAndFoldCounts(t *testing.T) {
	var all []byte
	for c := 0; c < 256; c++ {
		all = append(all, byte(c))
	}
	all = append(all, "Hello WORLD ÄÖ @[`{ zZaA"...)
	for off := 0; off < 9; off++ {
		src := all[off:]
		got := make([]byte, len(src))
		lowerASCII(got, src)
		for i, c := range src {
			want := c
			if 'A' <= c && c <= 'Z' {
				want = c + 32
			}
			if got[i] != want {
				t.Fatalf("lowerASCII(%#x) = %#x, want %#x", c, got[i], want)
			}
		}
	}
	data := []byte(strings.Repeat("an Error here, another ERROR\nfine\nFAILED and warned\n", 50000)) // > foldWindow
	got := foldLineCounts(data, []string{"error", "warn", "fail", "absent"})
	if diff := cmp.Diff([]int{50000, 50000, 50000, 0}, got); diff != "" {
		t.Errorf("foldLineCounts (-want +got):\n%s", diff)
	}
}

func TestReadJSONPathPagingAndStrings(t *testing.T) {
	long := strings.Repeat("é line of text\n", 2000)
	doc, _ := json.Marshal(map[string]any{"textBlocks": []any{map[string]any{"index": 0, "text": long}, map[string]any{"index": 2, "text": "second"}}})
	var got strings.Builder
	off := int64(0)
	for pages := 0; ; pages++ {
		a := mustArgs(t, `{"id":"`+testID+`","jsonPath":"$.textBlocks[0].text","offset":`+strconv.FormatInt(off, 10)+`}`)
		res, err := readJSONPath(testID, doc, a, 3000, true)
		if err != nil {
			t.Fatal(err)
		}
		got.WriteString(res.Text)
		m := res.Details.Result
		if m.ValueType != "string" || m.ValueBytes != int64(len(long)) {
			t.Fatalf("meta %+v", m)
		}
		if m.NextOffset == nil {
			break
		}
		off = *m.NextOffset
		if pages > 100 {
			t.Fatal("no end")
		}
	}
	if got.String() != long {
		t.Errorf("paged string differs: %d bytes, want %d", got.Len(), len(long))
	}
	res, err := readJSONPath(testID, doc, mustArgs(t, `{"id":"`+testID+`","jsonPath":"$.textBlocks[*].index"}`), 3000, false)
	if err != nil {
		t.Fatal(err)
	}
	want := "[" + testID + " jsonPath $.textBlocks[*].index: 2 values, shown as a JSON list of 8 bytes]\n[\n0,\n2\n]"
	if res.Text != want {
		t.Errorf("list = %q, want %q", res.Text, want)
	}
	_, err = readJSONPath(testID, []byte("not json"), mustArgs(t, `{"id":"`+testID+`","jsonPath":"$.a"}`), 3000, false)
	var ae *ArgError
	if !errors.As(err, &ae) || ae.Arg != "jsonPath" || !strings.Contains(err.Error(), "not JSON") {
		t.Errorf("jsonPath on text: %v", err)
	}
}

// TestReadJSONPathErrors pins the words of JSONPath errors as the model
// reads them.
func TestReadJSONPathErrors(t *testing.T) {
	for _, tt := range []struct {
		path, data string
		is         error
		want       string
	}{
		{"$[", `{}`, ErrBadJSONPath, `offload: jsonPath: invalid: unexpected end; close the bracket with ] at character 3 of "$["`},
		{"store.book", `{}`, ErrBadJSONPath, `offload: jsonPath: invalid: a JSONPath starts at the root $, as in "$.store.book"`},
		{"$..*", `[1,2`, ErrBadArgument, `offload: jsonPath: the payload is not JSON (expected ',' or ']' at byte 4); use query or a byte range (offset, length)`},
	} {
		a := mustArgs(t, `{"id":"`+testID+`","jsonPath":`+strconv.Quote(tt.path)+`}`)
		_, err := readJSONPath(testID, []byte(tt.data), a, 3000, false)
		if !errors.Is(err, tt.is) || err.Error() != tt.want {
			t.Errorf("readJSONPath(%q, %q) = %v, want %q (%v)", tt.path, tt.data, err, tt.want, tt.is)
		}
	}
	tooMany := &jsonpath.Error{Err: jsonpath.ErrTooManyNodes, Msg: "the query selects more than 5,000,000 nodes; narrow it"}
	if got, want := jsonPathError(tooMany).Error(), "offload: jsonPath: the query selects more than 5,000,000 nodes; narrow it"; got != want {
		t.Errorf("jsonPathError(too many) = %q, want %q", got, want)
	}
}
