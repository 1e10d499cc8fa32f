package offload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/pi-session/pi-session/clip"
	"github.com/pi-session/pi-session/jsonpos"
	"github.com/pi-session/pi-session/regfile"
)

// Config is the effective configuration of the engine, read from
// <workspace>/.pi/context-engineer.json. The zero value is not useful; start
// from DefaultConfig.
type Config struct {
	Enabled                     bool  `json:"enabled"`
	ReadOffloadThreshold        int64 `json:"readOffloadThreshold"`
	TurnBudgetBytes             int64 `json:"turnBudgetBytes"`
	MinimumSavingsBytes         int64 `json:"minimumSavingsBytes"`
	ErrorCompactionThreshold    int64 `json:"errorCompactionThreshold"`
	ErrorCompactionPreviewBytes int64 `json:"errorCompactionPreviewBytes"`
	OffloadPreviewBytes         int64 `json:"offloadPreviewBytes"`
	CompactEditResults          bool  `json:"compactEditResults"`
	NotifyOnStart               bool  `json:"notifyOnStart"`
	StoreMaxBytes               int64 `json:"storeMaxBytes"`
	StoreTTLMs                  int64 `json:"storeTtlMs"`
}

// DefaultConfig returns the defaults of every option.
func DefaultConfig() Config {
	return Config{
		Enabled:                     true,
		ReadOffloadThreshold:        16384,
		TurnBudgetBytes:             0,
		MinimumSavingsBytes:         256,
		ErrorCompactionThreshold:    4096,
		ErrorCompactionPreviewBytes: 4096,
		OffloadPreviewBytes:         2048,
		CompactEditResults:          true,
		NotifyOnStart:               false,
		StoreMaxBytes:               500_000_000,
		StoreTTLMs:                  604_800_000,
	}
}

// TTL is StoreTTLMs as a duration.
func (c Config) TTL() time.Duration { return time.Duration(c.StoreTTLMs) * time.Millisecond }

// Option describes one configuration option: its name, default and range.
type Option struct {
	Name    string
	Kind    string // "bool" or "int"
	Default any
	Min     int64 // for ints
	Max     int64
	Meaning string
}

// maxStoreBytes is the hard cap of storeMaxBytes.
const maxStoreBytes = 500_000_000

// ConfigOptions lists every option of .pi/context-engineer.json, in the order of
// the README's table.
var ConfigOptions = []Option{
	{"enabled", "bool", true, 0, 0, "false turns off result rewriting"},
	{"readOffloadThreshold", "int", int64(16384), 256, 1_000_000_000, "UTF-8 bytes of text from which a result is stored and replaced by a notice"},
	{"turnBudgetBytes", "int", int64(0), 0, 1_000_000_000, "soft budget of newly exposed text per turn; 0 turns it off"},
	{"minimumSavingsBytes", "int", int64(256), 1, 1_000_000_000, "bytes a replacement must save, or the original stays"},
	{"errorCompactionThreshold", "int", int64(4096), 256, 1_000_000_000, "UTF-8 bytes from which an error result is compacted"},
	{"errorCompactionPreviewBytes", "int", int64(4096), 256, 64_000, "visible budget of a compacted error, its recovery call included"},
	{"offloadPreviewBytes", "int", int64(2048), 256, 4096, "preview budget of an offload notice"},
	{"compactEditResults", "bool", true, 0, 0, "keep an edit's acknowledgement inline and its diff (2 KB or more) behind a handle"},
	{"notifyOnStart", "bool", false, 0, 0, "show a notification when a session starts"},
	{"storeMaxBytes", "int", int64(500_000_000), 1_000_000, maxStoreBytes, "size cap of the store; oldest entries are evicted first, never the newest"},
	{"storeTtlMs", "int", int64(604_800_000), 60_000, 31_536_000_000, "how long a stored payload lives (default one week)"},
}

// legacyOptions were read by earlier versions of the TypeScript extension;
// they are ignored with a warning.
var legacyOptions = map[string]bool{
	"strict": true, "policy": true, "resultPolicy": true, "readPolicy": true,
	"regexScanBytes": true, "programReadBytes": true, "storeDir": true,
}

// maxConfigWarnings bounds the warnings ParseConfig lists; the rest are
// counted in one last warning.
const maxConfigWarnings = 20

