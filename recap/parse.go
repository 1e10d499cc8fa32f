package recap

import (
	"encoding/json"
	"errors"
	"io"
	"regexp"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Caps of a parsed recap, in characters; a longer field is cut and ends
// with an ellipsis. They are a backstop: the prompt asks for much less.
const (
	RecapMaxChars = 600
	NextMaxChars  = 200
)

// ErrInvalidResponse means the recap model's answer holds no valid recap.
var ErrInvalidResponse = errors.New("recap: " + ErrTextInvalid)

// Recap is a recap and its next step.
type Recap struct {
	Recap string `json:"recap"`
	Next  string `json:"next"`
}

var fenceRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("(?s)```[A-Za-z0-9_-]*[ \t]*\r?\n?(.*?)```") })

// Parse reads the recap model's answer strictly: exactly one JSON object
// with only the string members "recap" and "next", tried as the trimmed
// answer, then as each fenced block, then as the slice from the first "{"
// to the last "}". Fields are cleaned (terminal escape sequences and
// control characters removed, whitespace collapsed), a leading "Next:" is
// dropped from the next step, and each is capped; an empty field makes the
// answer invalid.
func Parse(answer string) (Recap, error) {
	var candidates []string
	candidates = append(candidates, strings.TrimSpace(answer))
	for _, m := range fenceRE().FindAllStringSubmatch(answer, 8) {
		candidates = append(candidates, strings.TrimSpace(m[1]))
	}
	if i, j := strings.IndexByte(answer, '{'), strings.LastIndexByte(answer, '}'); i >= 0 && j > i {
		candidates = append(candidates, answer[i:j+1])
	}
	for _, c := range candidates {
		if r, ok := strictRecap(c); ok {
			return r, nil
		}
	}
	return Recap{}, ErrInvalidResponse
}

func strictRecap(c string) (Recap, bool) {
	dec := json.NewDecoder(strings.NewReader(c))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return Recap{}, false
	}
	var r Recap
	seen := map[string]bool{}
	for dec.More() {
		k, err := dec.Token()
		key, ok := k.(string)
		if err != nil || !ok || seen[key] || key != "recap" && key != "next" {
			return Recap{}, false
		}
		seen[key] = true
		v, err := dec.Token()
		val, ok := v.(string)
		if err != nil || !ok {
			return Recap{}, false
		}
		if key == "recap" {
			r.Recap = val
		} else {
			r.Next = val
		}
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return Recap{}, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return Recap{}, false // something follows the object
	}
	r.Recap = capChars(clean(r.Recap), RecapMaxChars)
	r.Next = capChars(trimNextPrefix(clean(r.Next)), NextMaxChars)
	if r.Recap == "" || r.Next == "" {
		return Recap{}, false
	}
	return r, true
}

// escapeRE matches terminal escape sequences: CSI, OSC (ended by BEL or
// ST), other two-byte escapes, and the 8-bit CSI and OSC forms.
var escapeRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[PX^_][^\x1b]*(?:\x1b\\)?|\x1b[ -~]?|\x{9b}[0-?]*[ -/]*[@-~]|\x{9d}[^\x07\x{9c}]*[\x07\x{9c}]?`)
})

// clean removes escape sequences, control characters and bidirectional
// overrides, turns line breaks and tabs into spaces, collapses runs of
// spaces and trims.
func clean(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = escapeRE().ReplaceAllString(s, "")
	var b strings.Builder
	space := false
	for _, r := range s {
		switch {
		case r == '\n' || r == '\r' || r == '\t' || unicode.IsSpace(r):
			space = true
			continue
		case r < 0x20 || r == 0x7f || 0x80 <= r && r < 0xa0,
			0x202a <= r && r <= 0x202e, 0x2066 <= r && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0xfeff:
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}

var nextPrefixRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)^(?:\*\*)?next(?: step)?(?:\*\*)?\s*[:：-]\s*(?:\*\*)?\s*`)
})

func trimNextPrefix(s string) string {
	return strings.TrimSpace(nextPrefixRE().ReplaceAllString(s, ""))
}

// capChars cuts s to at most n characters, the last an ellipsis.
func capChars(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	rs := []rune(s)
	return strings.TrimRightFunc(string(rs[:n-1]), unicode.IsSpace) + "…"
}
