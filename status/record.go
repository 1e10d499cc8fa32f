// Package status keeps one status record per pi session, tells live sessions from dead ones, and prunes old records.
package status

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Record is the status of one session, stored as <stateDir>/status/<sessionId>.json.
// The budget fields follow the seed's status file; the process fields let a
// reader tell the session's own process from a later one with the same pid.
type Record struct {
	SessionID   string `json:"sessionId"`
	SessionFile string `json:"sessionFile,omitempty"` // pi's session JSONL
	Cwd         string `json:"cwd"`
	Model       string `json:"model,omitempty"` // provider/model-id
	Role        string `json:"role,omitempty"`  // RoleMain or RoleChild

	Tokens              *int64      `json:"tokens"` // null: unknown (for example right after a compaction)
	Floor               *int64      `json:"floor"`  // null: not measured yet
	Thresholds          *Thresholds `json:"thresholds,omitempty"`
	EffectiveThresholds *Thresholds `json:"effectiveThresholds,omitempty"`

	LastHandoff   string     `json:"lastHandoff,omitempty"` // path of the last handoff file
	LastHandoffAt *time.Time `json:"lastHandoffAt,omitempty"`
	HandoffCount  int        `json:"handoffCount"`

	EffectiveMode  string `json:"effectiveMode,omitempty"` // off, observe or enforce
	ConfiguredMode string `json:"configuredMode,omitempty"`
	Phase          string `json:"phase,omitempty"`  // the policy state, e.g. handoff-required
	Action         string `json:"action,omitempty"` // the policy's current action
	Projected      bool   `json:"projected"`        // phase and action preview enforcement (observe mode)
	Fallback       string `json:"fallback,omitempty"`
	WrapperOwned   bool   `json:"wrapperOwned"`
	// RelaunchMarker is the marker path the session's wrapper assigned
	// (PI_RELAUNCH_MARKER); pruning keeps the record while that file exists.
	RelaunchMarker string `json:"relaunchMarker,omitempty"`

	PID          int        `json:"pid"`
	StartTicks   uint64     `json:"startTicks,omitempty"` // process start, clock ticks since boot (/proc/<pid>/stat field 22)
	BootID       string     `json:"bootId,omitempty"`
	ProcessStart *time.Time `json:"processStart,omitempty"` // wall-clock estimate of StartTicks, for people
	Version      string     `json:"version,omitempty"`      // pi-session version of the writer

	UpdatedAt time.Time  `json:"updatedAt,omitzero"`
	EndedAt   *time.Time `json:"endedAt,omitempty"` // set at clean shutdown; absent on a dead pid means a crash

	// Extra holds fields this version does not know (written by a newer
	// one); they are written back unchanged.
	Extra map[string]json.RawMessage `json:"-"`
}

// Thresholds are token thresholds of the budget policy.
type Thresholds struct {
	Soft        int64 `json:"soft"`
	Handoff     int64 `json:"handoff"`
	Hard        int64 `json:"hard"`
	MinProgress int64 `json:"minProgress,omitempty"`
}

// Values of Record.Role.
const (
	RoleMain  = "main"
	RoleChild = "child"
)

// RelaunchMarkerEnv names the variable through which the wrapper tells its
// child the relaunch marker path it assigned.
const RelaunchMarkerEnv = "PI_RELAUNCH_MARKER"

// ErrCorrupt marks a record file that is not a status record.
var ErrCorrupt = errors.New("status: corrupt record")

// fieldIndex maps each known JSON key to its Record field.
var fieldIndex = func() map[string]int {
	m := map[string]int{}
	t := reflect.TypeFor[Record]()
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			m[name] = i
		}
	}
	return m
}()

// Parse reads a record. It fails with ErrCorrupt when data is not a JSON
// object or a known field has the wrong type. A pid that is not a positive
// integer is not corruption: it reads as 0, "missing or invalid".
func Parse(data []byte) (*Record, error) {
	// One decoding pass into the struct, and a scan of the top-level keys
	// for the unknown ones; anything unusual takes the exact, slower path.
	var w struct {
		plain
		PID json.RawMessage `json:"pid"` // shadows plain.PID
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return parseByField(data)
	}
	r := (*Record)(&w.plain)
	ok := members(data, func(key, val []byte) bool {
		if bytes.IndexByte(key, '\\') >= 0 || !utf8.Valid(key) {
			return false // let the exact path unquote it (escapes, U+FFFD)
		}
		name := string(key)
		if _, known := fieldIndex[name]; known {
			return true
		}
		if foldedIndex[strings.ToLower(name)] {
			return false // json matched it case-insensitively; Parse must not
		}
		if r.Extra == nil {
			r.Extra = map[string]json.RawMessage{}
		}
		r.Extra[name] = append(json.RawMessage(nil), val...)
		return true
	})
	if !ok {
		return parseByField(data)
	}
	r.PID = parsePID(w.PID)
	return r, nil
}

