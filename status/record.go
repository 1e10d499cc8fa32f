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
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pi-session/pi-session/jsonscan"

	"github.com/pi-session/pi-session/clip"
	"github.com/pi-session/pi-session/jsonpos"
)

// Record is the status of one session, stored as <stateDir>/status/<sessionId>.json.
// The budget fields follow context-budget's status file; the process fields let a
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

	PID int `json:"pid"`
	// InvalidPID is what the file held as pid when that was not a usable
	// pid (0, negative, over 2^31-1, a fraction, a string...); PID is 0
	// then. It is written back unchanged.
	InvalidPID   json.RawMessage `json:"-"`
	StartTicks   uint64          `json:"startTicks,omitempty"` // process start, clock ticks since boot (/proc/<pid>/stat field 22)
	BootID       string          `json:"bootId,omitempty"`
	ProcessStart *time.Time      `json:"processStart,omitempty"` // wall-clock estimate of StartTicks, for people
	Version      string          `json:"version,omitempty"`      // pi-session version of the writer

	UpdatedAt time.Time  `json:"updatedAt,omitzero"`
	EndedAt   *time.Time `json:"endedAt,omitempty"` // set at clean shutdown; absent on a dead pid means a crash
	// Source is "supervisor" for a record pi-session's supervisor wrote
	// because pi never said hello (its extension did not connect, as in a
	// short -p run): its SessionID is then launch-<launch id>, pi's own
	// session id being unknown.
	Source string `json:"source,omitempty"`
	// ExitStatus is the process's exit status as its supervisor saw it:
	// the code, or 128+n after signal n. Absent when nobody saw it end.
	ExitStatus *int `json:"exitStatus,omitempty"`
	// EndedBy says how the supervisor saw the process end: EndExit (it
	// exited, whatever its status), EndInterrupt (Ctrl+C, or a stop
	// request pi-session received and passed on) or EndSignal (killed by
	// a signal nobody asked pi-session for: a crash, and EndedAt stays
	// unset). Absent in records of older versions and of a bye.
	EndedBy string `json:"endedBy,omitempty"`
	// ExitSignal names the signal that killed the process ("SIGKILL").
	ExitSignal string `json:"exitSignal,omitempty"`
	// ExitNote is the line of what pi printed that says why it ended,
	// for a pi that ended before its extension said hello (a flag pi
	// does not know, a Node that is too old); clipped, control
	// characters written out.
	ExitNote string `json:"exitNote,omitempty"`

	// Continues is the session this one continues after a relaunch from
	// a handoff, and ContinuedBy the session that continued this one:
	// the chain of launches of one pi-session.
	Continues   string `json:"continues,omitempty"`
	ContinuedBy string `json:"continuedBy,omitempty"`
	// HandoffsBefore counts the handoffs of the sessions before this one
	// in its chain, the one each relaunch continued from included;
	// HandoffCount counts this session's own.
	HandoffsBefore int `json:"handoffsBefore,omitempty"`

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

// Values of Record.EndedBy.
const (
	EndExit      = "exit"
	EndInterrupt = "interrupt"
	EndSignal    = "signal"
)

// PhaseRelaunched is the phase of a session whose pending handoff was
// carried out by a relaunch: the next session of the chain continues it.
const PhaseRelaunched = "relaunched"

// Values of Record.Role.
const (
	RoleMain  = "main"
	RoleChild = "child"
)

// RelaunchMarkerEnv names the variable through which the wrapper tells its
// child the relaunch marker path it assigned.
const RelaunchMarkerEnv = "PI_RELAUNCH_MARKER"

// ErrCorrupt marks a record file that is not a status record; errors.Is
// finds it in every *CorruptError.
var ErrCorrupt = errors.New("status: corrupt record")

// CorruptError says where a record file stops being a status record: the
// file (when known), the line and column, the field, and what is wrong.
// Of several problems it names the first in file order.
type CorruptError struct {
	Path  string      // "" when the caller parsed bytes
	Pos   jsonpos.Pos // zero for a problem of the whole file
	Field string      // the JSON key, "" when not about one field
	What  string
}

func (e *CorruptError) Error() string {
	if e.Path == "" {
		return "status: corrupt record: " + jsonpos.Message("", e.Pos, e.Field, e.What)
	}
	return "status: " + jsonpos.Message(e.Path, e.Pos, e.Field, e.What)
}

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// inFile returns the error with the file's path set.
func inFile(err error, path string) error {
	var ce *CorruptError
	if errors.As(err, &ce) && ce.Path == "" {
		c := *ce
		c.Path = path
		return &c
	}
	return err
}

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

