package rules

import (
	"crypto/sha256"
	"iter"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"github.com/pi-session/pi-session/gcpace"
)

// A Message is one user message, oldest first.
type Message struct {
	EntryID string
	Text    string
	// Tail is the end of a message too long to be handed over whole (a
	// caller decoding a message of megabytes from a session file): Text
	// is then its start, at least ReadHead bytes of it, and Tail its last
	// ReadTail bytes or more. "" when Text is the whole message.
	Tail string
}

// A Rule is a standing rule of the user's, as written.
type Rule struct {
	// Text is what a note shows: the sentence verbatim, after its lead-in
	// when it has one ("Testing: Run the suite with -race."), or the whole
	// short list item it stands in when that item starts with a label
	// ("`pom.xml`: managed by the release plugin. Do not change this
	// file.").
	Text string
	// Sentence is the rule's sentence alone, verbatim.
	Sentence string
	Lead     string
	// EntryID is the user message it comes from (the latest, when said
	// again).
	EntryID string
	// SupersededBy is the later sentence that revised or revoked it; ""
	// while it is current.
	SupersededBy string
	// Revoked: SupersededBy cancels the rule without stating a new one.
	Revoked bool
}

// Current reports whether the rule still holds.
func (r Rule) Current() bool { return r.SupersededBy == "" }

// maxCurrent bounds the current rules a new sentence is compared with
// (the latest ones): far above what a user states, it keeps a message of
// thousands of generated rules linear.
const maxCurrent = 200

// Classified is one unit of a message with its decision.
type Classified struct {
	Unit
	Label  int
	Scores Scores
	read   reading
}

// Classify splits a message into units and labels each with the model.
// Quoted units and lines introducing a list or code are never rules. A sentence with a parenthesis is read
// without it too: when only the parenthesis is a rule ("Start with the
// invoice endpoint (and please never force-push)."), the parenthesis is
// the rule and the sentence is not. A message longer than ReadHead and
// ReadTail together is read in its first and its last bytes only.
func (m *Model) Classify(text string) []Classified {
	return m.ClassifyMessage(Message{Text: text})
}

// ClassifyMessage is Classify of a message, which may be given by its ends
// (Message.Tail).
func (m *Model) ClassifyMessage(msg Message) []Classified {
	head, tail := msg.ends()
	out := m.classify(head, nil)
	if tail != "" {
		out = m.classify(tail, out)
	}
	return out
}

// classify appends the units of one stretch of text to out.
func (m *Model) classify(text string, out []Classified) []Classified {
	units := Split(text)
	out = slices.Grow(out, len(units))
	outer := -1 // the index in out of the sentence a Paren unit belongs to
	for _, u := range units {
		c := Classified{Unit: u}
		if !u.Quoted && !u.Intro {
			c.Scores, c.read = m.score(u.Text, u.Lead)
			c.Label = m.Label(c.Scores)
			if c.Label == LabelNot && c.Scores[LabelRevoke] < softRevoke {
				c.read = reading{} // only rules and revocations are compared later
			}
		}
		if !u.Paren {
			outer = len(out)
			out = append(out, c)
			continue
		}
		if outer >= 0 && IsRule(out[outer].Label) && IsRule(c.Label) {
			// Both read as rules: is the sentence one without it?
			rest := strings.Replace(out[outer].Text, u.Text, "", 1)
			sc := m.Predict(Features(rest, u.Lead))
			if IsRule(m.Label(sc)) {
				c.Label = LabelNot // the sentence holds it
			} else {
				out[outer].Label = LabelNot
			}
		}
		out = append(out, c)
	}
	return out
}

// Extract finds the standing rules of the messages with the default
// model.
func Extract(msgs []Message) []Rule { return Default().Extract(msgs) }

// Extract finds the standing rules of the messages (oldest first): it
// merges repeats (the first position keeps its order, the latest message
// names the entry) and marks each rule a later sentence revises or
// revokes.
func (m *Model) Extract(msgs []Message) []Rule {
	r, _ := m.ExtractSeq(slices.Values(msgs))
	return r
}

