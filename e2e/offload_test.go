package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pi-session/pi-session/offload"
	"github.com/pi-session/pi-session/pitest"
)

// buildLog writes a ~2 MB build log with an ERROR line every 997 lines.
func buildLog(t *testing.T, dir string) (string, []byte) {
	t.Helper()
	var b bytes.Buffer
	for i := 0; b.Len() < 2<<20; i++ {
		level := "INFO"
		if i%997 == 0 {
			level = "ERROR"
		}
		fmt.Fprintf(&b, "step %06d %s compiling module_%d with -O2 -Wall: ok\n", i, level, i%300)
	}
	p := filepath.Join(dir, "build.log")
	if err := os.WriteFile(p, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return p, b.Bytes()
}

func lastToolResult(t *testing.T, r pitest.Request) string {
	t.Helper()
	msgs := r.Decoded()
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "toolResult" {
			return msgs[i].Text()
		}
	}
	t.Fatalf("request %d has no tool result", r.N)
	return ""
}

var handleRE = regexp.MustCompile(`ce_[0-9a-f]{24}`)

// printRun runs pi-session -p prompt with the test tools and returns its
// output and the model's requests, which must number want.
func printRun(t *testing.T, e *pitest.Env, prompt string, want int) ([]byte, []pitest.Request) {
	t.Helper()
	out, err := e.Command(pitest.Binary(t), append(e.PiArgs("testdata/pi/test-tools.ts"), "-p", prompt)...).CombinedOutput()
	if err != nil {
		t.Fatalf("pi-session -p: %v\n%s", err, out)
	}
	reqs := e.Requests()
	if len(reqs) != want {
		t.Fatalf("model requests = %d, want %d\n%s", len(reqs), want, out)
	}
	return out, reqs
}

