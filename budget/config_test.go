package budget

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParseConfig(t *testing.T) {
	for _, c := range []struct {
		name, in string
		mode     string
		errs     []string // keys: message fragments
	}{
		{"empty object", `{}`, ModeObserve, nil},
		{"enforce", `{"mode":"enforce"}`, ModeEnforce, nil},
		{"full", `{"mode":"enforce","resumeChecks":{"coord":"bash /x.sh"},"overflowRecovery":false,"main":{"soft":1,"handoff":2,"hard":3,"minProgress":1},"subagent":{"soft":1,"handoff":2,"hard":3,"minProgress":1},"models":{"p/m":{"main":{"hard":5}}},"enforceCwds":["/w","/x/**"],"idleMinutes":1.5,"idleMinTokens":10,"keepRecentTokens":10,"maxHandoffsPerSession":3,"loop":{"maxHandoffsWithoutProgress":1,"withinTurns":2},"handoffGrace":{"enabled":false,"calls":1,"fraction":1}}`, ModeEnforce, nil},
		{"not JSON", `{`, ModeObserve, []string{": not a JSON object"}},
		{"bad mode", `{"mode":"strict"}`, ModeObserve, []string{`mode: must be "off", "observe" or "enforce", got "strict"`}},
		{"negative", `{"mode":"enforce","main":{"soft":-1,"handoff":2,"hard":3,"minProgress":1}}`, ModeObserve, []string{"main.soft: must be a positive finite number, got -1"}},
		{"order", `{"mode":"enforce","main":{"soft":5,"handoff":2,"hard":3,"minProgress":1}}`, ModeObserve, []string{"main: soft <= handoff <= hard is required"}},
		{"a partial role over the defaults, out of order", `{"mode":"enforce","main":{"soft":500000}}`, ModeObserve, []string{"main: soft <= handoff <= hard is required, got soft 500000, handoff 400000, hard 600000"}},
		{"count not integer", `{"mode":"enforce","maxHandoffsPerSession":1.5}`, ModeObserve, []string{"maxHandoffsPerSession: must be a positive integer"}},
		{"fraction", `{"mode":"enforce","handoffGrace":{"fraction":1.5}}`, ModeObserve, []string{"handoffGrace.fraction: must be greater than 0 and at most 1"}},
		{"relative cwd", `{"mode":"enforce","enforceCwds":["~/w"]}`, ModeObserve, []string{"enforceCwds[0]: must be an absolute path"}},
		{"model order", `{"mode":"enforce","models":{"p/m":{"main":{"soft":900000}}}}`, ModeObserve, []string{"models.p/m.main: merged with main"}},
		{"model key", `{"mode":"enforce","models":{"m":{"main":{"soft":1}}}}`, ModeObserve, []string{"models.m: model keys are exact provider/model-id"}},
		{"unknown key warns", `{"mode":"enforce","colour":"red"}`, ModeEnforce, []string{"colour: unknown key"}},
		{"resume empty", `{"resumeChecks":{"a":""}}`, ModeObserve, []string{"resumeChecks.a: must be a nonempty command string"}},
	} {
		cfg, errs := ParseConfig([]byte(c.in))
		if cfg.Mode != c.mode {
			t.Errorf("%s: mode %s, want %s (%v)", c.name, cfg.Mode, c.mode, errs)
		}
		if len(errs) != len(c.errs) {
			t.Errorf("%s: errors %v, want %v", c.name, errs, c.errs)
			continue
		}
		for i, e := range errs {
			if !strings.Contains(e.Error(), c.errs[i]) {
				t.Errorf("%s: error %q lacks %q", c.name, e.Error(), c.errs[i])
			}
		}
	}
}