// Batches: messages are read (on several cores) and merged into the rules
// this many at a time, or this many bytes of them.
const (
	batchMessages = 256
	batchBytes    = 256 << 10
)

// MaxRules bounds the rules Extract keeps: more than a note lists (the
// newest current rules, in four times its total: 38,000 characters by
// default, some 700 rules of 50). Past it the oldest are forgotten, and
// counted.
const MaxRules = 10000

// Forgotten counts the current rules ExtractSeq let go of past MaxRules,
// and names the message of the oldest.
type Forgotten struct {
	Current int
	EntryID string
}

// ExtractSeq is Extract of messages handed over one at a time, oldest
// first. They are read in batches, and what is kept of a message is its
// rules, copied: a caller decoding messages from a session file holds one
// batch of them at a time, and the memory of a session of thousands of
// long messages stays that of the rules found, at most MaxRules of them.
func (m *Model) ExtractSeq(msgs iter.Seq[Message]) ([]Rule, Forgotten) {
	x := &extraction{m: m, seen: map[string]int{}}
	release := func() {} // the GC paced sooner, once reading is large
	defer func() { release() }()
	var batch []Message
	size, total := 0, 0
	flush := func() {
		x.merge(batch, m.classifyAll(batch))
		clear(batch) // the texts are not held past their batch
		batch, size = batch[:0], 0
		if len(x.out) > MaxRules+MaxRules/2 {
			x.forget(len(x.out) - MaxRules)
		}
	}
	for msg := range msgs {
		head, tail := msg.ends()
		n := len(head) + len(tail)
		if total += n; total-n <= 128<<10 && total > 128<<10 {
			// Reading makes about 60 bytes of short-lived garbage a byte
			// read, beside a large session held in memory: collect
			// sooner, so the peak stays near what is kept.
			release = gcpace.Sooner()
		}
		batch = append(batch, msg)
		if size += n; len(batch) >= batchMessages || size >= batchBytes {
			flush()
		}
	}
	flush()
	if len(x.out) > MaxRules {
		x.forget(len(x.out) - MaxRules)
	}
	return x.out, x.forgotten
}

// extraction is the state of ExtractSeq: the rules so far, and for each
// its subject and message.
type extraction struct {
	m    *Model
	out  []Rule
	subj []subject // by index in out; words nil when not held (subject reads it again)
	from []int     // the message each rule of out comes from
	// current are the indices of out still current, oldest first.
	current []int
	seen    map[string]int // normalized text -> index in out
	msgs    int            // messages merged so far
	// forgotten counts the current rules let go of (forget).
	forgotten Forgotten
}

// forget lets go of the oldest n rules: a later repeat of one is a new
// rule. The current ones among them are counted.
func (x *extraction) forget(n int) {
	for _, r := range x.out[:n] {
		if r.Current() {
			if x.forgotten.Current == 0 {
				x.forgotten.EntryID = r.EntryID
			}
			x.forgotten.Current++
		}
		if at, ok := x.seen[normalizeKey(r.Text)]; ok && at < n {
			delete(x.seen, normalizeKey(r.Text))
		}
	}
	for k, at := range x.seen {
		x.seen[k] = at - n
	}
	kept := x.current[:0]
	for _, i := range x.current {
		if i >= n {
			kept = append(kept, i-n)
		}
	}
	x.current = kept
	x.out = slices.Clone(x.out[n:])
	x.subj = slices.Clone(x.subj[n:])
	x.from = slices.Clone(x.from[n:])
}

// subject is the subject of rule i. Only the latest maxCurrent current
// rules are compared with a new sentence, so only theirs are held; another
// one is read again from its sentence when it is needed (a repeat makes
// an old rule current again).
func (x *extraction) subject(i int) subject {
	if x.subj[i].words == nil {
		x.subj[i] = subjectOf(x.out[i].Sentence, x.out[i].Lead)
	}
	return x.subj[i]
}

