package recap

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// What a secret is replaced with. Neither text matches any rule, so
// redacting twice changes nothing.
const (
	Redacted           = "[REDACTED]"
	RedactedPrivateKey = "[REDACTED PRIVATE KEY]"
)

// Redact returns s with the secrets it finds replaced by [Redacted], and
// how many it replaced. It looks for secrets by shape (provider tokens,
// private keys, JWTs, credentials in URLs, Authorization headers, bearer
// tokens), by the name they are assigned to (key=value, key: value,
// "key": "value", <key>value</key>, netrc, command-line flags), inside
// base64-encoded text, and across a line break or a string concatenation
// that splits a token in two. Names match as whole words: "totalTokens" is
// not a token. s should be text as a person reads it (JSON-unescaped);
// escaped text is handled as well as the rules allow.
//
// Text that is one JSON document (a tool printing a file or an API's
// answer) is redacted as JSON, with [RedactJSON], so that its keys name
// the values under them.
func Redact(s string) (string, int) {
	if t := strings.TrimSpace(s); len(t) > 1 && (t[0] == '{' || t[0] == '[') && json.Valid([]byte(t)) {
		return RedactJSON([]byte(s))
	}
	hits := findSecrets(s, 0)
	if len(hits) == 0 {
		return s, 0
	}
	return apply(s, hits)
}

// hit is a range of s to replace.
type hit struct {
	start, end int
	repl       string
}

// apply replaces the hits, merging those that overlap or touch.
func apply(s string, hits []hit) (string, int) {
	slices.SortFunc(hits, func(a, b hit) int { return a.start - b.start })
	merged := hits[:0]
	for _, h := range hits {
		if h.end <= h.start {
			continue
		}
		if n := len(merged); n > 0 && h.start <= merged[n-1].end {
			last := &merged[n-1]
			last.end = max(last.end, h.end)
			if h.repl == RedactedPrivateKey {
				last.repl = RedactedPrivateKey
			}
			continue
		}
		merged = append(merged, h)
	}
	var b strings.Builder
	b.Grow(len(s))
	prev := 0
	for _, h := range merged {
		b.WriteString(s[prev:h.start])
		b.WriteString(h.repl)
		prev = h.end
	}
	b.WriteString(s[prev:])
	return b.String(), len(merged)
}

// finder collects the secrets of one text.
type finder struct {
	s     string
	lower string // s with ASCII letters in lower case (same length), for quick checks
	hits  []hit
	depth int // base64 nesting: decoded text is searched at most twice over
}

func findSecrets(s string, depth int) []hit {
	f := &finder{s: s, lower: asciiLower(s), depth: depth}
	f.privateKeys()
	f.matchTokens(s, nil)
	f.urls()
	f.keyValues()
	f.xmlTags()
	f.bearer()
	f.netrc()
	f.tables()
	f.flags()
	f.base64(s, nil)
	f.percent()
	f.xEscapes()
	f.joined()
	return f.hits
}

func (f *finder) add(start, end int, repl string) {
	if end > start {
		f.hits = append(f.hits, hit{start, end, repl})
	}
}

// covered reports whether i lies inside a hit found so far.
func (f *finder) covered(i int) bool {
	for _, h := range f.hits {
		if h.start <= i && i < h.end {
			return true
		}
	}
	return false
}

// privateKeys finds PEM, OpenSSH and PGP private key blocks, ended by their
// END line or, when that is missing (a cut, head -5), by the first line
// that cannot belong to the block; and the private lines of PuTTY keys.
func (f *finder) privateKeys() {
	s := f.s
	begins := pemBeginRE().FindAllStringIndex(s, -1)
	if len(begins) == 0 {
		return
	}
	ends := pemEndRE().FindAllStringIndex(s, -1)
	next := 0 // the first END line after the current BEGIN
	covered := 0
	for _, m := range begins {
		if m[0] < covered {
			continue
		}
		for next < len(ends) && ends[next][0] < m[1] {
			next++
		}
		end := m[1] + keyBodyLen(s[m[1]:])
		if next < len(ends) && ends[next][0] <= end+1 {
			end = ends[next][1] // the body runs up to its END line
		}
		f.add(m[0], end, RedactedPrivateKey)
		covered = end
	}
	for _, m := range puttyRE().FindAllStringIndex(s, -1) {
		end := m[1] + keyBodyLen(s[m[1]:])
		if i := strings.Index(s[m[1]:], "Private-MAC:"); i >= 0 && i <= end-m[1]+2 {
			end = m[1] + i + len("Private-MAC:") + lineLen(s[m[1]+i+len("Private-MAC:"):])
		}
		f.add(m[1], end, RedactedPrivateKey)
	}
}

// keyBodyLen is the length of the key body at the start of s: lines of
// base64 and header lines ("Proc-Type: 4,ENCRYPTED"), with real or escaped
// line breaks.
func keyBodyLen(s string) int {
	const maxLine = 256 // PEM lines have 64 characters, headers a few dozen
	i := 0
	for i < len(s) {
		j := i
		for j < len(s) && s[j] != '\n' && !(s[j] == '\\' && j+1 < len(s) && (s[j+1] == 'n' || s[j+1] == 'r')) {
			j++
			if j-i > maxLine {
				return i
			}
		}
		line := strings.TrimSpace(s[i:j])
		if !(isBase64Line(line) || isHeaderLine(line)) {
			return i
		}
		// Step over the line break.
		switch {
		case j >= len(s):
			return j
		case s[j] == '\n':
			j++
		default:
			j += 2
		}
		i = j
	}
	return i
}

func isBase64Line(line string) bool {
	for i := 0; i < len(line); i++ {
		c := line[i]
		if !(isAlnum(c) || c == '+' || c == '/' || c == '=') {
			return false
		}
	}
	return true
}

func isHeaderLine(line string) bool {
	k, v, ok := strings.Cut(line, ": ")
	if !ok || k == "" || v == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		if !(isAlnum(k[i]) || k[i] == '-') {
			return false
		}
	}
	return true
}

func lineLen(s string) int {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return i
	}
	return len(s)
}

// matchTokens finds provider tokens in t. back maps a range of t to a
// range of f.s (nil when t is f.s).
func (f *finder) matchTokens(t string, back func(a, b int) (int, int, bool)) {
	rulesOnce.Do(compileRules)
	found := func(a, b int) {
		ok := true
		if back != nil {
			a, b, ok = back(a, b)
		}
		if ok {
			f.add(a, b, Redacted)
		}
	}
	// A token starts a word: try the rules whose prefix starts with the
	// word's first byte (or, after an escape that ends a word, \n or %3D,
	// the byte after it). After a match the scan goes on at its end, so a
	// run of prefixes (sk-sk-sk-...) costs one match, not one each.
	var skip map[int]int // a rule whose check failed is not tried again inside that match
	try := func(i int) int {
		if i+1 >= len(t) || !mayStart(t[i], t[i+1]) {
			return 0
		}
		end := 0
		for _, ri := range rulesByFirst[t[i]] {
			r := &tokenRules[ri]
			if !strings.HasPrefix(t[i:], r.prefix) || skip[ri] > i {
				continue
			}
			m := r.rx.FindStringIndex(t[i:])
			if m != nil && r.check != nil && !r.check(t[i:i+m[1]]) {
				if skip == nil {
					skip = map[int]int{}
				}
				skip[ri] = i + m[1]
				m = nil
			}
			if m != nil {
				// The rest of the word goes with it: a fixed-length format
				// followed by more characters is still a credential. (Not in
				// the joined view, where the next line's word follows.)
				e := i + m[1]
				for back == nil && e < len(t) && isWordByte(t[e]) {
					e++
				}
				found(i, e)
				end = max(end, e)
			}
		}
		return end
	}
	for i := 0; i+1 < len(t); i++ {
		if !mayStart(t[i], t[i+1]) || !tokenStart(t, i) {
			continue
		}
		if end := try(i); end > i {
			i = end - 1
		}
	}
	for _, ri := range needleRules {
		r := &tokenRules[ri]
		if !strings.Contains(t, r.needle) {
			continue
		}
		for _, m := range r.rx.FindAllStringIndex(t, -1) {
			if tokenStart(t, m[0]) && (r.check == nil || r.check(t[m[0]:m[1]])) {
				found(m[0], m[1])
			}
		}
	}
}

