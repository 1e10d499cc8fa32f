package session

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// pi estimates tokens as characters/4, rounded up, per message
// (estimateTokens in pi's core/compaction/compaction.js). Characters are
// JavaScript string lengths: UTF-16 code units. Tool call arguments and tool
// declarations count as the length of their JSON.stringify text.

// estimatedImageChars is what pi counts for an image block.
const estimatedImageChars = 4800

// Tokens returns pi's token estimate for the message (pi's estimateTokens).
func (m Message) Tokens() int { return ceilQuarter(messageChars(m.Role, m.Raw)) }

// EstimateTokens returns the sum of [Message.Tokens] over msgs: pi's
// character-based estimate of a projected context.
func EstimateTokens(msgs []Message) int {
	n := 0
	for _, m := range msgs {
		n += m.Tokens()
	}
	return n
}

func ceilQuarter(chars int) int { return (chars + 3) / 4 }

func messageChars(role string, raw []byte) int {
	get := func(key string) span { return memberSpan(raw, key) }
	switch role {
	case "system":
		n := contentChars(raw, get("content"))
		if s := get("sections"); s.isObject(raw) {
			_, _ = forEachMember(raw, s.start, func(_ []byte, start int) (int, error) {
				if raw[start] == '"' {
					end, err := skipString(raw, start)
					n += jsLen(raw[start:end])
					return end, err
				}
				return 0, nil
			})
		}
		if t := get("toolsAdded"); truthy(raw, t) {
			n += stringifyLen(raw[t.start:t.end])
		}
		return n
	case "user", "custom", "toolResult":
		return contentChars(raw, get("content"))
	case "assistant":
		n := 0
		forEachBlock(raw, get("content"), func(b []byte) {
			switch memberSpan(b, "type").str(b) {
			case "text":
				n += strLen(b, memberSpan(b, "text"))
			case "thinking":
				n += strLen(b, memberSpan(b, "thinking"))
			case "toolCall":
				n += strLen(b, memberSpan(b, "name"))
				if a := memberSpan(b, "arguments"); a.ok() {
					n += stringifyLen(b[a.start:a.end])
				}
			}
		})
		return n
	case "bashExecution":
		return strLen(raw, get("command")) + strLen(raw, get("output"))
	case "branchSummary", "compactionSummary":
		return strLen(raw, get("summary"))
	}
	return 0
}

// contentChars is pi's estimateTextAndImageContentChars.
func contentChars(raw []byte, c span) int {
	if c.isString(raw) {
		return jsLen(raw[c.start:c.end])
	}
	n := 0
	forEachBlock(raw, c, func(b []byte) {
		switch memberSpan(b, "type").str(b) {
		case "text":
			n += strLen(b, memberSpan(b, "text"))
		case "image":
			n += estimatedImageChars
		}
	})
	return n
}

