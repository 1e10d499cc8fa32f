package offload

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseConfig(t *testing.T) {
	def := DefaultConfig()
	with := func(f func(*Config)) Config { c := DefaultConfig(); f(&c); return c }
	const name = "ws/.pi/context-engineer.json"
	tests := []struct {
		name     string
		in       string
		want     Config
		warnings []string
	}{
		{"empty object", `{}`, def, nil},
		{"every option", `{"enabled":false,"readOffloadThreshold":20000,"turnBudgetBytes":60000,"minimumSavingsBytes":512,
			"errorCompactionThreshold":8192,"errorCompactionPreviewBytes":2000,"offloadPreviewBytes":1024,"compactEditResults":false,
			"notifyOnStart":true,"storeMaxBytes":100000000,"storeTtlMs":3600000}`,
			Config{Enabled: false, ReadOffloadThreshold: 20000, TurnBudgetBytes: 60000, MinimumSavingsBytes: 512,
				ErrorCompactionThreshold: 8192, ErrorCompactionPreviewBytes: 2000, OffloadPreviewBytes: 1024, CompactEditResults: false,
				NotifyOnStart: true, StoreMaxBytes: 100000000, StoreTTLMs: 3600000}, nil},
		{"null is the default, not false", `{"enabled": null, "compactEditResults": null}`, def, []string{
			name + ":1: enabled: null is not true or false; using the default true",
			name + ":1: compactEditResults: null is not true or false; using the default true"}},
		{"a later valid value does not undo the default", `{"enabled": false, "enabled": null}`, def, []string{
			name + ":1: enabled: set again (first on line 1); the last value counts",
			name + ":1: enabled: null is not true or false; using the default true"}},
		{"invalid JSON", "{\n  \"enabled\": tru\n}", def, []string{name + ":2:17: invalid JSON (invalid character '\\n' in literal true (expecting 'e')); using the defaults"}},
		{"null", `null`, def, []string{name + ":1: the file holds null, not an object of settings; using the defaults"}},
		{"blank", "  \n", def, []string{name + ":1: the file is empty; using the defaults"}},
		{"store cap above 500 MB", `{"storeMaxBytes":600000000,"offloadPreviewBytes":512}`, with(func(c *Config) { c.OffloadPreviewBytes = 512 }),
			[]string{name + ":1: storeMaxBytes: 600000000 is outside 1000000-500000000 (whole bytes); using the default 500000000"}},
		{"a typo says what it meant", "{\"enabeld\": false,\n \"readOffloadTreshold\": 1, \"storeDir\": \"x\"}", def, []string{
			name + `:1: enabeld: unknown setting, ignored (did you mean "enabled"?)`,
			name + `:2: readOffloadTreshold: unknown setting, ignored (did you mean "readOffloadThreshold"?)`,
			name + ":2: storeDir: a setting of earlier versions, ignored"}},
		{"BOM", "\ufeff{\"enabled\": false}", with(func(c *Config) { c.Enabled = false }),
			[]string{name + ":1:1: the file starts with a UTF-8 byte order mark; read without it"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, warnings := ParseConfig(name, []byte(tt.in))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseConfig(%s) config (-want +got):\n%s", tt.in, diff)
			}
			if diff := cmp.Diff(tt.warnings, warnings); diff != "" {
				t.Errorf("ParseConfig(%s) warnings (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

// TestConfigFixtures reads every file of testdata/config and compares the
// settings that differ from the defaults and the warnings with a golden
// file: each warning names the file, the line (and column for JSON syntax)
// and the setting.
func TestConfigFixtures(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "config", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	var b strings.Builder
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		c, warnings := ParseConfig(path, data)
		fmt.Fprintf(&b, "== %s\n", filepath.Base(path))
		def := DefaultConfig()
		got, _ := json.Marshal(c)
		want, _ := json.Marshal(def)
		var gm, wm map[string]any
		for _, d := range []struct {
			b []byte
			m *map[string]any
		}{{got, &gm}, {want, &wm}} {
			dec := json.NewDecoder(strings.NewReader(string(d.b)))
			dec.UseNumber()
			dec.Decode(d.m)
		}
		for _, o := range ConfigOptions {
			if fmt.Sprint(gm[o.Name]) != fmt.Sprint(wm[o.Name]) {
				fmt.Fprintf(&b, "set %s = %v\n", o.Name, gm[o.Name])
			}
		}
		for _, w := range warnings {
			if !strings.HasPrefix(w, path+":") {
				t.Errorf("%s: warning %q does not start with the file and line", path, w)
			}
			fmt.Fprintf(&b, "%s\n", w)
		}
	}
	checkGolden(t, "config_warnings", b.String())
}

// Every option of the table has a parser case: setting it to a value in
// range other than its default changes the config.
func TestConfigOptionsAreParsed(t *testing.T) {
	for _, o := range ConfigOptions {
		var in string
		switch o.Kind {
		case "bool":
			in = `{"` + o.Name + `":` + map[bool]string{true: "false", false: "true"}[o.Default.(bool)] + `}`
		case "int":
			v := o.Min
			if v == o.Default.(int64) {
				v = o.Max
			}
			in = `{"` + o.Name + `":` + strconv.FormatInt(v, 10) + `}`
		}
		got, warnings := ParseConfig("c.json", []byte(in))
		if len(warnings) != 0 || got == DefaultConfig() {
			t.Errorf("ParseConfig(%s) = %+v, %v; want a changed config and no warning", in, got, warnings)
		}
	}
}

func TestConfigLoaderRereadsOnChange(t *testing.T) {
	ws := t.TempDir()
	l := &configLoader{path: ConfigPath(ws)}
	if c, w := l.get(); c != DefaultConfig() || w != nil {
		t.Fatalf("missing file: get() = %+v, %v; want the defaults", c, w)
	}
	if err := os.MkdirAll(filepath.Dir(l.path), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(s string, mtime time.Time) {
		t.Helper()
		if err := os.WriteFile(l.path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(l.path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	base := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	write(`{"readOffloadThreshold":20000}`, base)
	if c, _ := l.get(); c.ReadOffloadThreshold != 20000 {
		t.Fatalf("after write: threshold %d, want 20000", c.ReadOffloadThreshold)
	}
	// Same size, new mtime: re-read.
	write(`{"readOffloadThreshold":30000}`, base.Add(time.Second))
	if c, _ := l.get(); c.ReadOffloadThreshold != 30000 {
		t.Fatalf("after rewrite: threshold %d, want 30000", c.ReadOffloadThreshold)
	}
	write(`{"readOffloadThreshold":`, base.Add(2*time.Second))
	if c, w := l.get(); c != DefaultConfig() || len(w) != 1 {
		t.Fatalf("after breaking the file: get() = %+v, %v; want defaults and one warning", c, w)
	}
	os.Remove(l.path)
	if c, w := l.get(); c != DefaultConfig() || w != nil {
		t.Fatalf("after removal: get() = %+v, %v; want the defaults", c, w)
	}
}
