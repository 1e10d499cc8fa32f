package relay

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"

	"github.com/pi-session/pi-session/jsonpos"
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
	Git             int `json:"git"`
	Extra           int `json:"extra"` // sections added by callers (the seed's M3 seam)
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
	Enabled      bool   `json:"enabled"`
	TailMaxChars int    `json:"tailMaxChars"`
	GitTimeoutMs int    `json:"gitTimeoutMs"`
	Limits       Limits `json:"limits"`
	Auto         Auto   `json:"auto"`
}

// DefaultConfig is the configuration without a file (the seed's defaults).
func DefaultConfig() Config {
	return Config{
		Enabled:      true,
		TailMaxChars: 48000,
		GitTimeoutMs: 4000,
		Limits: Limits{
			Total: 9500, UserMessages: 3000, UserMessageEach: 1200, Chain: 400,
			Answer: 2000, Subagents: 1500, Files: 800, Git: 1200, Extra: 1000,
		},
		Auto: Auto{
			OnInput: true, InputMinTokens: 100000,
			BeforeExpiry: true, ExpiryMinTokens: 140000,
			MinGrowthTokens: 30000,
		},
	}
}

// ParseConfig reads a configuration. A missing key, or one of the wrong
// type or out of range, keeps its default and adds a warning naming it; a
// file that is not a JSON object keeps every default. Unknown keys are
// reported too, so a typo does not pass silently.
func ParseConfig(data []byte) (Config, []string) {
	c := DefaultConfig()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil || top == nil {
		msg := "not a JSON object"
		if err != nil {
			msg = err.Error()
		}
		return c, []string{fmt.Sprintf("not valid JSON (%s): every key has its default", msg)}
	}
	var warn []string
	boolKey := func(m map[string]json.RawMessage, prefix, key string, dst *bool) {
		raw, ok := m[key]
		if !ok {
			return
		}
		delete(m, key)
		if err := json.Unmarshal(raw, dst); err != nil || string(raw) == "null" {
			warn = append(warn, fmt.Sprintf("%s%s is %s, want true or false: default %v used", prefix, key, jsonpos.Kind(raw), *dst))
		}
	}
	intKey := func(m map[string]json.RawMessage, prefix, key string, dst *int, lo, hi int) {
		raw, ok := m[key]
		if !ok {
			return
		}
		delete(m, key)
		var f float64
		if err := json.Unmarshal(raw, &f); err != nil || string(raw) == "null" || f != float64(int(f)) || int(f) < lo || int(f) > hi {
			warn = append(warn, fmt.Sprintf("%s%s is %s, want a whole number from %d to %d: default %d used", prefix, key, clipRaw(raw), lo, hi, *dst))
			return
		}
		*dst = int(f)
	}
	object := func(m map[string]json.RawMessage, key string) map[string]json.RawMessage {
		raw, ok := m[key]
		if !ok {
			return nil
		}
		delete(m, key)
		var sub map[string]json.RawMessage
		if err := json.Unmarshal(raw, &sub); err != nil || sub == nil {
			warn = append(warn, fmt.Sprintf("%s is %s, want an object: its defaults used", key, jsonpos.Kind(raw)))
			return nil
		}
		return sub
	}
	unknown := func(m map[string]json.RawMessage, prefix string) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			warn = append(warn, fmt.Sprintf("unknown key %s%s ignored", prefix, k))
		}
	}
	const big = 1 << 30
	boolKey(top, "", "enabled", &c.Enabled)
	intKey(top, "", "tailMaxChars", &c.TailMaxChars, 0, big)
	intKey(top, "", "gitTimeoutMs", &c.GitTimeoutMs, 0, 600000)
	if l := object(top, "limits"); l != nil {
		p := "limits."
		intKey(l, p, "total", &c.Limits.Total, 500, big)
		intKey(l, p, "userMessages", &c.Limits.UserMessages, 0, big)
		intKey(l, p, "userMessageEach", &c.Limits.UserMessageEach, 40, big)
		intKey(l, p, "chain", &c.Limits.Chain, 0, big)
		intKey(l, p, "answer", &c.Limits.Answer, 0, big)
		intKey(l, p, "subagents", &c.Limits.Subagents, 0, big)
		intKey(l, p, "files", &c.Limits.Files, 0, big)
		intKey(l, p, "git", &c.Limits.Git, 0, big)
		intKey(l, p, "extra", &c.Limits.Extra, 0, big)
		unknown(l, p)
	}
	if a := object(top, "auto"); a != nil {
		p := "auto."
		boolKey(a, p, "onInput", &c.Auto.OnInput)
		intKey(a, p, "inputMinTokens", &c.Auto.InputMinTokens, 0, big)
		boolKey(a, p, "beforeExpiry", &c.Auto.BeforeExpiry)
		intKey(a, p, "expiryMinTokens", &c.Auto.ExpiryMinTokens, 0, big)
		intKey(a, p, "minGrowthTokens", &c.Auto.MinGrowthTokens, 0, big)
		unknown(a, p)
	}
	unknown(top, "")
	return c, warn
}

// LoadConfig reads the configuration at path. A missing file is the
// defaults without a warning; an unreadable one is the defaults with one.
// Warnings name the file.
func LoadConfig(path string) (Config, []string) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return DefaultConfig(), nil
	}
	if err != nil {
		return DefaultConfig(), []string{fmt.Sprintf("%s: %v: every key has its default", path, err)}
	}
	c, warn := ParseConfig(data)
	for i, w := range warn {
		warn[i] = path + ": " + w
	}
	return c, warn
}

func clipRaw(raw json.RawMessage) string {
	if len(raw) > 40 {
		return string(raw[:40]) + "…"
	}
	return string(raw)
}
