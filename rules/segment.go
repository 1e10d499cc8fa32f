package rules

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// A Unit is one candidate sentence of a message, as the user wrote it.
type Unit struct {
	// Text is the sentence verbatim: trimmed, without its list marker.
	Text string
	// Lead is the subject the sentence stands under: its heading, the
	// list item that introduces it ("Database:"), or the label its own
	// item starts with ("`pom.xml`:"); "" when none.
	Lead string
	// Item is the whole list item or paragraph the sentence belongs to,
	// when it starts with a label (Lead came from it), so the rule can be
	// shown with its subject verbatim.
	Item string
	// Quoted marks text the user quoted or pasted (a blockquote): never a
	// rule of theirs.
	Quoted bool
	// Paren marks the inside of a parenthesis, split out of its sentence.
	Paren bool
	// Intro marks a sentence that ends in a colon before a list or a code
	// block ("Requirements:", "Run the tests like this:"): it introduces
	// what follows and is not a rule itself.
	Intro bool
}

// maxUnitRunes bounds a unit: a longer run without a sentence end is a
// paragraph of prose or pasted output, cut into pieces of this size.
const maxUnitRunes = 600

// Split cuts a message into units: fenced code is skipped, headings and
// introducing lines ("Testing:") become the lead of what follows them,
// list items and paragraphs are cut into sentences (. ! ? and their
// full-width forms), hard-wrapped lines are joined, and a parenthesis of
// a few words is also a unit of its own.
func Split(message string) []Unit {
	var out []Unit
	var heading string
	type parent struct {
		indent int
		text   string // an introducing item's text, without its colon
	}
	var parents []parent
	intro := "" // a plain line ending in a colon, introducing the list under it
	lines := strings.Split(strings.ReplaceAll(message, "\r\n", "\n"), "\n")
	fence := ""
	var para []string // lines of the current paragraph or item
	paraLead, paraQuoted, paraItem := "", false, false
	i := 0
	flush := func() {
		if len(para) == 0 {
			return
		}
		text := strings.Join(para, "\n")
		para = para[:0]
		n := len(out)
		out = appendSentences(out, text, paraLead, paraQuoted, paraItem)
		if len(out) > n && endsInColon(text) && nextIsListOrCode(lines[i:]) {
			out[len(out)-1].Intro = true
		}
	}
	for ; i < len(lines); i++ {
		raw := lines[i]
		line := strings.TrimRightFunc(raw, unicode.IsSpace)
		trimmed := strings.TrimLeftFunc(line, unicode.IsSpace)
		indent := len(line) - len(trimmed)
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if f := fenceOf(trimmed); f != "" {
			flush()
			fence = f
			continue
		}
		if trimmed == "" {
			flush()
			intro = ""
			parents = parents[:0]
			continue
		}
		if h, ok := headingOf(trimmed); ok {
			flush()
			heading, intro, parents = h, "", parents[:0]
			continue
		}
		quoted := false
		if strings.HasPrefix(trimmed, ">") {
			quoted = true
			trimmed = strings.TrimSpace(strings.TrimLeft(trimmed, "> "))
		}
		if body, ok := bulletOf(trimmed); ok {
			flush()
			for len(parents) > 0 && parents[len(parents)-1].indent >= indent {
				parents = parents[:len(parents)-1]
			}
			lead := heading
			if intro != "" {
				lead = join(lead, intro)
			}
			for _, p := range parents {
				lead = join(lead, p.text)
			}
			if t, ok := introducing(body); ok {
				parents = append(parents, parent{indent: indent, text: t})
			}
			para = append(para, body)
			paraLead, paraQuoted, paraItem = lead, quoted, true
			continue
		}
		// A plain line: it continues the open paragraph or item when it is
		// a hard-wrapped continuation (the previous line ends mid-sentence
		// and this one starts in lower case or is indented under an item).
		if len(para) > 0 && (continues(para[len(para)-1], trimmed) || indent > 0 && paraItem) {
			para = append(para, trimmed)
			continue
		}
		flush()
		if t, ok := introducing(trimmed); ok && i+1 < len(lines) && nextIsList(lines[i+1:]) {
			intro = t
			out = appendSentences(out, trimmed, heading, quoted, false)
			out[len(out)-1].Intro = true
			continue
		}
		para = append(para, trimmed)
		paraLead, paraQuoted, paraItem = heading, quoted, false
		if intro != "" {
			paraLead = join(heading, intro)
		}
	}
	flush()
	return out
}