// ParseConfig reads the content of .pi/context-engineer.json; name is the
// file's path, used in the warnings. It never fails: invalid JSON gives the
// defaults, and each null, mistyped, out-of-range, unknown or legacy option
// keeps its default. Every such case is a warning that starts with
// "name:line:" (and the column, for JSON syntax errors) and names the option.
func ParseConfig(name string, data []byte) (Config, []string) {
	c := DefaultConfig()
	w := &configWarnings{name: name, data: data, atLine: 1}
	if len(bytes.TrimSpace(data)) == 0 {
		w.add(0, "the file is empty; using the defaults")
		return c, w.list()
	}
	body := data
	if bytes.HasPrefix(body, []byte("\xef\xbb\xbf")) {
		w.addAt(0, true, "the file starts with a UTF-8 byte order mark; read without it")
		body = body[3:]
		w.data = body // positions count from after the mark, as editors do
		w.at, w.atLine = 0, 1
	}
	// The first token tells a file that holds something else than an
	// object, even when the rest is broken; an object is read whole first,
	// so that a file with a syntax error gets the defaults and only the
	// reason why.
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	tok, err := dec.Token()
	if err == nil && tok != json.Delim('{') {
		start := int64(len(body) - len(bytes.TrimLeft(body, " \t\r\n")))
		w.add(start, "the file holds %s, not an object of settings; using the defaults", jsonpos.Kind(body))
		return c, w.list()
	}
	members, isObject := jsonpos.Members(body)
	if !isObject {
		// encoding/json's offsets point just past the offending byte.
		off := dec.InputOffset()
		var se *json.SyntaxError
		if verr := json.Unmarshal(body, new(json.RawMessage)); errors.As(verr, &se) {
			err, off = verr, se.Offset-1
			if se.Offset >= int64(len(body)) && strings.HasPrefix(se.Error(), "unexpected end") {
				off = int64(len(body))
			}
		}
		if err == nil { // not reached: a file that is no object is invalid JSON
			err = errors.New("not one JSON object")
		}
		w.addAt(off, true, "invalid JSON (%s); using the defaults", clip.Echo(err.Error()))
		return DefaultConfig(), w.list()
	}
	// Unknown settings (with the nearest known one) and keys set twice, at
	// any depth, from jsonpos.Check, each said where its key is, in file
	// order with the other warnings.
	findings := jsonpos.Check(body, configSchema)
	listed := false // the names of the settings were given once
	say := func(until int64) {
		for len(findings) > 0 && findings[0].Offset <= until {
			f := findings[0]
			findings = findings[1:]
			shown := clip.Echo(f.Path)
			switch {
			case f.Kind == jsonpos.RepeatedKey:
				w.add(f.Offset, "%s: set again (first on line %d); the last value counts", shown, f.First.Line)
			case legacyOptions[f.Path]:
				w.add(f.Offset, "%s: a setting of earlier versions, ignored", shown)
			case f.Nearest != "":
				w.add(f.Offset, "%s: unknown setting, ignored (did you mean %q?)", shown, f.Nearest)
			case !listed:
				w.add(f.Offset, "%s: unknown setting, ignored (the settings are %s)", shown, optionNames())
				listed = true
			default:
				w.add(f.Offset, "%s: unknown setting, ignored", shown)
			}
		}
	}
	for _, m := range members {
		key, v, valOff := m.Key, m.Value, m.Offset
		say(m.KeyOffset)
		opt := configOption(key)
		if opt == nil {
			continue
		}
		val := clip.Echo(string(v))
		switch opt.Kind {
		case "bool":
			var b bool
			if isNull(v) || json.Unmarshal(v, &b) != nil {
				w.add(valOff, "%s: %s is not true or false; using the default %v", key, val, opt.Default)
				setBool(&c, key, opt.Default.(bool))
				continue
			}
			setBool(&c, key, b)
		case "int":
			var f float64
			if isNull(v) || json.Unmarshal(v, &f) != nil {
				w.add(valOff, "%s: %s is not a number; using the default %v", key, val, opt.Default)
				setInt(&c, key, opt.Default.(int64))
				continue
			}
			if f != math.Trunc(f) || f < float64(opt.Min) || f > float64(opt.Max) {
				w.add(valOff, "%s: %s is outside %d-%d (whole bytes); using the default %v", key, val, opt.Min, opt.Max, opt.Default)
				setInt(&c, key, opt.Default.(int64))
				continue
			}
			setInt(&c, key, int64(f))
		}
	}
	say(int64(len(body)))
	return c, w.list()
}

// configSchema is the settings of .pi/context-engineer.json for
// jsonpos.Check; legacy settings are unknown to it and said as such.
var configSchema = func() *jsonpos.Schema {
	names := make([]string, len(ConfigOptions))
	for i, o := range ConfigOptions {
		names[i] = o.Name
	}
	return jsonpos.Leaves(names...)
}()

// configWarnings collects warnings that start with the file's name and a
// position, at most maxConfigWarnings of them.
type configWarnings struct {
	name     string
	data     []byte
	warnings []string
	more     int   // warnings not listed
	moreLine int   // the line of the first of them
	at       int64 // line counts up to this offset
	atLine   int   // are known: the line of data[at]
}