// TestOffloadEndToEnd: a tool returns 2 MB of log; the model's next request
// holds the notice, not the log; the model reads the ERROR lines back with
// ctx_read; /ce status reports the saving; the store holds the exact bytes.
func TestOffloadEndToEnd(t *testing.T) {
	e := pitest.NewEnv(t)
	path, data := buildLog(t, e.Work)
	e.Scenario(map[string]any{"steps": []map[string]any{
		{"tool": "dump_file", "args": map[string]any{"path": path}},
		{"tool": "ctx_read", "args": map[string]any{"id": "${lastHandle}", "query": "ERROR", "contextLines": 0}},
		{"text": "found them"},
	}})
	out, reqs := printRun(t, e, "what failed in the build?", 3)

	notice := lastToolResult(t, reqs[1])
	handle := handleRE.FindString(notice)
	if handle == "" || !strings.Contains(notice, "stored as "+handle) || len(notice) > 16384 {
		t.Fatalf("the model saw %d bytes without a notice for the 2 MB result:\n%.2000s", len(notice), notice)
	}
	if strings.Contains(notice, "step 010000") {
		t.Errorf("the notice carries the middle of the log:\n%s", notice)
	}
	if !strings.Contains(notice, `ctx_read({"id":"`+handle+`"`) {
		t.Errorf("the notice has no copyable ctx_read call:\n%s", notice)
	}

	read := lastToolResult(t, reqs[2])
	wantErrors := bytes.Count(data, []byte(" ERROR "))
	if !strings.Contains(read, fmt.Sprintf("of %d", wantErrors)) || !strings.Contains(read, "step 000997 ERROR") {
		t.Errorf("ctx_read's answer lacks the ERROR lines or their total %d:\n%.3000s", wantErrors, read)
	}
	if strings.Contains(read, " INFO ") {
		t.Errorf("ctx_read with contextLines 0 returned non-matching lines:\n%.2000s", read)
	}

	// Nothing is lost: the store holds the exact original.
	store, err := offload.OpenStore(filepath.Join(e.Work, ".pi", "context-store"), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	blob, err := store.Open(handle, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(blob.Data, data) {
		t.Errorf("stored payload differs from the tool's output (%d vs %d bytes)", len(blob.Data), len(data))
	}
	blob.Close()

	out, err = e.Command(pitest.Binary(t), append(e.PiArgs(), "-p", "/ce status --all")...).CombinedOutput()
	if err != nil {
		t.Fatalf("/ce status: %v\n%s", err, out)
	}
	status := string(out)
	for _, want := range []string{"Tool results kept out of the model's context: 1\n", "Later: 1 of 1 result read back", "  " + handle + ": dump_file, "} {
		if !strings.Contains(status, want) {
			t.Errorf("/ce status --all lacks %q:\n%s", want, status)
		}
	}
	if m := regexp.MustCompile(`Tokens kept out of the context \(about 4 bytes each\): ([\d,]+),`).FindStringSubmatch(status); m == nil || m[1] == "0" {
		t.Errorf("/ce status reports no tokens kept out:\n%s", status)
	}
}

// TestOffloadStatusBashFigures: pi's own bash prints 20,000 lines; it keeps
// the last 50 KB in its result and the whole in a file. /ce status then
// gives figures a user can check: what bash produced (the file's size),
// what its result held, what the model saw instead (the notice it got),
// the tokens kept out, and where the full output is (the handle and the
// file), in plain words.
func TestOffloadStatusBashFigures(t *testing.T) {
	e := pitest.NewEnv(t)
	tmp := t.TempDir()
	e.Set("TMPDIR", tmp)
	cmd := `awk 'BEGIN{for(i=1;i<=20000;i++){printf "build step %05d: compiling module_%d ... ok\n", i, i%300; if(i%4999==0) printf "build step %05d: ERROR linker\n", i}}'`
	e.Scenario(map[string]any{"steps": []map[string]any{
		{"tool": "bash", "args": map[string]any{"command": cmd}},
		{"tool": "ctx_read", "args": map[string]any{"id": "${lastHandle}", "query": "ERROR"}},
		{"text": "found them"},
	}})
	_, reqs := printRun(t, e, "show me the build log", 3)
	notice := lastToolResult(t, reqs[1])
	handle := handleRE.FindString(notice)
	logs, _ := filepath.Glob(filepath.Join(tmp, "pi-bash-*.log"))
	if handle == "" || len(logs) != 1 {
		t.Fatalf("handle %q, pi's full-output files %v; the notice:\n%.1000s", handle, logs, notice)
	}
	st, err := os.Stat(logs[0])
	if err != nil {
		t.Fatal(err)
	}
	full := st.Size()

	out, err := e.Command(pitest.Binary(t), append(e.PiArgs(), "-p", "/ce status --all")...).CombinedOutput()
	if err != nil {
		t.Fatalf("/ce status: %v\n%s", err, out)
	}
	status := string(out)
	num := func(label string) int64 {
		t.Helper()
		m := regexp.MustCompile(regexp.QuoteMeta(label) + ` +([\d,]+) bytes`).FindStringSubmatch(status)
		if m == nil {
			t.Fatalf("/ce status has no %q figure:\n%s", label, status)
		}
		var n int64
		fmt.Sscan(strings.ReplaceAll(m[1], ",", ""), &n)
		return n
	}
	produced, held, seen := num("the tools produced:"), num("their results held:"), num("the model saw instead:")
	if produced != full {
		t.Errorf("the tools produced %d bytes, says /ce status; pi's file %s holds %d", produced, logs[0], full)
	}
	// pi's bash keeps at most 50 KB (and its own marker line).
	if held < 40<<10 || held > 50<<10+400 {
		t.Errorf("bash's result held %d bytes, want about pi's 50 KB limit", held)
	}
	if seen != int64(len(notice)) {
		t.Errorf("the model saw %d bytes, says /ce status; its request holds a notice of %d", seen, len(notice))
	}
	tok := func(n int64) int64 { return (n + 3) / 4 }
	group := func(n int64) string {
		s := fmt.Sprint(n)
		for i := len(s) - 3; i > 0; i -= 3 {
			s = s[:i] + "," + s[i:]
		}
		return s
	}
	for _, want := range []string{
		"their results held:    " + group(held) + " bytes (",
		"): bash cut 1 output to fit its limit\n",
		fmt.Sprintf("Tokens kept out of the context (about 4 bytes each): %s, the results less the notices; %s counting what bash had cut\n", group(tok(held)-tok(seen)), group(tok(full)-tok(seen))),
		"  " + handle + ": bash, " + group(full) + " bytes (",
		"; the tool's full-output file: " + logs[0] + "\n",
		"each kept 7 days after it was stored",
	} {
		if !strings.Contains(status, want) {
			t.Errorf("/ce status lacks %q:\n%s", want, status)
		}
	}
	for _, internal := range []string{"mainTokensPrevented", "netTokensSaved", "readbackTokens", "payloads", "168h", "1 calls", "1 results"} {
		if strings.Contains(status, internal) {
			t.Errorf("/ce status holds %q:\n%s", internal, status)
		}
	}
}

// TestOffloadEngineDown: with the engine unreachable, the large result
// reaches the model unchanged, and ctx_read says why it cannot read.
func TestOffloadEngineDown(t *testing.T) {
	e := pitest.NewEnv(t)
	path, data := buildLog(t, e.Work)
	e.Set("PI_SESSION_SOCKET", filepath.Join(e.Work, "no-engine.sock"))
	e.Set("FAUX_CONTEXT_WINDOW", "4000000") // 2 MB inline must not make pi compact
	e.Scenario(map[string]any{"steps": []map[string]any{
		{"tool": "dump_file", "args": map[string]any{"path": path}},
		{"tool": "ctx_read", "args": map[string]any{"id": "ce_000000000000000000000000", "query": "ERROR"}},
		{"text": "done"},
	}})
	pi := filepath.Join(pitest.ToolsBin(t), "pi")
	args := append(e.PiArgs("extension", "testdata/pi/test-tools.ts"), "-p", "build?")
	out, err := e.Command(pi, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("pi -p: %v\n%s", err, out)
	}
	reqs := e.Requests()
	if len(reqs) != 3 {
		t.Fatalf("model requests = %d, want 3\n%s", len(reqs), out)
	}
	if got := lastToolResult(t, reqs[1]); got != string(data) {
		t.Errorf("with the engine down the model saw %d bytes, want the original %d", len(got), len(data))
	}
	if got := lastToolResult(t, reqs[2]); !strings.Contains(got, "engine is unreachable") {
		t.Errorf("ctx_read with the engine down answered %q, want the reason", got)
	}
	if n := strings.Count(string(out), "engine unreachable"); n != 1 {
		t.Errorf("outage notices = %d, want 1:\n%s", n, out)
	}
}

// TestOffloadNotifyOnStart: with notifyOnStart the session start shows the
// engine's notice, and a configuration problem ({"enabled": null}) is said
// at start with its file, line and setting, while offloading stays on.
func TestOffloadNotifyOnStart(t *testing.T) {
	e := pitest.NewEnv(t)
	cfg := filepath.Join(e.Work, ".pi", "context-engineer.json")
	os.MkdirAll(filepath.Dir(cfg), 0o755)
	if err := os.WriteFile(cfg, []byte("{\n  \"notifyOnStart\": true,\n  \"enabled\": null\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rpc := pitest.StartRPC(t, e.Command(pitest.Binary(t), append(e.PiArgs(), "--mode", "rpc")...))
	rpc.WaitFrom(0, "the start notice", func(r pitest.Record) bool {
		return r.IsNotify() && strings.Contains(r.Str("message"), "Context Engineer is on")
	})
	warn, _ := rpc.WaitFrom(0, "the configuration warning", func(r pitest.Record) bool {
		return r.IsNotify() && strings.Contains(r.Str("message"), "warning in the configuration")
	})
	if want := cfg + ":3: enabled: null is not true or false; using the default true"; !strings.Contains(warn.Str("message"), want) {
		t.Errorf("start warning = %q, want it to hold %q", warn.Str("message"), want)
	}
	if got := warn.Str("notifyType"); got != "warning" {
		t.Errorf("the configuration warning is a %q notice, want a warning", got)
	}
	if code := rpc.Close(); code != 0 {
		t.Errorf("pi exited %d", code)
	}
}

// TestOffloadStoreOutage: with a store that cannot be written, large
// results reach the model whole, the user is told once, and the host log
// records the error once.
func TestOffloadStoreOutage(t *testing.T) {
	e := pitest.NewEnv(t)
	path, data := buildLog(t, e.Work)
	os.MkdirAll(filepath.Join(e.Work, ".pi"), 0o755)
	if err := os.WriteFile(filepath.Join(e.Work, ".pi", "context-store"), []byte("a file where the store's directory goes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.Set("FAUX_CONTEXT_WINDOW", "8000000") // 4 MB inline must not make pi compact
	e.Scenario(map[string]any{"steps": []map[string]any{
		{"tool": "dump_file", "args": map[string]any{"path": path}},
		{"tool": "dump_file", "args": map[string]any{"path": path}},
		{"text": "done"},
	}})
	out, reqs := printRun(t, e, "read the log twice", 3)
	for _, r := range reqs[1:] {
		if got := lastToolResult(t, r); got != string(data) {
			t.Errorf("request %d: the model saw %d bytes, want the original %d", r.N, len(got), len(data))
		}
	}
	if n := strings.Count(string(out), "the store "+filepath.Join(e.Work, ".pi", "context-store")+" cannot be written"); n != 1 {
		t.Errorf("outage notices = %d, want 1:\n%s", n, out)
	}
	log, err := os.ReadFile(filepath.Join(e.Agent, "pi-session", "host.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(log), `"msg":"offload store failed"`); n != 1 || !strings.Contains(string(log), "not a directory") {
		t.Errorf("host log lines about the failure: %d, want 1 with the error:\n%s", n, log)
	}
}
