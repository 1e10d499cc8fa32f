package offload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/pi-session/pi-session/jsonscan"

	"github.com/pi-session/pi-session/jsonpos"

	"github.com/pi-session/pi-session/clip"
)

// SummarizeArgs are the arguments of ctx_summarize: a stored payload (ID)
// or inline text, a mode and a size bound.
type SummarizeArgs struct {
	ID        string
	Text      string
	HasText   bool
	Mode      string // "structural" or "code"
	MaxTokens int
}

const (
	minSummaryTokens     = 64
	maxSummaryTokens     = 4000
	defaultSummaryTokens = 500
)

// ParseSummarizeArgs validates the arguments of ctx_summarize.
func ParseSummarizeArgs(raw json.RawMessage) (SummarizeArgs, error) {
	a := SummarizeArgs{Mode: "structural", MaxTokens: defaultSummaryTokens}
	m, err := object(raw)
	if err != nil {
		return a, err
	}
	if err := unknownArgs(m, "id", "text", "mode", "maxTokens"); err != nil {
		return a, err
	}
	var hasID bool
	if a.ID, hasID, err = getString(m, "id", false); err != nil {
		return a, err
	}
	if a.Text, a.HasText, err = getString(m, "text", false); err != nil {
		return a, err
	}
	if hasID == a.HasText {
		return a, argErr("id", "give either id (a handle) or text (inline text) to summarize, not both or neither")
	}
	if hasID && !ValidHandle(strings.TrimSpace(a.ID)) {
		return a, argErr("id", "%q is not a handle; a handle is ce_ followed by 24 hex digits", clip.Echo(a.ID))
	}
	a.ID = strings.TrimSpace(a.ID)
	if mode, ok, err := getString(m, "mode", false); err != nil {
		return a, err
	} else if ok {
		if mode != "structural" && mode != "code" {
			return a, argErr("mode", "must be \"structural\" or \"code\", got %q", clip.Echo(mode))
		}
		a.Mode = mode
	}
	if n, ok, err := getInt(m, "maxTokens", minSummaryTokens, maxSummaryTokens); err != nil {
		return a, err
	} else if ok {
		a.MaxTokens = int(n)
	}
	return a, nil
}

// summarize describes data deterministically within maxBytes.
func summarize(data []byte, mode string, maxBytes int) string {
	var b strings.Builder
	if mode == "code" {
		codeSummary(&b, data, maxBytes)
	} else if i := jsonscan.SkipSpace(data, 0); i < len(data) && (data[i] == '{' || data[i] == '[') && jsonscan.Valid(data) == nil {
		jsonShape(&b, data, maxBytes)
	} else {
		textSummary(&b, data, maxBytes)
	}
	out := b.String()
	if len(out) > maxBytes {
		out = out[:cutHead([]byte(out), maxBytes)]
	}
	return strings.TrimRight(out, "\n")
}

// --- JSON shape ---

type shapeWriter struct {
	b     *strings.Builder
	d     []byte
	max   int
	full  bool
	lines int
}

func (w *shapeWriter) line(indent int, format string, a ...any) bool {
	l := strings.Repeat("  ", indent) + fmt.Sprintf(format, a...) + "\n"
	if w.b.Len()+len(l) > w.max-20 {
		if !w.full {
			w.b.WriteString("...\n")
		}
		w.full = true
		return false
	}
	w.b.WriteString(l)
	return true
}

func jsonShape(b *strings.Builder, d []byte, maxBytes int) {
	rs := jsonscan.SkipSpace(d, 0)
	re, _ := jsonscan.SkipValue(d, rs, 0)
	w := &shapeWriter{b: b, d: d, max: maxBytes}
	w.line(0, "JSON %s, %d bytes:", jsonpos.Type(d[rs:]), re-rs)
	w.value(1, "$", rs, re, 0)
}