// tokenStart reports whether a token may start at t[i]: not inside a word,
// except after an escape that ends one (the \n of JSON text, the %3D of a
// percent-encoded "=").
func tokenStart(t string, i int) bool {
	switch {
	case i == 0 || !isWordByte(t[i-1]):
		return true
	case i >= 2 && t[i-2] == '\\' && strings.IndexByte("ntr", t[i-1]) >= 0:
		return true
	case i >= 3 && t[i-3] == '%' && isHexByte(t[i-2]) && isHexByte(t[i-1]):
		return true
	}
	return false
}

func isHexByte(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// urls finds passwords in URLs (scheme://user:password@host) and tokens
// used as the whole user information (https://<token>@host).
func (f *finder) urls() {
	s := f.s
	for off := 0; off < len(s); {
		k := strings.Index(s[off:], "://")
		if k < 0 {
			return
		}
		p := off + k
		off = p + 3
		a := p
		for a > 0 && (isAlnum(s[a-1]) || s[a-1] == '+' || s[a-1] == '.' || s[a-1] == '-') {
			a--
		}
		if p-a < 2 || !isLetter(s[a]) {
			continue // no scheme
		}
		// The authority ends at a path, a space or a quote; a password may
		// hold an unencoded # or ? (postgres://app:pa#ss@db).
		hs, he := p+3, p+3
		for he < len(s) && strings.IndexByte("/\"'<>` \t\r\n", s[he]) < 0 {
			he++
		}
		at := strings.LastIndexByte(s[hs:he], '@')
		if at < 0 {
			continue
		}
		ui := s[hs : hs+at]
		if user, pass, ok := strings.Cut(ui, ":"); ok {
			if pass != "" && !placeholder(pass) && !(isDigits(pass) && user == "") {
				f.add(hs+len(user)+1, hs+at, Redacted)
			}
			continue
		}
		if len(ui) >= 16 && credentialLike(ui) && !placeholder(ui) {
			f.add(hs, hs+at, Redacted)
		}
	}
}

// maxValue bounds how far a value is read: a secret is shorter, and an
// unclosed quote must not make every assignment read to the end.
const maxValue = 4096

// keyValues finds values assigned to secret-like names.
// The assignments keyValues knows: key=value, key: value, "key": value,
// key := value, 'key' => value, $key = value, key == value.
func (f *finder) keyValues() {
	s := f.s
	for off := 0; off < len(s); {
		k := strings.IndexAny(s[off:], ":=")
		if k < 0 {
			return
		}
		p := off + k
		// The separator.
		sepEnd := p + 1
		switch {
		case s[p] == ':' && sepEnd < len(s) && s[sepEnd] == '=':
			sepEnd++
		case s[p] == '=' && sepEnd < len(s) && s[sepEnd] == '>':
			sepEnd++
		case s[p] == '=':
			for sepEnd < len(s) && sepEnd-p < 3 && s[sepEnd] == '=' {
				sepEnd++
			}
		}
		off = sepEnd
		sep := s[p:sepEnd]
		if p > 0 && (s[p-1] == '=' || s[p-1] == '!' || s[p-1] == '<' || s[p-1] == '>' || s[p-1] == ':') {
			continue // the second character of a longer operator
		}
		// The key before it: optionally quoted, optionally $ or @.
		e := p
		for e > 0 && (s[e-1] == ' ' || s[e-1] == '\t') {
			e--
		}
		quoted := e > 0 && (s[e-1] == '"' || s[e-1] == '\'')
		if quoted {
			e--
			if e > 0 && s[e-1] == '\\' {
				e--
			}
		}
		b := e
		for b > 0 && isNameByte(s[b-1]) && s[b-1] != '$' {
			b--
		}
		if b == e || !(isLetter(s[b]) || s[b] == '_') {
			continue
		}
		key := s[b:e]
		start := b
		if start > 0 && (s[start-1] == '$' || s[start-1] == '@') {
			start--
		}
		if quoted && start > 0 && (s[start-1] == '"' || s[start-1] == '\'') {
			start--
			if start > 0 && s[start-1] == '\\' {
				start--
			}
		}
		if start > 0 && isNameByte(s[start-1]) {
			continue // inside a longer name
		}
		class := keyPlain
		if mayNameSecret(f.lower[b:e]) {
			class = classifyKey(key)
		}
		if class == keyPlain && strings.EqualFold(key, "value") {
			class = namedBefore(f.lower[max(0, start-300):start])
		}
		if class == keyPlain {
			if start > 0 && (s[start-1] == '?' || s[start-1] == '&') && sep == "=" && urlSecretParams[strings.ToLower(key)] {
				class = keyToken
			} else {
				continue
			}
		}
		if sep == ":" && strings.HasPrefix(s[sepEnd:], "//") {
			continue // a URL's scheme
		}
		v := sepEnd
		for v < len(s) && (s[v] == ' ' || s[v] == '\t') {
			v++
		}
		if class == keyPassword && passIsCount(key) && isDigits(s[v:v+valueRunLen(s[v:])]) {
			continue // test counts: "pass": 12
		}
		if sep == ":" {
			// YAML: an anchor or a tag before the value (password: &pw x,
			// token: !!str x); a block scalar (token: |) is the lines after.
			for v < len(s) && (s[v] == '&' || s[v] == '!') {
				n := valueRunLen(s[v:])
				if v+n >= len(s) || s[v+n] != ' ' {
					break
				}
				v += n + 1
			}
			if end := f.yamlBlock(b, v, class); end > 0 {
				off = end
				continue
			}
		}
		if end := f.value(v, class, sep, start > 0 && (s[start-1] == '?' || s[start-1] == '&')); end > off {
			off = end // what a secret value holds is redacted with it
		}
	}
}

// namedRE reads a name or key member: name: DB_PASSWORD, "Name": "/prod/db/password".
var namedRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:name|key)["']?[ \t]*[:=][ \t]*["']?([A-Za-z0-9_./\-]+)`)
})

// namedBefore is the class of a "value" member given by the name or key
// member before it in the same object or list item, in before (the text
// up to the value's key, lower-case): env lists, parameter stores.
func namedBefore(before string) keyClass {
	for end := len(before); end > 0; {
		i := max(strings.LastIndex(before[:end], "name"), strings.LastIndex(before[:end], "key"))
		if i < 0 {
			return keyPlain
		}
		end = i
		if i > 0 && isWordByte(before[i-1]) {
			continue
		}
		m := namedRE().FindStringSubmatchIndex(before[i:])
		if m == nil {
			continue
		}
		if strings.ContainsAny(before[i+m[1]:], "{}") {
			return keyPlain
		}
		return classifyKey(before[i+m[2] : i+m[3]])
	}
	return keyPlain
}

// mayNameSecret is a quick check before classifyKey: the lower-case name
// holds one of the secret words' stems.
func mayNameSecret(lower string) bool {
	for _, stem := range []string{"pass", "pwd", "secret", "token", "key", "auth", "cred", "cookie", "pat", "connectionstring"} {
		if strings.Contains(lower, stem) {
			return true
		}
	}
	return false
}

// yamlBlock adds a YAML block scalar's lines (key: | or key: >-, then
// lines indented more than the key) when s[v] starts one, and returns
// where it ends (0 when there is none). keyAt is the key's index.
func (f *finder) yamlBlock(keyAt, v int, class keyClass) int {
	s := f.s
	n := lineLen(s[v:])
	ind := strings.TrimRight(s[v:v+n], " \t\r")
	if ind == "" || ind[0] != '|' && ind[0] != '>' || len(ind) > 3 || strings.Trim(ind[1:], "+-0123456789") != "" || v+n >= len(s) {
		return 0
	}
	ls := strings.LastIndexByte(s[:keyAt], '\n') + 1
	keyIndent := indentOf(s[ls:])
	start := v + n + 1
	end := start
	for end < len(s) {
		l := lineLen(s[end:])
		line := s[end : end+l]
		if strings.TrimSpace(line) != "" && indentOf(line) <= keyIndent {
			break
		}
		end += l + 1
	}
	end = min(end, len(s))
	body := strings.TrimSpace(s[start:end])
	if body == "" || placeholder(body) || class == keyToken && !credentialLike(strings.Join(strings.Fields(body), "")) || class == keyAbout && !opaque(strings.Join(strings.Fields(body), "")) {
		return 0
	}
	first := start + indentOf(s[start:])
	last := strings.TrimRight(s[:end], " \t\r\n")
	f.add(first, len(last), Redacted)
	return end
}