func join(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + " › " + b
}

// fenceOf is the fence a line opens (``` or ~~~, three or more), or "".
func fenceOf(s string) string {
	for _, c := range []string{"```", "~~~"} {
		if strings.HasPrefix(s, c) {
			n := 0
			for n < len(s) && s[n] == c[0] {
				n++
			}
			return s[:n]
		}
	}
	return ""
}

// headingOf reads a Markdown heading ("## Testing") or a line that is all
// emphasis ("**Testing**"), returning its text.
func headingOf(s string) (string, bool) {
	if strings.HasPrefix(s, "#") {
		n := 0
		for n < len(s) && s[n] == '#' {
			n++
		}
		if n <= 6 && (n == len(s) || s[n] == ' ') {
			h := strings.TrimSpace(strings.TrimRight(s[n:], "# "))
			return cleanLead(h), h != ""
		}
		return "", false
	}
	for _, m := range []string{"**", "__"} {
		if len(s) > 4 && strings.HasPrefix(s, m) && strings.HasSuffix(strings.TrimRight(s, ":："), m) {
			inner := strings.TrimSuffix(strings.TrimRight(s, ":："), m)[2:]
			if !strings.Contains(inner, m) && utf8.RuneCountInString(inner) <= 80 {
				return cleanLead(inner), true
			}
		}
	}
	return "", false
}

// cleanLead drops emphasis and a final colon from a lead.
func cleanLead(s string) string {
	s = strings.TrimSpace(s)
	s = strings.TrimRight(s, ":：")
	for _, m := range []string{"**", "__"} {
		if strings.HasPrefix(s, m) && strings.HasSuffix(s, m) && len(s) > 4 {
			s = s[2 : len(s)-2]
		}
	}
	return strings.TrimSpace(s)
}

// bulletOf strips a list marker: - * + • ・ ● ▪ ◦ ‣ – —, "1." "1)" "(1)"
// "（1）" "a)" and circled numbers, with the space after it (none needed
// after CJK marks).
func bulletOf(s string) (string, bool) {
	r, n := utf8.DecodeRuneInString(s)
	switch r {
	case '-', '*', '+', '•', '●', '▪', '◦', '‣', '–', '—':
		if n < len(s) && s[n] == ' ' {
			if r == '*' && strings.HasPrefix(s, "**") {
				return "", false
			}
			return strings.TrimSpace(s[n:]), true
		}
		return "", false
	case '・', '■', '□', '◆', '◇', '○', '※':
		return strings.TrimSpace(s[n:]), len(s) > n
	}
	if '①' <= r && r <= '⑳' {
		return strings.TrimSpace(s[n:]), len(s) > n
	}
	// Numbered: 1. 1) (1) （1） a) a.
	i := 0
	open := false
	if strings.HasPrefix(s, "(") {
		i, open = 1, true
	} else if strings.HasPrefix(s, "（") {
		i, open = len("（"), true
	}
	start := i
	for i < len(s) && i-start < 3 && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == start {
		if !open && i+1 < len(s) && s[i] >= 'a' && s[i] <= 'h' && s[i+1] == ')' && i+2 < len(s) && s[i+2] == ' ' {
			return strings.TrimSpace(s[i+2:]), true
		}
		return "", false
	}
	rest := s[i:]
	for _, close := range []string{".", ")", "）", "、", "．"} {
		if open && close != ")" && close != "）" {
			continue
		}
		if strings.HasPrefix(rest, close) {
			after := rest[len(close):]
			if after == "" {
				return "", false
			}
			if after[0] == ' ' || close == "、" || close == "）" || close == "．" {
				return strings.TrimSpace(after), true
			}
			r, _ := utf8.DecodeRuneInString(after)
			if isCJK(r) {
				return strings.TrimSpace(after), true
			}
		}
	}
	return "", false
}

// introducing reports whether a line introduces what follows it: it ends
// in a colon and is short ("Testing:", "For the database:", "テスト："),
// returning it without the colon.
func introducing(s string) (string, bool) {
	t := strings.TrimSpace(s)
	if !strings.HasSuffix(t, ":") && !strings.HasSuffix(t, "：") {
		return "", false
	}
	t = cleanLead(t)
	if t == "" || utf8.RuneCountInString(t) > 80 || strings.ContainsAny(t, ".!?。！？") && !strings.Contains(t, "`") {
		return "", false
	}
	return t, true
}