// plain is Record without its JSON methods.
type plain Record

// foldedIndex holds the known keys in lower case.
var foldedIndex = func() map[string]bool {
	m := map[string]bool{}
	for k := range fieldIndex {
		m[strings.ToLower(k)] = true
	}
	return m
}()

// parseByField decodes the object key by key, with exact key matching.
func parseByField(data []byte) (*Record, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if m == nil {
		return nil, fmt.Errorf("%w: null", ErrCorrupt)
	}
	r := &Record{}
	rv := reflect.ValueOf(r).Elem()
	for key, raw := range m {
		i, known := fieldIndex[key]
		switch {
		case !known:
			if r.Extra == nil {
				r.Extra = map[string]json.RawMessage{}
			}
			r.Extra[key] = raw
		case key == "pid":
			r.PID = parsePID(raw)
		default:
			if err := json.Unmarshal(raw, rv.Field(i).Addr().Interface()); err != nil {
				return nil, fmt.Errorf("%w: field %s: %v", ErrCorrupt, key, err)
			}
		}
	}
	return r, nil
}

// members calls fn with the raw key (unquoted, escapes left as they are)
// and raw value of each member of the object data, which must be valid
// JSON. It reports false when data is not an object or fn said stop.
func members(data []byte, fn func(key, val []byte) bool) bool {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i++
	for {
		i = skipSpace(data, i)
		if i >= len(data) {
			return false
		}
		switch data[i] {
		case '}':
			return true
		case ',':
			i = skipSpace(data, i+1)
		}
		if i >= len(data) || data[i] != '"' {
			return false
		}
		kEnd := endOfString(data, i)
		key := data[i+1 : kEnd-1]
		i = skipSpace(data, kEnd)
		if i >= len(data) || data[i] != ':' {
			return false
		}
		i = skipSpace(data, i+1)
		vEnd := endOfValue(data, i)
		if vEnd <= i || !fn(key, data[i:vEnd]) {
			return false
		}
		i = vEnd
	}
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// endOfString returns the index after the string starting at data[i] == '"'.
func endOfString(data []byte, i int) int {
	for i++; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(data)
}

// endOfValue returns the index after the value starting at data[i].
func endOfValue(data []byte, i int) int {
	if i >= len(data) {
		return i
	}
	switch data[i] {
	case '"':
		return endOfString(data, i)
	case '{', '[':
		depth := 0
		for i < len(data) {
			switch data[i] {
			case '"':
				i = endOfString(data, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return len(data)
	}
	for ; i < len(data); i++ {
		switch data[i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return i
		}
	}
	return i
}

func parsePID(raw json.RawMessage) int {
	var n int64
	if err := json.Unmarshal(raw, &n); err != nil || n <= 0 || n > math.MaxInt32 {
		return 0
	}
	return int(n)
}

// UnmarshalJSON is Parse.
func (r *Record) UnmarshalJSON(data []byte) error {
	p, err := Parse(data)
	if err != nil {
		return err
	}
	*r = *p
	return nil
}

// MarshalJSON writes the known fields, then Extra's in key order.
func (r *Record) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal((*plain)(r))
	if err != nil {
		return nil, fmt.Errorf("status: marshal: %w", err)
	}
	keys := make([]string, 0, len(r.Extra))
	for k := range r.Extra {
		if _, known := fieldIndex[k]; !known {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return b, nil
	}
	slices.Sort(keys)
	var out bytes.Buffer
	out.Write(b[:len(b)-1]) // without the closing brace
	for _, k := range keys {
		name, _ := json.Marshal(k)
		out.WriteByte(',')
		out.Write(name)
		out.WriteByte(':')
		if err := json.Compact(&out, r.Extra[k]); err != nil {
			return nil, fmt.Errorf("status: marshal field %s: %w", k, err)
		}
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}

// ValidSessionID reports whether id can name a record file: one path
// element of letters, digits, '-', '_' and '.', not starting with '.'.
func ValidSessionID(id string) bool {
	if id == "" || len(id) > 200 || id[0] == '.' {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}