func indentOf(line string) int {
	n := 0
	for n < len(line) && (line[n] == ' ' || line[n] == '\t') {
		n++
	}
	return n
}

// value adds the value starting at s[i] if it is a secret for its class
// and returns where the value ends (0 when it adds nothing).
func (f *finder) value(i int, class keyClass, sep string, query bool) int {
	s := f.s
	vs, ve, quoted := valueExtent(s, i, query)
	if ve <= vs {
		return 0
	}
	v := s[vs:ve]
	if class == keyToken && !quoted {
		// Authorization: Basic <credential> (an unquoted value is one word).
		if scheme := strings.ToLower(v); authSchemes[scheme] || authRestOfLine[scheme] {
			cs := ve
			for cs < len(s) && (s[cs] == ' ' || s[cs] == '\t') {
				cs++
			}
			if cs == ve {
				return 0 // the scheme alone, no credential after it
			}
			ce := cs + valueRunLen(s[cs:])
			if authRestOfLine[scheme] {
				ce = cs + lineLen(s[cs:])
			}
			if c := s[cs:ce]; c != "" && !placeholder(c) {
				f.add(cs, ce, Redacted)
				return ce
			}
			return 0
		}
	}
	if class == keyToken {
		// "Authorization": "Basic <credential>".
		scheme, rest, ok := strings.Cut(v, " ")
		if ok && authSchemes[strings.ToLower(scheme)] {
			rest = strings.TrimLeft(rest, " ")
			cs := ve - len(rest)
			ce := cs
			for ce < ve && s[ce] != ' ' {
				ce++
			}
			if !quoted {
				ce = cs + valueRunLen(s[cs:])
			}
			if c := s[cs:ce]; c != "" && !placeholder(c) {
				f.add(cs, ce, Redacted)
				return ce
			}
			return 0
		}
		if ok && authRestOfLine[strings.ToLower(scheme)] {
			cs := vs + len(scheme) + 1
			ce := ve
			if !quoted {
				ce = vs + lineLen(s[vs:])
			}
			f.add(cs, ce, Redacted)
			return ce
		}
	}
	if placeholder(v) {
		return 0
	}
	if class == keyToken && !credentialLike(continuationRE().ReplaceAllString(v, "")) || class == keyAbout && !opaque(v) {
		return 0
	}
	if sep == ":" && !quoted && isProse(v, s[ve:]) {
		return 0 // "Password: The password must be ..."
	}
	f.add(vs, ve, Redacted)
	return ve
}

// valueExtent finds the value that starts at s[i]: a quoted string (and
// the literals concatenated to it: "ab" + "cd", 'ab' 'cd'), or an unquoted
// run, which a shell line continuation extends. It returns an empty range
// for no value or a structure ({, [).
func valueExtent(s string, i int, query bool) (start, end int, quoted bool) {
	if i >= len(s) {
		return i, i, false
	}
	c := s[i]
	if strings.HasPrefix(s[i:], `"""`) || strings.HasPrefix(s[i:], "'''") {
		// A triple-quoted string (Python, TOML): the value is what it holds.
		q := s[i : i+3]
		end = i + 3 + min(len(s)-i-3, maxValue)
		if k := strings.Index(s[i+3:end], q); k >= 0 {
			end = i + 3 + k
		}
		start = i + 3
		for start < end && (s[start] == '\n' || s[start] == ' ' || s[start] == '\r') {
			start++
		}
		e := end
		for e > start && (s[e-1] == '\n' || s[e-1] == ' ' || s[e-1] == '\r') {
			e--
		}
		return start, e, true
	}
	escaped := c == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\'')
	if c == '"' || c == '\'' || c == '`' || escaped {
		q := s[i : i+1]
		if escaped {
			q = s[i : i+2]
		}
		start = i + len(q)
		end = closeQuote(s, start, q)
		for {
			next := end + len(q)
			if next > len(s) {
				break
			}
			g := concatGlue(s, next, false)
			if g == 0 {
				break
			}
			q2 := s[next+g-1 : next+g]
			e2 := closeQuote(s, next+g, q2)
			end, q = e2, q2
		}
		return start, end, true
	}
	switch c {
	case '{', '[', '(', '\n', '\r':
		return i, i, false
	}
	end = i
	for {
		n := valueRunLen(s[end:])
		if query {
			n = min(n, strings.IndexByte(s[end:end+n]+"&", '&'))
		}
		end += n
		// A shell line continuation: "secret\<newline>  more".
		if end > i && end+1 < len(s) && s[end] == '\\' && s[end+1] == '\n' {
			j := end + 2
			for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
				j++
			}
			if j < len(s) && !isStopByte(s[j]) {
				end = j
				continue
			}
		}
		break
	}
	for end > i && strings.IndexByte(")]}.", s[end-1]) >= 0 {
		end--
	}
	return i, end, false
}

// valueRunLen is the length of the unquoted value at the start of s.
func valueRunLen(s string) int {
	j := 0
	for j < len(s) && j < maxValue && !isStopByte(s[j]) {
		if s[j] == '\\' && j+1 < len(s) && strings.IndexByte("nrt\"'\n", s[j+1]) >= 0 {
			break // an escaped line break or quote ends it, as does a continuation
		}
		j++
	}
	return j
}

func isStopByte(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '"', '\'', '`', ',', ';', '<', '>':
		return true
	}
	return false
}

// closeQuote returns the index of the quote q that closes a string whose
// text starts at s[i], or the end of the line when it is not closed (a
// cut): the rest of the line is then the value.
func closeQuote(s string, i int, q string) int {
	limit := min(len(s), i+maxValue)
	for j := i; j < limit; j++ {
		switch {
		case len(q) == 1 && q != "\\" && j+1 < len(s) && s[j] == q[0] && s[j+1] == q[0] && j+2 < len(s) && !isStopByte(s[j+2]):
			j++ // a doubled quote inside the string: YAML's 'it''s', SQL, CSV
		case strings.HasPrefix(s[j:], q):
			return j
		case s[j] == '\\' && len(q) == 1:
			j++
		case s[j] == '\n' && q != "`":
			return j
		}
	}
	return limit
}

// concatGlue returns the length of what joins two string literals at s[i]
// (after a closing quote), up to and including the next opening quote:
// ` + "`, ` "`, `" \<newline> "`, ` ..'`; 0 if none does.
func concatGlue(s string, i int, adjacent bool) int {
	j := i
	skip := func() {
		for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
			j++
		}
	}
	skip()
	op := false
	if j < len(s) && (s[j] == '+' || s[j] == '.' || s[j] == '&') {
		j++
		if j < len(s) && s[j] == '.' {
			j++
		}
		op = true
	}
	skip()
	if j < len(s) && s[j] == '\\' {
		j++
	}
	if j < len(s) && s[j] == '\r' {
		j++
	}
	nl := false
	if j < len(s) && s[j] == '\n' {
		j++
		nl = true
	}
	skip()
	if !op && j < len(s) && (s[j] == '+' || s[j] == '.') {
		j++
		op = true
		skip()
	}
	if j >= len(s) || (s[j] != '"' && s[j] != '\'' && s[j] != '`') {
		return 0
	}
	if j == i && !op && !nl && !adjacent {
		return 0 // "ab""cd" is not two literals in most languages (it is in a shell)
	}
	if j+1 >= len(s) || isStopByte(s[j+1]) {
		return 0
	}
	return j + 1 - i
}

// xmlTags finds <password>secret</password> and the like.
func (f *finder) xmlTags() {
	s := f.s
	for _, m := range xmlTagRE().FindAllStringSubmatchIndex(s, -1) {
		name := s[m[2]:m[3]]
		if i := strings.LastIndexByte(name, ':'); i >= 0 {
			name = name[i+1:]
		}
		class := classifyKey(name)
		if class == keyPlain {
			continue
		}
		vs := m[1]
		ve := min(len(s), vs+maxValue)
		if k := strings.IndexByte(s[vs:ve], '<'); k >= 0 {
			ve = vs + k
		}
		if nl := strings.IndexByte(s[vs:ve], '\n'); nl >= 0 && !strings.Contains(s[vs:min(len(s), vs+4096)], "</") {
			ve = vs + nl
		}
		v := strings.TrimSpace(s[vs:ve])
		if !class.marks(v) {
			continue
		}
		f.add(vs, ve, Redacted)
	}
}

