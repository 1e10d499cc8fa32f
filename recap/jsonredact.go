package recap

import (
	"bytes"
	"encoding/json"
	"strings"
)

// RedactJSON redacts a JSON value (tool arguments, extension data) by key
// name and by shape: a value whose key is secret-like ("password",
// "apiKey", "client_secret", "Authorization"; whole words, never
// substrings) is replaced whole, as is every string under such a key;
// every other key and string is redacted as text with [Redact], after JSON
// unescaping, so that "-p\"secret\"" is read as the shell reads it. raw may
// be cut short (a window of a longer value): what is there is redacted and
// the text ends there. Text that is no JSON is redacted as text.
func RedactJSON(raw []byte) (string, int) {
	w := jsonRedactor{raw: raw}
	if !w.run() {
		return Redact(string(raw))
	}
	return w.out.String(), w.n
}

type jsonFrame struct {
	obj       bool
	class     keyClass // of the member or element holding this container
	expectKey bool
	member    keyClass // class of the current member's value
	count     bool     // the current member's numbers are counts ("pass": 12)
	// named is the class of the object's "value" member when another
	// member names it: {"name": "DB_PASSWORD", "value": "..."}.
	named keyClass
}

type jsonRedactor struct {
	raw   []byte
	out   strings.Builder
	n     int
	stack []jsonFrame
}

// valueClass is the class of the value at the current position.
func (w *jsonRedactor) valueClass() keyClass {
	if len(w.stack) == 0 {
		return keyPlain
	}
	top := w.stack[len(w.stack)-1]
	if top.obj {
		return top.member
	}
	return top.class
}

// memberClass is the class of a member's value: its own key's, or else
// the class of the container when the key does not qualify it
// ({"credentials": {"user": "bob", "token": ...}}: "user" is no secret).
// An object under a name about a secret ({"token_usage": {...}}) holds
// other things, named by their own keys.
func memberClass(parent keyClass, key string) keyClass {
	if c := classifyKey(key); c != keyPlain {
		return c
	}
	if parent == keyPlain || parent == keyAbout {
		return keyPlain
	}
	words := splitWords(key)
	if len(words) > 0 && qualifiers[words[len(words)-1]] {
		return keyPlain
	}
	return parent
}

// run walks the value; false if raw does not start like JSON.
func (w *jsonRedactor) run() bool {
	raw := w.raw
	i := 0
	for i < len(raw) && isJSONSpace(raw[i]) {
		i++
	}
	if i == len(raw) || strings.IndexByte(`{["`, raw[i]) < 0 {
		return false
	}
	w.out.Grow(len(raw))
	for i < len(raw) {
		c := raw[i]
		switch {
		case isJSONSpace(c) || c == ':':
			w.out.WriteByte(c)
			i++
		case c == '{' || c == '[':
			fr := jsonFrame{obj: c == '{', class: w.valueClass(), expectKey: c == '{'}
			if fr.obj {
				fr.named = namedClass(raw[i:])
			}
			w.stack = append(w.stack, fr)
			w.out.WriteByte(c)
			i++
		case c == '}' || c == ']':
			if len(w.stack) > 0 {
				w.stack = w.stack[:len(w.stack)-1]
			}
			w.out.WriteByte(c)
			i++
		case c == ',':
			if n := len(w.stack); n > 0 && w.stack[n-1].obj {
				w.stack[n-1].expectKey = true
			}
			w.out.WriteByte(c)
			i++
		case c == '"':
			s, next, ok := jsonString(raw, i)
			if !ok {
				// Not JSON after all: redact the rest as text.
				r, n := Redact(string(raw[i:]))
				w.out.WriteString(r)
				w.n += n
				return true
			}
			i = next
			if n := len(w.stack); n > 0 && w.stack[n-1].obj && w.stack[n-1].expectKey {
				top := &w.stack[n-1]
				top.member = memberClass(top.class, s)
				if top.named != keyPlain && strings.EqualFold(s, "value") {
					top.member = top.named
				}
				top.count = passIsCount(s)
				top.expectKey = false
				r, k := Redact(s)
				w.n += k
				writeJSONString(&w.out, r)
				continue
			}
			w.str(s)
		default:
			j := i
			for j < len(raw) && strings.IndexByte(",]}: \t\r\n", raw[j]) < 0 {
				j++
			}
			lit := raw[i:j]
			counted := len(w.stack) > 0 && w.stack[len(w.stack)-1].obj && w.stack[len(w.stack)-1].count
			if w.valueClass() == keyPassword && !counted && len(lit) > 0 && (lit[0] == '-' || '0' <= lit[0] && lit[0] <= '9') {
				writeJSONString(&w.out, Redacted) // "pin": 1234
				w.n++
			} else {
				w.out.Write(lit)
			}
			i = max(j, i+1)
		}
	}
	return true
}