// drop marks the current rules a later sentence replaces: only the latest
// maxCurrent are looked at, so a message of thousands of rules stays
// linear.
func (x *extraction) drop(by string, revoked bool, replaced func(i int) bool) {
	from := max(len(x.current)-maxCurrent, 0)
	kept := x.current[:from]
	for _, i := range x.current[from:] {
		if replaced(i) {
			x.out[i].SupersededBy, x.out[i].Revoked = by, revoked
			x.subj[i] = subject{}
			continue
		}
		kept = append(kept, i)
	}
	x.current = kept
}

// makeCurrent appends rule i to the current rules, letting go of the
// subject of the one that leaves the latest maxCurrent.
func (x *extraction) makeCurrent(i int) {
	x.current = append(x.current, i)
	if n := len(x.current); n > maxCurrent {
		x.subj[x.current[n-maxCurrent-1]] = subject{}
	}
}

// merge adds the rules of a batch of messages, read is their units.
func (x *extraction) merge(batch []Message, read [][]Classified) {
	for k, msg := range batch {
		mi := x.msgs + k
		// Only rules of earlier messages are revised: the rules of one
		// message (a pasted guide) stand beside each other.
		earlier := func(i int) bool { return x.from[i] < mi }
		for _, c := range read[k] {
			revokes := c.Label == LabelRevoke || c.Scores[LabelRevoke] >= softRevoke
			if !revokes && !IsRule(c.Label) {
				continue
			}
			var later subject
			if c.read.norm == "" {
				later = subjectOf(c.Text, c.Lead) // from the cache: read anew
			} else {
				later = subjectRead(c.read, c.Lead)
			}
			// What is kept is copied: the message's text is not held.
			sentence := strings.Clone(c.Text)
			if revokes {
				// A revocation cancels the earlier rule it is most about; a
				// rule that only may be one needs a firmer match.
				need := 1
				if c.Label != LabelRevoke {
					need = 2
				}
				if best := x.bestMatch(later, earlier, need); best >= 0 {
					x.drop(sentence, true, func(i int) bool { return i == best })
				}
			}
			if !IsRule(c.Label) {
				continue
			}
			text := sentence
			switch {
			case c.Item != "" && !c.Paren:
				text = strings.Clone(c.Item)
			case c.Lead != "":
				if lead := leadFor(c.Lead, c.Text); lead != "" {
					text = lead + ": " + sentence
				}
			}
			key := normalizeKey(text)
			at, again := x.seen[key]
			if !again {
				at = -1
			}
			// A revision replaces the earlier rule it is most about, with
			// two words in common (or an identifier), one when the model
			// reads the sentence as a revision.
			best := -1
			if c.Label == LabelRevise || later.revises || c.Scores[LabelRevise] >= softRevise {
				need := 2
				if c.Scores[LabelRevise] >= 0.5 {
					need = 1 // the model reads it as a revision
				}
				best = x.bestMatch(later, func(i int) bool { return i != at && earlier(i) }, need)
			}
			x.drop(sentence, false, func(i int) bool {
				return i != at && (i == best || earlier(i) && later.supersedes(x.subject(i)))
			})
			if again {
				if !x.out[at].Current() {
					x.makeCurrent(at)
				}
				x.out[at].EntryID = msg.EntryID
				x.out[at].SupersededBy, x.out[at].Revoked = "", false
				continue
			}
			x.seen[key] = len(x.out)
			x.out = append(x.out, Rule{Text: text, Sentence: sentence, Lead: strings.Clone(c.Lead), EntryID: msg.EntryID})
			x.subj = append(x.subj, later)
			x.from = append(x.from, mi)
			x.makeCurrent(len(x.out) - 1)
		}
	}
	x.msgs += len(batch)
}

// leadFor is the part of a lead a sentence does not already say.
func leadFor(lead, text string) string {
	var keep []string
	for _, p := range strings.Split(lead, " › ") {
		if !strings.Contains(text, p) {
			keep = append(keep, p)
		}
	}
	return strings.Join(keep, " › ")
}