// bearer finds "Bearer <token>" outside headers.
func (f *finder) bearer() {
	if !strings.Contains(f.lower, "bearer") {
		return
	}
	for _, m := range bearerRE().FindAllStringSubmatchIndex(f.s, -1) {
		v := f.s[m[2]:m[3]]
		if len(v) >= 8 && credentialLike(v) && !placeholder(v) {
			f.add(m[2], m[3], Redacted)
		}
	}
}

// netrc finds "password secret" on the lines of a netrc file.
func (f *finder) netrc() {
	s := f.s
	if !strings.Contains(f.lower, "pass") {
		return
	}
	for off := 0; off < len(s); {
		n := lineLen(s[off:])
		line := s[off : off+n]
		trimmed := strings.ToLower(strings.TrimSpace(line))
		if netrcLineRE().MatchString(line) || strings.HasPrefix(trimmed, "password ") || strings.HasPrefix(trimmed, "passwd ") {
			for _, m := range netrcRE().FindAllStringSubmatchIndex(line, -1) {
				// The value ends the line or another netrc token follows it;
				// else the line is prose ("Password for 'https://...':").
				next := strings.Fields(line[m[3]:])
				if v := line[m[2]:m[3]]; v[0] != '=' && v[0] != ':' && !placeholder(v) && (len(next) == 0 || netrcWords[strings.ToLower(next[0])]) {
					f.add(off+m[2], off+m[3], Redacted)
				}
			}
		}
		off += n + 1
	}
}

// netrcWords are the tokens of a netrc file.
var netrcWords = set("machine", "default", "login", "password", "passwd", "account", "macdef", "port")

// tables finds secrets in the columns of a table whose header names
// them: a CSV or TSV file (User name,Password,Access key ID,Secret access
// key, as AWS hands out credentials) and the Key/Value tables of vault and
// consul.
func (f *finder) tables() {
	s := f.s
	if !strings.ContainsAny(s, ",\t|") && !strings.Contains(s, "Value") && !strings.Contains(s, "│") {
		return
	}
	for off := 0; off < len(s); {
		n := lineLen(s[off:])
		next := off + n + 1
		if sep, cols := tableHeader(s[off:off+n], f.lower[off:off+n]); cols != nil {
			off = f.tableRows(next, sep, cols)
			continue
		}
		f.pairRow(off, s[off:off+n])
		if strings.Contains(f.lower[off:off+n], "value") {
			if fs := strings.Fields(s[off : off+n]); len(fs) == 2 && strings.EqualFold(fs[0], "key") && strings.EqualFold(fs[1], "value") {
				off = f.keyValueRows(next)
				continue
			}
		}
		off = next
	}
}

// pairRow adds the value of a table row of two cells, a secret-like name
// (one word) and a credential, separated by a tab or a table border (| or │):
// "│ API_KEY │ abc123... │", "| token | ghx-... |", "DB_PASSWORD\tS3cret1".
func (f *finder) pairRow(off int, line string) {
	var cells [3][2]int // start and end in line of the first cells
	n := 0
	for i := 0; i < len(line) && n < 3; {
		j := i
		for j < len(line) && line[j] != '\t' && line[j] != '|' && !strings.HasPrefix(line[j:], "│") {
			j++
		}
		a, b := i, j
		for a < b && line[a] == ' ' {
			a++
		}
		for b > a && (line[b-1] == ' ' || line[b-1] == '\r') {
			b--
		}
		if b > a {
			cells[n] = [2]int{a, b}
			n++
		}
		switch {
		case j >= len(line):
			i = j
		case line[j] == '\t' || line[j] == '|':
			i = j + 1
		default:
			i = j + len("│")
		}
	}
	if n != 2 || cells[0][1] == len(line) {
		return // not two cells, or no separator at all
	}
	name, v := line[cells[0][0]:cells[0][1]], line[cells[1][0]:cells[1][1]]
	if len(name) > 64 || !isName(name) || !mayNameSecret(f.lower[off+cells[0][0]:off+cells[0][1]]) {
		return
	}
	if c := classifyKey(name); c != keyPlain && !placeholder(v) && credentialLike(v) && (c != keyAbout || opaque(v)) {
		f.add(off+cells[1][0], off+cells[1][1], Redacted)
	}
}

// tableHeader returns the separator of a table's header line and the
// class of each column, nil when line is none: two fields or more, names
// only (no digits), one of them secret-like.
func tableHeader(line, lower string) (byte, []keyClass) {
	sep := byte(',')
	if strings.IndexByte(line, '\t') >= 0 {
		sep = '\t'
	} else if strings.IndexByte(line, ',') < 0 {
		return 0, nil
	}
	for i := 0; i < len(line); i++ {
		if c := line[i]; !isLetter(c) && c != sep && strings.IndexByte(" _-./():\"", c) < 0 {
			return 0, nil // names only: a row of data has digits
		}
	}
	if !mayNameSecret(lower) {
		return 0, nil
	}
	fields := strings.Split(line, string(sep))
	if len(fields) < 2 {
		return 0, nil
	}
	cols := make([]keyClass, len(fields))
	secret := false
	for i, fl := range fields {
		fl = strings.Trim(strings.TrimSpace(fl), `"`)
		cols[i] = classifyKey(fl)
		secret = secret || cols[i] != keyPlain
	}
	if !secret {
		return 0, nil
	}
	return sep, cols
}

// tableRows adds the secret columns of the rows from s[off] on, while they
// have the header's number of fields, and returns where the table ends.
func (f *finder) tableRows(off int, sep byte, cols []keyClass) int {
	s := f.s
	for off < len(s) {
		n := lineLen(s[off:])
		line := s[off : off+n]
		if strings.Count(line, string(sep))+1 != len(cols) {
			return off
		}
		at := off
		for i, fl := range strings.Split(line, string(sep)) {
			v := strings.Trim(strings.TrimSpace(fl), `"`)
			if cols[i].marks(v) {
				k := at + strings.Index(fl, v)
				f.add(k, k+len(v), Redacted)
			}
			at += len(fl) + 1
		}
		off += n + 1
	}
	return off
}

// keyValueRows adds the values of secret-like keys in the rows of a
// Key/Value table (name, two spaces or more, value) from s[off] on, and
// returns where the table ends.
func (f *finder) keyValueRows(off int) int {
	s := f.s
	for off < len(s) {
		n := lineLen(s[off:])
		line := strings.TrimRight(s[off:off+n], " \r")
		name := strings.TrimLeft(line, " ")
		k := strings.Index(name, "  ")
		if k < 0 {
			return off
		}
		v := strings.TrimLeft(name[k:], " ")
		if classifyKey(name[:k]).marks(v) {
			vs := off + len(line) - len(v)
			f.add(vs, vs+len(v), Redacted)
		}
		off += n + 1
	}
	return off
}

// base64 finds base64 runs of t whose decoded text holds a secret.
func (f *finder) base64(t string, back func(a, b int) (int, int, bool)) {
	if f.depth >= 2 {
		return
	}
	for i := 0; i < len(t); {
		if !isBase64Byte(t[i]) {
			i++
			continue
		}
		a := i
		for i < len(t) && isBase64Byte(t[i]) {
			i++
		}
		for n := 0; i < len(t) && n < 2 && t[i] == '='; n++ {
			i++
		}
		b := i
		run := t[a:b]
		if len(run) < 24 {
			continue
		}
		var dec string
		if isHex(run) {
			// Hex-encoded text (xxd -p, od, a debugger); hashes and ids
			// decode to no text and are left alone.
			b, err := hex.DecodeString(run)
			if err != nil {
				continue
			}
			dec = string(b)
		} else if d, ok := decodeBase64(run); ok {
			dec = d
		}
		if len(dec) < 12 || !mostlyText(dec) || len(findSecrets(dec, f.depth+1)) == 0 {
			continue
		}
		ok := true
		if back != nil {
			a, b, ok = back(a, b)
		}
		if ok {
			f.add(a, b, Redacted)
		}
	}
}

