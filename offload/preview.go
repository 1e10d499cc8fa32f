package offload

import (
	"bytes"
	"fmt"
	"iter"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pi-session/pi-session/jsonscan"

	"github.com/pi-session/pi-session/jsonpos"
)

// preview is the index-like part of an offload notice.
type preview struct {
	shape    string // "json", "textBlocks", "sections", "outline", "lines"
	text     string // ends with a newline
	stopAt   int64  // where the suggested range read starts
	specific string // one payload-specific read: ctx_read arguments without id, e.g. "jsonPath":"$.items[0]"
	extra    string // for text blocks: a second read, of the next block
}

// buildPreview describes data within about budget bytes. textBlocks says
// data is a {"textBlocks":[...]} envelope.
func buildPreview(data []byte, textBlocks bool, budget int) preview {
	if textBlocks {
		if pv, ok := blocksPreview(data, budget); ok {
			return pv
		}
	}
	if i := jsonscan.SkipSpace(data, 0); i < len(data) && (data[i] == '{' || data[i] == '[') {
		if pv, ok := jsonPreview(data, budget); ok {
			return pv
		}
	}
	o := buildOutline(data)
	switch {
	case (o.Kind == "sections" || o.Kind == "markdown") && len(o.Parts) <= 12:
		return sectionsPreview(data, o, budget)
	case o.Kind != "":
		return outlinePreview(data, o, budget)
	}
	return linesPreview(data, budget)
}

// cutAt returns data[:n] ending on a line end when one is in the second
// half, else on a rune boundary.
func cutHead(data []byte, n int) int {
	if n >= len(data) {
		return len(data)
	}
	if i := bytes.LastIndexByte(data[:n], '\n'); i >= n/2 {
		return i + 1
	}
	return runeCut(data, n, 0)
}

// cutTail returns the start of a suffix of at most n bytes, starting on a
// line start when one is in its first half.
func cutTail(data []byte, n int) int {
	if n >= len(data) {
		return 0
	}
	s := len(data) - n
	if i := bytes.IndexByte(data[s:], '\n'); i >= 0 && i < n/2 {
		return s + i + 1
	}
	for i := 0; i < 3 && s < len(data) && !utf8.RuneStart(data[s]); i++ {
		s++
	}
	return s
}

var errorWords = []string{"error", "Error", "ERROR", "FAIL", "fail", "panic", "Exception", "warning", "WARN"}

// probeQuery proposes a query for a log: the first error-like word found
// near the start or the end.
func probeQuery(data []byte) string {
	const win = 1 << 20
	head := data[:min(len(data), win)]
	tail := data[max(0, len(data)-win):]
	for _, w := range errorWords {
		if bytes.Contains(head, []byte(w)) || bytes.Contains(tail, []byte(w)) {
			return fmt.Sprintf(`"query":%q,"ignoreCase":true`, strings.ToLower(w))
		}
	}
	return ""
}

