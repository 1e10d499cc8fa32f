package offload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"
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

// ParseConfig reads the content of .pi/context-engineer.json. It never fails:
// invalid JSON gives the defaults, and each invalid, out-of-range, unknown or
// legacy option keeps its default; every such case is listed in warnings.
func ParseConfig(data []byte) (Config, []string) {
	c := DefaultConfig()
	var warnings []string
	if len(bytes.TrimSpace(data)) == 0 {
		return c, []string{"the file is empty; using the defaults"}
	}
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return c, []string{fmt.Sprintf("invalid JSON (%v); using the defaults", err)}
	}
	if raw == nil {
		return c, []string{"the file holds null, not an object; using the defaults"}
	}
	names := make([]string, 0, len(raw))
	for k := range raw {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		var opt *Option
		for i := range ConfigOptions {
			if ConfigOptions[i].Name == name {
				opt = &ConfigOptions[i]
			}
		}
		if opt == nil {
			if legacyOptions[name] {
				warnings = append(warnings, fmt.Sprintf("%s: a setting of earlier versions, ignored", name))
			} else {
				warnings = append(warnings, fmt.Sprintf("%s: unknown setting, ignored", name))
			}
			continue
		}
		v := raw[name]
		switch opt.Kind {
		case "bool":
			var b bool
			if err := json.Unmarshal(v, &b); err != nil {
				warnings = append(warnings, fmt.Sprintf("%s: %s is not true or false; using the default %v", name, short(v), opt.Default))
				continue
			}
			setBool(&c, name, b)
		case "int":
			var f float64
			if err := json.Unmarshal(v, &f); err != nil {
				warnings = append(warnings, fmt.Sprintf("%s: %s is not a number; using the default %v", name, short(v), opt.Default))
				continue
			}
			if f != math.Trunc(f) || f < float64(opt.Min) || f > float64(opt.Max) {
				warnings = append(warnings, fmt.Sprintf("%s: %s is outside %d-%d (whole bytes); using the default %v", name, short(v), opt.Min, opt.Max, opt.Default))
				continue
			}
			setInt(&c, name, int64(f))
		}
	}
	return c, warnings
}

func short(v json.RawMessage) string {
	s := string(bytes.TrimSpace(v))
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return s
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
	data, err := os.ReadFile(l.path)
	if err != nil {
		l.config, l.warnings = DefaultConfig(), []string{fmt.Sprintf("cannot read %s (%v); using the defaults", l.path, err)}
		return l.config, l.warnings
	}
	l.config, l.warnings = ParseConfig(data)
	return l.config, l.warnings
}