// decodedHits searches dec, text decoded from f.s, and adds what it finds
// there at the range of f.s it came from; at(k) is the index in f.s where
// dec[k] starts (at(len(dec)) is where the encoded text ends).
func (f *finder) decodedHits(dec string, at func(k int) int) {
	for _, h := range findSecrets(dec, f.depth+1) {
		f.add(at(h.start), at(h.end), Redacted)
	}
}

// percent finds secrets in percent-encoded text (a URL in a query
// parameter, a form body): each run of URL characters holding a %XX is
// decoded and searched.
func (f *finder) percent() {
	s := f.s
	if f.depth >= 2 || !strings.Contains(s, "%") {
		return
	}
	for off := 0; off < len(s); {
		k := strings.IndexByte(s[off:], '%')
		if k < 0 {
			return
		}
		p := off + k
		off = p + 1
		if p+2 >= len(s) || !isHexByte(s[p+1]) || !isHexByte(s[p+2]) {
			continue
		}
		a, b := p, p
		for a > 0 && isURLByte(s[a-1]) {
			a--
		}
		for b < len(s) && isURLByte(s[b]) {
			b++
		}
		off = b
		var dec []byte
		var at []int
		for i := a; i < b; i++ {
			at = append(at, i)
			if s[i] == '%' && i+2 < b && isHexByte(s[i+1]) && isHexByte(s[i+2]) {
				dec = append(dec, unhex(s[i+1])<<4|unhex(s[i+2]))
				i += 2
				continue
			}
			dec = append(dec, s[i])
		}
		at = append(at, b)
		f.decodedHits(string(dec), func(k int) int { return at[k] })
	}
}

func isURLByte(c byte) bool {
	return isAlnum(c) || strings.IndexByte("%._~+-/:=&?#@!$*,;[]()", c) >= 0
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// xEscapes finds secrets in text written as \xNN escapes (printf, echo -e,
// string literals).
func (f *finder) xEscapes() {
	s := f.s
	if f.depth >= 2 || !strings.Contains(s, `\x`) {
		return
	}
	isEsc := func(i int) bool {
		return i+3 < len(s) && s[i] == '\\' && s[i+1] == 'x' && isHexByte(s[i+2]) && isHexByte(s[i+3])
	}
	for off := 0; off < len(s); {
		k := strings.Index(s[off:], `\x`)
		if k < 0 {
			return
		}
		a := off + k
		b := a
		var dec []byte
		for isEsc(b) {
			dec = append(dec, unhex(s[b+2])<<4|unhex(s[b+3]))
			b += 4
		}
		off = max(b, a+2)
		if len(dec) < 6 {
			continue
		}
		f.decodedHits(string(dec), func(k int) int { return a + 4*k })
	}
}

func decodeBase64(run string) (string, bool) {
	run = strings.TrimRight(run, "=")
	enc := base64.RawStdEncoding
	if strings.ContainsAny(run, "-_") {
		if strings.ContainsAny(run, "+/") {
			return "", false
		}
		enc = base64.RawURLEncoding
	}
	if len(run)%4 == 1 {
		run = run[:len(run)-1]
	}
	b, err := enc.DecodeString(run)
	if err != nil {
		return "", false
	}
	return string(b), true
}

// mostlyText reports whether s is UTF-8 text: at least 90% printable
// characters or whitespace.
func mostlyText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	n, good := 0, 0
	for _, r := range s {
		n++
		if unicode.IsPrint(r) || r == '\n' || r == '\t' || r == '\r' {
			good++
		}
	}
	return good*10 >= n*9
}

// joined searches a view of the text with line breaks and string
// concatenations between token characters removed, for a token wrapped
// across two lines or split across literals ("sk-ant-" + "api03-...").
//
// Only glue after a run of token characters that may be the first part of
// a token (it holds a token prefix, or is 16 base64 characters or more) is
// removed: ordinary line ends stay, and most texts need no joined view.
func (f *finder) joined() {
	s := f.s
	type cut struct{ at, n int } // glue of n bytes at s[at]
	var cuts []cut
	for off := 0; off < len(s); {
		k := strings.IndexAny(s[off:], "\n\"'`\\")
		if k < 0 {
			break
		}
		i := off + k
		off = i + 1
		if i == 0 || !isTokenByte(s[i-1]) || !mayContinue(s[:i]) {
			continue
		}
		g := lineGlue(s, i)
		if g == 0 && (s[i] == '"' || s[i] == '\'' || s[i] == '`') {
			if c := concatGlue(s, i+1, true); c > 0 {
				g = 1 + c
			}
		}
		if g > 0 && i+g < len(s) && isTokenByte(s[i+g]) {
			cuts = append(cuts, cut{i, g})
			off = i + g
		}
	}
	// A token wrapped inside a box: "│ abc │\n│ def │" (box borders are
	// searched apart: strings.IndexAny is slow with characters beyond ASCII).
	var boxCuts []cut
	for _, border := range []string{"│", "┃", "║"} {
		for off := 0; off < len(s); {
			k := strings.Index(s[off:], border)
			if k < 0 {
				break
			}
			i := off + k
			off = i + len(border)
			for i > 0 && s[i-1] == ' ' {
				i--
			}
			if i == 0 || !isTokenByte(s[i-1]) || !mayContinue(s[:i]) {
				continue
			}
			if g := boxGlue(s, i); g > 0 && i+g < len(s) && isTokenByte(s[i+g]) {
				boxCuts = append(boxCuts, cut{i, g})
				off = i + g
			}
		}
	}
	if len(boxCuts) > 0 {
		cuts = append(cuts, boxCuts...)
		slices.SortFunc(cuts, func(a, b cut) int { return a.at - b.at })
		kept := cuts[:1]
		for _, c := range cuts[1:] {
			if last := kept[len(kept)-1]; c.at >= last.at+last.n {
				kept = append(kept, c)
			}
		}
		cuts = kept
	}
	if len(cuts) == 0 {
		return
	}
	// The joined text, and where each of its pieces starts in s.
	var b strings.Builder
	b.Grow(len(s))
	type piece struct{ j, s int }
	pieces := make([]piece, 0, len(cuts)+1)
	prev := 0
	for _, c := range cuts {
		pieces = append(pieces, piece{b.Len(), prev})
		b.WriteString(s[prev:c.at])
		prev = c.at + c.n
	}
	pieces = append(pieces, piece{b.Len(), prev})
	b.WriteString(s[prev:])
	j := b.String()
	orig := func(x int) int { // the index in s of j[x]
		k := sort.Search(len(pieces), func(i int) bool { return pieces[i].j > x }) - 1
		return pieces[k].s + x - pieces[k].j
	}
	back := func(a, e int) (int, int, bool) {
		oa, ob := orig(a), orig(e-1)+1
		if ob-oa == e-a {
			return 0, 0, false // no glue inside: the plain view found it or it is no token
		}
		return oa, ob, true
	}
	f.matchTokens(j, back)
	f.base64(j, back)
}

// mayContinue reports whether the run of token characters that ends s may
// be the first part of a token wrapped or split after it.
func mayContinue(s string) bool {
	rulesOnce.Do(compileRules)
	a := len(s)
	for a > 0 && isTokenByte(s[a-1]) && len(s)-a < 512 {
		a--
	}
	run := s[a:]
	if len(run) >= 16 {
		return true
	}
	for i := 0; i < len(run); i++ {
		if i > 0 && isWordByte(run[i-1]) || i+1 < len(run) && !mayStart(run[i], run[i+1]) {
			continue
		}
		for _, ri := range rulesByFirst[run[i]] {
			p := tokenRules[ri].prefix
			if strings.HasPrefix(run[i:], p) || strings.HasPrefix(p, run[i:]) {
				return true
			}
		}
	}
	return false
}

// boxGlue returns the length of a box's right border, the line break and
// the next line's left border at s[i] (" │\n│ "), 0 if there is none.
func boxGlue(s string, i int) int {
	j := i
	border := func() bool {
		for j < len(s) && s[j] == ' ' {
			j++
		}
		for _, b := range []string{"│", "┃", "║"} {
			if strings.HasPrefix(s[j:], b) {
				j += len(b)
				for j < len(s) && s[j] == ' ' {
					j++
				}
				return true
			}
		}
		return false
	}
	if !border() {
		return 0
	}
	if strings.HasPrefix(s[j:], "\r") {
		j++
	}
	if j >= len(s) || s[j] != '\n' {
		return 0
	}
	j++
	if !border() {
		return 0
	}
	return j - i
}