// namedClass looks at the members of the object that starts raw (as far
// as 4 KB) for a "name" or "key" whose value is a secret-like name, as in
// environment lists and parameter stores ({"name": "API_TOKEN", "value":
// "..."}, {"Name": "/prod/db/password", "Value": "..."}), and returns its
// class.
func namedClass(raw []byte) keyClass {
	raw = raw[:min(len(raw), 4096)]
	depth, expectKey, isName := 0, false, false
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; c {
		case '{', '[':
			depth++
			expectKey = c == '{' && depth == 1
		case '}', ']':
			depth--
			if depth == 0 {
				return keyPlain
			}
		case ',':
			expectKey = depth == 1
		case '"':
			s, next, ok := jsonString(raw, i)
			if !ok {
				return keyPlain
			}
			i = next - 1
			if depth != 1 {
				continue
			}
			if expectKey {
				isName = strings.EqualFold(s, "name") || strings.EqualFold(s, "key")
				expectKey = false
				continue
			}
			if isName {
				if c := classifyKey(s); c != keyPlain {
					return c
				}
			}
		}
	}
	return keyPlain
}

// str writes a string value, redacted whole when its key says it is a
// secret, else redacted as text.
func (w *jsonRedactor) str(s string) {
	class := w.valueClass()
	if class.marks(s) {
		// "Authorization": "Bearer x" keeps its scheme.
		if scheme, _, ok := strings.Cut(s, " "); ok && authSchemes[strings.ToLower(scheme)] {
			writeJSONString(&w.out, scheme+" "+Redacted)
		} else {
			writeJSONString(&w.out, Redacted)
		}
		w.n++
		return
	}
	r, n := Redact(s)
	w.n += n
	writeJSONString(&w.out, r)
}

// jsonString decodes the string at raw[i] == '"'. A string cut short by
// the end of raw decodes as far as it goes.
func jsonString(raw []byte, i int) (string, int, bool) {
	j := i + 1
	for j < len(raw) && raw[j] != '"' {
		if raw[j] == '\\' {
			j++
		}
		j++
	}
	if j < len(raw) {
		var s string
		if err := json.Unmarshal(raw[i:j+1], &s); err != nil {
			return "", 0, false
		}
		return s, j + 1, true
	}
	// Cut short: drop a partial escape and close the string.
	body := raw[i+1:]
	p := 0
	for p < len(body) {
		need := 1
		if body[p] == '\\' {
			need = 2
			if p+1 < len(body) && body[p+1] == 'u' {
				need = 6
			}
		}
		if p+need > len(body) {
			break
		}
		p += need
	}
	body = body[:p]
	var s string
	if err := json.Unmarshal(append(append([]byte{'"'}, body...), '"'), &s); err != nil {
		return "", 0, false
	}
	return s, len(raw), true
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// writeJSONString writes s as a JSON string, without HTML escaping (the
// transcript shows "<", not "\u003c"); invalid UTF-8 becomes U+FFFD.
func writeJSONString(b *strings.Builder, s string) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	b.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}