// Parse reads a record. It fails with a *CorruptError (errors.Is
// ErrCorrupt) when data is not a JSON object or a known field has the
// wrong type, naming the first such field in file order with its line and
// column. A pid that is not a positive integer is not corruption: it reads
// as 0, "missing or invalid", with what was there in InvalidPID.
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
	end, err := jsonscan.WalkObject(data, 0, func(key []byte, vs, ve int) bool {
		key, val := key[1:len(key)-1], data[vs:ve]
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
	if err != nil || end < 0 {
		return parseByField(data)
	}
	r.PID, r.InvalidPID = parsePID(w.PID)
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

// parseByField decodes the object member by member in file order, with
// exact key matching; a later duplicate replaces an earlier one, as in
// encoding/json. Its errors name the first problem in file order.
func parseByField(data []byte) (*Record, error) {
	ms, isObject := jsonpos.Members(data)
	if !isObject {
		if len(bytes.TrimSpace(data)) == 0 {
			return nil, &CorruptError{Pos: jsonpos.Pos{Line: 1, Column: 1}, What: "empty file"}
		}
		if !json.Valid(data) {
			pos, what := jsonpos.SyntaxError(data, json.Unmarshal(data, new(json.RawMessage)))
			return nil, &CorruptError{Pos: pos, What: what}
		}
		start := int64(len(data) - len(bytes.TrimLeft(data, " \t\r\n")))
		return nil, &CorruptError{Pos: jsonpos.At(data, start), What: "want a JSON object, got " + jsonpos.Kind(data)}
	}
	r := &Record{}
	rv := reflect.ValueOf(r).Elem()
	for _, m := range ms {
		i, known := fieldIndex[m.Key]
		switch {
		case !known:
			if r.Extra == nil {
				r.Extra = map[string]json.RawMessage{}
			}
			r.Extra[m.Key] = m.Value
		case m.Key == "pid":
			r.PID, r.InvalidPID = parsePID(m.Value)
		default:
			f := rv.Field(i)
			f.SetZero()
			if err := json.Unmarshal(m.Value, f.Addr().Interface()); err != nil {
				return nil, fieldError(data, m, f.Type(), err)
			}
		}
	}
	return r, nil
}

// fieldError describes a member whose value does not fit its field; for a
// member of a nested object (thresholds.soft) it points at that member.
func fieldError(data []byte, m jsonpos.Member, t reflect.Type, err error) *CorruptError {
	at, val := m.Offset, m.Value
	e := &CorruptError{Field: m.Key}
	var ute *json.UnmarshalTypeError
	if errors.As(err, &ute) && ute.Field != "" {
		e.Field, t = m.Key+"."+ute.Field, ute.Type
		if sub, ok := jsonpos.Members(m.Value); ok {
			for _, sm := range sub {
				if sm.Key == ute.Field {
					at, val = m.Offset+sm.Offset, sm.Value
				}
			}
		}
	}
	e.Pos = jsonpos.At(data, at)
	e.What = fmt.Sprintf("want %s, got %s", want(t), got(val))
	return e
}

// got shows a wrong value: scalars as written (cut to 40 characters),
// objects and arrays by their kind.
func got(val []byte) string {
	if k := jsonpos.Kind(val); k == "an object" || k == "an array" {
		return k
	}
	return clip.To(string(val), 40)
}

// want names what a field of type t holds, for messages.
func want(t reflect.Type) string {
	orNull := ""
	if t.Kind() == reflect.Pointer {
		t, orNull = t.Elem(), " or null"
	}
	var what string
	switch {
	case t == reflect.TypeFor[time.Time]():
		what = "a time like \"2026-01-02T03:04:05Z\""
	case t.Kind() == reflect.String:
		what = "a string"
	case t.Kind() == reflect.Bool:
		what = "true or false"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		what = "a whole number"
	case t.Kind() == reflect.Struct:
		what = "an object"
	default:
		what = "a " + t.Kind().String()
	}
	return what + orNull
}

// parsePID reads a pid: a whole number from 1 to 2^31-1. Anything else
// present (not null) is returned, compacted, as invalid.
func parsePID(raw json.RawMessage) (int, json.RawMessage) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	var n int64
	if err := json.Unmarshal(raw, &n); err != nil || n <= 0 || n > math.MaxInt32 {
		var b bytes.Buffer
		if json.Compact(&b, raw) != nil {
			return 0, nil
		}
		return 0, b.Bytes()
	}
	return int(n), nil
}

// PIDText says what the record holds as pid, for people: "pid 4242",
// "invalid pid 4242.5" (what was there, cut to 40 characters), or "no pid".
func (r *Record) PIDText() string {
	switch {
	case r.PID > 0:
		return "pid " + strconv.Itoa(r.PID)
	case len(r.InvalidPID) > 0:
		return "invalid pid " + clip.To(string(r.InvalidPID), 40)
	}
	return "no pid"
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
	if r.PID == 0 {
		// No pid is written as none, an invalid one as it was. Known fields
		// before pid are strings (quotes escaped), numbers and thresholds,
		// so the first `,"pid":0` is the field itself.
		var with []byte
		var raw bytes.Buffer
		if len(r.InvalidPID) > 0 && json.Compact(&raw, r.InvalidPID) == nil {
			with = append([]byte(`,"pid":`), raw.Bytes()...)
		}
		b = bytes.Replace(b, []byte(`,"pid":0`), with, 1)
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
