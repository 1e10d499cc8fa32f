package session

import (
	"encoding/binary"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/pi-session/pi-session/jsonscan"
)

// pi estimates tokens as characters/4, rounded up, per message
// (estimateTokens in pi's core/compaction/compaction.js). Characters are
// JavaScript string lengths: UTF-16 code units. Tool call arguments and tool
// declarations count as the length of their JSON.stringify text.

// estimatedImageChars is what pi counts for an image block.
const estimatedImageChars = 4800

// Tokens returns pi's token estimate for the message (pi's estimateTokens).
// The estimate of a message stored in an entry is computed once and kept
// with the entry.
func (m Message) Tokens() int {
	if m.src == nil {
		return ceilQuarter(messageChars(m.Role, m.Raw))
	}
	if t := atomic.LoadInt64(&m.src.tokens); t > 0 {
		return int(t - 1)
	}
	t := ceilQuarter(messageChars(m.Role, m.Raw))
	atomic.StoreInt64(&m.src.tokens, int64(t)+1)
	return t
}

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
	switch role {
	case "system", "user", "custom", "toolResult", "assistant", "bashExecution", "branchSummary", "compactionSummary":
	default:
		return 0
	}
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return 0
	}
	// One pass over the message; content blocks are measured on the way.
	n := 0
	_, _ = forEachMember(raw, i, func(key []byte, start int) (int, error) {
		measure := false
		switch string(keyName(key)) {
		case "content":
			switch {
			case role == "bashExecution" || role == "branchSummary" || role == "compactionSummary":
			case raw[start] == '"' && role != "assistant":
				measure = true
			case raw[start] == '[':
				chars, end, err := blocksChars(raw, start, role == "assistant")
				n += chars
				return end, err
			}
		case "sections":
			if role == "system" && raw[start] == '{' {
				return forEachMember(raw, start, func(_ []byte, start int) (int, error) {
					if raw[start] == '"' {
						end, units, err := stringUnits(raw, start)
						n += units
						return end, err
					}
					return 0, nil
				})
			}
		case "toolsAdded":
			if role == "system" {
				end, err := skipValue(raw, start)
				if err == nil && truthy(raw, span{start, end}) {
					n += stringifyLen(raw[start:end])
				}
				return end, err
			}
		case "command", "output":
			measure = role == "bashExecution"
		case "summary":
			measure = role == "branchSummary" || role == "compactionSummary"
		}
		if measure && raw[start] == '"' {
			end, units, err := stringUnits(raw, start)
			n += units
			return end, err
		}
		return 0, nil
	})
	return n
}

// blocksChars measures the content blocks of the array at raw[i]: text and
// images (pi's estimateTextAndImageContentChars), or for an assistant text,
// thinking and tool calls. It returns the end of the array.
func blocksChars(raw []byte, i int, assistant bool) (n, end int, err error) {
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == ']' {
		return 0, i + 1, nil
	}
	for {
		if i >= len(raw) {
			return n, i, errAt(i, "unexpected end of line")
		}
		if raw[i] == '{' {
			typ, args := absent, absent
			text, thinking, name := 0, 0, 0 // lengths of string members
			i, err = forEachMember(raw, i, func(key []byte, start int) (int, error) {
				var units *int
				switch string(keyName(key)) {
				case "type":
					end, err := skipValue(raw, start)
					typ = span{start, end}
					return end, err
				case "arguments":
					end, err := skipValue(raw, start)
					args = span{start, end}
					return end, err
				case "text":
					units = &text
				case "thinking":
					units = &thinking
				case "name":
					units = &name
				default:
					return 0, nil
				}
				*units = 0
				if raw[start] != '"' {
					return 0, nil
				}
				end, n, err := stringUnits(raw, start)
				*units = n
				return end, err
			})
			if err != nil {
				return n, i, err
			}
			switch t := string(raw[max(typ.start, 0):max(typ.end, 0)]); {
			case t == `"text"`:
				n += text
			case t == `"image"` && !assistant:
				n += estimatedImageChars
			case t == `"thinking"` && assistant:
				n += thinking
			case t == `"toolCall"` && assistant:
				n += name
				if args.ok() {
					n += stringifyLen(raw[args.start:args.end])
				}
			}
		} else if i, err = skipValue(raw, i); err != nil {
			return n, i, err
		}
		i = skipSpace(raw, i)
		if i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
			continue
		}
		if i < len(raw) && raw[i] == ']' {
			return n, i + 1, nil
		}
		return n, i, errAt(i, "want ',' or ']' after array element")
	}
}

// keyName returns a raw member key without its quotes, decoded if it holds
// escapes.
func keyName(key []byte) []byte {
	if hasEscape(key) {
		s, _ := jsonscan.Unquote(key)
		return []byte(s)
	}
	return key[1 : len(key)-1]
}

// contentChars is pi's estimateTextAndImageContentChars.
func contentChars(raw []byte, c span) int {
	switch {
	case c.isString(raw):
		return jsLen(raw[c.start:c.end])
	case c.isArray(raw):
		n, _, _ := blocksChars(raw, c.start, false)
		return n
	}
	return 0
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
	_, n, _ := stringUnits(q, 0)
	return n
}

