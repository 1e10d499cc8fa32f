package relay

import (
	"regexp"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// A Constraint is a standing instruction of the user's: a sentence that
// tells the agent what to always, never or only do, kept verbatim.
type Constraint struct {
	Text    string // the sentence as the user wrote it
	EntryID string // the user message it comes from (the latest, when repeated)
	// SupersededBy is the text of a later instruction that contradicts or
	// replaces this one; "" while it is current.
	SupersededBy string
}

// maxConstraintChars bounds a sentence taken as a constraint: a longer one
// is a paragraph of explanation rather than a standing instruction.
const maxConstraintChars = 400

// directives are the words that make a sentence an instruction, in any
// position of it; pairs are the two-word ones.
var (
	directives = map[string]bool{"never": true, "always": true, "must": true, "mustn't": true, "mustnt": true, "don't": true, "dont": true,
		"only": true, "keep": true, "avoid": true, "ensure": true, "stop": true, "prefer": true, "shouldn't": true, "use": true, "don’t": true, "mustn’t": true, "shouldn’t": true}
	pairs = map[string]bool{"do not": true, "make sure": true, "no longer": true, "should not": true, "please use": true, "from now": true}
)

// directiveWord finds the first directive of s, word by word: the word
// (lowercased) and its byte offset, or -1.
func directiveWord(s string) (string, int) {
	prev, prevAt := "", -1
	i := 0
	for i < len(s) {
		for i < len(s) && !wordByte(s[i]) {
			i++
		}
		start := i
		for i < len(s) && wordByte(s[i]) {
			i++
		}
		if start == i {
			break
		}
		w := strings.ToLower(s[start:i])
		if prev != "" && pairs[prev+" "+w] {
			return prev + " " + w, prevAt
		}
		if directives[w] {
			// "do" may start "do not"; a lone directive word is enough.
			return w, start
		}
		prev, prevAt = w, start
	}
	return "", -1
}

func wordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '\'' || c >= 0x80
}

// useNot matches "use X, not Y", "use X instead of Y", "X rather than Y".
var useNot = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)\buse\s+(.+?)(?:,\s*|\s+)(?:not|instead of|rather than)\s+(.+?)[.!;]*$`)
})

// negative marks a prohibition.
var negative = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)\b(never|mustn'?t|must not|do not|don'?t|dont|avoid|no longer|stop|shouldn'?t|should not)\b`)
})

// replacing marks an instruction that revises an earlier one.
var replacing = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)\b(instead|actually|from now on|no longer|anymore|any more|scratch that|change of plan|forget|ignore (?:my|the) (?:earlier|previous|last))\b`)
})

// stop words carry no subject.
var stop = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an the and or but if then else of to in on at by for with from into onto as is are be been being was were it its this that these those
		i you we me my your our us he she they them his her their there here so too very just also any all each every some no not
		never always must mustn't mustnt do does did don't dont only keep avoid make sure ensure longer stop now prefer should shouldn't please use using
		instead actually anymore more scratch change plan forget ignore earlier previous last rather than when while what which who how can could would will shall may might
		let lets let's get got have has had`) {
		stop[w] = true
	}
}

// Sentences splits a user message into sentences: at line breaks, list
// bullets and sentence ends (. ! ? followed by a space). Whitespace inside
// a sentence is kept as written.
func Sentences(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		line = strings.TrimLeft(line, "-*•> \t")
		if n := numbered().FindStringIndex(line); n != nil {
			line = line[n[1]:]
		}
		start := 0
		for i := 0; i < len(line); i++ {
			c := line[i]
			if (c == '.' || c == '!' || c == '?') && (i+1 == len(line) || line[i+1] == ' ') {
				// "e.g. " and "i.e. " do not end a sentence, nor does a
				// dot in a file name or a number (no space after it).
				if c == '.' && abbrev(line[start:i+1]) {
					continue
				}
				if s := strings.TrimSpace(line[start : i+1]); s != "" {
					out = append(out, s)
				}
				start = i + 1
			}
		}
		if s := strings.TrimSpace(line[start:]); s != "" {
			out = append(out, s)
		}
	}
	return out
}