func linesPreview(data []byte, budget int) preview {
	headN := budget * 13 / 20
	tailN := budget - headN
	he := cutHead(data, headN)
	ts := cutTail(data, tailN)
	if ts < he {
		ts = he
	}
	var b strings.Builder
	hl := int64(bytes.Count(data[:he], nl))
	if he > 0 && data[he-1] != '\n' {
		hl++
	}
	fmt.Fprintf(&b, "First %s (bytes 0-%d):\n", nLines(hl), he)
	b.Write(data[:he])
	if he > 0 && data[he-1] != '\n' {
		b.WriteString(" ...\n")
	}
	if ts > he {
		skipped := int64(bytes.Count(data[he:ts], nl))
		tl := totalLines(data[ts:])
		if skipped > 0 {
			fmt.Fprintf(&b, "[... bytes %d-%d, about %s, not shown ...]\n", he, ts, nLines(skipped))
		} else {
			fmt.Fprintf(&b, "[... bytes %d-%d not shown ...]\n", he, ts)
		}
		fmt.Fprintf(&b, "Last %s (bytes %d-%d):\n", nLines(tl), ts, len(data))
		b.Write(data[ts:])
		if data[len(data)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	return preview{shape: "lines", text: b.String(), stopAt: int64(he), specific: probeQuery(data)}
}

func sectionsPreview(data []byte, o Outline, budget int) preview {
	var b strings.Builder
	what := "sections"
	if o.Kind == "markdown" {
		what = "headings"
	}
	fmt.Fprintf(&b, "%d %s, each with its first lines:\n", len(o.Parts), what)
	if first := o.Parts[0].Start; first > 0 {
		fmt.Fprintf(&b, "(bytes 0-%d before the first)\n", first)
	}
	per := max((budget-b.Len())/len(o.Parts)-60, 80)
	var stopAt int64 = -1
	largest := o.largest()
	for i, p := range o.Parts {
		own := o.ownEnd(i)
		heading := data[p.Start:lineEnd(data, int(p.Start))]
		fmt.Fprintf(&b, "%s  [bytes %d-%d, %s]\n", cutText(string(trimCR(heading)), 120), p.Start, p.End, nLines(totalLines(data[p.Body:p.End])))
		pos, shown, used := int(p.Body), 0, 0
		for pos < int(own) && shown < 3 {
			le := min(lineEnd(data, pos), int(own))
			line := trimCR(data[pos:le])
			if len(bytes.TrimSpace(line)) > 0 {
				l := "  " + cutText(string(line), 160) + "\n"
				if used+len(l) > per {
					break
				}
				b.WriteString(l)
				used += len(l)
				shown++
				if i == 0 {
					stopAt = int64(min(le+1, len(data)))
				}
			}
			pos = le + 1
		}
	}
	if stopAt < 0 {
		stopAt = 0
	}
	return preview{shape: "sections", text: b.String(), stopAt: stopAt, specific: fmt.Sprintf(`"section":%s`, jsonscan.Quote(largest.Name))}
}

// ownEnd is where part i's own text ends: at the next heading, whatever
// its level, or at the part's end.
func (o Outline) ownEnd(i int) int64 {
	if i+1 < len(o.Parts) {
		return min(o.Parts[i].End, o.Parts[i+1].Start)
	}
	return o.Parts[i].End
}

// largest is the part with the most text of its own (the first of equals).
func (o Outline) largest() Part {
	best, size := o.Parts[0], int64(-1)
	for i, p := range o.Parts {
		if own := o.ownEnd(i) - p.Start; own > size {
			best, size = p, own
		}
	}
	return best
}

func outlinePreview(data []byte, o Outline, budget int) preview {
	var b strings.Builder
	largest := o.largest()
	total := 0
	for _, p := range o.Parts {
		total += p.Lines
	}
	more := ""
	if o.Truncated {
		more = "+"
	}
	switch o.Kind {
	case "grep":
		fmt.Fprintf(&b, "grep output: %d%s matching lines in %d%s files, by file with byte ranges:\n", total, more, len(o.Parts), more)
	case "diff":
		fmt.Fprintf(&b, "diff of %d%s files, with byte ranges:\n", len(o.Parts), more)
	case "markdown":
		fmt.Fprintf(&b, "%d%s headings, with byte ranges:\n", len(o.Parts), more)
	default:
		fmt.Fprintf(&b, "%d%s sections, with byte ranges:\n", len(o.Parts), more)
	}
	line := func(p Part) string {
		indent := strings.Repeat("  ", max(p.Level-1, 0))
		if o.Kind == "grep" {
			return fmt.Sprintf("%s%s: %d lines [bytes %d-%d]\n", indent, cutText(p.Name, 100), p.Lines, p.Start, p.End)
		}
		return fmt.Sprintf("%s%s [bytes %d-%d]\n", indent, cutText(p.Name, 100), p.Start, p.End)
	}
	var lines []string
	size := b.Len()
	for _, p := range o.Parts {
		lines = append(lines, line(p))
	}
	// Keep the head and the tail of the outline when it does not fit.
	head, tail := len(lines), 0
	used := size
	for i, l := range lines {
		if used+len(l) > budget-60 {
			head = i
			break
		}
		used += len(l)
	}
	if head < len(lines) {
		head = head * 2 / 3
		used = size
		for _, l := range lines[:head] {
			used += len(l)
		}
		for tail < len(lines)-head && used+len(lines[len(lines)-1-tail]) <= budget-60 {
			used += len(lines[len(lines)-1-tail])
			tail++
		}
	}
	for _, l := range lines[:head] {
		b.WriteString(l)
	}
	if head+tail < len(lines) {
		from, to := o.Parts[head].Start, o.Parts[len(lines)-tail-1].End
		fmt.Fprintf(&b, "[... %d more parts in bytes %d-%d ...]\n", len(lines)-head-tail, from, to)
	}
	for _, l := range lines[len(lines)-tail:] {
		b.WriteString(l)
	}
	return preview{shape: "outline", text: b.String(), stopAt: o.Parts[0].Start, specific: fmt.Sprintf(`"section":%s`, jsonscan.Quote(largest.Name))}
}

// --- JSON ---

// pathName renders a member name as a JSONPath segment.
func pathName(name string) string {
	ok := name != ""
	for i, c := range name {
		if !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c >= 0x80 || i > 0 && '0' <= c && c <= '9') {
			ok = false
		}
	}
	if ok {
		return "." + name
	}
	return "[" + strconv.Quote(name) + "]"
}

// arrayInfo counts an array's elements (and their kinds, among the first
// 100) in the pass that validates it.
type arrayInfo struct {
	n              int
	kinds          map[string]int
	first0, first1 int
}

func scanArray(d []byte, s int) (arrayInfo, int, error) {
	a := arrayInfo{kinds: map[string]int{}}
	end, err := jsonscan.WalkArray(d, s, func(i, vs, ve int) bool {
		if a.n == 0 {
			a.first0, a.first1 = vs, ve
		}
		a.n++
		if a.n <= 100 {
			a.kinds[jsonpos.Type(d[vs:])]++
		}
		return true
	})
	return a, end, err
}

// shortValue renders a scalar, or a short summary of a container.
func shortValue(d []byte, s, e int) string {
	if d[s] == '[' {
		a, _, _ := scanArray(d, s)
		return arraySummary(d, a, e-s)
	}
	return shortScalar(d, s, e)
}

func arraySummary(d []byte, a arrayInfo, size int) string {
	if a.n == 0 {
		return "[]"
	}
	of := kindList(a.kinds)
	if jsonpos.Type(d[a.first0:]) == "object" {
		var keys []string
		jsonscan.EachMember(d, a.first0, func(k []byte, _, _ int) bool {
			ks, _ := jsonscan.Unquote(k)
			keys = append(keys, cutText(ks, 30))
			return len(keys) < 6
		})
		of += " {" + strings.Join(keys, ", ") + "}"
	}
	return fmt.Sprintf("array of %d %s (%d bytes)", a.n, of, size)
}

func shortScalar(d []byte, s, e int) string {
	switch d[s] {
	case '"':
		str, _ := jsonscan.Unquote(d[s:e])
		if len(str) > 60 {
			cut := runeCut([]byte(str), 60, 0)
			return strconv.Quote(str[:cut]) + fmt.Sprintf("... (%d bytes)", len(str))
		}
		return strconv.Quote(str)
	case '{':
		var keys []string
		n := 0
		jsonscan.EachMember(d, s, func(k []byte, _, _ int) bool {
			n++
			if len(keys) < 6 {
				ks, _ := jsonscan.Unquote(k)
				keys = append(keys, cutText(ks, 30))
			}
			return true
		})
		more := ""
		if n > len(keys) {
			more = fmt.Sprintf(", ... %d more", n-len(keys))
		}
		return fmt.Sprintf("object {%s%s} (%d bytes)", strings.Join(keys, ", "), more, e-s)
	}
	return cutText(string(d[s:e]), 60)
}

func kindList(kinds map[string]int) string {
	var ks []string
	for k := range kinds {
		ks = append(ks, k+"s")
	}
	sort.Strings(ks)
	return strings.Join(ks, "/")
}

// jsonPreview describes a document already known to start with { or [.
// ok is false when it is not valid JSON. One pass validates the document,
// counts the members and the elements of top-level arrays, and finds the
// largest value.
func jsonPreview(d []byte, budget int) (preview, bool) {
	rs := jsonscan.SkipSpace(d, 0)
	type member struct {
		key    string
		vs, ve int
		arr    *arrayInfo
	}
	var members []member
	var re int
	var err error
	var rootArr arrayInfo
	if d[rs] == '{' {
		// Read the values as the object is scanned, so that an array is
		// validated and counted in the same pass.
		re, err = jsonscan.ScanObject(d, rs, 0, func(key []byte, vs int) (int, error) {
			m := member{vs: vs}
			m.key, _ = jsonscan.Unquote(key)
			var err error
			if vs < len(d) && d[vs] == '[' {
				a, end, e := scanArray(d, vs)
				m.arr, m.ve, err = &a, end, e
			} else {
				m.ve, err = jsonscan.SkipValue(d, vs, 1)
			}
			if err == nil {
				members = append(members, m)
			}
			return m.ve, err
		})
	} else {
		rootArr, re, err = scanArray(d, rs)
	}
	if err != nil || jsonscan.SkipSpace(d, re) != len(d) {
		return preview{}, false
	}
	var b strings.Builder
	type big struct {
		path string
		s, e int
	}
	var largest big
	consider := func(path string, s, e int) {
		if e-s > largest.e-largest.s {
			largest = big{path: path, s: s, e: e}
		}
	}
	writeLine := func(l string) bool {
		if b.Len()+len(l) > budget {
			return false
		}
		b.WriteString(l)
		return true
	}
	if d[rs] == '{' {
		writeLine(fmt.Sprintf("JSON object with %d keys (%d bytes); keys with short fields and byte ranges:\n", len(members), re-rs))
		for i, m := range members {
			consider("$"+pathName(m.key), m.vs, m.ve)
			v := ""
			if m.arr != nil {
				v = arraySummary(d, *m.arr, m.ve-m.vs)
			} else {
				v = shortScalar(d, m.vs, m.ve)
			}
			l := fmt.Sprintf("  %s: %s", strconv.Quote(cutText(m.key, 60)), v)
			if m.ve-m.vs > 200 {
				l += fmt.Sprintf(" [bytes %d-%d]", m.vs, m.ve)
			}
			if !writeLine(l + "\n") {
				writeLine(fmt.Sprintf("  ... %d more keys\n", len(members)-i))
				break
			}
		}
	} else {
		writeLine(fmt.Sprintf("JSON %s\n", arraySummary(d, rootArr, re-rs)))
		consider("$", rs, re)
	}
	// Show the first element of the largest array (or name the largest object).
	specific := ""
	if largest.e > largest.s {
		target := largest
		if d[target.s] == '{' && target.path != "$" {
			specific = fmt.Sprintf(`"jsonPath":%s`, jsonscan.Quote(target.path))
		}
		if d[target.s] == '[' {
			var fs, fe int
			jsonscan.EachElement(d, target.s, func(i, vs, ve int) bool { fs, fe = vs, ve; return false })
			if fe > fs {
				p := target.path + "[0]"
				specific = fmt.Sprintf(`"jsonPath":%s`, jsonscan.Quote(p))
				if d[fs] == '{' {
					writeLine(fmt.Sprintf("%s has short fields:\n", p))
					jsonscan.EachMember(d, fs, func(k []byte, vs, ve int) bool {
						key, _ := jsonscan.Unquote(k)
						return writeLine(fmt.Sprintf("  %s: %s\n", strconv.Quote(cutText(key, 60)), shortValue(d, vs, ve)))
					})
				} else {
					writeLine(fmt.Sprintf("%s = %s\n", p, shortValue(d, fs, fe)))
				}
			}
		}
	}
	if specific == "" {
		specific = `"jsonPath":"$"`
	}
	return preview{shape: "json", text: b.String(), stopAt: int64(largest.s), specific: specific}, true
}

// blockView is one text block as a preview shows it: its position in the
// envelope, its index in the result, the start of its text (decoded) and
// its decoded size.
type blockView struct {
	pos  int
	idx  int64
	head []byte
	size int64
}

// blocksPreview lists the blocks of a {"textBlocks":[...]} envelope.
func blocksPreview(d []byte, budget int) (preview, bool) {
	var arr [2]int
	found := false
	jsonscan.EachMember(d, jsonscan.SkipSpace(d, 0), func(k []byte, vs, ve int) bool {
		if jsonscan.KeyEquals(k, "textBlocks") && d[vs] == '[' {
			arr, found = [2]int{vs, ve}, true
			return false
		}
		return true
	})
	if !found {
		return preview{}, false
	}
	n := 0
	jsonscan.EachElement(d, arr[0], func(int, int, int) bool { n++; return true })
	per := max(budget/max(n, 1)-80, 120)
	return renderBlocks(n, per, budget, func(yield func(blockView) bool) {
		jsonscan.EachElement(d, arr[0], func(i, vs, ve int) bool {
			var idx int64 = -1
			var text [2]int
			jsonscan.EachMember(d, vs, func(k []byte, s, e int) bool {
				switch {
				case jsonscan.KeyEquals(k, "index"):
					idx, _ = strconv.ParseInt(string(d[s:e]), 10, 64)
				case jsonscan.KeyEquals(k, "text") && d[s] == '"':
					text = [2]int{s, e}
				}
				return true
			})
			if text[1] == 0 {
				return true
			}
			raw := d[text[0]:text[1]]
			head, _ := jsonscan.AppendUnquoted(nil, raw, 0, int64(per))
			return yield(blockView{pos: i, idx: idx, head: head, size: jsonscan.DecodedLen(raw)})
		})
	}), true
}

// blocksPreviewOf is blocksPreview of the envelope writeEnvelope makes of
// texts, built from the texts themselves: the stored envelope need not be
// read back (mapped and scanned, a 100 MB result would be resident twice).
func blocksPreviewOf(req ToolResultRequest, texts []int, budget int) preview {
	per := max(budget/max(len(texts), 1)-80, 120)
	return renderBlocks(len(texts), per, budget, func(yield func(blockView) bool) {
		for pos, i := range texts {
			head, size := decodedHead(req.Content[i].bytes(), per)
			if !yield(blockView{pos: pos, idx: int64(i), head: head, size: size}) {
				return
			}
		}
	})
}

// decodedHead is what jsonscan.WriteString then AppendUnquoted make of text:
// the first up to n bytes, each invalid UTF-8 byte as U+FFFD, and the
// length of the whole.
func decodedHead(text []byte, n int) ([]byte, int64) {
	size := int64(len(text))
	var head []byte
	for i := 0; i < len(text); {
		r, w := utf8.DecodeRune(text[i:])
		if r == utf8.RuneError && w == 1 {
			size += 2
			if len(head)+3 <= n {
				head = append(head, "\uFFFD"...)
			} else if len(head) < n {
				head = append(head, "\uFFFD"[:n-len(head)]...)
			}
		} else if len(head) < n {
			head = append(head, text[i:min(i+w, i+n-len(head))]...)
		}
		i += w
	}
	return head, size
}

// renderBlocks is the preview of text blocks: n blocks in all, per bytes of
// each at most, within about budget bytes (views is read no further).
func renderBlocks(n, per, budget int, views iter.Seq[blockView]) preview {
	var b strings.Builder
	fmt.Fprintf(&b, "%d text blocks, each with its first lines:\n", n)
	first, second, shown0, blocks := -1, -1, 0, 0
	for v := range views {
		if first < 0 {
			first = v.pos
		}
		head := v.head
		n := len(head)
		if int64(n) < v.size {
			n = cutHead(head, n-1)
			if n == 0 {
				n = len(head)
			}
		}
		if blocks == 0 {
			shown0 = n
		} else if blocks == 1 {
			second = v.pos
		}
		blocks++
		fmt.Fprintf(&b, "$.textBlocks[%d] (block %d of the result, %d bytes of text):\n", v.pos, v.idx, v.size)
		for _, l := range bytes.SplitAfter(head[:n], nl) {
			if len(l) > 0 {
				b.WriteString("  ")
				b.Write(l)
			}
		}
		if n > 0 && head[n-1] != '\n' {
			b.WriteByte('\n')
		}
		if b.Len() >= budget {
			break
		}
	}
	if first < 0 {
		first = 0
	}
	pv := preview{shape: "textBlocks", text: b.String(), specific: fmt.Sprintf(`"jsonPath":"$.textBlocks[%d].text","offset":%d`, first, shown0)}
	if second >= 0 {
		pv.extra = fmt.Sprintf(`"jsonPath":"$.textBlocks[%d].text"`, second)
	}
	return pv
}