// lineGlue returns the length of a line break at s[i] that may wrap a
// token: an optional continuation backslash, the break (or an escaped \n
// in JSON text) and the next line's indentation.
func lineGlue(s string, i int) int {
	j := i
	if j < len(s) && s[j] == '\\' && j+1 < len(s) && (s[j+1] == '\n' || s[j+1] == '\r') {
		j++
	}
	switch {
	case strings.HasPrefix(s[j:], "\r\n"):
		j += 2
	case j < len(s) && s[j] == '\n':
		j++
	case strings.HasPrefix(s[j:], `\r\n`):
		j += 4
	case strings.HasPrefix(s[j:], `\n`):
		j += 2
	default:
		return 0
	}
	for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
		j++
	}
	return j - i
}

// flags finds passwords given on command lines: --password=x,
// --password x, -p x and -px for the commands whose -p takes a password,
// -u user:password, pass:x (openssl), /p:x (xfreerdp), and argv arrays
// (["--token", "x"]).
func (f *finder) flags() {
	s := f.s
	if !strings.ContainsAny(s, "-/") && !strings.Contains(s, "pass:") {
		return
	}
	// One pass marks the words that can start a flag rule; only the lines
	// holding one are split into words (most lines of a build log have
	// flags, -O2 -Wall, but none that can hold a secret).
	lower := f.lower
	var marks []int
	for i := 0; i < len(lower); {
		if c := lower[i]; c == '\\' && i+1 < len(lower) && strings.IndexByte("nrt", lower[i+1]) >= 0 {
			i += 2
			continue
		} else if isFlagSep(c) {
			i++
			continue
		}
		j := i
		for j < len(lower) && !isFlagSep(lower[j]) && !(lower[j] == '\\' && j+1 < len(lower) && strings.IndexByte("nrt", lower[j+1]) >= 0) {
			j++
		}
		if flagWordMatters(lower[i:j]) {
			marks = append(marks, i)
		}
		i = j
	}
	k := 0
	for off := 0; off < len(s) && k < len(marks); {
		n := logicalLineLen(s[off:])
		for k < len(marks) && marks[k] < off {
			k++
		}
		if k < len(marks) && marks[k] < off+n {
			f.flagLine(off, s[off:off+n])
		}
		off += n + 1
	}
}

func isFlagSep(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '"', '\'', '`', ',', '(', ')', '[', ']', '{', '}', '|', ';', '&', '=', '<', '>':
		return true
	}
	return false
}

// flagWordMatters reports whether a lower-case word can start a flag
// rule: a flag named with a secret word's stem, a user:password flag, a
// pass:/p: value, or a command whose short flags take a password.
func flagWordMatters(w string) bool {
	if strings.HasPrefix(w, "-") {
		name := strings.TrimLeft(w, "-")
		if userPassFlags[name] || name == "u" {
			return true
		}
		for _, st := range []string{"pass", "pwd", "secret", "token", "key", "auth", "cred", "cookie"} {
			if strings.Contains(name, st) {
				return true
			}
		}
		return false
	}
	if strings.HasPrefix(w, "pass:") || strings.HasPrefix(w, "/p:") || strings.HasPrefix(w, "/pass:") || strings.HasPrefix(w, "/password:") {
		return true
	}
	base := w[strings.LastIndexByte(w, '/')+1:]
	_, ok := passwordCommands[base]
	return ok || loginCommands[base] || configCommands[base] || stdinCommands[base] || httpieCommands[base] || w == "convertto-securestring"
}

// logicalLineLen is the length of the line at the start of s, continued
// past backslash-newlines.
func logicalLineLen(s string) int {
	i := 0
	for {
		n := lineLen(s[i:])
		if i+n < len(s) && n > 0 && s[i+n-1] == '\\' {
			i += n + 1
			continue
		}
		return i + n
	}
}

// word is a word of a command line: its text without quotes and brackets,
// at s[start:end]; brk marks a command separator (|, ;, &&, ||).
type word struct {
	start, end int
	brk        bool
	pipe       bool // the separator is a pipe: the next command reads this one's output
	quoted     bool // came in quotes: may hold a command line itself
}

func shellWords(line string, off int) []word {
	var ws []word
	for i := 0; i < len(line); {
		c := line[i]
		switch {
		case c == '\\' && i+1 < len(line) && (line[i+1] == 'n' || line[i+1] == 'r'):
			// An escaped line break (printf, echo -e, JSON) ends a command.
			ws = append(ws, word{brk: true})
			i += 2
			continue
		case c == '\\' && i+1 < len(line) && line[i+1] == 't':
			i += 2
			continue
		case c == ' ' || c == '\t' || c == ',' || c == '\\' || c == '\n' || c == '\r':
			i++
			continue
		case c == '|' || c == ';' || c == '&' || c == '(' || c == ')':
			pipe := c == '|' && !(i+1 < len(line) && line[i+1] == '|') && !(i > 0 && line[i-1] == '|')
			ws = append(ws, word{brk: true, pipe: pipe})
			i++
			continue
		}
		start := i
		for start < len(line) && strings.IndexByte("[{", line[start]) >= 0 {
			start++
		}
		if start < len(line) && (line[start] == '"' || line[start] == '\'') {
			q := line[start]
			end := start + 1
			for end < len(line) && line[end] != q {
				if line[end] == '\\' {
					end++
				}
				end++
			}
			ws = append(ws, word{start: off + start + 1, end: off + min(end, len(line)), quoted: true})
			i = end + 1
			for i < len(line) && strings.IndexByte("]},", line[i]) >= 0 {
				i++
			}
			continue
		}
		end := start
		flag := start < len(line) && line[start] == '-'
		for end < len(line) && !strings.ContainsRune(" \t,|;&\n\r", rune(line[end])) &&
			!(line[end] == '\\' && end+1 < len(line) && strings.IndexByte("nrt", line[end+1]) >= 0) {
			if q := line[end]; flag && (q == '"' || q == '\'') {
				// -p"two words": the quotes are part of the flag's word.
				if k := strings.IndexByte(line[end+1:], q); k >= 0 {
					end += k + 1
				}
			}
			end++
		}
		i = max(end, start+1)
		e := end
		for e > start && strings.IndexByte(`"']})`, line[e-1]) >= 0 {
			e--
		}
		if e > start {
			ws = append(ws, word{start: off + start, end: off + e})
		}
	}
	return ws
}

func (f *finder) flagLine(off int, line string) {
	f.flagWords(shellWords(line, off), 0)
}

