package budget

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/pi-session/pi-session/clip"
	"github.com/pi-session/pi-session/jsonpos"
	"github.com/pi-session/pi-session/paths"
	"github.com/pi-session/pi-session/regfile"
)

// Modes of the policy.
const (
	ModeOff     = "off"
	ModeObserve = "observe"
	ModeEnforce = "enforce"
)

// Thresholds are token limits of one role (main or subagent). Soft and
// Handoff are minimums and MinProgress the growth required above the
// measured floor; Hard is absolute.
type Thresholds struct {
	Soft        float64 `json:"soft"`
	Handoff     float64 `json:"handoff"`
	Hard        float64 `json:"hard"`
	MinProgress float64 `json:"minProgress"`
}

// Grace is the state-recording grace window before blocking.
type Grace struct {
	Enabled  bool    `json:"enabled"`
	Calls    int     `json:"calls"`
	Fraction float64 `json:"fraction"`
}

// Loop is the loop guard.
type Loop struct {
	MaxHandoffsWithoutProgress int `json:"maxHandoffsWithoutProgress"`
	WithinTurns                int `json:"withinTurns"`
}

// ModelOverride holds per-model thresholds, merged key by key into the
// role's thresholds.
type ModelOverride struct {
	Main     map[string]float64 `json:"main,omitempty"`
	Subagent map[string]float64 `json:"subagent,omitempty"`
}

// Config is context-budget.json after validation.
type Config struct {
	Mode                  string                   `json:"mode"`
	ResumeChecks          map[string]string        `json:"resumeChecks"`
	OverflowRecovery      bool                     `json:"overflowRecovery"`
	Main                  Thresholds               `json:"main"`
	Subagent              Thresholds               `json:"subagent"`
	Models                map[string]ModelOverride `json:"models,omitempty"`
	EnforceCwds           []string                 `json:"enforceCwds,omitempty"` // nil: everywhere
	IdleMinutes           float64                  `json:"idleMinutes"`
	IdleMinTokens         float64                  `json:"idleMinTokens"`
	KeepRecentTokens      float64                  `json:"keepRecentTokens"`
	MaxHandoffsPerSession int                      `json:"maxHandoffsPerSession"`
	Loop                  Loop                     `json:"loop"`
	HandoffGrace          Grace                    `json:"handoffGrace"`
}

// Default is the configuration without a file: observe mode.
func Default() Config {
	return Config{
		Mode:                  ModeObserve,
		ResumeChecks:          map[string]string{},
		OverflowRecovery:      true,
		Main:                  Thresholds{Soft: 300000, Handoff: 400000, Hard: 600000, MinProgress: 50000},
		Subagent:              Thresholds{Soft: 150000, Handoff: 200000, Hard: 300000, MinProgress: 25000},
		IdleMinutes:           50,
		IdleMinTokens:         300000,
		KeepRecentTokens:      20000,
		MaxHandoffsPerSession: 10,
		Loop:                  Loop{MaxHandoffsWithoutProgress: 2, WithinTurns: 8},
		HandoffGrace:          Grace{Enabled: true, Calls: 4, Fraction: 0.5},
	}
}

// ConfigError is one problem with the configuration, named by its key
// (dotted, e.g. "main.soft").
type ConfigError struct {
	Key     string `json:"key"`
	Message string `json:"message"`
	Warning bool   `json:"warning,omitempty"` // an unknown key: reported, the mode stands
	// Where: the file, and the line and column of the key's value (or of
	// the syntax error), when LoadConfig knows them.
	File   string `json:"file,omitempty"`
	Line   int    `json:"line,omitempty"`
	Column int    `json:"column,omitempty"`
}

func (e ConfigError) Error() string {
	if e.File != "" {
		return "budget: config: " + jsonpos.Message(e.File, jsonpos.Pos{Line: e.Line, Column: e.Column}, e.Key, e.Message)
	}
	if e.Key == "" {
		return "budget: config: " + e.Message
	}
	return fmt.Sprintf("budget: config: %s: %s", clip.Echo(e.Key), e.Message)
}

