package recap

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/pi-session/pi-session/clip"
	"github.com/pi-session/pi-session/jsonpos/jsonpostest"
)

// TestParseConfig: the model fields keep the seed's rule (one bad field
// gives the default model), "enabled" is read on its own, and a mistake
// next to it turns recaps off, never on; every problem is placed in the
// file, and the notice says what it means.
func TestParseConfig(t *testing.T) {
	const name = "c.json"
	model := `"provider": "p", "model": "m", "reasoning": "low"`
	off := func(c Config) Config { c.Enabled = false; return c }
	pm := Config{Enabled: true, Provider: "p", Model: "m", Reasoning: "low"}
	tests := []struct {
		name, in string
		want     Config
		off      bool     // recaps off by a mistake (LoadedConfig.Off)
		notice   []string // parts of the notice, in order; nil: no notice
	}{
		{"every key", `{"enabled": false, ` + model + `}`, off(pm), false, nil},
		{"enabled true", `{"enabled": true, ` + model + `}`, pm, false, nil},
		{"no enabled: files before the toggle", `{` + model + `}`, pm, false, nil},
		{"enabled false alone", `{"enabled": false}`, off(DefaultConfig()), false, nil},
		{"the measured case: a typo next to enabled", "{\"enabeld\": false,\n " + model + "}", off(pm), true,
			[]string{`c.json:1:2: field "enabeld": unknown key, ignored (did you mean "enabled"?)`, `; recaps are off until this is fixed: "enabled" is missing and "enabeld" is a key pi-session does not know, and a mistake next to "enabled" never turns sending on. Fix the file, or choose again with /recap.`}},
		{"another unknown key, no enabled", `{"recaps": "off", ` + model + `}`, off(pm), true, []string{`field "recaps": unknown key, ignored (the keys here are "enabled", "model", "provider", "reasoning")`, "recaps are off"}},
		{"an unknown key beside enabled true", `{"enabled": true, "colour": 1, ` + model + `}`, pm, false, []string{`field "colour": unknown key`, `. Fix the file`}},
		{"enabled twice, true and false", "{\"enabled\": false,\n \"enabled\": true, " + model + "}", off(pm), true,
			[]string{`c.json:2:2: field "enabled": given twice (first at line 1, column 2); recaps are off until this is fixed: "enabled" is given twice, true and false`}},
		{"enabled twice, the same", `{"enabled": true, "enabled": true, ` + model + `}`, pm, false, []string{`field "enabled": given twice`}},
		{"enabled a string", `{"enabled": "false", ` + model + `}`, off(pm), true, []string{`c.json:1:13: field "enabled": is "false", want true or false`, `recaps are off`}},
		{"enabled null", `{"enabled": null, ` + model + `}`, off(pm), true, []string{`field "enabled": is null, want true or false`}},
		{"a byte order mark", "\xef\xbb\xbf{\"enabled\": false, " + model + "}", off(pm), false, []string{`c.json:1:1: the file starts with a UTF-8 byte order mark (EF BB BF), which JSON does not allow: read without it. Fix`}},
		{"a bad reasoning with enabled false stays off", `{"enabled": false, "provider": "p", "model": "m", "reasoning": "hgih"}`, off(DefaultConfig()), false,
			[]string{`c.json:1:64: field "reasoning": is "hgih", want one of off, minimal, low, medium, high, xhigh, max. Fix`}},
		{"a bad reasoning, no enabled: the default model", `{"provider": "p", "model": "m", "reasoning": "hgih"}`, DefaultConfig(), false,
			[]string{`field "reasoning": is "hgih"`, `; the default model is used (deepseek/deepseek-flash · medium). Fix`}},
		{"model fields missing", `{"enabled": true}`, DefaultConfig(), false, []string{`c.json: field "provider": missing; c.json: field "model": missing; c.json: field "reasoning": missing; the default model is used`}},
		{"a provider of the wrong type", `{"enabled": true, "provider": 7, "model": " ", "reasoning": "low"}`, DefaultConfig(), false, []string{`field "provider": is 7, want a string`, `field "model": is empty, want a name`}},
		{"not JSON", "{\"enabled\": fals", off(DefaultConfig()), true, []string{`c.json:1:`, `; recaps are off until this is fixed: the file is not JSON, so it may say "enabled": false`}},
		{"not an object", ` [1]`, off(DefaultConfig()), true, []string{`c.json:1:2: the file holds an array, not an object; recaps are off`}},
		{"empty", ``, off(DefaultConfig()), true, []string{`recaps are off`}},
		{"control characters are written out", `{"enabled": true, "provider": "p", "model": "m", "reasoning": "x\u001b[2J"}`, DefaultConfig(), false, []string{`is "x\u001b[2J"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := ParseConfig(name, []byte(tt.in))
			if d := cmp.Diff(tt.want, l.Config); d != "" {
				t.Errorf("config mismatch (-want +got):\n%s", d)
			}
			if (l.Off != "") != tt.off {
				t.Errorf("Off = %q, want off %v", l.Off, tt.off)
			}
			if tt.notice == nil && l.Notice != "" {
				t.Errorf("notice %q, want none", l.Notice)
			}
			rest := l.Notice
			for _, part := range tt.notice {
				i := strings.Index(rest, part)
				if i < 0 {
					t.Fatalf("notice %q lacks %q (in this order)", l.Notice, part)
				}
				rest = rest[i+len(part):]
			}
			if strings.ContainsAny(l.Notice, "\x1b\x07") {
				t.Errorf("notice holds a raw control character: %q", l.Notice)
			}
		})
	}
}

// TestLoadConfig: a missing file is the defaults without a word; what
// cannot be read, what someone else could have written and a directory
// someone else could write to turn recaps off at once (a FIFO blocked the
// read forever) and say why; a directory that is a link is named.
func TestLoadConfig(t *testing.T) {
	agent := t.TempDir()
	path := ConfigPath(agent)
	if l := LoadConfig(path); l.Config != DefaultConfig() || l.Notice != "" || l.NoSave != "" {
		t.Errorf("missing: %+v", l)
	}
	os.MkdirAll(filepath.Dir(path), 0o700)
	good := `{"enabled": true, "provider": "p", "model": "m", "reasoning": "low"}`
	os.WriteFile(path, []byte(good), 0o600)
	if l := LoadConfig(path); !l.Config.Enabled || l.Config.Provider != "p" || l.Notice != "" {
		t.Errorf("a good file: %+v", l)
	}
	fifo := filepath.Join(agent, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(agent, "big.json")
	os.WriteFile(big, []byte(`{"enabled": true, "x": "`+strings.Repeat("x", MaxConfigBytes)+`"}`), 0o600)
	open := filepath.Join(agent, "open.json")
	os.WriteFile(open, []byte(good), 0o600)
	os.Chmod(open, 0o666)
	for p, want := range map[string]string{fifo: "a named pipe", agent: "a directory", "/dev/zero": "a device", big: "over 65536 bytes", open: "writable by others (mode 0666)"} {
		done := make(chan LoadedConfig, 1)
		go func() { done <- LoadConfig(p) }()
		select {
		case l := <-done:
			if l.Config.Enabled || l.Off == "" || !strings.Contains(l.Notice, p) || !strings.Contains(l.Notice, want) || !strings.Contains(l.Notice, "recaps are off") {
				t.Errorf("LoadConfig(%s) = %+v, want recaps off and a notice saying %q", p, l, want)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("LoadConfig(%s) still blocked after 20s", p)
		}
	}
	os.Chmod(filepath.Dir(path), 0o777)
	if l := LoadConfig(path); l.Config.Enabled || l.NoSave == "" || !strings.Contains(l.Notice, "/recap does not save there: "+filepath.Dir(path)+" is writable by others (mode 0777)") {
		t.Errorf("a directory writable by others: %+v", l)
	}
	os.Chmod(filepath.Dir(path), 0o700)
	elsewhere := t.TempDir()
	other := filepath.Join(t.TempDir(), "agent")
	os.MkdirAll(other, 0o700)
	os.Symlink(elsewhere, filepath.Join(other, "summaries"))
	os.WriteFile(filepath.Join(elsewhere, "config.private.json"), []byte(good), 0o600)
	if l := LoadConfig(ConfigPath(other)); !l.Config.Enabled || !strings.Contains(l.Notice, "summaries is a symbolic link to "+elsewhere) {
		t.Errorf("a linked directory: %+v", l)
	}
}

var (
	unknownRE  = regexp.MustCompile(`^c\.json:\d+:\d+: (?:field "(?:[^"\\]|\\.)*"|key ""): unknown key, ignored \((?:did you mean|the keys here are) [^()]*\)$`)
	repeatedRE = regexp.MustCompile(`^c\.json:\d+:\d+: (?:field "(?:[^"\\]|\\.)*"|key ""): given twice \(first at line \d+, column \d+\)(?:: the last one is used)?$`)
)

// FuzzConfig: every unknown key and every key given twice, at any depth,
// is a problem placed at its line, and nothing else is called unknown;
// and recaps are on only if the file says so or says nothing that could
// mean off: a JSON object whose "enabled" members are all true, or,
// without any, one holding only the model's keys. Both are checked
// against readings of the file of the test's own (jsonpostest's scanner,
// encoding/json's tokens).
func FuzzConfig(f *testing.F) {
	for _, s := range []string{
		`{"enabeld": false, "provider": "p", "model": "m", "reasoning": "low"}`, `{"enabled": false, "enabled": true}`, "\xef\xbb\xbf{\"enabled\": false}",
		`{"provider": "p", "model": "m", "reasoning": "hgih"}`, `{"enabled": "no"}`, `{"x": {"y": 1, "y": 2}}`, `{"enabled": true, "": 1}`, `[true]`, `{"enabled": tru`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		l := ParseConfig("c.json", data)
		body := data
		if len(body) >= 3 && string(body[:3]) == "\xef\xbb\xbf" {
			body = body[3:]
		}
		if l.Config.Enabled {
			onlyOn(t, data, body)
		}
		keys, ok := jsonpostest.Keys(data)
		if !ok {
			return
		}
		unknown, repeated := jsonpostest.Expected(keys, func(k jsonpostest.Key) (bool, bool) {
			return len(k.Parent) == 0, slices.Contains([]string{"enabled", "provider", "model", "reasoning"}, k.Key)
		})
		at := func(what string) func(jsonpostest.Key) []string {
			return func(k jsonpostest.Key) []string {
				if k.Path() == "" {
					return []string{fmt.Sprintf("c.json:%d:", k.Line), `key "": ` + what}
				}
				return []string{fmt.Sprintf("c.json:%d:", k.Line), fmt.Sprintf("field %q: %s", clip.Echo(k.Path()), what)}
			}
		}
		if miss := jsonpostest.Missing(l.Problems, unknown, at("unknown key, ignored")); miss != nil {
			t.Fatalf("ParseConfig(%q): unknown keys not reported: %+v\nproblems: %q", data, miss, l.Problems)
		}
		if miss := jsonpostest.Missing(l.Problems, repeated, at("given twice")); miss != nil {
			t.Fatalf("ParseConfig(%q): repeated keys not reported: %+v\nproblems: %q", data, miss, l.Problems)
		}
		if n := jsonpostest.Count(l.Problems, unknownRE); n != len(unknown) {
			t.Fatalf("ParseConfig(%q): %d unknown-key problems, want %d: %q", data, n, len(unknown), l.Problems)
		}
		if n := jsonpostest.Count(l.Problems, repeatedRE); n != len(repeated) {
			t.Fatalf("ParseConfig(%q): %d repeated-key problems, want %d: %q", data, n, len(repeated), l.Problems)
		}
	})
}

// onlyOn fails unless body (data without a byte order mark) is one JSON
// object whose "enabled" members are all true, or, without any, whose
// keys are all the model's.
func onlyOn(t *testing.T, data, body []byte) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(body)))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("ParseConfig(%q): recaps on for what is no object", data)
	}
	saw := false
	var others []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("ParseConfig(%q): recaps on for invalid JSON", data)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("ParseConfig(%q): recaps on for invalid JSON", data)
		}
		if key := tok.(string); key == "enabled" {
			saw = true
			if string(v) != "true" {
				t.Fatalf("ParseConfig(%q): recaps on with \"enabled\": %s", data, v)
			}
		} else if key != "provider" && key != "model" && key != "reasoning" {
			others = append(others, key)
		}
	}
	if _, err := dec.Token(); err != nil {
		t.Fatalf("ParseConfig(%q): recaps on for invalid JSON", data)
	}
	if _, err := dec.Token(); err == nil {
		t.Fatalf("ParseConfig(%q): recaps on with data after the object", data)
	}
	if !saw && len(others) > 0 {
		t.Fatalf("ParseConfig(%q): recaps on without \"enabled\" beside unknown keys %q", data, others)
	}
}
