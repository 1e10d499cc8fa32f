package recap

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pi-session/pi-session/clip"
	"github.com/pi-session/pi-session/jsonpos"
	"github.com/pi-session/pi-session/owndir"
	"github.com/pi-session/pi-session/regfile"
)

// Config is <agent dir>/summaries/config.private.json: whether recaps are
// written, and by which model.
type Config struct {
	Enabled   bool   `json:"enabled"`
	Provider  string `json:"provider"`
	Model     string `json:"model"`
	Reasoning string `json:"reasoning"`
}

// ReasoningLevels are the values of "reasoning", as pi names them.
var ReasoningLevels = []string{"off", "minimal", "low", "medium", "high", "xhigh", "max"}

// DefaultConfig is the configuration without a file.
func DefaultConfig() Config {
	return Config{Enabled: true, Provider: "deepseek", Model: "deepseek-flash", Reasoning: "medium"}
}

// ConfigPath is where the configuration lives under an agent directory.
func ConfigPath(agentDir string) string {
	return filepath.Join(agentDir, "summaries", "config.private.json")
}

// MaxConfigBytes bounds the configuration file: far above a real one.
const MaxConfigBytes = 64 << 10

// LoadedConfig is the configuration as read, with what was wrong.
type LoadedConfig struct {
	Config Config `json:"config"`
	Path   string `json:"path"`
	// Problems are what is wrong in the file, each placed in it
	// ("path:line:column: field "enabled": ...").
	Problems []string `json:"problems,omitempty"`
	// Off says why recaps are off although the file does not say
	// "enabled": false: a mistake next to "enabled" (see ParseConfig).
	Off string `json:"off,omitempty"`
	// Defaults: the model fields fell back to the defaults as a whole.
	Defaults bool `json:"defaults,omitempty"`
	// NoSave says why /recap must not write the file: its directory is
	// one someone else could write to (owndir); "" when it may.
	NoSave string `json:"noSave,omitempty"`
	// Notice is the one line to tell the user ("" when all is well): the
	// problems and what they mean.
	Notice string `json:"notice,omitempty"`
}

// configSchema is every key of the file, for jsonpos.Check.
var configSchema = jsonpos.Leaves("enabled", "provider", "model", "reasoning")

// ParseConfig reads the configuration's content; name is the file's path,
// for the messages. The model fields (provider, model, reasoning) follow
// the summaries extension's rule: one missing or invalid gives the default model as a
// whole. "enabled" is the privacy switch, and a mistake next to it never
// turns sending on: recaps are off when the file is not a JSON object,
// when "enabled" is not true or false, when it is given twice with
// different values, and when it is missing while the file has a key
// pi-session does not know (`"enabeld": false` may mean to turn recaps
// off). A missing "enabled" in a file of known keys means true (files
// written before the toggle have none). Unknown keys, with the known key
// nearest to them, repeated keys and a byte order mark (read past) are
// named in every case.
func ParseConfig(name string, data []byte) LoadedConfig {
	l := LoadedConfig{Config: DefaultConfig(), Path: name}
	say := func(pos jsonpos.Pos, field, format string, a ...any) {
		l.Problems = append(l.Problems, jsonpos.Message(name, pos, field, fmt.Sprintf(format, a...)))
	}
	data, bom := jsonpos.TrimBOM(data)
	if bom {
		say(jsonpos.Pos{Line: 1, Column: 1}, "", "%s", jsonpos.BOMWarning)
	}
	members, ok := jsonpos.Members(data)
	if !ok {
		l.Config.Enabled = false
		if err := json.Unmarshal(data, new(json.RawMessage)); err != nil {
			pos, what := jsonpos.SyntaxError(data, err)
			say(pos, "", "%s", what)
			l.Off = "the file is not JSON, so it may say \"enabled\": false"
		} else {
			start := int64(len(data) - len(bytes.TrimLeft(data, " \t\r\n")))
			say(jsonpos.At(data, start), "", "the file holds %s, not an object", jsonpos.Kind(data))
			l.Off = "the file is not an object of settings"
		}
		return l.finish()
	}
	var unknown []string
	for _, f := range jsonpos.Check(data, configSchema) {
		if f.Kind == jsonpos.RepeatedKey && f.Path == "enabled" {
			// Not "the last one is used": which one counts is said below.
			say(f.Pos, "enabled", "given twice (first at line %d, column %d)", f.First.Line, f.First.Column)
			continue
		}
		l.Problems = append(l.Problems, f.Message(name))
		if f.Kind == jsonpos.UnknownKey { // at the top: the schema says nothing deeper
			unknown = append(unknown, f.Key)
		}
	}
	last := map[string]jsonpos.Member{}
	var enabled []bool
	enabledOK := true
	for _, m := range members {
		last[m.Key] = m
		if m.Key != "enabled" {
			continue
		}
		var b bool
		if string(m.Value) == "null" || json.Unmarshal(m.Value, &b) != nil {
			say(jsonpos.At(data, m.Offset), "enabled", "is %s, want true or false", echoValue(m.Value))
			enabledOK = false
			continue
		}
		enabled = append(enabled, b)
	}
	switch {
	case !enabledOK:
		l.Config.Enabled = false
		l.Off = "\"enabled\" is not true or false"
	case len(enabled) > 1 && slices.Contains(enabled, true) && slices.Contains(enabled, false):
		l.Config.Enabled = false
		l.Off = "\"enabled\" is given twice, true and false"
	case len(enabled) > 0:
		l.Config.Enabled = enabled[0]
	case len(unknown) > 0:
		l.Config.Enabled = false
		why := fmt.Sprintf("\"enabled\" is missing and %q is a key pi-session does not know", clip.Echo(unknown[0]))
		if len(unknown) > 1 {
			why = fmt.Sprintf("\"enabled\" is missing and %d keys are ones pi-session does not know", len(unknown))
		}
		l.Off = why
	}
	// The model: all of it from the file, or all of it the default.
	model := DefaultConfig()
	bad := false
	for _, k := range []string{"provider", "model", "reasoning"} {
		m, given := last[k]
		if !given {
			if l.Config.Enabled { // a file that turns recaps off needs no model
				say(jsonpos.Pos{}, k, "missing")
			}
			bad = true
			continue
		}
		var s string
		pos := jsonpos.At(data, m.Offset)
		if json.Unmarshal(m.Value, &s) != nil || string(m.Value) == "null" {
			say(pos, k, "is %s, want a string", echoValue(m.Value))
			bad = true
			continue
		}
		s = strings.TrimSpace(s)
		switch {
		case k == "reasoning" && !slices.Contains(ReasoningLevels, s):
			say(pos, k, "is %s, want one of %s", echoValue(m.Value), strings.Join(ReasoningLevels, ", "))
			bad = true
		case s == "":
			say(pos, k, "is empty, want a name")
			bad = true
		case k == "provider":
			model.Provider = s
		case k == "model":
			model.Model = s
		default:
			model.Reasoning = s
		}
	}
	if !bad {
		l.Config.Provider, l.Config.Model, l.Config.Reasoning = model.Provider, model.Model, model.Reasoning
	} else {
		l.Defaults = true
	}
	return l.finish()
}