// place sets where each error is: the file, and the position of the value
// its key names (of the deepest member found along the key's path) or of
// a syntax error.
func place(path string, data []byte, errs []ConfigError) {
	for i := range errs {
		e := &errs[i]
		e.File = path
		if e.Line > 0 {
			continue // placed by ParseConfig (jsonpos.Check's findings, the byte order mark)
		}
		if e.Key == "" {
			if !json.Valid(data) {
				var v any
				pos, _ := jsonpos.SyntaxError(data, json.Unmarshal(data, &v))
				e.Line, e.Column = pos.Line, pos.Column
			}
			continue
		}
		if off, ok := keyOffset(data, e.Key); ok {
			pos := jsonpos.At(data, off)
			e.Line, e.Column = pos.Line, pos.Column
		}
	}
	// File order, as a reader goes through the file; unplaced ones last.
	slices.SortStableFunc(errs, func(a, b ConfigError) int {
		if (a.Line == 0) != (b.Line == 0) {
			return cmp.Compare(b.Line, a.Line) // the placed one first
		}
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
}

// keyOffset finds the value a dotted key names ("models.p/gpt-4.1.main.soft":
// member names may hold dots, so the longest member name that the key
// continues is taken at each level; "[i]" stops at the array).
func keyOffset(data []byte, key string) (int64, bool) {
	var base int64
	found := false
	for key != "" {
		members, ok := jsonpos.Members(data)
		if !ok {
			break
		}
		best := -1
		for i, m := range members {
			if (key == m.Key || strings.HasPrefix(key, m.Key+".") || strings.HasPrefix(key, m.Key+"[")) && (best < 0 || len(m.Key) > len(members[best].Key)) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		m := members[best]
		// The last member of that name: the one json.Unmarshal keeps.
		for _, o := range members[best+1:] {
			if o.Key == m.Key {
				m = o
			}
		}
		base, data, found = base+m.Offset, m.Value, true
		key = strings.TrimPrefix(key[len(m.Key):], ".")
		if strings.HasPrefix(key, "[") {
			break
		}
	}
	return base, found
}

// configSchema is every key of context-budget.json, for jsonpos.Check.
var configSchema = func() *jsonpos.Schema {
	thresholds := jsonpos.Leaves("soft", "handoff", "hard", "minProgress")
	return jsonpos.Object(map[string]*jsonpos.Schema{
		"mode": nil, "overflowRecovery": nil, "enforceCwds": nil,
		"idleMinutes": nil, "idleMinTokens": nil, "keepRecentTokens": nil, "maxHandoffsPerSession": nil,
		"resumeChecks": {Any: &jsonpos.Schema{}}, // session names
		"main":         thresholds, "subagent": thresholds,
		"models":       {Any: jsonpos.Object(map[string]*jsonpos.Schema{"main": thresholds, "subagent": thresholds})},
		"loop":         jsonpos.Leaves("maxHandoffsWithoutProgress", "withinTurns"),
		"handoffGrace": jsonpos.Leaves("enabled", "calls", "fraction"),
	})
}()

// Loaded is a configuration with where it came from and what was wrong.
type Loaded struct {
	Config Config        `json:"config"`
	Path   string        `json:"path"`
	Found  bool          `json:"found"`
	Errors []ConfigError `json:"errors,omitempty"`
	// Requested is the file's mode when it names a valid one, even if an
	// error elsewhere in the file forced observe mode: what the user
	// configured, for the footer and pi-session status.
	Requested string `json:"requested,omitempty"`
}

// Invalid reports whether an error (not a warning) forced observe mode.
func (l Loaded) Invalid() bool {
	for _, e := range l.Errors {
		if !e.Warning {
			return true
		}
	}
	return false
}

// ConfigPath is PI_CONTEXT_BUDGET_CONFIG or <agentDir>/context-budget.json.
func ConfigPath(getenv paths.Getenv) string {
	if p := getenv("PI_CONTEXT_BUDGET_CONFIG"); p != "" {
		return p
	}
	return filepath.Join(paths.AgentDir(getenv), "context-budget.json")
}

// maxConfigBytes bounds the configuration file: far above any real one.
const maxConfigBytes = 1 << 20

// LoadConfig reads and validates the configuration at path. A missing file
// is the default (observe); an unreadable or invalid one is observe mode
// with each error named by its key.
func LoadConfig(path string) Loaded {
	data, err := regfile.Read(path, maxConfigBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return Loaded{Config: Default(), Path: path}
	}
	if err != nil {
		return Loaded{Config: Default(), Path: path, Found: true, Errors: []ConfigError{{Message: err.Error()}}}
	}
	cfg, errs := ParseConfig(data)
	data, _ = jsonpos.TrimBOM(data) // ParseConfig's places count from after it
	place(path, data, errs)
	l := Loaded{Config: cfg, Path: path, Found: true, Errors: errs}
	var m struct {
		Mode string `json:"mode"`
	}
	if json.Unmarshal(data, &m) == nil && (m.Mode == ModeOff || m.Mode == ModeObserve || m.Mode == ModeEnforce) {
		l.Requested = m.Mode
	}
	return l
}

// ParseConfig validates a configuration file's content. Valid keys are
// kept; an invalid key takes its default; any error forces observe mode.
func ParseConfig(data []byte) (Config, []ConfigError) {
	c := Default()
	var errs []ConfigError
	bad := func(key, format string, args ...any) {
		errs = append(errs, ConfigError{Key: key, Message: fmt.Sprintf(format, args...)})
	}
	data, bom := jsonpos.TrimBOM(data)
	if bom {
		errs = append(errs, ConfigError{Message: jsonpos.BOMWarning, Warning: true, Line: 1, Column: 1})
	}
	var top map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	if p, what, ok := jsonpos.NotObject(data); !ok {
		return forceObserve(c), append(errs, ConfigError{Message: what + "; want a JSON object of the budget's settings", Line: p.Line, Column: p.Column})
	}
	if err := dec.Decode(&top); err != nil || top == nil {
		return forceObserve(c), append(errs, ConfigError{Message: fmt.Sprintf("not a JSON object: %v", err)})
	}
	if dec.More() {
		return forceObserve(c), append(errs, ConfigError{Message: "extra data after the JSON object"})
	}
	// Unknown keys, at any depth, with the known key nearest, and keys
	// given twice: warnings placed at the key (the last of a repeated key
	// is used, as json.Unmarshal does, and the mode stands). An unknown
	// role of a model is an error: that model's thresholds are not used.
	for _, f := range jsonpos.Check(data, configSchema) {
		e := ConfigError{Key: f.Path, Message: f.What(), Warning: true, Line: f.Pos.Line, Column: f.Pos.Column}
		if f.Path == "" {
			e.Message = `key "": ` + e.Message
		}
		if f.Kind == jsonpos.UnknownKey && slices.Equal(f.Known, []string{"main", "subagent"}) {
			e.Message = fmt.Sprintf(`unknown role (%s); use "main" or "subagent": this model's thresholds are not used`, f.Hint())
			e.Warning = false
		}
		errs = append(errs, e)
	}
	for _, key := range sortedKeys(top) {
		raw := top[key]
		switch key {
		case "mode":
			var s string
			if json.Unmarshal(raw, &s) != nil || (s != ModeOff && s != ModeObserve && s != ModeEnforce) {
				bad(key, `must be "off", "observe" or "enforce", got %s`, clipRaw(raw))
				continue
			}
			c.Mode = s
		case "overflowRecovery":
			var b bool
			if json.Unmarshal(raw, &b) != nil {
				bad(key, "must be true or false, got %s", clipRaw(raw))
				continue
			}
			c.OverflowRecovery = b
		case "resumeChecks":
			var m map[string]json.RawMessage
			if json.Unmarshal(raw, &m) != nil || m == nil {
				bad(key, "must be an object of session names to commands, got %s", clipRaw(raw))
				continue
			}
			out := map[string]string{}
			for _, name := range sortedKeys(m) {
				var s string
				if json.Unmarshal(m[name], &s) != nil || strings.TrimSpace(s) == "" {
					bad(key+"."+name, "must be a nonempty command string, got %s", clipRaw(m[name]))
					continue
				}
				out[name] = s
			}
			c.ResumeChecks = out
		case "main", "subagent":
			base := c.Main
			if key == "subagent" {
				base = c.Subagent
			}
			t, e := parseThresholds(key, raw, base)
			errs = append(errs, e...)
			if len(e) == 0 {
				if key == "main" {
					c.Main = t
				} else {
					c.Subagent = t
				}
			}
		case "models":
			var m map[string]json.RawMessage
			if json.Unmarshal(raw, &m) != nil || m == nil {
				bad(key, "must be an object keyed by provider/model-id, got %s", clipRaw(raw))
				continue
			}
			c.Models = map[string]ModelOverride{}
			for _, id := range sortedKeys(m) {
				k := key + "." + id
				if !strings.Contains(id, "/") || strings.HasPrefix(id, "/") || strings.HasSuffix(id, "/") {
					bad(k, "model keys are exact provider/model-id")
					continue
				}
				var roles map[string]json.RawMessage
				if json.Unmarshal(m[id], &roles) != nil || roles == nil {
					bad(k, "must be an object with main and/or subagent, got %s", clipRaw(m[id]))
					continue
				}
				var o ModelOverride
				ok := true
				for _, r := range sortedKeys(roles) {
					if r != "main" && r != "subagent" {
						ok = false // an error of jsonpos.Check's
						continue
					}
					part, e := parsePartial(k+"."+r, roles[r])
					errs = append(errs, e...)
					if len(e) > 0 {
						ok = false
					}
					if r == "main" {
						o.Main = part
					} else {
						o.Subagent = part
					}
				}
				if ok {
					c.Models[id] = o
				}
			}
		case "enforceCwds":
			var list []json.RawMessage
			if json.Unmarshal(raw, &list) != nil || list == nil {
				bad(key, "must be an array of absolute directory prefixes or globs, got %s", clipRaw(raw))
				continue
			}
			out := []string{}
			ok := true
			for i, item := range list {
				var s string
				k := fmt.Sprintf("%s[%d]", key, i)
				switch {
				case json.Unmarshal(item, &s) != nil:
					bad(k, "must be a string, got %s", clipRaw(item))
					ok = false
				case !strings.HasPrefix(s, "/"):
					bad(k, "must be an absolute path (no ~ expansion), got %q", s)
					ok = false
				default:
					if _, err := compileGlob(s); err != nil {
						bad(k, "%v", err)
						ok = false
						continue
					}
					out = append(out, s)
				}
			}
			if ok {
				c.EnforceCwds = out
			}
		case "idleMinutes", "idleMinTokens", "keepRecentTokens":
			f, ok := positive(raw)
			if !ok {
				bad(key, "must be a positive finite number, got %s", clipRaw(raw))
				continue
			}
			switch key {
			case "idleMinutes":
				c.IdleMinutes = f
			case "idleMinTokens":
				c.IdleMinTokens = f
			default:
				c.KeepRecentTokens = f
			}
		case "maxHandoffsPerSession":
			n, ok := count(raw)
			if !ok {
				bad(key, "must be a positive integer, got %s", clipRaw(raw))
				continue
			}
			c.MaxHandoffsPerSession = n
		case "loop":
			var m map[string]json.RawMessage
			if json.Unmarshal(raw, &m) != nil || m == nil {
				bad(key, "must be an object, got %s", clipRaw(raw))
				continue
			}
			l := c.Loop
			ok := true
			for _, k := range sortedKeys(m) {
				n, good := count(m[k])
				switch {
				case k != "maxHandoffsWithoutProgress" && k != "withinTurns":
					// unknown: a warning of jsonpos.Check's
				case !good:
					bad(key+"."+k, "must be a positive integer, got %s", clipRaw(m[k]))
					ok = false
				case k == "maxHandoffsWithoutProgress":
					l.MaxHandoffsWithoutProgress = n
				default:
					l.WithinTurns = n
				}
			}
			if ok {
				c.Loop = l
			}
		case "handoffGrace":
			var m map[string]json.RawMessage
			if json.Unmarshal(raw, &m) != nil || m == nil {
				bad(key, "must be an object, got %s", clipRaw(raw))
				continue
			}
			g := c.HandoffGrace
			ok := true
			for _, k := range sortedKeys(m) {
				switch k {
				case "enabled":
					if json.Unmarshal(m[k], &g.Enabled) != nil {
						bad(key+"."+k, "must be true or false, got %s", clipRaw(m[k]))
						ok = false
					}
				case "calls":
					n, good := count(m[k])
					if !good {
						bad(key+"."+k, "must be a positive integer, got %s", clipRaw(m[k]))
						ok = false
					}
					g.Calls = n
				case "fraction":
					f, good := positive(m[k])
					if !good || f > 1 {
						bad(key+"."+k, "must be greater than 0 and at most 1, got %s", clipRaw(m[k]))
						ok = false
					}
					g.Fraction = f
				}
			}
			if ok {
				c.HandoffGrace = g
			}
		}
	}
	// Model overrides must still order soft <= handoff <= hard once merged.
	for _, id := range sortedKeys(c.Models) {
		o := c.Models[id]
		for _, r := range []struct {
			name string
			base Thresholds
			part map[string]float64
		}{{"main", c.Main, o.Main}, {"subagent", c.Subagent, o.Subagent}} {
			if r.part == nil {
				continue
			}
			if msg := order(merge(r.base, r.part)); msg != "" {
				bad("models."+id+"."+r.name, "merged with %s: %s", r.name, msg)
				delete(c.Models, id)
			}
		}
	}
	if len(errs) > 0 {
		for _, e := range errs {
			if !e.Warning {
				return forceObserve(c), errs
			}
		}
	}
	return c, errs
}

func forceObserve(c Config) Config {
	c.Mode = ModeObserve
	return c
}

func parseThresholds(key string, raw json.RawMessage, base Thresholds) (Thresholds, []ConfigError) {
	part, errs := parsePartial(key, raw)
	if len(errs) > 0 {
		return Thresholds{}, errs
	}
	// Keys left out keep the role's defaults; the result must be ordered.
	t := merge(base, part)
	if msg := order(t); msg != "" {
		return Thresholds{}, []ConfigError{{Key: key, Message: msg}}
	}
	return t, nil
}

func parsePartial(key string, raw json.RawMessage) (map[string]float64, []ConfigError) {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || m == nil {
		return nil, []ConfigError{{Key: key, Message: fmt.Sprintf("must be an object with soft, handoff, hard and minProgress, got %s", clipRaw(raw))}}
	}
	out := map[string]float64{}
	var errs []ConfigError
	for _, k := range sortedKeys(m) {
		switch k {
		case "soft", "handoff", "hard", "minProgress":
			f, ok := positive(m[k])
			if !ok {
				errs = append(errs, ConfigError{Key: key + "." + k, Message: fmt.Sprintf("must be a positive finite number, got %s", clipRaw(m[k]))})
				continue
			}
			out[k] = f
		}
		// Other keys are unknown: warnings of jsonpos.Check's.
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

func merge(t Thresholds, part map[string]float64) Thresholds {
	for k, v := range part {
		switch k {
		case "soft":
			t.Soft = v
		case "handoff":
			t.Handoff = v
		case "hard":
			t.Hard = v
		case "minProgress":
			t.MinProgress = v
		}
	}
	return t
}

func order(t Thresholds) string {
	if t.Soft > t.Handoff || t.Handoff > t.Hard {
		return fmt.Sprintf("soft <= handoff <= hard is required, got soft %g, handoff %g, hard %g", t.Soft, t.Handoff, t.Hard)
	}
	return ""
}

func positive(raw json.RawMessage) (float64, bool) {
	var f float64
	if json.Unmarshal(raw, &f) != nil || math.IsNaN(f) || math.IsInf(f, 0) || f <= 0 {
		return 0, false
	}
	return f, true
}

func count(raw json.RawMessage) (int, bool) {
	f, ok := positive(raw)
	if !ok || f != math.Trunc(f) || f > math.MaxInt32 {
		return 0, false
	}
	return int(f), true
}

func clipRaw(raw json.RawMessage) string {
	s := string(bytes.TrimSpace(raw))
	if len(s) > 60 {
		s = s[:60] + "..."
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// ThresholdsFor returns the thresholds of a role (subagent or main) for a
// model "provider/model-id", with the model's overrides merged in.
func (c Config) ThresholdsFor(subagent bool, model string) Thresholds {
	t, part := c.Main, c.Models[model].Main
	if subagent {
		t, part = c.Subagent, c.Models[model].Subagent
	}
	return merge(t, part)
}

// Effective is the mode in force for a cwd: enforce outside enforceCwds
// becomes observe, with the reason.
func (c Config) Effective(cwd string) (mode, reason string) {
	if c.Mode != ModeEnforce || c.EnforceCwds == nil {
		return c.Mode, ""
	}
	for _, p := range c.EnforceCwds {
		if cwdMatches(p, cwd) {
			return ModeEnforce, ""
		}
	}
	return ModeObserve, "cwd restriction"
}

// cwdMatches: a glob matches the whole cwd; a prefix matches at a
// directory boundary.
func cwdMatches(pattern, cwd string) bool {
	cwd = filepath.Clean(cwd)
	if strings.ContainsAny(pattern, "*?[{") {
		re, err := compileGlob(pattern)
		return err == nil && re.MatchString(cwd)
	}
	p := filepath.Clean(pattern)
	return cwd == p || p == "/" || strings.HasPrefix(cwd, p+"/")
}

// compileGlob translates a glob as Node's path.matchesGlob reads it (*,
// **, ?, [classes], {a,b}) into a regular expression.
func compileGlob(g string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("^")
	depth := 0
	for i := 0; i < len(g); i++ {
		c := g[i]
		switch c {
		case '*':
			if i+1 < len(g) && g[i+1] == '*' {
				i++
				if i+1 < len(g) && g[i+1] == '/' {
					i++
					b.WriteString("(?:.*/)?")
				} else {
					b.WriteString(".*")
				}
			} else {
				b.WriteString("[^/]*")
			}
		case '?':
			b.WriteString("[^/]")
		case '[':
			j := strings.IndexByte(g[i+1:], ']')
			if j < 0 {
				return nil, fmt.Errorf("glob %q: unclosed [", g)
			}
			class := g[i+1 : i+1+j]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			b.WriteString("[" + strings.ReplaceAll(class, `\`, `\\`) + "]")
			i += j + 1
		case '{':
			depth++
			b.WriteString("(?:")
		case '}':
			if depth == 0 {
				return nil, fmt.Errorf("glob %q: } without {", g)
			}
			depth--
			b.WriteString(")")
		case ',':
			if depth > 0 {
				b.WriteString("|")
			} else {
				b.WriteString(",")
			}
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("glob %q: unclosed {", g)
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil, fmt.Errorf("glob %q: %v", g, err)
	}
	return re, nil
}
