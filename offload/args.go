package offload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/pi-session/pi-session/clip"
	"github.com/pi-session/pi-session/jsonpos"
)

// ErrBadArgument is wrapped by every *ArgError.
var ErrBadArgument = errors.New("offload: invalid argument")

// ArgError is a tool argument that is missing, of the wrong type or out of
// range. Its message names the argument and what is valid.
type ArgError struct {
	Arg string
	Msg string
}

func (e *ArgError) Error() string { return "offload: " + e.Arg + ": " + e.Msg }

// Unwrap makes errors.Is(err, ErrBadArgument) true.
func (e *ArgError) Unwrap() error { return ErrBadArgument }

func argErr(arg, format string, a ...any) error {
	return &ArgError{Arg: arg, Msg: fmt.Sprintf(format, a...)}
}

// Limits of ctx_read arguments.
const (
	defaultContextLines = 2
	maxContextLines     = 20
	defaultMaxMatches   = 20
	maxMaxMatches       = 500
	maxTerms            = 32
	maxTermBytes        = 1000
)

// ReadArgs are the arguments of ctx_read.
type ReadArgs struct {
	ID           string
	Offset       int64
	Length       int64 // 0: as much as the page allows
	HasOffset    bool
	Query        []string // nil: no query
	QueryArray   bool
	Regex        bool
	IgnoreCase   bool
	ContextLines int
	MaxMatches   int
	Cursor       string
	Section      string
	HasSection   bool
	JSONPath     string
	HasJSONPath  bool
}

// Mode is the read mode the arguments select: "range", "query", "section"
// or "jsonPath".
func (a ReadArgs) Mode() string {
	switch {
	case a.Query != nil:
		return "query"
	case a.HasSection:
		return "section"
	case a.HasJSONPath:
		return "jsonPath"
	}
	return "range"
}

// object decodes the arguments object, keeping each member's raw value.
func object(raw json.RawMessage) (map[string]json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return map[string]json.RawMessage{}, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, argErr("arguments", "must be a JSON object (%v)", err)
	}
	return m, nil
}

func unknownArgs(m map[string]json.RawMessage, known ...string) error {
	var extra []string
	for k := range m {
		found := false
		for _, n := range known {
			if k == n {
				found = true
			}
		}
		if !found {
			extra = append(extra, k)
		}
	}
	if len(extra) == 0 {
		return nil
	}
	sort.Strings(extra)
	return argErr(clip.Echo(extra[0]), "unknown argument; valid arguments are %s", strings.Join(known, ", "))
}

func isNull(v json.RawMessage) bool {
	return v == nil || bytes.Equal(bytes.TrimSpace(v), []byte("null"))
}

func getString(m map[string]json.RawMessage, name string, required bool) (string, bool, error) {
	v, ok := m[name]
	if !ok || isNull(v) {
		if required {
			return "", false, argErr(name, "is required (a string)")
		}
		return "", false, nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", false, argErr(name, "must be a string, got %s", kindOf(v))
	}
	return s, true, nil
}

func getBool(m map[string]json.RawMessage, name string) (bool, error) {
	v, ok := m[name]
	if !ok || isNull(v) {
		return false, nil
	}
	var b bool
	if err := json.Unmarshal(v, &b); err != nil {
		var s string
		if json.Unmarshal(v, &s) == nil && (s == "true" || s == "false") {
			return s == "true", nil
		}
		return false, argErr(name, "must be true or false, got %s", kindOf(v))
	}
	return b, nil
}

// getInt reads an integer in [lo, hi]; numeric strings are accepted.
func getInt(m map[string]json.RawMessage, name string, lo, hi int64) (int64, bool, error) {
	want := fmt.Sprintf("an integer from %d to %d", lo, hi)
	if hi >= 1<<53 {
		want = fmt.Sprintf("an integer of at least %d", lo)
	}
	v, ok := m[name]
	if !ok || isNull(v) {
		return 0, false, nil
	}
	var f float64
	if err := json.Unmarshal(v, &f); err != nil {
		var s string
		if json.Unmarshal(v, &s) != nil {
			return 0, false, argErr(name, "must be %s, got %s", want, kindOf(v))
		}
		if f, err = strconv.ParseFloat(strings.TrimSpace(s), 64); err != nil {
			return 0, false, argErr(name, "must be %s, got the string %q", want, clip.Echo(s))
		}
	}
	if f != math.Trunc(f) || f < float64(lo) || f > float64(hi) {
		return 0, false, argErr(name, "must be %s, got %v", want, f)
	}
	return int64(f), true, nil
}

