package relay

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestParseConfig: every key of the file is read; a key of the wrong type
// or out of range, an unknown key or a file that is not an object keeps the
// defaults and says so, naming the key.
func TestParseConfig(t *testing.T) {
	all := DefaultConfig()
	all.Enabled, all.TailMaxChars, all.GitTimeoutMs = false, 1000, 10
	all.Limits = Limits{Total: 600, UserMessages: 1, UserMessageEach: 41, Chain: 2, Answer: 3, Subagents: 4, Files: 5, Commands: 12, Task: 13, Git: 6, Extra: 7}
	all.Auto = Auto{OnInput: false, InputMinTokens: 8, BeforeExpiry: false, ExpiryMinTokens: 9, MinGrowthTokens: 11}
	tests := []struct {
		name, file string
		want       Config
		warn       []string
	}{
		{"empty object", `{}`, DefaultConfig(), nil},
		{"every key", `{"enabled": false, "tailMaxChars": 1000, "gitTimeoutMs": 10,
			"limits": {"total": 600, "userMessages": 1, "userMessageEach": 41, "chain": 2, "answer": 3, "subagents": 4, "files": 5, "commands": 12, "task": 13, "git": 6, "extra": 7},
			"auto": {"onInput": false, "inputMinTokens": 8, "beforeExpiry": false, "expiryMinTokens": 9, "minGrowthTokens": 11}}`, all, nil},
		{"the seed's example", `{"auto": {"onInput": false, "beforeExpiry": false}}`,
			func() Config { c := DefaultConfig(); c.Auto.OnInput, c.Auto.BeforeExpiry = false, false; return c }(), nil},
		{"wrong types", "{\"enabled\": \"yes\",\n \"tailMaxChars\": \"big\",\n \"limits\": {\"total\": null},\n \"auto\": {\"onInput\": 1}}", DefaultConfig(), []string{
			`c.json:1:13: field "enabled": is a string, want true or false: default true used`,
			`c.json:2:18: field "tailMaxChars": is "big", want a whole number from 0 to 1073741824: default 48000 used`,
			`c.json:3:22: field "limits.total": is null, want a whole number from 500 to 1073741824: default 9500 used`,
			`c.json:4:22: field "auto.onInput": is a number, want true or false: default true used`,
		}},
		{"out of range", `{"gitTimeoutMs": -1, "limits": {"total": 100, "answer": 1.5}}`, DefaultConfig(), []string{
			`c.json:1:18: field "gitTimeoutMs": is -1, want a whole number from 0 to 600000: default 4000 used`,
			`c.json:1:42: field "limits.total": is 100, want a whole number from 500 to 1073741824: default 9500 used`,
			`c.json:1:57: field "limits.answer": is 1.5, want a whole number from 0 to 1073741824: default 2000 used`,
		}},
		{"objects of the wrong type", `{"limits": 7, "auto": []}`, DefaultConfig(), []string{
			`c.json:1:12: field "limits": is a number, want an object: its defaults used`,
			`c.json:1:23: field "auto": is an array, want an object: its defaults used`,
		}},
		{"unknown keys", "{\"enabeld\": false,\n \"limits\": {\"totl\": 1}, \"auto\": {\"x\": 1}}", DefaultConfig(), []string{
			`c.json:1:2: field "enabeld": unknown key, ignored (did you mean "enabled"?)`,
			`c.json:2:13: field "limits.totl": unknown key, ignored (did you mean "total"?)`,
			`c.json:2:34: field "auto.x": unknown key, ignored (the keys here are "beforeExpiry", "expiryMinTokens", "inputMinTokens", "minGrowthTokens", "onInput")`,
		}},
		{"a byte order mark", "\xef\xbb\xbf{\"enabled\": false}", func() Config { c := DefaultConfig(); c.Enabled = false; return c }(), []string{
			`c.json:1:1: the file starts with a UTF-8 byte order mark (EF BB BF), which JSON does not allow: read without it`,
		}},
		{"a key twice", "{\"enabled\": false,\n \"enabled\": true, \"limits\": {\"total\": 600, \"total\": 700}}",
			func() Config { c := DefaultConfig(); c.Limits.Total = 700; return c }(), []string{
				`c.json:2:2: field "enabled": given twice (first at line 1, column 2): the last one is used`,
				`c.json:2:44: field "limits.total": given twice (first at line 2, column 30): the last one is used`,
			}},
		{"not an object", ` [1]`, DefaultConfig(), []string{`c.json:1:2: the file holds an array, not an object: every key has its default`}},
		{"not JSON", "{\"enabled\":\n tru}", DefaultConfig(), []string{`c.json:2:5: invalid JSON: invalid character '}' in literal true (expecting 'e'): every key has its default`}},
		{"cut short", `{"enabled": true`, DefaultConfig(), []string{`c.json:1:17: unexpected end of file: the JSON is cut short: every key has its default`}},
		{"empty", ``, DefaultConfig(), []string{`c.json: empty file: every key has its default`}},
	}
	for _, tt := range tests {
		got, warn := ParseConfig("c.json", []byte(tt.file))
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("%s: ParseConfig mismatch (-want +got):\n%s", tt.name, d)
		}
		if d := cmp.Diff(tt.warn, warn); d != "" {
			t.Errorf("%s: warnings mismatch (-want +got):\n%s", tt.name, d)
		}
	}
}

// TestConfigEchoes: a huge value or key is echoed cut, through clip.Echo.
func TestConfigEchoes(t *testing.T) {
	huge := strings.Repeat("x", 5000)
	_, warn := ParseConfig("c.json", []byte(`{"tailMaxChars": "`+huge+`", "`+huge+`": 1}`))
	if len(warn) != 2 {
		t.Fatalf("warnings %q", warn)
	}
	for _, w := range warn {
		if len(w) > 400 || !strings.Contains(w, "…(") {
			t.Errorf("a warning echoes a 5000-character value or key whole: %.300s", w)
		}
	}
}

// TestLoadConfig: a missing file is the defaults without a word; an
// unreadable one, and every warning, name the file.
func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	if c, warn := LoadConfig(filepath.Join(dir, "none.json")); warn != nil || c != DefaultConfig() {
		t.Errorf("a missing file: %+v %q", c, warn)
	}
	path := filepath.Join(dir, "context-relay.json")
	os.WriteFile(path, []byte(`{"limits": {"total": "x"}}`), 0o600)
	if _, warn := LoadConfig(path); len(warn) != 1 || !strings.HasPrefix(warn[0], path+`:1:22: field "limits.total"`) {
		t.Errorf("warnings %q do not name the file", warn)
	}
	if _, warn := LoadConfig(dir); len(warn) != 1 || !strings.HasPrefix(warn[0], dir+": ") {
		t.Errorf("an unreadable file (a directory): warnings %q", warn)
	}
	// A FIFO is refused at once (it blocked the engine host forever).
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan []string, 1)
	go func() { _, warn := LoadConfig(fifo); done <- warn }()
	select {
	case warn := <-done:
		if len(warn) != 1 || !strings.Contains(warn[0], fifo) || !strings.Contains(warn[0], "a named pipe") {
			t.Errorf("a FIFO: warnings %q", warn)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("LoadConfig(FIFO) still blocked after 20s")
	}
}