// classifyAll classifies the messages, on as many cores as there are (up
// to four): the messages are independent, and a long session has
// thousands. A message read before by this model (in an engine host, at
// an earlier relay) is not read again.
func (m *Model) classifyAll(msgs []Message) [][]Classified {
	out := make([][]Classified, len(msgs))
	type stretch struct {
		head, tail string
		key        cacheKey
	}
	parts := make([]stretch, len(msgs))
	var todo []int
	for i, msg := range msgs {
		head, tail := msg.ends()
		p := stretch{head: head, tail: tail, key: keyOf(head, tail)}
		parts[i] = p
		if c, ok := m.cache.get(p.key); ok {
			out[i] = c
		} else {
			todo = append(todo, i)
		}
	}
	defer func() {
		for _, i := range todo {
			m.cache.put(parts[i].key, cacheable(out[i]))
		}
	}()
	read := func(i int) []Classified {
		c := m.classify(parts[i].head, nil)
		if parts[i].tail != "" {
			c = m.classify(parts[i].tail, c)
		}
		return c
	}
	workers := min(runtime.GOMAXPROCS(0), 4, max(len(todo)/16, 1))
	if workers <= 1 {
		for _, i := range todo {
			out[i] = read(i)
		}
		return out
	}
	var wg sync.WaitGroup
	var next atomic.Int64
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := int(next.Add(1) - 1)
				if k >= len(todo) {
					return
				}
				out[todo[k]] = read(todo[k])
			}
		}()
	}
	wg.Wait()
	return out
}

// A sentence taken for a rule may still revoke or revise: from these
// probabilities on it is compared with the earlier rules.
const (
	softRevoke = 0.2
	softRevise = 0.3
)

// bestMatch finds the current rule (among the latest maxCurrent that ok
// accepts) a revision or revocation is about: the one sharing the most
// subject with it (identifiers count double, what it rejects three
// times), at least need; a tie goes to the rule whose shared word comes
// first in the later sentence (its topic, not its new value). -1 when
// none.
func (x *extraction) bestMatch(s subject, ok func(int) bool, need int) int {
	best, top, topAt := -1, 0, 0
	for _, i := range x.current[max(len(x.current)-maxCurrent, 0):] {
		if !ok(i) {
			continue
		}
		sc := 0
		switch e := x.subject(i); {
		case len(s.rejected) > 0 && e.neg:
			// "X instead of Y" agrees with a rule against Y: only what
			// it shares outside Y counts.
			sc = weighted(minus(s.words, s.rejected), e.words)
		case len(s.rejected) > 0:
			sc = weighted(s.words, e.words) + 2*weighted(s.rejected, e.words)
		default:
			sc = weighted(s.words, e.words)
		}
		if sc < need || sc < top {
			continue
		}
		at := s.firstShared(x.subject(i).words)
		if sc > top || at < topAt {
			best, top, topAt = i, sc, at
		}
	}
	return best
}

// firstShared is the position in s's words of the first one other has.
func (s subject) firstShared(other map[string]bool) int {
	for i, w := range s.order {
		if other[w] {
			return i
		}
	}
	return len(s.order)
}

// normalizeKey is the form under which two rules are the same: case,
// width, spacing and final punctuation ignored.
func normalizeKey(s string) string {
	return strings.TrimRightFunc(Normalize(s), func(r rune) bool { return unicode.IsPunct(r) || unicode.IsSpace(r) })
}

// subject is what a rule is about, for comparing two rules: its content
// words (function and cue words removed, folded to a short stem), its
// CJK character pairs, its polarity and whether it revises.
type subject struct {
	words    map[string]bool
	sig      uint64   // a bit per word's hash: two subjects with no bit in common share no word
	order    []string // the words in the sentence's order
	neg      bool
	revises  bool
	rejected map[string]bool // Y of "X instead of Y", "X, not Y"
}

func subjectOf(sentence, lead string) subject {
	s := Normalize(clip(sentence))
	toks := tokens(s)
	return subjectRead(reading{norm: s, toks: toks, cues: cueClasses(s, toks)}, lead)
}