func endsInColon(s string) bool {
	t := strings.TrimRightFunc(s, unicode.IsSpace)
	return strings.HasSuffix(t, ":") || strings.HasSuffix(t, "：")
}

// nextIsListOrCode reports whether the next non-blank line is a list
// item or opens a fenced block.
func nextIsListOrCode(lines []string) bool {
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" {
			continue
		}
		_, ok := bulletOf(t)
		return ok || fenceOf(t) != ""
	}
	return false
}

// nextIsList reports whether the next non-blank line is a list item.
func nextIsList(lines []string) bool {
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" {
			continue
		}
		_, ok := bulletOf(t)
		return ok
	}
	return false
}

// continues reports whether line next is a hard-wrapped continuation of
// prev: prev is as long as wrapped lines are (short lines are lines of
// chat), does not end a sentence, and next starts in lower case.
func continues(prev, next string) bool {
	p := strings.TrimRightFunc(prev, unicode.IsSpace)
	if utf8.RuneCountInString(p) < 36 {
		return false
	}
	last, _ := utf8.DecodeLastRuneInString(p)
	if strings.ContainsRune(".!?:;。！？：；", last) {
		return false
	}
	first, _ := utf8.DecodeRuneInString(next)
	if isCJK(first) || isCJK(last) {
		return false
	}
	return unicode.IsLower(first) || first == '(' || first == '`' && unicode.IsLower(last)
}

// appendSentences cuts text (one paragraph or list item) into sentences
// and their parentheses. A label it starts with becomes the lead of its
// sentences: any short one in a list item, only a code span, emphasis or
// a file name in a paragraph ("Note:" or "Also:" there is not a subject).
// A marked label keeps the short item whole for the note.
func appendSentences(out []Unit, text, lead string, quoted, isItem bool) []Unit {
	text = collapseSpaces(text)
	item := ""
	if label, marked := labelOf(text); label != "" && (marked || isItem) {
		lead = join(lead, label)
		if marked && utf8.RuneCountInString(text) <= 400 {
			item = text
		}
	}
	for _, s := range sentences(text) {
		u := Unit{Text: s, Lead: lead, Item: item, Quoted: quoted}
		out = append(out, u)
		for _, p := range parens(s) {
			out = append(out, Unit{Text: p, Lead: lead, Item: item, Quoted: quoted, Paren: true})
		}
	}
	return out
}

// labelOf finds the label a list item or paragraph starts with: a code
// span, emphasis, a file name or a few words ending in a colon
// ("`pom.xml`: ...", "**Migrations**: ...", "go.mod: ...", "Database:
// ..."). It returns the label without its colon, and whether it is marked
// (a code span, emphasis or a file name) rather than plain words.
func labelOf(text string) (string, bool) {
	for _, sep := range []string{": ", "： ", "：", " - ", " — ", " – "} {
		i := strings.Index(text, sep)
		if i <= 0 {
			continue
		}
		head := text[:i]
		if utf8.RuneCountInString(head) > 48 {
			continue
		}
		marked := strings.HasPrefix(head, "`") && strings.HasSuffix(head, "`") ||
			strings.HasPrefix(head, "**") && strings.HasSuffix(head, "**") ||
			strings.HasPrefix(head, "__") && strings.HasSuffix(head, "__") ||
			!strings.Contains(head, " ") && strings.ContainsAny(head, "./") && !strings.HasSuffix(head, ".")
		words := len(strings.Fields(head))
		if sep == ": " || sep == "： " || sep == "：" {
			if !marked && (words > 4 || strings.ContainsAny(head, ".!?。！？,，、")) {
				continue
			}
		} else if !marked {
			continue
		}
		if strings.TrimSpace(text[i+len(sep):]) == "" {
			continue
		}
		return cleanLead(head), marked
	}
	return "", false
}

// abbreviations do not end a sentence.
var abbreviations = []string{"e.g.", "i.e.", "etc.", "vs.", "cf.", "approx.", "incl.", "no.", "z.b.", "d.h.", "u.a.", "bzw.", "ca.", "usw.", "ggf.", "evtl.", "bspw.", "p.ej.", "ej.", "p.ex.", "ex.", "obs.", "т.е.", "т.д.", "т.п.", "напр.", "др.", "mr.", "dr.", "ms.", "st."}

