package budget

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi-session/pi-session/jsonpos/jsonpostest"
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
		{"not JSON", `{`, ModeObserve, []string{": unexpected end of file: the JSON is cut short; want a JSON object of the budget's settings"}},
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
	// A byte order mark is named as such, and the file read without it.
	if err := os.WriteFile(path, []byte("\xef\xbb\xbf{\"mode\": \"enforce\",\n \"idleMinutes\": -1}"), 0o600); err != nil {
		t.Fatal(err)
	}
	l := LoadConfig(path)
	if errs := l.Errors; len(errs) != 2 || !strings.Contains(errs[0].Error(), path+":1:1: ") || !strings.Contains(errs[0].Error(), "byte order mark") || !errs[0].Warning ||
		!strings.HasPrefix(errs[1].Error(), "budget: config: "+path+`:2:17: field "idleMinutes"`) || l.Requested != ModeEnforce {
		t.Errorf("a byte order mark: %v, requested %q", errs, l.Requested)
	}
}

// TestConfigUnknownKeys: an unknown key at any depth is a warning at the
// key naming the known key nearest to it (main.sfot passed silently);
// the mode stands. An unknown role of a model is an error: it forces
// observe, as that model's thresholds cannot be used.
func TestConfigUnknownKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "context-budget.json")
	data := "{\n  \"mode\": \"enforce\",\n  \"main\": {\"sfot\": 1, \"hard\": 700000},\n  \"handoffGrace\": {\"enable\": false},\n  \"loop\": {\"withinturns\": 3},\n  \"colour\": 1\n}\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	l := LoadConfig(path)
	var got []string
	for _, e := range l.Errors {
		got = append(got, e.Error())
	}
	want := []string{
		"budget: config: " + path + `:3:12: field "main.sfot": unknown key, ignored (did you mean "soft"?)`,
		"budget: config: " + path + `:4:20: field "handoffGrace.enable": unknown key, ignored (did you mean "enabled"?)`,
		"budget: config: " + path + `:5:12: field "loop.withinturns": unknown key, ignored (did you mean "withinTurns"?)`,
		"budget: config: " + path + `:6:3: field "colour": unknown key, ignored (the keys here are "enforceCwds", "handoffGrace", "idleMinTokens", "idleMinutes", "keepRecentTokens", "loop", "main", "maxHandoffsPerSession", "mode", "models", "overflowRecovery", "resumeChecks", "subagent")`,
	}
	if l.Invalid() || l.Config.Mode != ModeEnforce || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("mode %s, invalid %v; got\n%s\nwant\n%s", l.Config.Mode, l.Invalid(), strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	os.WriteFile(path, []byte(`{"mode": "enforce", "models": {"p/m": {"mian": {"soft": 1}}}}`), 0o600)
	l = LoadConfig(path)
	if !l.Invalid() || l.Config.Mode != ModeObserve || len(l.Errors) != 1 || !strings.Contains(l.Errors[0].Error(), `:1:40: field "models.p/m.mian": unknown role (did you mean "main"?); use "main" or "subagent"`) {
		t.Errorf("an unknown role: mode %s, errors %v", l.Config.Mode, l.Errors)
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
		"budget: config: " + path + `:4:12: field "main.hard": given twice (first at line 3, column 37): the last one is used`,
		"budget: config: " + path + `:5:3: field "mode": given twice (first at line 2, column 3): the last one is used`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// FuzzConfigKeys: every unknown key of context-budget.json, at any depth
// its keys are known (model roles included), and every key given twice
// in one object, at any depth, is reported at its line under its dotted
// name, and no other key is. The keys come from jsonpostest's scanner.
func FuzzConfigKeys(f *testing.F) {
	for _, s := range []string{
		`{"main": {"sfot": 1}}`, `{"main": [{"sfot": 1}]}`, `{"mode": "enforce", "mode": "off"}`, `{"models": {"p/m": {"mian": {"x": 1}, "main": {"hrad": 5, "hard": 1, "hard": 2}}}}`,
		`{"resumeChecks": {"any name": "x", "any name": "y"}, "loop": {"withinturns": 1}}`, "\xef\xbb\xbf{\"handoffGrace\": {\"enable\": false}}",
		`{"": {"": 1, "": 2}, "enforceCwds": [{"a": 1, "a": 2}]}`, "{\n\"models\": {\"a.b/c.d\": {\"subagent\": {\"soft\": 1, \"sotf\": 2}}}}",
	} {
		f.Add(s)
	}
	thresholds := []string{"soft", "handoff", "hard", "minProgress"}
	f.Fuzz(func(t *testing.T, s string) {
		keys, ok := jsonpostest.Keys([]byte(s))
		if !ok {
			return
		}
		_, errs := ParseConfig([]byte(s))
		unknown, repeated := jsonpostest.Expected(keys, func(k jsonpostest.Key) (bool, bool) {
			p := k.Parent
			switch {
			case len(p) == 0:
				_, known := configSchema.Keys[k.Key]
				return true, known
			case len(p) == 1 && (p[0] == "main" || p[0] == "subagent"):
				return true, slices.Contains(thresholds, k.Key)
			case len(p) == 1 && p[0] == "loop":
				return true, k.Key == "maxHandoffsWithoutProgress" || k.Key == "withinTurns"
			case len(p) == 1 && p[0] == "handoffGrace":
				return true, k.Key == "enabled" || k.Key == "calls" || k.Key == "fraction"
			case len(p) == 2 && p[0] == "models":
				return true, k.Key == "main" || k.Key == "subagent"
			case len(p) == 3 && p[0] == "models" && (p[2] == "main" || p[2] == "subagent"):
				return true, slices.Contains(thresholds, k.Key)
			}
			return false, false
		})
		message := func(e ConfigError) string { return strings.TrimPrefix(e.Message, `key "": `) }
		isUnknown := func(e ConfigError) bool {
			return strings.HasPrefix(message(e), "unknown key, ignored (") || strings.HasPrefix(message(e), "unknown role (")
		}
		isRepeated := func(e ConfigError) bool { return strings.HasPrefix(message(e), "given twice (first at line ") }
		for _, c := range []struct {
			keys []jsonpostest.Key
			is   func(ConfigError) bool
			what string
		}{{unknown, isUnknown, "unknown"}, {repeated, isRepeated, "repeated"}} {
			n := 0
			for _, e := range errs {
				if c.is(e) {
					n++
				}
			}
			if n != len(c.keys) {
				t.Fatalf("ParseConfig(%q): %d %s-key reports, want %d: %v", s, n, c.what, len(c.keys), errs)
			}
			for _, k := range c.keys {
				if !slices.ContainsFunc(errs, func(e ConfigError) bool { return c.is(e) && e.Key == k.Path() && e.Line == k.Line }) {
					t.Fatalf("ParseConfig(%q): %s key %q on line %d not reported: %v", s, c.what, k.Path(), k.Line, errs)
				}
			}
		}
	})
}