var numbered = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\d{1,3}[.)]\s+`) })

func abbrev(s string) bool {
	l := strings.ToLower(s)
	for _, a := range []string{"e.g.", "i.e.", "etc.", "vs.", "cf."} {
		if strings.HasSuffix(l, a) {
			return true
		}
	}
	return false
}

// IsInstruction reports whether a sentence tells the agent what to do as a
// standing rule: it has a directive word, is not a question, and is short
// enough to be one rule.
func IsInstruction(s string) bool {
	if s == "" || utf8.RuneCountInString(s) > maxConstraintChars || strings.HasSuffix(s, "?") {
		return false
	}
	w, at := directiveWord(s)
	if at < 0 {
		return false
	}
	if w == "use" || w == "only" || w == "keep" || w == "stop" {
		// Weak words count at the start of a sentence ("Use X", "Only
		// touch Y", "Keep Z") or in "use X, not Y"; elsewhere they are
		// ordinary prose ("the only file", "we use it").
		return at == 0 || startsClause(s[:at]) || useNot().MatchString(s)
	}
	return true
}

// startsClause: the text before a weak directive ends a clause ("Please,",
// "and", "also", "but") so the word starts an imperative.
func startsClause(before string) bool {
	b := strings.ToLower(strings.TrimSpace(before))
	if b == "" {
		return true
	}
	if strings.HasSuffix(b, ",") || strings.HasSuffix(b, ":") || strings.HasSuffix(b, ";") {
		return true
	}
	for _, w := range []string{"please", "and", "also", "but", "so", "then", "and please", "but please", "also please"} {
		if b == w || strings.HasSuffix(b, " "+w) {
			return true
		}
	}
	return false
}

// UserText is one user message on the branch, oldest first.
type UserText struct {
	EntryID string
	Text    string
}

// ExtractConstraints collects the instructions of the user's messages
// (oldest first), merges repeats (the latest occurrence names the entry,
// the first position keeps its order) and marks each instruction a later
// one contradicts or replaces. Each sentence's features (subject words,
// polarity) are computed once, so the work is one set comparison per
// pair of current instructions, and at most maxCurrent current ones are
// compared with a new one (the latest): 10,000 instructions in one
// message took over two minutes when every pair recomputed them.
func ExtractConstraints(msgs []UserText) []Constraint {
	var out []Constraint
	var feats []features     // feats[i] describes out[i]
	var current []int        // indices of out not superseded, oldest first
	seen := map[string]int{} // normalized text -> index in out
	for _, m := range msgs {
		for _, s := range Sentences(m.Text) {
			if !IsInstruction(s) {
				continue
			}
			key := normalize(s)
			at, again := seen[key]
			later := featuresOf(s)
			kept := current[:0]
			for k, i := range current {
				if k >= len(current)-maxCurrent && (!again || i != at) && later.supersedes(feats[i]) {
					out[i].SupersededBy = s
					continue
				}
				kept = append(kept, i)
			}
			current = kept
			if again {
				// Said again: it is current again, from the latest message.
				if out[at].SupersededBy != "" {
					current = append(current, at)
				}
				out[at].EntryID = m.EntryID
				out[at].SupersededBy = ""
				continue
			}
			seen[key] = len(out)
			current = append(current, len(out))
			out = append(out, Constraint{Text: s, EntryID: m.EntryID})
			feats = append(feats, later)
		}
	}
	return out
}

// maxCurrent bounds the current instructions a new one is compared with
// (the latest ones): far above what a user states, it keeps a message of
// thousands of generated rules linear.
const maxCurrent = 200

// features are what supersedes compares of an instruction, computed once.
type features struct {
	subj     map[string]bool
	neg      bool            // a prohibition
	replaces bool            // says it revises ("instead", "from now on")
	rejected map[string]bool // Y of "use X, not Y"; nil without one
}

func featuresOf(s string) features {
	f := features{subj: subject(s), neg: negative().MatchString(s), replaces: replacing().MatchString(s)}
	if m := useNot().FindStringSubmatch(s); m != nil {
		f.rejected = subject(m[2])
	}
	return f
}

// supersedes reports whether the later instruction contradicts or
// replaces the earlier one.
func (l features) supersedes(e features) bool {
	lk, ek := l.subj, e.subj
	if len(lk) == 0 || len(ek) == 0 {
		return false
	}
	// "use X, not Y" (or "instead of Y"): an earlier instruction about Y
	// that is not itself a prohibition of Y is replaced.
	if len(l.rejected) > 0 && overlap(l.rejected, ek) == len(l.rejected) && !e.neg {
		return true
	}
	shared := overlap(lk, ek)
	if shared == 0 {
		return false
	}
	// The same subject with the opposite polarity: "Always use tabs" then
	// "Never use tabs".
	if l.neg != e.neg && shared*10 >= 6*min(len(lk), len(ek)) {
		return true
	}
	// A revision ("from now on", "instead", "no longer") about most of the
	// earlier subject.
	if l.replaces && shared*2 >= len(ek) {
		return true
	}
	return false
}

// subject is the set of content words of an instruction: lowercased, stop
// and directive words removed, light plurals folded.
func subject(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '\'' || r == '_' || r == '-' || r == '/' || r == '.')
	}) {
		w = strings.Trim(w, "'.-/")
		if len(w) < 2 || stop[w] {
			continue
		}
		if len(w) > 4 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
			w = w[:len(w)-1]
		}
		out[w] = true
	}
	return out
}

func overlap(a, b map[string]bool) int {
	n := 0
	for w := range a {
		if b[w] {
			n++
		}
	}
	return n
}

// normalize is the form under which two instructions are the same: case,
// spacing and final punctuation ignored.
func normalize(s string) string {
	s = strings.ToLower(strings.Join(strings.Fields(s), " "))
	return strings.TrimRight(s, ".!;: ")
}