// sentences cuts one paragraph at sentence ends: . ! ? … followed by a
// space (not after an abbreviation, an initial or a number list), and
// 。！？ anywhere; closing quotes and brackets stay with their sentence.
// A run longer than maxUnitRunes is cut at spaces.
func sentences(text string) []string {
	var out []string
	start := 0
	emit := func(end int) {
		s := strings.TrimSpace(text[start:end])
		start = end
		if s == "" {
			return
		}
		// A run of n bytes holds at most n runes: only a longer one is
		// counted, and only as far as one piece, so a paragraph of
		// megabytes is cut in one pass.
		for len(s) > maxUnitRunes {
			cut := runeOffset(s, maxUnitRunes)
			if cut == len(s) {
				break
			}
			if sp := strings.LastIndexByte(s[:cut], ' '); sp > cut/2 {
				cut = sp
			}
			out = append(out, strings.TrimSpace(s[:cut]))
			s = strings.TrimSpace(s[cut:])
		}
		if s != "" {
			out = append(out, s)
		}
	}
	depth := 0 // inside parentheses: no sentence end there
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRuneInString(text[i:])
		switch r {
		case '(', '（', '[':
			depth++
		case ')', '）', ']':
			if depth > 0 {
				depth--
			}
		}
		end := -1
		switch r {
		case '。', '！', '？', '!', '?', '．':
			if r == '!' || r == '?' {
				if i+n < len(text) && text[i+n] != ' ' && !closer(text[i+n:]) {
					break
				}
			}
			end = i + n
		case '.', '…':
			if i+n >= len(text) || text[i+n] == ' ' || closer(text[i+n:]) {
				if r == '.' && abbrev(lastBytes(text[start:i+1], abbrevWindow)) {
					break
				}
				end = i + n
			}
		}
		i += n
		if end >= 0 && depth == 0 {
			// Keep closing quotes and brackets and a run of marks (?!, 。」).
			for end < len(text) {
				r2, n2 := utf8.DecodeRuneInString(text[end:])
				if !strings.ContainsRune(`"'”’」』)）]!?！？。.`, r2) {
					break
				}
				end += n2
			}
			i = end
			emit(end)
		}
	}
	emit(len(text))
	return out
}

// abbrevWindow is how much of a sentence before a period abbrev needs: the
// longest abbreviation and the byte before it, with room to spare. Looking
// at no more keeps a paragraph of many periods linear.
const abbrevWindow = 32

// lastBytes is the end of s, at most n bytes, starting at a character.
func lastBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}

func closer(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return strings.ContainsRune(`"'”’」』)）]`, r)
}

func abbrev(s string) bool {
	l := strings.ToLower(s)
	for _, a := range abbreviations {
		if strings.HasSuffix(l, a) && (len(l) == len(a) || !isLetter(l[len(l)-len(a)-1])) {
			return true
		}
	}
	// An initial ("J. Smith") or a list number ("step 2. then").
	if len(l) >= 2 {
		prev := l[len(l)-2]
		if len(l) == 2 || l[len(l)-3] == ' ' {
			if prev >= 'a' && prev <= 'z' && s[len(s)-2] >= 'A' && s[len(s)-2] <= 'Z' {
				return true
			}
		}
	}
	return false
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// parens returns the insides of a sentence's parentheses that hold a
// clause of their own: three words, or six characters of CJK text.
func parens(s string) []string {
	var out []string
	for _, pair := range [][2]string{{"(", ")"}, {"（", "）"}} {
		rest := s
		for {
			i := strings.Index(rest, pair[0])
			if i < 0 {
				break
			}
			j := strings.Index(rest[i:], pair[1])
			if j < 0 {
				break
			}
			inner := strings.TrimSpace(rest[i+len(pair[0]) : i+j])
			rest = rest[i+j+len(pair[1]):]
			if len(strings.Fields(inner)) >= 3 || cjkRunes(inner) >= 6 {
				out = append(out, inner)
			}
		}
	}
	return out
}

func cjkRunes(s string) int {
	n := 0
	for _, r := range s {
		if isCJK(r) {
			n++
		}
	}
	return n
}

// isCJK: Han, kana, Hangul and CJK punctuation: scripts written without
// spaces between words (Hangul has them, but its sentence ends are the
// same marks).
func isCJK(r rune) bool {
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r) ||
		unicode.Is(unicode.Hangul, r) || 0x3000 <= r && r <= 0x303F || 0xFF00 <= r && r <= 0xFFEF
}

func runeOffset(s string, n int) int {
	for i := range s {
		if n == 0 {
			return i
		}
		n--
	}
	return len(s)
}