// subjectRead is subjectOf from a sentence already read.
func subjectRead(r reading, lead string) subject {
	s, toks := r.norm, r.toks
	sub := subject{order: contentWordList(toks)}
	sub.words = map[string]bool{}
	for _, w := range sub.order {
		sub.words[w] = true
	}
	if lead != "" {
		for w := range contentWords(tokens(Normalize(lead))) {
			sub.words[w] = true
		}
	}
	for w := range sub.words {
		sub.sig |= wordBit(w)
	}
	for _, c := range r.cues {
		switch c.cls {
		case "neg":
			sub.neg = true
		case "revise":
			sub.revises = true
		}
	}
	if y := rejectedPart(s); y != "" {
		sub.rejected = firstWords(contentWordList(tokens(y)), 2)
		sub.revises = true
		// "Use spaces, not tabs" states a positive rule about spaces; its
		// "not" is about what it replaces.
		sub.neg = negative(strings.Replace(s, y, "", 1))
	}
	return sub
}

func wordBit(w string) uint64 {
	h := uint32(2166136261)
	for i := 0; i < len(w); i++ {
		h = (h ^ uint32(w[i])) * 16777619
	}
	return 1 << (h % 64)
}

func negative(s string) bool {
	for _, c := range cueClasses(s, tokens(s)) {
		if c.cls == "neg" {
			return true
		}
	}
	return false
}

// rejectedMarks introduce what a revision replaces: "X instead of Y",
// "X rather than Y", "X, not Y", and their forms in other languages;
// the text after the mark, to the end of its clause, is Y.
var rejectedMarks = []string{" instead of ", " rather than ", ", not ", " not ", " statt ", " anstatt ", " anstelle von ", ", nicht ", " au lieu de ", " plutôt que ", ", pas ", " en lugar de ", " en vez de ", ", no ", " em vez de ", " ao invés de ", " no lugar de ", ", não ", " вместо ", ", а не ", " а не "}

// rejectedBefore marks come after what is replaced (CJK: "YではなくX",
// "X而不是Y" is after; "Y 대신 X" before).
var rejectedBefore = []string{"ではなく", "じゃなくて", "の代わりに", "ではなくて", "대신", "말고", "不要用", "不用"}
var rejectedAfter = []string{"而不是", "而非", "代替"}

func rejectedPart(s string) string {
	for _, m := range rejectedMarks {
		if i := strings.Index(s, m); i > 0 {
			y := s[i+len(m):]
			if j := strings.IndexAny(y, ",;.!?"); j >= 0 {
				y = y[:j]
			}
			if m == " not " && !strings.Contains(s[:i], "use") {
				continue
			}
			return strings.TrimSpace(y)
		}
	}
	for _, m := range rejectedBefore {
		if i := strings.Index(s, m); i > 0 {
			y := s[:i]
			if j := strings.LastIndexAny(y, "、,，。 "); j >= 0 {
				y = y[j+1:]
			}
			return y
		}
	}
	for _, m := range rejectedAfter {
		if i := strings.Index(s, m); i >= 0 {
			y := s[i+len(m):]
			if j := strings.IndexAny(y, "、,，。"); j >= 0 {
				y = y[:j]
			}
			return y
		}
	}
	return ""
}

// contentWords are the subject words of tokens: not cue words nor short
// function words; European words cut to a stem of six letters, Korean
// words to their first two syllables, CJK runs as character pairs with
// pairs of kana alone (endings, particles) left out.
func contentWords(toks []token) map[string]bool {
	out := map[string]bool{}
	for _, w := range contentWordList(toks) {
		out[w] = true
	}
	return out
}

func firstWords(list []string, n int) map[string]bool {
	out := map[string]bool{}
	for _, w := range list {
		if len(out) == n {
			break
		}
		out[w] = true
	}
	return out
}

// contentWordList is contentWords in order, repeats kept.
func contentWordList(toks []token) []string {
	var out []string
	for _, t := range toks {
		if t.cjk {
			r := []rune(t.text)
			for i := 0; i+1 < len(r); i++ {
				if kana(r[i]) && kana(r[i+1]) {
					continue
				}
				out = append(out, string(r[i:i+2]))
			}
			if len(r) == 1 && !kana(r[0]) {
				out = append(out, t.text)
			}
			continue
		}
		w := strings.Trim(t.text, "'_")
		if utf8.RuneCountInString(w) < 2 || stopWord(w) {
			continue
		}
		r := []rune(w)
		if isHangulWord(w) {
			if len(r) > 2 {
				r = r[:2]
			}
		} else {
			r = []rune(stem(w))
			if len(r) > 6 {
				r = r[:6]
			}
		}
		out = append(out, string(r))
	}
	return out
}