func TestThresholdsForModel(t *testing.T) {
	cfg, errs := ParseConfig([]byte(`{"models":{"p/m":{"main":{"hard":700000},"subagent":{"soft":1000,"handoff":2000,"hard":3000,"minProgress":10}}}}`))
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	if got := cfg.ThresholdsFor(false, "p/m"); got != (Thresholds{Soft: 300000, Handoff: 400000, Hard: 700000, MinProgress: 50000}) {
		t.Errorf("main: %+v", got)
	}
	if got := cfg.ThresholdsFor(true, "p/m"); got != (Thresholds{Soft: 1000, Handoff: 2000, Hard: 3000, MinProgress: 10}) {
		t.Errorf("subagent: %+v", got)
	}
	if got := cfg.ThresholdsFor(true, "other/x"); got != Default().Subagent {
		t.Errorf("other model: %+v", got)
	}
}

func TestEnforceCwds(t *testing.T) {
	cfg := Config{Mode: ModeEnforce, EnforceCwds: []string{"/work/repo", "/src/**/svc-*", "/a/{b,c}/d"}}
	for _, c := range []struct {
		cwd  string
		want string
	}{
		{"/work/repo", ModeEnforce},
		{"/work/repo/sub", ModeEnforce},
		{"/work/repo2", ModeObserve},
		{"/src/x/y/svc-api", ModeEnforce},
		{"/src/svc-api", ModeEnforce},
		{"/src/x/svc-api/deeper", ModeObserve},
		{"/a/c/d", ModeEnforce},
		{"/a/e/d", ModeObserve},
	} {
		if got, _ := cfg.Effective(c.cwd); got != c.want {
			t.Errorf("Effective(%s) = %s, want %s", c.cwd, got, c.want)
		}
	}
	cfg.EnforceCwds = []string{}
	if got, why := cfg.Effective("/work/repo"); got != ModeObserve || why != "cwd restriction" {
		t.Errorf("empty enforceCwds: %s %s", got, why)
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`{"mode":"enforce","main":{"soft":1,"handoff":2,"hard":3,"minProgress":1}}`))
	f.Add([]byte(`{"enforceCwds":["/a/{b,c}/[x-z]*"]}`))
	f.Add([]byte(`{"models":{"p/m":{"main":{"soft":1e308}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, errs := ParseConfig(data)
		invalid := false
		for _, e := range errs {
			invalid = invalid || !e.Warning
		}
		if invalid && cfg.Mode != ModeObserve {
			t.Fatalf("invalid configuration kept mode %s: %v", cfg.Mode, errs)
		}
		for _, th := range []Thresholds{cfg.Main, cfg.Subagent} {
			if th.Soft > th.Handoff || th.Handoff > th.Hard || th.Soft <= 0 {
				t.Fatalf("thresholds out of order: %+v", th)
			}
		}
		cfg.Effective("/some/cwd")
	})
}

// TestConfigErrorPlaces: every error names the file, and the line and
// column of the value its key names, model ids with dots included; a
// syntax error gives its own place.
func TestConfigErrorPlaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "context-budget.json")
	data := `{
  "mode": "enforce",
  "idleMinutes": -1,
  "enforceCwds": ["/ok", "relative"],
  "models": {
    "openai/gpt-4.1": {
      "main": {"soft": 10, "handoff": "x", "hard": 30}
    }
  }
}
`
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range LoadConfig(path).Errors {
		got[e.Key] = e.Error()
	}
	for key, want := range map[string]string{
		"idleMinutes":                        path + `:3:18: field "idleMinutes": must be a positive finite number, got -1`,
		"enforceCwds[1]":                     path + `:4:18: field "enforceCwds[1]": `,
		"models.openai/gpt-4.1.main.handoff": path + `:7:39: field "models.openai/gpt-4.1.main.handoff": `,
	} {
		if !strings.HasPrefix(got[key], "budget: config: "+want) {
			t.Errorf("%s: %q, want it to begin %q (all: %v)", key, got[key], want, got)
		}
	}
	if err := os.WriteFile(path, []byte("{\n  \"mode\": \"enforce\",\n  \"idleMinutes\": 5,,\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if errs := LoadConfig(path).Errors; len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), "budget: config: "+path+":3:") {
		t.Errorf("a syntax error: %v", errs)
	}
	// Several errors come in file order (they came in key order: "main"
	// before "mode" before "idleMinutes" in a file that has them the other
	// way round).
	if err := os.WriteFile(path, []byte(`{"mode": null, "main": {"soft": 1e999}, "idleMinutes": "x"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, e := range LoadConfig(path).Errors {
		keys = append(keys, e.Key)
	}
	if want := []string{"mode", "main.soft", "idleMinutes"}; !slices.Equal(keys, want) {
		t.Errorf("errors in the order %q, want file order %q", keys, want)
	}
	// A byte order mark is named as such.
	if err := os.WriteFile(path, []byte("\xef\xbb\xbf{\"mode\": \"enforce\"}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if errs := LoadConfig(path).Errors; len(errs) != 1 || !strings.Contains(errs[0].Error(), path+":1:1: ") || !strings.Contains(errs[0].Error(), "byte order mark") {
		t.Errorf("a byte order mark: %v", errs)
	}
}

// TestPartialThresholds: a role's keys left out keep that role's defaults.
func TestPartialThresholds(t *testing.T) {
	c, errs := ParseConfig([]byte(`{"mode":"enforce","main":{"hard":700000},"subagent":{"soft":100000,"minProgress":5}}`))
	if len(errs) != 0 || c.Mode != ModeEnforce {
		t.Fatalf("errors %v, mode %s", errs, c.Mode)
	}
	d := Default()
	if want := (Thresholds{Soft: d.Main.Soft, Handoff: d.Main.Handoff, Hard: 700000, MinProgress: d.Main.MinProgress}); c.Main != want {
		t.Errorf("main = %+v, want %+v", c.Main, want)
	}
	if want := (Thresholds{Soft: 100000, Handoff: d.Subagent.Handoff, Hard: d.Subagent.Hard, MinProgress: 5}); c.Subagent != want {
		t.Errorf("subagent = %+v, want %+v", c.Subagent, want)
	}
}

// TestLoadConfigNotRegular: a FIFO, a device or a directory as the
// configuration is an error naming the path and what it is, at once (a
// FIFO blocked the engine host forever, /dev/zero grew without bound).
func TestLoadConfigNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{{fifo, "a named pipe"}, {"/dev/null", "a device"}, {dir, "a directory"}} {
		done := make(chan Loaded, 1)
		go func() { done <- LoadConfig(tc.path) }()
		select {
		case l := <-done:
			if len(l.Errors) != 1 || !strings.Contains(l.Errors[0].Message, tc.path) || !strings.Contains(l.Errors[0].Message, tc.want) || l.Config.Mode != ModeObserve {
				t.Errorf("LoadConfig(%s): %+v", tc.path, l)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("LoadConfig(%s) still blocked after 20s", tc.path)
		}
	}
}

// TestConfigDuplicateKeys: a key given twice, at any depth, is a warning
// at the later one naming the first; the last one is used and the mode
// stands.
func TestConfigDuplicateKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "context-budget.json")
	data := "{\n  \"mode\": \"observe\",\n  \"main\": {\"soft\": 1, \"handoff\": 2, \"hard\": 3,\n           \"hard\": 4},\n  \"mode\": \"enforce\"\n}\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	l := LoadConfig(path)
	if l.Invalid() || l.Config.Mode != ModeEnforce || l.Config.Main.Hard != 4 {
		t.Fatalf("mode %s, hard %v, errors %v", l.Config.Mode, l.Config.Main.Hard, l.Errors)
	}
	var got []string
	for _, e := range l.Errors {
		got = append(got, e.Error())
	}
	want := []string{
		"budget: config: " + path + `:4:20: field "main.hard": given twice (first at line 3, column 37): the last one is used`,
		"budget: config: " + path + `:5:11: field "mode": given twice (first at line 2, column 3): the last one is used`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
