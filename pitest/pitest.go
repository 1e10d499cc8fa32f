// Package pitest runs real pi 1.6 offline, with pi-session around it or not, for end-to-end tests.
package pitest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Root is the repository root: the nearest parent of the working directory
// holding go.mod.
func Root(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("pitest: no go.mod above the working directory")
		}
		dir = parent
	}
}

// ToolsBin is the directory holding the pinned pi and Node 22
// (tools/node_modules/.bin). A missing install fails the test: end-to-end
// tests never skip for want of pi.
func ToolsBin(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(Root(t), "tools", "node_modules", ".bin")
	for _, name := range []string{"pi", "node"} {
		if _, err := os.Stat(filepath.Join(bin, name)); err != nil {
			t.Fatalf("pitest: %s is not installed in %s; run `make tools` (make test does it): %v", name, bin, err)
		}
	}
	return bin
}

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
	buildOut  []byte
)

// Binary builds pi-session once per test process and returns its path.
// Call Cleanup from TestMain to remove it.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "pitest-bin-")
		if err != nil {
			buildErr = err
			return
		}
		buildPath = filepath.Join(dir, "pi-session")
		cmd := exec.Command("go", "build", "-o", buildPath, "./cmd/pi-session")
		cmd.Dir = Root(t)
		buildOut, buildErr = cmd.CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("pitest: build pi-session: %v\n%s", buildErr, buildOut)
	}
	return buildPath
}

// Cleanup removes what Binary built. Call it from TestMain after m.Run.
func Cleanup() {
	if buildPath != "" {
		os.RemoveAll(filepath.Dir(buildPath))
	}
}

// Env is an isolated place to run pi: its own agent dir, home and working
// directory, the pinned tools first on PATH, no network, and the scripted
// model with a request log.
type Env struct {
	t     testing.TB
	Root  string // repository root
	Agent string // PI_CODING_AGENT_DIR
	Work  string // the working directory pi starts in
	Log   string // FAUX_LOG: one line per model request
	vars  map[string]string
}

// NewEnv prepares an Env in a fresh temporary directory.
func NewEnv(t testing.TB) *Env {
	t.Helper()
	root := Root(t)
	bin := ToolsBin(t)
	base := t.TempDir()
	e := &Env{t: t, Root: root, Agent: filepath.Join(base, "agent"), Work: filepath.Join(base, "work"), Log: filepath.Join(base, "faux.jsonl")}
	for _, d := range []string{e.Agent, e.Work, filepath.Join(base, "home")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	e.vars = map[string]string{
		"PATH":                  bin + string(filepath.ListSeparator) + os.Getenv("PATH"),
		"HOME":                  filepath.Join(base, "home"),
		"PI_CODING_AGENT_DIR":   e.Agent,
		"PI_OFFLINE":            "1",
		"PI_SKIP_VERSION_CHECK": "1",
		"PI_TELEMETRY":          "0",
		"PI_SESSION_PI":         filepath.Join(bin, "pi"),
		"FAUX_LOG":              e.Log,
		"TERM":                  "xterm-256color",
		"TMPDIR":                os.TempDir(),
	}
	// Registered after TempDir, so it runs before the directory is removed.
	t.Cleanup(e.waitHosts)
	return e
}

// waitHosts waits (at most 10 s) until every engine host that logged its
// start under the agent dir has exited: a pi-session serve started by
// plain pi outlives pi by a moment and would write its last log line
// into a removed directory, leaving it behind in TMPDIR.
func (e *Env) waitHosts() {
	f, err := os.Open(filepath.Join(e.Agent, "pi-session", "host.jsonl"))
	if err != nil {
		return
	}
	pids := map[int]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var l struct {
			Msg     string `json:"msg"`
			HostPid int    `json:"hostPid"`
		}
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "host started" && l.HostPid > 0 && l.HostPid != os.Getpid() {
			pids[l.HostPid] = true
		}
	}
	f.Close()
	deadline := time.Now().Add(10 * time.Second)
	for pid := range pids {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// alive reports whether pid is a process that has not exited (a zombie
// has exited).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	if i := strings.LastIndexByte(string(b), ')'); i >= 0 && i+2 < len(b) {
		return b[i+2] != 'Z' && b[i+2] != 'X'
	}
	return true
}

// Set sets an environment variable for processes started from e.
func (e *Env) Set(key, value string) { e.vars[key] = value }

// Environ is the environment processes started from e get: only e's
// variables, so the developer's own pi settings never leak in.
func (e *Env) Environ() []string {
	out := make([]string, 0, len(e.vars))
	for k, v := range e.vars {
		out = append(out, k+"="+v)
	}
	return out
}

// Scenario writes a scripted-model scenario (see testdata/pi/faux-model.ts)
// and points FAUX_SCRIPT at it.
func (e *Env) Scenario(s any) {
	e.t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		e.t.Fatal(err)
	}
	p := filepath.Join(filepath.Dir(e.Log), "scenario.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		e.t.Fatal(err)
	}
	e.Set("FAUX_SCRIPT", p)
}

// Extension is the path of a TypeScript extension in the repository.
func (e *Env) Extension(rel string) string { return filepath.Join(e.Root, rel) }

// PiArgs are the arguments that load the scripted model (and the given
// extensions, relative to the repository root) and select it.
func (e *Env) PiArgs(extensions ...string) []string {
	args := []string{"-e", e.Extension("testdata/pi/faux-model.ts")}
	for _, x := range extensions {
		args = append(args, "-e", e.Extension(x))
	}
	return append(args, "--model", "faux/faux-1")
}

// Command prepares a process in e's working directory and environment.
func (e *Env) Command(path string, args ...string) *exec.Cmd {
	cmd := exec.Command(path, args...)
	cmd.Dir = e.Work
	cmd.Env = e.Environ()
	return cmd
}

// Request is one request the scripted model received.
type Request struct {
	N        int               `json:"n"`
	PID      int               `json:"pid"`
	Messages []json.RawMessage `json:"messages"`
	Tools    []string          `json:"tools"`
}

// Message is the part of a model message tests look at.
type Message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// Text is the message's text blocks joined by newlines.
func (m Message) Text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(m.Content, &blocks)
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// Decoded returns the request's messages.
func (r Request) Decoded() []Message {
	out := make([]Message, 0, len(r.Messages))
	for _, raw := range r.Messages {
		var m Message
		_ = json.Unmarshal(raw, &m)
		out = append(out, m)
	}
	return out
}

// LastUser is the text of the request's last user message.
func (r Request) LastUser() string {
	msgs := r.Decoded()
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			return msgs[i].Text()
		}
	}
	return ""
}

// Requests reads every request the scripted model received so far.
func (e *Env) Requests() []Request {
	e.t.Helper()
	f, err := os.Open(e.Log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		e.t.Fatal(err)
	}
	defer f.Close()
	var out []Request
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	for sc.Scan() {
		var r Request
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			e.t.Fatalf("pitest: bad line in %s: %v", e.Log, err)
		}
		out = append(out, r)
	}
	return out
}