func (f *finder) flagWords(ws []word, depth int) {
	s := f.s
	cmd, login := "", false
	config := false // after git config, npm config set, aws configure set: a secret-named key's value follows
	text := func(w word) string { return s[w.start:w.end] }
	nextValue := func(i int) (word, bool) {
		if i+1 < len(ws) && !ws[i+1].brk {
			if v := text(ws[i+1]); v != "" && v[0] != '-' {
				return ws[i+1], true
			}
		}
		return word{}, false
	}
	secretValue := func(class keyClass, start, end int) {
		if !class.marks(s[start:end]) {
			return
		}
		f.add(start, end, Redacted)
	}
	userPass := func(start, end int, sep byte) {
		v := s[start:end]
		i := strings.IndexByte(v, sep)
		if i < 0 || i == len(v)-1 {
			return
		}
		user, pass := v[:i], v[i+1:]
		if isDigits(pass) || pass == user || placeholder(pass) {
			return // docker -u 1000:1000, -u app:app
		}
		f.add(start+i+1, end, Redacted)
	}
	f.stdinSecrets(ws, text)
	for i, w := range ws {
		if w.brk {
			cmd, login, config = "", false, false
			continue
		}
		t := text(w)
		if w.quoted && depth < 3 && strings.ContainsAny(t, " \t\\") {
			// sh -c "mysql -psecret", printf '...\nmysql -psecret'
			f.flagWords(shellWords(t, w.start), depth+1)
		}
		base := t[strings.LastIndexByte(t, '/')+1:]
		if _, ok := passwordCommands[base]; ok || loginCommands[base] || configCommands[base] || httpieCommands[base] {
			cmd, login, config = base, false, false
			continue
		}
		if t == "login" && loginCommands[cmd] {
			login = true
			continue
		}
		if (t == "config" || t == "configure") && configCommands[cmd] {
			config = true
			continue
		}
		if config && t[0] != '-' && t != "set" {
			// git config user.password x, npm config set //host/:_authToken x
			if class := classifyKey(t); class != keyPlain {
				if v, ok := nextValue(i); ok {
					secretValue(class, v.start, v.end)
				}
			}
			config = false
			continue
		}
		lower := strings.ToLower(t)
		switch {
		case strings.HasPrefix(lower, "pass:"):
			secretValue(keyPassword, w.start+5, w.end)
			continue
		case strings.HasPrefix(lower, "/p:"):
			secretValue(keyPassword, w.start+3, w.end)
			continue
		case strings.HasPrefix(lower, "/pass:"):
			secretValue(keyPassword, w.start+6, w.end)
			continue
		case strings.HasPrefix(lower, "/password:"):
			secretValue(keyPassword, w.start+10, w.end)
			continue
		case lower == "convertto-securestring":
			// ConvertTo-SecureString "secret" -AsPlainText
			if v, ok := nextValue(i); ok {
				secretValue(keyPassword, v.start, v.end)
			}
			continue
		}
		if len(t) < 2 || t[0] != '-' || t[len(t)-1] == ':' {
			continue // not a flag; "--name:" is a CSS property or a key
		}
		name := strings.TrimLeft(t, "-")
		dashes := len(t) - len(name)
		if name == "" {
			continue
		}
		// --name=value, -name=value
		if eq := strings.IndexByte(name, '='); eq > 0 {
			fname := name[:eq]
			vs := w.start + dashes + eq + 1
			if userPassFlags[fname] {
				userPass(vs, w.end, ':')
				continue
			}
			if class := classifyKey(fname); class != keyPlain && !plainAssignment(s[vs:w.end]) {
				secretValue(class, vs, w.end)
			}
			continue
		}
		switch {
		case cmd == "curl" && t == "-b":
			// curl -b 'name=value; other=value': the values are cookies.
			if v, ok := nextValue(i); ok {
				f.cookieValues(v.start, v.end)
			}
			continue
		case cmd == "gh" && (t == "-b" || t == "--body") && strings.Contains(s[ws[0].start:w.start], "secret"):
			// gh secret set NAME --body value
			if v, ok := nextValue(i); ok {
				secretValue(keyPassword, v.start, v.end)
			}
			continue
		case httpieCommands[cmd] && t == "-a", cmd == "lftp" && t == "-u":
			if v, ok := nextValue(i); ok {
				if cmd == "lftp" && v.end < len(s) && s[v.end] == ',' && i+2 < len(ws) && !ws[i+2].brk {
					secretValue(keyPassword, ws[i+2].start, ws[i+2].end) // lftp -u user,password
				} else {
					userPass(v.start, v.end, ':')
				}
			}
			continue
		}
		// Short flags of the commands that take a password with them.
		short := passwordCommands[cmd]
		if loginCommands[cmd] {
			short = ""
			if login {
				short = "p"
			}
		}
		if dashes == 1 && short != "" && strings.IndexByte(short, name[0]) >= 0 {
			if len(name) > 1 {
				secretValue(keyPassword, w.start+2, w.end) // -psecret
			} else if v, ok := nextValue(i); ok {
				secretValue(keyPassword, v.start, v.end)
			}
			continue
		}
		if userPassFlags[name] {
			if v, ok := nextValue(i); ok {
				sep := byte(':')
				if cmd == "smbclient" {
					sep = '%'
				}
				userPass(v.start, v.end, sep)
			}
			continue
		}
		if cmd == "htpasswd" && dashes == 1 && strings.Contains(name, "b") {
			// htpasswd -b file user password
			k := i
			for n := 0; n < 3; n++ {
				v, ok := nextValue(k)
				if !ok {
					break
				}
				k++
				if n == 2 {
					secretValue(keyPassword, v.start, v.end)
				}
			}
			continue
		}
		if dashes == 1 && len(name) == 1 {
			continue // -p of mkdir, docker run, ssh: not a password
		}
		if class := classifyKey(name); class != keyPlain {
			if v, ok := nextValue(i); ok && !plainAssignment(text(v)) {
				secretValue(class, v.start, v.end)
			} else if i+1 < len(ws) && !ws[i+1].brk && strings.HasPrefix(text(ws[i+1]), "-") && !strings.HasPrefix(text(ws[i+1]), "--") && opaque(text(ws[i+1])) {
				secretValue(class, ws[i+1].start, ws[i+1].end) // base64url may start with -: --token -cfr4b...
			}
		}
	}
}

// plainAssignment reports whether a flag's value is itself name=value with
// a name that is no secret (docker build --secret id=npmrc,src=...): the
// assignments are searched on their own.
func plainAssignment(v string) bool {
	k, _, ok := strings.Cut(v, "=")
	return ok && isName(k) && classifyKey(k) == keyPlain
}

// cookieValues adds the values of name=value pairs in s[start:end].
func (f *finder) cookieValues(start, end int) {
	for i := start; i < end; {
		j := i + strings.IndexByte(f.s[i:end]+";", ';')
		if eq := strings.IndexByte(f.s[i:j], '='); eq >= 0 {
			if v := strings.TrimSpace(f.s[i+eq+1 : j]); v != "" && !placeholder(v) {
				f.add(i+eq+1, j, Redacted)
			}
		}
		i = j + 1
	}
}

// stdinSecrets finds a secret given on the standard input of a command
// that reads one there: echo secret | docker login --password-stdin,
// echo secret | sudo -S ..., echo user:secret | chpasswd.
func (f *finder) stdinSecrets(ws []word, text func(word) string) {
	for i := 0; i < len(ws); i++ {
		if ws[i].brk {
			continue
		}
		if t := text(ws[i]); t != "echo" && t != "printf" {
			continue
		}
		// The words given to echo, then the command after the pipe.
		a := i + 1
		b := a
		for b < len(ws) && !ws[b].brk {
			b++
		}
		if b >= len(ws) || !ws[b].pipe {
			i = b
			continue
		}
		c := b + 1
		e := c
		reads, sudo := false, false
		var cmd string
		for ; e < len(ws) && !ws[e].brk; e++ {
			t := text(ws[e])
			base := t[strings.LastIndexByte(t, '/')+1:]
			switch {
			case e == c && base == "sudo":
				sudo = true
			case sudo && cmd == "" && (t == "-S" || t == "--stdin"):
				reads = true // sudo reads the password
			case strings.HasPrefix(t, "-"):
			case cmd == "":
				cmd = base
			}
			if t == "--password-stdin" || t == "--with-token" || cmd == "passwd" && t == "--stdin" || base == "chpasswd" {
				reads = true
			}
		}
		if reads {
			for _, w := range ws[a:b] {
				v := text(w)
				if v == "" || v[0] == '-' || placeholder(v) {
					continue
				}
				if cmd == "chpasswd" {
					if k := strings.IndexByte(v, ':'); k >= 0 {
						f.add(w.start+k+1, w.end, Redacted)
						continue
					}
				}
				f.add(w.start, w.end, Redacted)
			}
		}
		i = b
	}
}

// credentialLike reports whether v may be a credential rather than a word:
// long enough, and with a digit, a symbol or mixed case, or long.
func credentialLike(v string) bool {
	if len(v) < 6 {
		return false
	}
	var digit, upper, lower, other bool
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case '0' <= c && c <= '9':
			digit = true
		case 'A' <= c && c <= 'Z':
			upper = true
		case 'a' <= c && c <= 'z':
			lower = true
		case c == ' ':
			return len(v) >= 12 && !strings.Contains(strings.TrimSpace(v), " ") // no prose
		default:
			other = true
		}
	}
	return digit || other || upper && lower || len(v) >= 12
}

