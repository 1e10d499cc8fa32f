package offload

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// --- error compaction ---

// diagWords mark diagnostic lines, lowercase, with their weight.
var diagWords = []struct {
	w     string
	score int
}{
	{"error", 10}, {"fail", 10}, {"fatal", 12}, {"panic", 12}, {"exception", 10},
	{"traceback", 10}, {"undefined", 8}, {"cannot", 8}, {"can't", 8}, {"not found", 8},
	{"denied", 8}, {"refused", 8}, {"assert", 8}, {"expected", 6}, {"unexpected", 6},
	{"invalid", 6}, {"segmentation", 10}, {"abort", 8}, {"killed", 8}, {"timeout", 6},
	{"timed out", 6}, {"exit code", 8}, {"exit status", 8}, {"warning", 3}, {"caused by", 8},
}

// hasLocation reports a "file.ext:line" location in a line.
func hasLocation(l []byte) bool {
	for i := 1; i+1 < len(l); i++ {
		if l[i] == ':' && '0' <= l[i+1] && l[i+1] <= '9' {
			// a dotted word before the colon: file.ext
			j := i - 1
			for j >= 0 && l[j] != ' ' && l[j] != '(' && l[j] != '"' && l[j] != '\'' {
				if l[j] == '.' && j < i-1 {
					return true
				}
				j--
			}
		}
	}
	return false
}

// keywordMachine finds keywords in one pass, ignoring ASCII case: an
// Aho-Corasick automaton over the classes of bytes the keywords use.
type keywordMachine struct {
	class [256]uint8
	next  [][]int32 // state x class -> state
	score []int     // the best keyword score ending in each state
}

// diagMachine is built on first use: every pi-session start would pay for
// it otherwise.
var diagMachine = sync.OnceValue(newKeywordMachine)

func newKeywordMachine() *keywordMachine {
	m := &keywordMachine{}
	nclass := 1 // class 0: every byte no keyword uses
	for _, dw := range diagWords {
		for i := 0; i < len(dw.w); i++ {
			c := dw.w[i]
			if m.class[c] == 0 {
				m.class[c] = uint8(nclass)
				if 'a' <= c && c <= 'z' {
					m.class[c-'a'+'A'] = uint8(nclass)
				}
				nclass++
			}
		}
	}
	// The trie.
	goTo := [][]int32{make([]int32, nclass)}
	score := []int{0}
	for _, dw := range diagWords {
		st := 0
		for i := 0; i < len(dw.w); i++ {
			c := m.class[dw.w[i]]
			if goTo[st][c] == 0 {
				goTo = append(goTo, make([]int32, nclass))
				score = append(score, 0)
				goTo[st][c] = int32(len(goTo) - 1)
			}
			st = int(goTo[st][c])
		}
		score[st] = max(score[st], dw.score)
	}
	// Failure links, breadth first, folded into a full transition table.
	fail := make([]int32, len(goTo))
	queue := []int32{}
	for c := 1; c < nclass; c++ {
		if s := goTo[0][c]; s != 0 {
			queue = append(queue, s)
		}
	}
	for len(queue) > 0 {
		st := queue[0]
		queue = queue[1:]
		score[st] = max(score[st], score[fail[st]])
		for c := 0; c < nclass; c++ {
			if s := goTo[st][c]; s != 0 && c != 0 {
				fail[s] = goTo[fail[st]][c]
				queue = append(queue, s)
			} else {
				goTo[st][c] = goTo[fail[st]][c]
			}
		}
	}
	m.next, m.score = goTo, score
	return m
}

// scan calls f with each line holding a keyword and the best score of its
// keywords; f returns false to stop.
func (m *keywordMachine) scan(text []byte, f func(start, end, score int) bool) {
	st, lineStart, best := int32(0), 0, 0
	for i, c := range text {
		if c == '\n' {
			if best > 0 && !f(lineStart, i, best) {
				return
			}
			st, lineStart, best = 0, i+1, 0
			continue
		}
		st = m.next[st][m.class[c]]
		if sc := m.score[st]; sc > best {
			best = sc
		}
	}
	if best > 0 {
		f(lineStart, len(text), best)
	}
}

// diagnosticWord is the strongest diagnostic word of the picked lines, for
// the query that finds the others like them.
func diagnosticWord(text []byte, picked []scoredLine) string {
	counts := make([]int, len(diagWords))
	var scratch []byte
	for _, l := range picked {
		line := text[l.start:l.end]
		if len(line) > 512 {
			line = line[:512]
		}
		scratch = asciiLowerInto(scratch, line)
		for i, dw := range diagWords {
			if bytes.Contains(scratch, []byte(dw.w)) {
				counts[i]++
			}
		}
	}
	best := -1
	for i, c := range counts {
		if c > 0 && (best < 0 || c > counts[best] || c == counts[best] && diagWords[i].score > diagWords[best].score) {
			best = i
		}
	}
	if best < 0 {
		return "error"
	}
	return diagWords[best].w
}

func asciiLowerInto(dst, src []byte) []byte {
	if cap(dst) < len(src) {
		dst = make([]byte, len(src))
	}
	dst = dst[:len(src)]
	lowerASCII(dst, src)
	return dst
}