func kana(r rune) bool {
	return unicode.Is(unicode.Hiragana, r) || r == 'ー'
}

// stopWord: cue words and the commonest function words of the languages
// the model reads carry no subject.
func stopWord(w string) bool {
	if stopSet()[w] {
		return true
	}
	return false
}

var stopSet = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, list := range cueList {
		for _, c := range strings.Fields(list) {
			if !strings.Contains(c, "_") && !strings.HasSuffix(c, "*") {
				m[c] = true
			}
		}
	}
	for _, w := range strings.Fields(`a an the and or but of to in on at by for with from into as is are be been it its this that these those there here so too very just also
			do does use using make keep run get set let file files code
			der die das ein eine einen und oder aber von zu im in am an auf mit für ist sind wird werden es dass den dem des nur auch bei
			le la les un une des et ou mais de du au aux en dans sur avec pour par est sont ce cette ces que qui il
			el la los las un una unos y o pero de del al en con para por es son que se lo
			o a os as um uma e ou mas de do da dos das em no na com para por é são que se
			и или но в во на с со к по за из у о от до для это что как же то
			및 또는 그리고 이 그 저 것 수 등 를 을 은 는 이 가 에 의 로`) {
		m[w] = true
	}
	return m
})

// weighted is the overlap of two subjects with identifiers (words with
// digits, underscores, dots or slashes) counted twice.
func weighted(a, b map[string]bool) int {
	if len(a) > len(b) {
		a, b = b, a
	}
	n := 0
	for w := range a {
		if b[w] {
			n++
			if strings.ContainsAny(w, "0123456789_./") {
				n++
			}
		}
	}
	return n
}

// minus is a without the words of b.
func minus(a, b map[string]bool) map[string]bool {
	out := make(map[string]bool, len(a))
	for w := range a {
		if !b[w] {
			out[w] = true
		}
	}
	return out
}

func overlap(a, b map[string]bool) int {
	if len(a) > len(b) {
		a, b = b, a
	}
	n := 0
	for w := range a {
		if b[w] {
			n++
		}
	}
	return n
}

// supersedes reports whether a later rule replaces an earlier one: it
// rejects what the earlier one asks for ("use spaces, not tabs" after
// "use tabs"), says the opposite about the same subject ("never squash"
// after "always squash"), or revises ("from now on", "instead", "actually")
// most of the earlier one's subject.
func (l subject) supersedes(e subject) bool {
	if len(l.words) == 0 || len(e.words) == 0 || l.sig&e.sig == 0 {
		return false
	}
	if len(l.rejected) == 0 && !l.revises && l.neg == e.neg {
		return false // none of the three ways applies: no need to compare words
	}
	if len(l.rejected) > 0 && !e.neg && overlap(l.rejected, e.words)*2 >= len(l.rejected) && overlap(l.rejected, e.words) > 0 {
		return true
	}
	shared := overlap(l.words, e.words)
	if shared == 0 {
		return false
	}
	small := min(len(l.words), len(e.words))
	if l.neg != e.neg && shared*10 >= 6*small {
		return true
	}
	if l.revises && shared*2 >= len(e.words) {
		return true
	}
	return false
}

// revokes reports whether a revocation is about an earlier rule: it
// shares most of the smaller subject.
func (r subject) revokes(e subject) bool {
	shared := overlap(r.words, e.words)
	if shared == 0 {
		return false
	}
	return shared*2 >= min(len(r.words), len(e.words))
}