// opaque reports whether v looks like key material or a random identifier
// (hex digits, a UUID, base64) rather than a number, a word, a name, a
// path, a time or a version: 16 characters or more of a token's alphabet,
// with a UUID, a run of 16 hex digits or more (letters and digits), a run
// of 8 letters and digits or more that mixes them (two of each, changing
// between them twice or more: not "Password2024"), or a run of 16 or more
// whose pieces (at case changes and between letters and digits) are
// shorter than 3 on average, or than 4 with fewer than one vowel in four
// letters, where names have words ("MyApplicationSecretName"); or in mixed
// case with pieces of letters shorter than 3 on average (3.5 with two
// digits or more) over a whole value of base64's alphabet (whose + / - _
// cut its runs short).
func opaque(v string) bool {
	v = strings.Trim(strings.TrimSpace(v), "\"'`")
	if len(v) < 16 || len(v) > maxValue {
		return false
	}
	for i := 0; i < len(v); i++ {
		if !isTokenByte(v[i]) {
			return false
		}
	}
	if isUUID(v) {
		return true
	}
	upper, lower, digits, wordPieces, alnums := 0, 0, 0, 0, 0 // over the whole value
	base64 := true                                            // the value is of base64's or base64url's alphabet
	for i := 0; i < len(v); {
		j := i
		for j < len(v) && isAlnum(v[j]) {
			j++
		}
		if j < len(v) && strings.IndexByte("-_+/=", v[j]) < 0 {
			base64 = false
		}
		for k := i; k < j; k++ {
			alnums++
			switch c := v[k]; {
			case c <= '9':
				digits++
				continue
			case c < 'a':
				upper++
			default:
				lower++
			}
			if k == i || pieceStart(v[i:j], k-i) {
				wordPieces++
			}
		}
		if run := v[i:j]; len(run) >= 8 && !compactTime(run) {
			letters, digits, mixes, pieces, vowels := 0, 0, 0, 1, 0
			for k := 0; k < len(run); k++ {
				if run[k] <= '9' {
					digits++
				} else {
					letters++
					if strings.IndexByte("aeiouAEIOU", run[k]) >= 0 {
						vowels++
					}
				}
				if k > 0 && (run[k-1] <= '9') != (run[k] <= '9') {
					mixes++
				}
				if k > 0 && pieceStart(run, k) {
					pieces++
				}
			}
			switch {
			case len(run) >= 16 && letters > 0 && digits > 0 && isHex(run),
				letters >= 2 && digits >= 2 && mixes >= 2,
				len(run) >= 16 && (3*pieces > len(run) || 4*pieces > len(run) && 4*vowels < letters):
				return true
			}
		}
		i = j + 1
	}
	// Base64 whose + / - _ cut its runs short ("dmlUc-FvszoDv8Op-qxCWhM_x").
	return base64 && upper >= 2 && lower >= 2 && (3*wordPieces > alnums || digits >= 2 && 7*wordPieces > 2*alnums)
}

// pieceStart reports whether a piece of run starts at k: a digit after a
// letter or a letter after a digit, an upper-case letter after a
// lower-case one, or the last capital before lower-case ("HTTPServer").
func pieceStart(run string, k int) bool {
	a, b := run[k-1], run[k]
	if (a <= '9') != (b <= '9') {
		return true
	}
	if a <= '9' {
		return false
	}
	upperA, upperB := a < 'a', b < 'a'
	return !upperA && upperB || upperA && upperB && k+1 < len(run) && run[k+1] >= 'a'
}

// isUUID reports whether v is a UUID (8-4-4-4-12 hex digits).
func isUUID(v string) bool {
	if len(v) != 36 {
		return false
	}
	for i := 0; i < len(v); i++ {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if v[i] != '-' {
				return false
			}
		} else if !isHexByte(v[i]) {
			return false
		}
	}
	return true
}

// compactTime reports whether s is a date and time written without
// separators, as in 20261130T091859Z.
func compactTime(s string) bool {
	s = strings.TrimSuffix(s, "Z")
	return len(s) == 15 && s[8] == 'T' && isDigits(s[:8]) && isDigits(s[9:])
}

// placeholder reports whether v stands for a secret without being one: a
// variable, a template, a mask, an empty or a null value, code.
func placeholder(v string) bool {
	v = strings.Trim(strings.TrimSpace(v), "\"'`")
	if v == "" {
		return true
	}
	switch strings.ToLower(v) {
	case "null", "none", "nil", "true", "false", "undefined", "required", "optional", "string",
		"redacted", "hidden", "yes", "no", "on", "off":
		return true
	}
	if strings.HasPrefix(v, "[REDACTED") {
		return true // redacted already (a word's closing bracket may be cut off)
	}
	switch v[0] {
	case '$':
		return true // $VAR, ${VAR}, ${{ secrets.X }}, $(cmd)
	case '<':
		return strings.HasSuffix(v, ">")
	case '%':
		return len(v) > 1 && strings.HasSuffix(v, "%")
	case '{':
		return strings.HasPrefix(v, "{{")
	}
	masked := true
	for _, r := range v {
		if !strings.ContainsRune("*xX•.#-_", r) {
			masked = false
			break
		}
	}
	if masked {
		return true
	}
	lower := strings.ToLower(v)
	for _, p := range []string{"process.env", "os.environ", "os.getenv", "getenv(", "env(", "env[", "env.", "secrets.", "vault:", "op://", "ref+", "file:", "env:"} {
		if strings.HasPrefix(lower, p) {
			return true
		}
	}
	if pathLike(v) {
		return true // PWD=/work/app, GOOGLE_APPLICATION_CREDENTIALS=~/sa.json
	}
	// A call: get_password(), readSecret("x").
	if i := strings.IndexByte(v, '('); i > 0 && strings.HasSuffix(v, ")") && isName(v[:i]) {
		return true
	}
	return false
}

// pathLike reports whether v is a file path rather than a secret: it
// starts with ~/, ./, ../, a drive letter, or / and a lower-case directory
// name, holds only path characters, and none of its names is a random
// string (a base64 secret can start with a slash, as 1 in 64 AWS keys do).
func pathLike(v string) bool {
	rest := ""
	switch {
	case strings.HasPrefix(v, "~/"), strings.HasPrefix(v, "./"):
		rest = v[2:]
	case strings.HasPrefix(v, "../"):
		rest = v[3:]
	case len(v) > 3 && isLetter(v[0]) && v[1] == ':' && v[2] == '\\':
		rest = strings.ReplaceAll(v[3:], `\`, "/")
	case strings.HasPrefix(v, "/"):
		first, after, ok := strings.Cut(v[1:], "/")
		if !ok || first == "" || len(first) > 12 || strings.IndexFunc(first, func(r rune) bool { return r < 'a' || r > 'z' }) >= 0 {
			return first == "Users" && ok && pathLike("~/"+after)
		}
		rest = after
	default:
		return false
	}
	for _, name := range strings.Split(rest, "/") {
		for i := 0; i < len(name); i++ {
			if c := name[i]; !isAlnum(c) && strings.IndexByte("._-@+", c) < 0 {
				return false
			}
		}
		if len(name) >= 16 && credentialLike(name) && !strings.ContainsAny(name, ".-_") {
			return false
		}
	}
	return true
}

// isProse reports whether an unquoted value after "key:" reads as the
// start of a sentence: a plain word followed by at least two more words.
func isProse(v, rest string) bool {
	for i := 0; i < len(v); i++ {
		if !('a' <= v[i] && v[i] <= 'z' || 'A' <= v[i] && v[i] <= 'Z') {
			return false
		}
	}
	return len(strings.Fields(rest[:lineLen(rest)])) >= 2
}

func isAlnum(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func isWordByte(c byte) bool { return isAlnum(c) || c == '_' }

func isBase64Byte(c byte) bool { return isAlnum(c) || c == '+' || c == '/' || c == '_' || c == '-' }

func isNameByte(c byte) bool { return isAlnum(c) || c == '_' || c == '-' || c == '.' || c == '$' }

func isName(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isNameByte(s[i]) {
			return false
		}
	}
	return s != ""
}

func isTokenByte(c byte) bool {
	return isAlnum(c) || c == '_' || c == '-' || c == '+' || c == '/' || c == '=' || c == '.' || c == '~'
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isHexByte(s[i]) {
			return false
		}
	}
	return true
}

// asciiLower lowers ASCII letters only, so that indexes into s hold for
// the result (strings.ToLower changes the length of invalid UTF-8).
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