// forEachBlock calls fn with each object element of the array at s.
func forEachBlock(raw []byte, s span, fn func(block []byte)) {
	if !s.isArray(raw) {
		return
	}
	i := skipSpace(raw, s.start+1)
	for i < s.end && raw[i] != ']' {
		end, err := skipValue(raw, i)
		if err != nil {
			return
		}
		if raw[i] == '{' {
			fn(raw[i:end])
		}
		i = skipSpace(raw, end)
		if i < s.end && raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
}

// strLen is the JavaScript length of a string value, 0 for anything else.
func strLen(raw []byte, s span) int {
	if !s.isString(raw) {
		return 0
	}
	return jsLen(raw[s.start:s.end])
}

// jsLen returns the length in UTF-16 code units of the JSON string q (with
// its quotes), after unescaping. Invalid UTF-8 counts one unit per bad byte.
func jsLen(q []byte) int {
	n := 0
	for i := 1; i < len(q)-1; {
		c := q[i]
		switch {
		case c == '\\':
			if q[i+1] == 'u' {
				i += 6
			} else {
				i += 2
			}
			n++
		case c < utf8.RuneSelf:
			i++
			n++
		default:
			_, size := utf8.DecodeRune(q[i:])
			if size == 4 {
				n += 2
			} else {
				n++
			}
			i += size
		}
	}
	return n
}

// stringifyLen returns len(JSON.stringify(JSON.parse(v))) in UTF-16 code
// units for the valid JSON value v. (Duplicate keys, which JSON.parse
// merges, are counted twice.)
func stringifyLen(v []byte) int {
	n := 0
	for i := 0; i < len(v); {
		switch c := v[i]; {
		case isSpace(c):
			i++
		case c == '"':
			end, err := skipString(v, i)
			if err != nil {
				return n
			}
			n += quotedLen(v[i:end])
			i = end
		case c == '-' || '0' <= c && c <= '9':
			end, err := skipNumber(v, i)
			if err != nil {
				return n
			}
			f, _ := strconv.ParseFloat(string(v[i:end]), 64)
			if math.IsInf(f, 0) {
				n += len("null") // JSON.stringify(Infinity)
			} else {
				n += len(jsNumber(f))
			}
			i = end
		default: // punctuation and true/false/null
			i++
			n++
		}
	}
	return n
}

// quotedLen is the length of JSON.stringify of the string q (a raw JSON
// string, quotes included) in UTF-16 code units.
func quotedLen(q []byte) int {
	n := 2
	pendingHigh := false // the previous unit was a high surrogate
	unit := func(u rune) {
		if pendingHigh {
			pendingHigh = false
			if 0xDC00 <= u && u <= 0xDFFF {
				n += 1 + 1 // a pair is written as is
				return
			}
			n += 6 // lone high surrogate: \udXXX
		}
		switch {
		case 0xD800 <= u && u <= 0xDBFF:
			pendingHigh = true
		case 0xDC00 <= u && u <= 0xDFFF:
			n += 6
		case u == '"' || u == '\\' || u == '\b' || u == '\f' || u == '\n' || u == '\r' || u == '\t':
			n += 2
		case u < 0x20:
			n += 6
		default:
			n++
		}
	}
	for i := 1; i < len(q)-1; {
		c := q[i]
		switch {
		case c == '\\':
			switch q[i+1] {
			case 'u':
				v, _ := strconv.ParseUint(string(q[i+2:i+6]), 16, 16)
				unit(rune(v))
				i += 6
				continue
			case 'b':
				unit('\b')
			case 'f':
				unit('\f')
			case 'n':
				unit('\n')
			case 'r':
				unit('\r')
			case 't':
				unit('\t')
			default:
				unit(rune(q[i+1]))
			}
			i += 2
		case c < utf8.RuneSelf:
			unit(rune(c))
			i++
		default:
			r, size := utf8.DecodeRune(q[i:])
			if size == 4 {
				hi, lo := utf16.EncodeRune(r)
				unit(hi)
				unit(lo)
			} else {
				unit(r)
			}
			i += size
		}
	}
	if pendingHigh {
		n += 6
	}
	return n
}

// jsNumber formats f as JavaScript's Number.prototype.toString does.
func jsNumber(f float64) string {
	switch {
	case f == 0:
		return "0"
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	sign := ""
	if f < 0 {
		sign, f = "-", -f
	}
	// Shortest round-trip digits d1.d2...dk and exponent: value = 0.d1...dk × 10^n.
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mant, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	k, n := len(digits), x+1
	switch {
	case k <= n && n <= 21:
		return sign + digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		return sign + digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		return sign + "0." + strings.Repeat("0", -n) + digits
	}
	s := digits[:1]
	if k > 1 {
		s += "." + digits[1:]
	}
	if n-1 >= 0 {
		return sign + s + "e+" + strconv.Itoa(n-1)
	}
	return sign + s + "e-" + strconv.Itoa(1-n)
}

// ContextTokens is pi's estimate of how many tokens a projected context
// takes (estimateProjectedContextTokens): the usage the model reported for
// the last valid assistant message plus estimates of the messages after it,
// unless a context_edit or compaction on the branch came after that message,
// in which case every message is estimated (system messages replayed into
// one, as the provider sees them).
type ContextTokens struct {
	Tokens         int
	UsageTokens    int // from the model's usage report, 0 if estimated
	TrailingTokens int // estimated
	LastUsage      int // index in the messages of the message whose usage counts, -1 if none
}

// EstimateContextTokens returns pi's context size estimate for msgs, the
// projection of branch.
func EstimateContextTokens(branch []*Entry, msgs []Message) ContextTokens {
	for i := len(msgs) - 1; i >= 0; i-- {
		usage, ok := assistantUsage(msgs[i])
		if !ok {
			continue
		}
		est := ContextTokens{UsageTokens: usage, LastUsage: i}
		for _, m := range msgs[i+1:] {
			est.TrailingTokens += m.Tokens()
		}
		est.Tokens = est.UsageTokens + est.TrailingTokens
		usageAt, invalidAt := -1, -1
		for j, e := range branch {
			if usageAt < 0 && e.ID == msgs[i].EntryID {
				usageAt = j
			}
			if e.Type == "context_edit" || e.Type == "compaction" {
				invalidAt = j
			}
		}
		if usageAt > invalidAt {
			return est
		}
		break
	}
	n := ceilQuarter(currentSystemChars(msgs))
	for _, m := range msgs {
		if m.Role != "system" {
			n += m.Tokens()
		}
	}
	return ContextTokens{Tokens: n, TrailingTokens: n, LastUsage: -1}
}

// assistantUsage is pi's getAssistantUsage with calculateContextTokens.
func assistantUsage(m Message) (int, bool) {
	if m.Role != "assistant" {
		return 0, false
	}
	switch memberSpan(m.Raw, "stopReason").str(m.Raw) {
	case "aborted", "error":
		return 0, false
	}
	u := memberSpan(m.Raw, "usage")
	if !u.isObject(m.Raw) {
		return 0, false
	}
	usage := m.Raw[u.start:u.end]
	num := func(key string) float64 {
		s := memberSpan(usage, key)
		if !s.isNumber(usage) {
			return 0
		}
		f, _ := strconv.ParseFloat(string(usage[s.start:s.end]), 64)
		return f
	}
	total := num("totalTokens")
	if total == 0 {
		total = num("input") + num("output") + num("cacheRead") + num("cacheWrite")
	}
	return int(total), total > 0
}

// currentSystemChars is the estimated length of pi's getCurrentSystemMessage
// of msgs (the replay of every system message), 0 if there is none.
func currentSystemChars(msgs []Message) int {
	var texts []int
	sections := make(map[string]int)
	tools := make(map[string]int)
	stamp := 0 // 0 undefined, 1 null, 2 set: `timestamp ??= message.timestamp`
	for _, m := range msgs {
		if m.Role != "system" {
			continue
		}
		raw := m.Raw
		if stamp < 2 {
			switch ts := memberSpan(raw, "timestamp"); {
			case !ts.ok():
				stamp = 0
			case ts.isNull(raw):
				stamp = 1
			default:
				stamp = 2
			}
		}
		if n := contentTextLen(raw, memberSpan(raw, "content")); n > 0 {
			texts = append(texts, n)
		}
		if s := memberSpan(raw, "sections"); s.isObject(raw) {
			_, _ = forEachMember(raw, s.start, func(k []byte, start int) (int, error) {
				name, _ := unquote(k)
				end, err := skipValue(raw, start)
				switch {
				case raw[start] == 'n':
					delete(sections, name)
				case raw[start] == '"':
					sections[name] = jsLen(raw[start:end])
				default:
					sections[name] = 0
				}
				return end, err
			})
		}
		forEachBlock(raw, memberSpan(raw, "toolsRemoved"), func(t []byte) {
			delete(tools, memberSpan(t, "name").str(t))
		})
		forEachBlock(raw, memberSpan(raw, "toolsAdded"), func(t []byte) {
			tools[memberSpan(t, "name").str(t)] = stringifyLen(t)
		})
	}
	if stamp == 0 && len(tools) == 0 {
		return 0
	}
	n := 0
	for i, t := range texts {
		if i > 0 {
			n += 2 // "\n\n"
		}
		n += t
	}
	for _, s := range sections {
		n += s
	}
	if len(tools) > 0 {
		n += 2 + len(tools) - 1
		for _, t := range tools {
			n += t
		}
	}
	return n
}

// contentTextLen is the length of pi's contentText(content): a string, or
// the text blocks joined with "\n".
func contentTextLen(raw []byte, c span) int {
	if c.isString(raw) {
		return jsLen(raw[c.start:c.end])
	}
	n, blocks := 0, 0
	forEachBlock(raw, c, func(b []byte) {
		if memberSpan(b, "type").str(b) == "text" {
			if blocks > 0 {
				n++
			}
			blocks++
			n += strLen(b, memberSpan(b, "text"))
		}
	})
	return n
}
