package relay

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"

	"github.com/pi-session/pi-session/clip"
	"github.com/pi-session/pi-session/jsonpos"
	"github.com/pi-session/pi-session/regfile"
)

// Version is the note format version, recorded in a relay's compaction
// details.
const Version = 1

// Limits cap the note's sections, in characters. Total caps the whole note.
type Limits struct {
	Total           int `json:"total"`
	UserMessages    int `json:"userMessages"`    // the user instructions section
	UserMessageEach int `json:"userMessageEach"` // the newest instruction; older ones get less
	Chain           int `json:"chain"`           // the one line condensing earlier notes' instructions
	Answer          int `json:"answer"`          // the final answer before the kept exchange
	Subagents       int `json:"subagents"`
	Files           int `json:"files"`
	Commands        int `json:"commands"` // the build and test commands run
	Task            int `json:"task"`     // the task statement (the session's first user message)
	Git             int `json:"git"`
	Extra           int `json:"extra"` // sections added by callers (context-relay's M3 seam)
}

// Auto configures the automatic triggers.
type Auto struct {
	OnInput         bool `json:"onInput"`
	InputMinTokens  int  `json:"inputMinTokens"`
	BeforeExpiry    bool `json:"beforeExpiry"`
	ExpiryMinTokens int  `json:"expiryMinTokens"`
	MinGrowthTokens int  `json:"minGrowthTokens"`
}

// Config is <agentDir>/context-relay.json.
type Config struct {
	Enabled      bool   `json:"enabled"` // false: the extension registers no /relay, no recall and no trigger
	TailMaxChars int    `json:"tailMaxChars"`
	GitTimeoutMs int    `json:"gitTimeoutMs"`
	Limits       Limits `json:"limits"`
	Auto         Auto   `json:"auto"`
}

// DefaultConfig is the configuration without a file (context-relay's defaults).
func DefaultConfig() Config {
	return Config{
		Enabled:      true,
		TailMaxChars: 48000,
		GitTimeoutMs: 4000,
		Limits: Limits{
			Total: 9500, UserMessages: 3000, UserMessageEach: 1200, Chain: 400,
			Answer: 2000, Subagents: 1500, Files: 800, Commands: 600, Task: 2500, Git: 1200, Extra: 1000,
		},
		Auto: Auto{
			OnInput: true, InputMinTokens: 100000,
			BeforeExpiry: true, ExpiryMinTokens: 140000,
			MinGrowthTokens: 30000,
		},
	}
}

// configSchema is every key of context-relay.json, for jsonpos.Check.
var configSchema = jsonpos.Object(map[string]*jsonpos.Schema{
	"enabled": nil, "tailMaxChars": nil, "gitTimeoutMs": nil,
	"limits": jsonpos.Leaves("total", "userMessages", "userMessageEach", "chain", "answer", "subagents", "files", "commands", "task", "git", "extra"),
	"auto":   jsonpos.Leaves("onInput", "inputMinTokens", "beforeExpiry", "expiryMinTokens", "minGrowthTokens"),
})