// addAt adds a warning about the byte at off; col adds the column.
func (w *configWarnings) addAt(off int64, col bool, format string, a ...any) {
	off = min(max(off, 0), int64(len(w.data)))
	if len(w.warnings) >= maxConfigWarnings {
		if w.more == 0 {
			w.moreLine = w.line(off)
		}
		w.more++
		return
	}
	pos := fmt.Sprintf("%d", w.line(off))
	if col {
		pos += fmt.Sprintf(":%d", jsonpos.At(w.data, off).Column)
	}
	w.warnings = append(w.warnings, fmt.Sprintf("%s:%s: %s", w.name, pos, fmt.Sprintf(format, a...)))
}

// add adds a warning about the line of the byte at off.
func (w *configWarnings) add(off int64, format string, a ...any) { w.addAt(off, false, format, a...) }

func (w *configWarnings) list() []string {
	if w.more > 0 {
		w.warnings = append(w.warnings, fmt.Sprintf("%s:%d: %d more warnings from here on, not listed", w.name, w.moreLine, w.more))
	}
	return w.warnings
}

// line is the 1-based line of the byte at off. Offsets mostly grow, so it
// counts on from the last one asked.
func (w *configWarnings) line(off int64) int {
	off = min(max(off, 0), int64(len(w.data)))
	if off < w.at {
		w.at, w.atLine = 0, 1
	}
	w.atLine += bytes.Count(w.data[w.at:off], nl)
	w.at = off
	return w.atLine
}

func configOption(name string) *Option {
	for i := range ConfigOptions {
		if ConfigOptions[i].Name == name {
			return &ConfigOptions[i]
		}
	}
	return nil
}

func optionNames() string {
	names := make([]string, len(ConfigOptions))
	for i, o := range ConfigOptions {
		names[i] = o.Name
	}
	return strings.Join(names, ", ")
}

func setBool(c *Config, name string, b bool) {
	switch name {
	case "enabled":
		c.Enabled = b
	case "compactEditResults":
		c.CompactEditResults = b
	case "notifyOnStart":
		c.NotifyOnStart = b
	}
}

func setInt(c *Config, name string, n int64) {
	switch name {
	case "readOffloadThreshold":
		c.ReadOffloadThreshold = n
	case "turnBudgetBytes":
		c.TurnBudgetBytes = n
	case "minimumSavingsBytes":
		c.MinimumSavingsBytes = n
	case "errorCompactionThreshold":
		c.ErrorCompactionThreshold = n
	case "errorCompactionPreviewBytes":
		c.ErrorCompactionPreviewBytes = n
	case "offloadPreviewBytes":
		c.OffloadPreviewBytes = n
	case "storeMaxBytes":
		c.StoreMaxBytes = n
	case "storeTtlMs":
		c.StoreTTLMs = n
	}
}

// ConfigPath is where a workspace keeps its configuration.
func ConfigPath(workspace string) string {
	return filepath.Join(workspace, ".pi", "context-engineer.json")
}

// maxConfigBytes is the largest configuration file read.
const maxConfigBytes = 1 << 20

// configLoader re-reads the configuration file when its size, mtime or inode
// changes; a missing file means the defaults.
type configLoader struct {
	path string

	mu       sync.Mutex
	loaded   bool
	stamp    fileStamp
	config   Config
	warnings []string
}

type fileStamp struct {
	exists bool
	size   int64
	mtime  time.Time
	ino    uint64
}

func stampOf(path string) fileStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{exists: true, size: fi.Size(), mtime: fi.ModTime(), ino: inode(fi)}
}

// get returns the current configuration and its warnings.
func (l *configLoader) get() (Config, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := stampOf(l.path)
	if l.loaded && st == l.stamp {
		return l.config, l.warnings
	}
	l.loaded, l.stamp = true, st
	if !st.exists {
		l.config, l.warnings = DefaultConfig(), nil
		return l.config, l.warnings
	}
	if st.size > maxConfigBytes {
		l.config, l.warnings = DefaultConfig(), []string{fmt.Sprintf("%s: %d bytes, more than a configuration may have (%d); using the defaults", l.path, st.size, maxConfigBytes)}
		return l.config, l.warnings
	}
	data, err := regfile.Read(l.path, maxConfigBytes)
	if err != nil {
		l.config, l.warnings = DefaultConfig(), []string{fmt.Sprintf("cannot read %s (%v); using the defaults", l.path, err)}
		return l.config, l.warnings
	}
	l.config, l.warnings = ParseConfig(l.path, data)
	return l.config, l.warnings
}