type scoredLine struct {
	start, end int
	n          int // line number, from 1
	score      int
}

// usefulLines picks the most useful diagnostic lines of text within budget
// bytes: the first lines, the last lines and the highest-scored lines in
// between (earlier first among equals), returned in text order. Keywords
// are found with one lowercase pass over windows of the text, so the cost
// stays near a memory scan whatever the size.
func usefulLines(text []byte, budget int) []scoredLine {
	const headLines, tailLines, perScore = 2, 4, 2048
	type cand struct{ start, end, score int }
	var found []cand
	perTier := map[int]int{}
	diagMachine().scan(text, func(start, end, score int) bool {
		if perTier[score] < perScore {
			perTier[score]++
			found = append(found, cand{start, end, score})
		}
		return true
	})
	byStart := map[int]*cand{}
	for i := range found {
		byStart[found[i].start] = &found[i]
	}
	// Head and tail lines.
	var fixed []scoredLine
	pos := 0
	for n := 1; n <= headLines && pos < len(text); n++ {
		e := lineEnd(text, pos)
		fixed = append(fixed, scoredLine{start: pos, end: e, score: 1000})
		pos = e + 1
	}
	end := len(text)
	if end > 0 && text[end-1] == '\n' {
		end--
	}
	for n := 0; n < tailLines && end > pos; n++ {
		s := bytes.LastIndexByte(text[:end], '\n') + 1
		if s < pos {
			break
		}
		fixed = append(fixed, scoredLine{start: s, end: end, score: 900})
		end = s - 1
	}
	taken := map[int]bool{}
	for _, f := range fixed {
		taken[f.start] = true
	}
	cands := fixed
	for _, c := range byStart {
		if taken[c.start] {
			continue
		}
		score := c.score
		if hasLocation(text[c.start:min(c.end, c.start+512)]) {
			score += 5
		}
		cands = append(cands, scoredLine{start: c.start, end: c.end, score: score})
	}
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].score != cands[j].score {
			return cands[i].score > cands[j].score
		}
		return cands[i].start < cands[j].start
	})
	var picked []scoredLine
	used := 0
	for _, c := range cands {
		cost := min(c.end-c.start, 400) + 1 + 30 // the line, its newline, a possible gap marker
		if used+cost > budget {
			continue
		}
		used += cost
		picked = append(picked, c)
	}
	sort.Slice(picked, func(i, j int) bool { return picked[i].start < picked[j].start })
	// Line numbers, for the gap markers.
	n, last := 1, 0
	for i := range picked {
		n += bytes.Count(text[last:picked[i].start], nl)
		last = picked[i].start
		picked[i].n = n
	}
	return picked
}

// renderUseful writes the picked lines with markers for the gaps.
func renderUseful(b *strings.Builder, text []byte, picked []scoredLine, lines int64) {
	prev := 0
	for _, l := range picked {
		if l.n > prev+1 {
			fmt.Fprintf(b, "[... %d lines ...]\n", l.n-prev-1)
		}
		line := trimCR(text[l.start:l.end])
		if len(line) > 400 {
			cut := cutHead(line, 400)
			fmt.Fprintf(b, "%s ...[+%d bytes]\n", line[:cut], len(line)-cut)
		} else {
			b.Write(line)
			b.WriteByte('\n')
		}
		prev = l.n
	}
	if int64(prev) < lines {
		fmt.Fprintf(b, "[... %d lines ...]\n", lines-int64(prev))
	}
}

// --- edit compaction ---

// editLike reports whether a tool edits files, by its name or its input.
func editLike(tool string, input map[string]any) bool {
	t := strings.ToLower(tool)
	for _, w := range []string{"edit", "patch", "write", "replace", "apply"} {
		if strings.Contains(t, w) {
			return true
		}
	}
	for _, k := range []string{"oldText", "newText", "old_string", "new_string", "edits", "patch", "diff"} {
		if _, ok := input[k]; ok {
			return true
		}
	}
	return false
}

// diffStart finds where a unified diff starts in text: a "diff --git",
// "--- a/..." followed by "+++ ", or a "@@ " hunk line at a line start.
func diffStart(text []byte) int {
	best := -1
	for _, marker := range []string{"diff --git ", "--- ", "@@ ", "Index: "} {
		pos := 0
		for {
			i := bytes.Index(text[pos:], []byte(marker))
			if i < 0 {
				break
			}
			at := pos + i
			if at == 0 || text[at-1] == '\n' {
				if marker != "--- " || bytes.HasPrefix(text[nextLineStart(text, at):], []byte("+++ ")) {
					if best < 0 || at < best {
						best = at
					}
					break
				}
			}
			pos = at + 1
		}
	}
	return best
}

// diffStats counts added and removed lines and files of a diff.
func diffStats(diff []byte) (added, removed, files int) {
	pos := 0
	for pos < len(diff) {
		end := lineEnd(diff, pos)
		l := diff[pos:end]
		switch {
		case bytes.HasPrefix(l, []byte("+++ ")):
			files++
		case bytes.HasPrefix(l, []byte("--- ")):
		case len(l) > 0 && l[0] == '+':
			added++
		case len(l) > 0 && l[0] == '-':
			removed++
		}
		pos = end + 1
	}
	if files == 0 {
		files = 1
	}
	return
}