// asciiRun is where the run of plain ASCII from b[i] ends, read eight
// bytes at a time: at the first special byte (a quote, a backslash, a
// control character) or non-ASCII byte, or where fewer than eight are left.
func asciiRun(b []byte, i int) int {
	for i+8 <= len(b) {
		w := binary.LittleEndian.Uint64(b[i:])
		if m := specialMask(w) | w&msb; m != 0 { // specials and non-ASCII bytes
			return i + bits.TrailingZeros64(m)/8
		}
		i += 8
	}
	return i
}

// stringUnits is skipString that also counts the UTF-16 code units of the
// string starting at b[i] == '"': it returns the index after the string and
// the count.
func stringUnits(b []byte, i int) (end, units int, err error) {
	start := i
	i++
	n := 0
	for {
		j := asciiRun(b, i)
		n += j - i
		i = j
		if i >= len(b) {
			return i, n, errAt(start, "unterminated string")
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, n, nil
		case c == '\\':
			if i+1 >= len(b) {
				return i, n, errAt(start, "unterminated string")
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex4(b[i+2:i+6]) {
					return i, n, errAt(i, `invalid \u escape in string`)
				}
				i += 6
			default:
				return i, n, errAt(i, "invalid escape %q in string", b[i:i+2])
			}
			n++
		case c < 0x20:
			return i, n, errAt(i, "control character 0x%02x in string", c)
		case c < utf8.RuneSelf:
			i++
			n++
		case cjk3(b, i):
			// Three bytes whose second byte any continuation byte may be
			// (most of CJK): one code unit each, without decoding.
			for i += 3; cjk3(b, i); i += 3 {
				n++
			}
			n++
		default:
			_, size := utf8.DecodeRune(b[i:])
			if size == 4 {
				n += 2
			} else {
				n++
			}
			i += size
		}
	}
}

// cjk3 reports whether b[i:] starts with a three-byte character led by
// E1-EC or EE-EF, whose second byte may be any continuation byte.
func cjk3(b []byte, i int) bool {
	if i+2 >= len(b) {
		return false
	}
	c := b[i]
	return 0xE1 <= c && c <= 0xEF && c != 0xED && b[i+1]&0xC0 == 0x80 && b[i+2]&0xC0 == 0x80
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
		if !pendingHigh {
			// Plain ASCII, eight bytes at a time: a unit a byte. The
			// closing quote is special, so the run stops before it.
			j := asciiRun(q, i)
			n += j - i
			i = j
			if i >= len(q)-1 {
				break
			}
		}
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
		case cjk3(q, i):
			// Three-byte characters (most of CJK), none a surrogate or
			// written escaped: a unit each, without decoding.
			unit('x')
			for i += 3; cjk3(q, i); i += 3 {
				n++
			}
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
	// Both members in one pass: the content before them can be megabytes.
	stop, u := absent, absent
	if i := skipSpace(m.Raw, 0); i < len(m.Raw) && m.Raw[i] == '{' {
		_, _ = forEachMember(m.Raw, i, func(k []byte, start int) (int, error) {
			at := &stop
			switch {
			case jsonscan.KeyEquals(k, "stopReason"):
			case jsonscan.KeyEquals(k, "usage"):
				at = &u
			default:
				return 0, nil
			}
			end, err := skipValue(m.Raw, start)
			if err == nil {
				*at = span{start, end}
			}
			return end, err
		})
	}
	switch stop.str(m.Raw) {
	case "aborted", "error":
		return 0, false
	}
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
	tools := make(map[string][]byte) // name -> declaration, measured at the end
	stamp := 0                       // 0 undefined, 1 null, 2 set: `timestamp ??= message.timestamp`
	for _, m := range msgs {
		if m.Role != "system" {
			continue
		}
		raw := m.Raw
		i := skipSpace(raw, 0)
		if i >= len(raw) || raw[i] != '{' {
			continue
		}
		var content, removed, added span = absent, absent, absent
		ts := 0
		_, _ = forEachMember(raw, i, func(k []byte, start int) (int, error) {
			switch string(keyName(k)) {
			case "timestamp":
				ts = 2
				if raw[start] == 'n' {
					ts = 1
				}
			case "content", "toolsRemoved", "toolsAdded":
				end, err := skipValue(raw, start)
				switch string(keyName(k)) {
				case "content":
					content = span{start, end}
				case "toolsRemoved":
					removed = span{start, end}
				default:
					added = span{start, end}
				}
				return end, err
			case "sections":
				if raw[start] != '{' {
					return 0, nil
				}
				return forEachMember(raw, start, func(k []byte, start int) (int, error) {
					name := string(keyName(k))
					switch raw[start] {
					case 'n':
						delete(sections, name)
						return 0, nil
					case '"':
						end, n, err := stringUnits(raw, start)
						sections[name] = n
						return end, err
					}
					sections[name] = 0
					return 0, nil
				})
			}
			return 0, nil
		})
		if stamp < 2 {
			stamp = ts
		}
		if n := contentTextLen(raw, content); n > 0 {
			texts = append(texts, n)
		}
		forEachBlock(raw, removed, func(t []byte) {
			delete(tools, memberSpan(t, "name").str(t))
		})
		forEachBlock(raw, added, func(t []byte) {
			tools[memberSpan(t, "name").str(t)] = t
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
			n += stringifyLen(t)
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