// value writes the shape of the value at [s, e) under name.
func (w *shapeWriter) value(indent int, name string, s, e, depth int) {
	if w.full {
		return
	}
	d := w.d
	switch d[s] {
	case '{':
		n := 0
		jsonscan.EachMember(d, s, func([]byte, int, int) bool { n++; return true })
		if name != "$" && !w.line(indent, "%s: object (%d keys, %d bytes)", name, n, e-s) {
			return
		}
		if name == "$" {
			indent--
		}
		if depth >= 4 {
			return
		}
		jsonscan.EachMember(d, s, func(k []byte, vs, ve int) bool {
			key, _ := jsonscan.Unquote(k)
			w.value(indent+1, cutText(key, 60), vs, ve, depth+1)
			return !w.full
		})
	case '[':
		// Merge the shapes of the first elements: the union of their keys.
		n := 0
		kinds := map[string]int{}
		var sample [][2]int
		jsonscan.EachElement(d, s, func(_, vs, ve int) bool {
			n++
			if len(sample) < 20 {
				sample = append(sample, [2]int{vs, ve})
			}
			if n <= 1000 {
				kinds[jsonpos.Type(d[vs:])]++
			}
			return true
		})
		if !w.line(indent, "%s: array of %d %s (%d bytes)", name, n, kindList(kinds), e-s) {
			return
		}
		if depth >= 4 || len(sample) == 0 {
			return
		}
		if d[sample[0][0]] == '{' {
			type field struct {
				s, e  int
				count int
			}
			var order []string
			fields := map[string]*field{}
			for _, el := range sample {
				if d[el[0]] != '{' {
					continue
				}
				jsonscan.EachMember(d, el[0], func(k []byte, vs, ve int) bool {
					key, _ := jsonscan.Unquote(k)
					if f, ok := fields[key]; ok {
						f.count++
					} else {
						fields[key] = &field{vs, ve, 1}
						order = append(order, key)
					}
					return true
				})
			}
			for _, k := range order {
				f := fields[k]
				label := cutText(k, 60)
				if f.count < len(sample) {
					label += fmt.Sprintf(" (in %d of the first %d)", f.count, len(sample))
				}
				w.value(indent+1, "[*]."+label, f.s, f.e, depth+1)
				if w.full {
					return
				}
			}
			return
		}
		w.value(indent+1, "[0]", sample[0][0], sample[0][1], depth+1)
	case '"':
		str, _ := jsonscan.Unquote(d[s:e])
		w.line(indent, "%s: string %s", name, strconv.Quote(cutText(str, 40)))
	default:
		w.line(indent, "%s: %s %s", name, jsonpos.Type(d[s:]), cutText(string(d[s:e]), 30))
	}
}

// --- text ---

func textSummary(b *strings.Builder, d []byte, maxBytes int) {
	fmt.Fprintf(b, "Text, %d bytes, %d lines.\n", len(d), totalLines(d))
	var counts []string
	words := []string{"error", "warn", "fail"}
	for i, n := range foldLineCounts(d, words) {
		if n > 0 {
			counts = append(counts, fmt.Sprintf("%q %d", words[i], n))
		}
	}
	if len(counts) > 0 {
		fmt.Fprintf(b, "Lines with (ignoring case): %s.\n", strings.Join(counts, ", "))
	}
	o := buildOutline(d)
	if o.Kind != "" {
		budget := (maxBytes - b.Len()) / 3
		pv := outlinePreview(d, o, max(budget, 200))
		b.WriteString(pv.text)
	}
	room := maxBytes - b.Len() - 60
	if room < 40 {
		return
	}
	headN := room * 3 / 5
	he := cutHead(d, headN)
	ts := cutTail(d, room-he)
	if ts < he {
		ts = he
	}
	fmt.Fprintf(b, "First lines (bytes 0-%d):\n", he)
	b.Write(d[:he])
	if he > 0 && d[he-1] != '\n' {
		b.WriteByte('\n')
	}
	if ts < len(d) && ts > he {
		fmt.Fprintf(b, "Last lines (bytes %d-%d):\n", ts, len(d))
		b.Write(d[ts:])
	}
}

// --- code ---

var codePrefixes = []string{
	"package ", "import ", "from ", "#include", "use ", "require(", "require ",
	"func ", "def ", "async def ", "class ", "interface ", "type ", "struct ", "enum ",
	"trait ", "impl ", "fn ", "pub fn ", "pub struct ", "pub enum ", "pub trait ", "pub mod ", "mod ",
	"export ", "function ", "async function ", "module ", "namespace ",
	"public ", "private ", "protected ", "internal ", "static ", "abstract ", "override ",
	"var ", "const ", "@",
}

// codeLine reports whether a line declares an import or a signature.
func codeLine(line []byte, indent int) bool {
	t := bytes.TrimLeft(line, " \t")
	if len(t) == 0 || len(line)-len(t) > indent {
		return false
	}
	for _, p := range codePrefixes {
		if bytes.HasPrefix(t, []byte(p)) {
			if (p == "var " || p == "const ") && len(line) != len(t) {
				return false // only top-level declarations
			}
			return true
		}
	}
	return false
}

func codeSummary(b *strings.Builder, d []byte, maxBytes int) {
	fmt.Fprintf(b, "Imports and signatures (%d bytes, %d lines):\n", len(d), totalLines(d))
	pos, n := 0, int64(1)
	inImport := false
	more := 0
	for pos < len(d) {
		end := lineEnd(d, pos)
		line := trimCR(d[pos:end])
		t := bytes.TrimSpace(line)
		show := false
		switch {
		case inImport:
			show = true
			if bytes.HasPrefix(t, []byte(")")) {
				inImport = false
			}
		case bytes.Equal(t, []byte("import (")) || bytes.Equal(t, []byte("var (")) || bytes.Equal(t, []byte("const (")):
			show, inImport = true, bytes.HasPrefix(t, []byte("import"))
		default:
			show = codeLine(line, 4)
		}
		if show {
			l := fmt.Sprintf("%d: %s\n", n, cutText(string(bytes.TrimRight(line, " \t")), 160))
			if b.Len()+len(l) > maxBytes-40 {
				more++
			} else {
				b.WriteString(l)
			}
		}
		pos, n = end+1, n+1
	}
	if more > 0 {
		fmt.Fprintf(b, "... %d more lines not shown (raise maxTokens, or ctx_read with a query)\n", more)
	}
}