// endings are inflections a stem loses (the longest that leaves three
// letters): enough to match "commits" with "commit", "пишем" with "пиши",
// "änderst" with "ändern".
var endings = func() [][]string {
	lists := []string{
		// Russian
		"ями ами ого ему ыми ими ешь ете ите ишь ите ует уют ает ают яет яют ем ет ит ат ят ут ют ый ий ая яя ое ее ые ие ов ев ам ям ах ях ом ой ей ую юю ть ся сь у ю а я ы и е о ь й",
		// Romance and Germanic
		"ations ation ments ment ingen ungen ing ung ions ion ción ções ção ciones tions tion ers ern est ten ent ant ées és ée er en es em et st ed ly s e a o",
	}
	var out [][]string
	for _, l := range lists {
		f := strings.Fields(l)
		sort.Slice(f, func(i, j int) bool { return utf8.RuneCountInString(f[i]) > utf8.RuneCountInString(f[j]) })
		out = append(out, f)
	}
	return out
}()

// endingsByLast are the endings by their last rune, longest first.
var endingsByLast = func() map[rune][]string {
	m := map[rune][]string{}
	for _, list := range endings {
		for _, e := range list {
			r, _ := utf8.DecodeLastRuneInString(e)
			m[r] = append(m[r], e)
		}
	}
	for r := range m {
		sort.SliceStable(m[r], func(i, j int) bool { return len(m[r][i]) > len(m[r][j]) })
	}
	return m
}()

// stem strips one inflectional ending from a word of a Latin or Cyrillic
// script.
func stem(w string) string {
	last, _ := utf8.DecodeLastRuneInString(w)
	cands := endingsByLast[last]
	if len(cands) == 0 {
		return w
	}
	n := utf8.RuneCountInString(w)
	for _, e := range cands {
		if strings.HasSuffix(w, e) && n-utf8.RuneCountInString(e) >= 3 {
			return strings.TrimSuffix(w, e)
		}
	}
	return w
}

// classCache remembers the units of messages a model read, by a hash of
// what was read of them: at most cacheMessages of them, the oldest
// forgotten first. It holds only the units Extract looks at again (rules
// and revocations), copied, never a message's text. Safe for concurrent
// use.
type classCache struct {
	mu    sync.Mutex
	byKey map[cacheKey][]Classified
	order []cacheKey
	bytes int // held, about (see size)
}

// cacheKey names what was read of a message: a SHA-256 of its head and
// its tail.
type cacheKey [sha256.Size]byte

func keyOf(head, tail string) cacheKey {
	h := sha256.New()
	h.Write([]byte(head))
	if tail != "" {
		h.Write([]byte{0})
		h.Write([]byte(tail))
	}
	var k cacheKey
	h.Sum(k[:0])
	return k
}

// cacheable is what the cache keeps of a message's units: its rules and
// revocations, their text copied, without the reading behind their
// features (most of the memory; read anew when needed).
func cacheable(units []Classified) []Classified {
	var kept []Classified
	for _, c := range units {
		if !IsRule(c.Label) && c.Label != LabelRevoke && c.Scores[LabelRevoke] < softRevoke {
			continue
		}
		c.read = reading{}
		c.Text, c.Lead, c.Item = strings.Clone(c.Text), strings.Clone(c.Lead), strings.Clone(c.Item)
		kept = append(kept, c)
	}
	return kept
}

// cacheMessages and cacheBytes bound what a model remembers: the user
// messages of several long sessions, not those of sessions of thousands
// of pasted documents.
const (
	cacheMessages = 50000
	cacheBytes    = 8 << 20
)

// size is about what units hold in memory: a Classified is some 150
// bytes, and its texts.
func size(units []Classified) int {
	n := len(units) * 150
	for _, c := range units {
		n += len(c.Text) + len(c.Lead) + len(c.Item)
	}
	return n
}

func (c *classCache) get(k cacheKey) ([]Classified, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.byKey[k]
	return v, ok
}

func (c *classCache) put(k cacheKey, v []Classified) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byKey == nil {
		c.byKey = map[cacheKey][]Classified{}
	}
	if _, ok := c.byKey[k]; ok {
		return
	}
	c.byKey[k] = v
	c.order = append(c.order, k)
	c.bytes += size(v)
	for len(c.order) > cacheMessages || c.bytes > cacheBytes && len(c.order) > 1 {
		c.bytes -= size(c.byKey[c.order[0]])
		delete(c.byKey, c.order[0])
		c.order = c.order[1:]
	}
}