// echoValue shows a value of the file in a message: clipped, with its
// control characters written out.
func echoValue(raw json.RawMessage) string {
	return clip.Echo(string(bytes.TrimSpace(raw)))
}

// finish writes the notice.
func (l LoadedConfig) finish() LoadedConfig {
	if len(l.Problems) == 0 && l.NoSave == "" {
		return l
	}
	var b strings.Builder
	b.WriteString(strings.Join(l.Problems, "; "))
	d := DefaultConfig()
	switch {
	case l.Off != "":
		fmt.Fprintf(&b, "; recaps are off until this is fixed: %s, and a mistake next to \"enabled\" never turns sending on", l.Off)
	case l.Defaults && l.Config.Enabled:
		fmt.Fprintf(&b, "; the default model is used (%s/%s · %s)", d.Provider, d.Model, d.Reasoning)
	}
	if l.NoSave != "" {
		if b.Len() > 0 && len(l.Problems) > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "/recap does not save there: %s", l.NoSave)
	}
	b.WriteString(". Fix the file, or choose again with /recap.")
	l.Notice = b.String()
	return l
}

// LoadConfig reads the configuration at path. A missing file is the
// defaults (recaps on) without a word. A file that cannot be read (a FIFO,
// a directory, one over MaxConfigBytes), one someone else could have
// written (owned by another user, writable by its group or others), or
// one in a directory someone else could write to, turns recaps off: it
// may say "enabled": false. A directory that is a symbolic link is
// named once.
func LoadConfig(path string) LoadedConfig {
	l := LoadedConfig{Config: DefaultConfig(), Path: path}
	warning, derr := owndir.Check(filepath.Dir(path), 1)
	if derr != nil {
		l.NoSave = strings.TrimPrefix(derr.Error(), "owndir: ")
	}
	data, err := read(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if derr != nil {
			l.Config.Enabled = false
			l.Off = "its directory is not one pi-session can trust"
		}
	case err != nil:
		l.Config.Enabled = false
		l.Problems = append(l.Problems, fmt.Sprintf("%s: %s", path, strings.TrimPrefix(strings.TrimPrefix(err.Error(), "recap: "), "owndir: ")))
		l.Off = "the file cannot be read, so it may say \"enabled\": false"
	default:
		parsed := ParseConfig(path, data)
		parsed.NoSave = l.NoSave
		if derr != nil && parsed.Off == "" {
			parsed.Config.Enabled = false
			parsed.Off = "its directory is not one pi-session can trust"
		}
		l = parsed
	}
	if warning != "" {
		l.Problems = append(l.Problems, warning)
	}
	l.Notice = ""
	return l.finish()
}

// read reads the file, refusing what is not a regular file, what is over
// MaxConfigBytes and what someone else could have written.
func read(path string) ([]byte, error) {
	f, err := regfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := owndir.CheckFile(path, fi); err != nil {
		return nil, fmt.Errorf("recap: not trusted: %w", err)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxConfigBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxConfigBytes {
		return nil, fmt.Errorf("recap: over %d bytes: %w", MaxConfigBytes, regfile.ErrTooLarge)
	}
	return data, nil
}