// ParseConfig reads a configuration. A missing key, or one of the wrong
// type or out of range, keeps its default and adds a warning naming it; a
// file that is not a JSON object keeps every default. Unknown keys, at any
// depth, are reported with the known key nearest to them, and so are keys
// given twice and a byte order mark (the file is read without it), so a
// typo does not pass silently. Warnings are in file order, placed as
// "name:line:column: field "limits.total": ..." (jsonpos.Message; "line
// L, column C" without a name).
func ParseConfig(name string, data []byte) (Config, []string) {
	c := DefaultConfig()
	type warning struct {
		off int64
		msg string
	}
	var warn []warning
	data, bom := jsonpos.TrimBOM(data)
	if bom {
		warn = append(warn, warning{-1, jsonpos.Message(name, jsonpos.Pos{Line: 1, Column: 1}, "", jsonpos.BOMWarning)})
	}
	say := func(off int64, field, format string, a ...any) {
		warn = append(warn, warning{off, jsonpos.Message(name, jsonpos.At(data, off), field, fmt.Sprintf(format, a...))})
	}
	list := func() []string {
		slices.SortStableFunc(warn, func(a, b warning) int { return cmp.Compare(a.off, b.off) })
		var out []string
		for _, w := range warn {
			out = append(out, w.msg)
		}
		return out
	}
	top, ok := jsonpos.Members(data)
	if !ok {
		if err := json.Unmarshal(data, new(json.RawMessage)); err != nil {
			pos, what := jsonpos.SyntaxError(data, err)
			warn = append(warn, warning{int64(len(data)), jsonpos.Message(name, pos, "", what+": every key has its default")})
			return c, list()
		}
		start := int64(len(data) - len(bytes.TrimLeft(data, " \t\r\n")))
		say(start, "", "the file holds %s, not an object: every key has its default", jsonpos.Kind(data))
		return c, list()
	}
	// Unknown keys and keys given twice, at any depth: the last of a
	// repeated key is used, as JSON readers do, but an edit may have gone
	// to the other.
	for _, f := range jsonpos.Check(data, configSchema) {
		warn = append(warn, warning{f.Offset, f.Message(name)})
	}
	boolKey := func(m jsonpos.Member, field string, dst *bool) {
		if err := json.Unmarshal(m.Value, dst); err != nil || string(m.Value) == "null" {
			say(m.Offset, field, "is %s, want true or false: default %v used", jsonpos.Kind(m.Value), *dst)
		}
	}
	intKey := func(m jsonpos.Member, field string, dst *int, lo, hi int) {
		var f float64
		if err := json.Unmarshal(m.Value, &f); err != nil || string(m.Value) == "null" || f != float64(int(f)) || int(f) < lo || int(f) > hi {
			say(m.Offset, field, "is %s, want a whole number from %d to %d: default %d used", clip.Echo(string(m.Value)), lo, hi, *dst)
			return
		}
		*dst = int(f)
	}
	// object returns the members of an object-valued key, placed in data.
	object := func(m jsonpos.Member) ([]jsonpos.Member, bool) {
		sub, ok := jsonpos.Members(m.Value)
		if !ok {
			say(m.Offset, m.Key, "is %s, want an object: its defaults used", jsonpos.Kind(m.Value))
			return nil, false
		}
		for i := range sub {
			sub[i].Offset += m.Offset
			sub[i].KeyOffset += m.Offset
		}
		return sub, true
	}
	const big = 1 << 30
	for _, m := range top {
		switch m.Key {
		case "enabled":
			boolKey(m, m.Key, &c.Enabled)
		case "tailMaxChars":
			intKey(m, m.Key, &c.TailMaxChars, 0, big)
		case "gitTimeoutMs":
			intKey(m, m.Key, &c.GitTimeoutMs, 0, 600000)
		case "limits":
			sub, ok := object(m)
			if !ok {
				continue
			}
			l := &c.Limits
			keys := map[string]struct {
				dst    *int
				lo, hi int
			}{
				"total": {&l.Total, 500, big}, "userMessages": {&l.UserMessages, 0, big}, "userMessageEach": {&l.UserMessageEach, 40, big},
				"chain": {&l.Chain, 0, big}, "answer": {&l.Answer, 0, big}, "subagents": {&l.Subagents, 0, big},
				"files": {&l.Files, 0, big}, "commands": {&l.Commands, 0, big}, "task": {&l.Task, 0, big},
				"git": {&l.Git, 0, big}, "extra": {&l.Extra, 0, big},
			}
			for _, sm := range sub {
				if k, ok := keys[sm.Key]; ok {
					intKey(sm, "limits."+sm.Key, k.dst, k.lo, k.hi)
				}
			}
		case "auto":
			sub, ok := object(m)
			if !ok {
				continue
			}
			a := &c.Auto
			for _, sm := range sub {
				switch f := "auto." + sm.Key; sm.Key {
				case "onInput":
					boolKey(sm, f, &a.OnInput)
				case "beforeExpiry":
					boolKey(sm, f, &a.BeforeExpiry)
				case "inputMinTokens":
					intKey(sm, f, &a.InputMinTokens, 0, big)
				case "expiryMinTokens":
					intKey(sm, f, &a.ExpiryMinTokens, 0, big)
				case "minGrowthTokens":
					intKey(sm, f, &a.MinGrowthTokens, 0, big)
				}
			}
		}
	}
	return c, list()
}

// maxConfigBytes bounds the configuration file: far above any real one.
const maxConfigBytes = 1 << 20

// LoadConfig reads the configuration at path. A missing file is the
// defaults without a warning; an unreadable one is the defaults with one.
// Warnings name the file.
func LoadConfig(path string) (Config, []string) {
	data, err := regfile.Read(path, maxConfigBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return DefaultConfig(), nil
	}
	if err != nil {
		return DefaultConfig(), []string{fmt.Sprintf("%s: %v: every key has its default", path, err)}
	}
	return ParseConfig(path, data)
}