// kindOf names what a mistyped argument holds: its JSON kind, or a number
// as written.
func kindOf(v json.RawMessage) string {
	if k := jsonpos.Kind(v); k != "a number" {
		return k
	}
	return "the number " + clip.Echo(string(bytes.TrimSpace(v)))
}

// ParseReadArgs validates the arguments of ctx_read.
func ParseReadArgs(raw json.RawMessage) (ReadArgs, error) {
	a := ReadArgs{ContextLines: defaultContextLines, MaxMatches: defaultMaxMatches}
	m, err := object(raw)
	if err != nil {
		return a, err
	}
	if err := unknownArgs(m, "id", "offset", "length", "query", "regex", "ignoreCase", "contextLines", "maxMatches", "cursor", "section", "jsonPath"); err != nil {
		return a, err
	}
	if a.ID, _, err = getString(m, "id", true); err != nil {
		return a, err
	}
	a.ID = strings.TrimSpace(a.ID)
	if !ValidHandle(a.ID) {
		return a, argErr("id", "%q is not a handle; a handle is ce_ followed by 24 hex digits, as printed in an offload notice", clip.Echo(a.ID))
	}
	if a.Offset, a.HasOffset, err = getInt(m, "offset", 0, math.MaxInt64>>1); err != nil {
		return a, err
	}
	if a.Length, _, err = getInt(m, "length", 1, math.MaxInt64>>1); err != nil {
		return a, err
	}
	if v, ok := m["query"]; ok && !isNull(v) {
		var s string
		var arr []string
		switch {
		case json.Unmarshal(v, &s) == nil:
			a.Query = []string{s}
		case json.Unmarshal(v, &arr) == nil:
			a.Query, a.QueryArray = arr, true
		default:
			return a, argErr("query", "must be a string or an array of strings, got %s", kindOf(v))
		}
		if len(a.Query) == 0 || len(a.Query) > maxTerms {
			return a, argErr("query", "an array query needs 1 to %d terms, got %d", maxTerms, len(a.Query))
		}
		for i, t := range a.Query {
			if t == "" {
				return a, argErr("query", "term %d is empty; give non-empty text", i)
			}
			if strings.ContainsRune(t, '\n') {
				return a, argErr("query", "term %d holds a line break; a query matches within one line, so give the parts as an array of terms", i)
			}
			if len(t) > maxTermBytes {
				return a, argErr("query", "term %d is %d bytes; at most %d", i, len(t), maxTermBytes)
			}
		}
	}
	if a.Regex, err = getBool(m, "regex"); err != nil {
		return a, err
	}
	if a.IgnoreCase, err = getBool(m, "ignoreCase"); err != nil {
		return a, err
	}
	if n, ok, err := getInt(m, "contextLines", 0, maxContextLines); err != nil {
		return a, err
	} else if ok {
		a.ContextLines = int(n)
	}
	if n, ok, err := getInt(m, "maxMatches", 1, maxMaxMatches); err != nil {
		return a, err
	} else if ok {
		a.MaxMatches = int(n)
	}
	if a.Cursor, _, err = getString(m, "cursor", false); err != nil {
		return a, err
	}
	if a.Section, a.HasSection, err = getString(m, "section", false); err != nil {
		return a, err
	}
	if a.HasSection && strings.TrimSpace(a.Section) == "" {
		return a, argErr("section", "is empty; give a section name from the notice's outline")
	}
	if a.JSONPath, a.HasJSONPath, err = getString(m, "jsonPath", false); err != nil {
		return a, err
	}
	modes := 0
	for _, on := range []bool{a.Query != nil, a.HasSection, a.HasJSONPath} {
		if on {
			modes++
		}
	}
	if modes > 1 {
		return a, argErr("query", "query, section and jsonPath are separate modes; give one of them")
	}
	_, hasLength := m["length"]
	if a.Query != nil && (a.HasOffset || hasLength && !isNull(m["length"])) {
		return a, argErr("offset", "does not combine with query; page a query with cursor (its nextCursor), or drop query for a byte range read")
	}
	if a.Cursor != "" && a.Query == nil {
		return a, argErr("cursor", "belongs to a query; repeat the query, regex, ignoreCase and contextLines of the read that returned it")
	}
	if a.Query == nil {
		if _, ok := m["regex"]; ok && a.Regex {
			return a, argErr("regex", "applies to query; give a query")
		}
	}
	return a, nil
}

// cutText cuts payload text (a heading, a key, a line) to n bytes for a
// preview or a header, marking the cut with "...". Arguments are echoed with
// clip.Echo instead.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:runeCut([]byte(s[:n+1]), n, 0)] + "..."
}
