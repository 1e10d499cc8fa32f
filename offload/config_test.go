package offload

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseConfig(t *testing.T) {
	def := DefaultConfig()
	with := func(f func(*Config)) Config { c := DefaultConfig(); f(&c); return c }
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
		{"invalid JSON", `{"enabled": tru`, def, []string{"invalid JSON (unexpected EOF); using the defaults"}},
		{"not an object", `[1,2]`, def, []string{"invalid JSON (json: cannot unmarshal array into Go value of type map[string]json.RawMessage); using the defaults"}},
		{"null", `null`, def, []string{"the file holds null, not an object; using the defaults"}},
		{"blank", "  \n", def, []string{"the file is empty; using the defaults"}},
		{"threshold below range", `{"readOffloadThreshold":100}`, def,
			[]string{"readOffloadThreshold: 100 is outside 256-1000000000 (whole bytes); using the default 16384"}},
		{"store cap above 500 MB", `{"storeMaxBytes":600000000,"offloadPreviewBytes":512}`, with(func(c *Config) { c.OffloadPreviewBytes = 512 }),
			[]string{"storeMaxBytes: 600000000 is outside 1000000-500000000 (whole bytes); using the default 500000000"}},
		{"fraction", `{"minimumSavingsBytes":10.5}`, def,
			[]string{"minimumSavingsBytes: 10.5 is outside 1-1000000000 (whole bytes); using the default 256"}},
		{"wrong types", `{"enabled":"yes","errorCompactionPreviewBytes":"4096"}`, def, []string{
			`enabled: "yes" is not true or false; using the default true`,
			`errorCompactionPreviewBytes: "4096" is not a number; using the default 4096`}},
		{"legacy and unknown", `{"strict":true,"policy":"x","colour":"red","turnBudgetBytes":0}`, def, []string{
			"colour: unknown setting, ignored",
			"policy: a setting of earlier versions, ignored",
			"strict: a setting of earlier versions, ignored"}},
		{"preview above range", `{"offloadPreviewBytes":5000}`, def,
			[]string{"offloadPreviewBytes: 5000 is outside 256-4096 (whole bytes); using the default 2048"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, warnings := ParseConfig([]byte(tt.in))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseConfig(%s) config (-want +got):\n%s", tt.in, diff)
			}
			if diff := cmp.Diff(tt.warnings, warnings); diff != "" {
				t.Errorf("ParseConfig(%s) warnings (-want +got):\n%s", tt.in, diff)
			}
		})
	}
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
		got, warnings := ParseConfig([]byte(in))
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
