package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pi-session/pi-session/budget"
	"github.com/pi-session/pi-session/extension"
	"github.com/pi-session/pi-session/hooks"
	"github.com/pi-session/pi-session/marker"
	"github.com/pi-session/pi-session/owndir"
	"github.com/pi-session/pi-session/paths"
	"github.com/pi-session/pi-session/status"
)

const doctorUsage = `usage: pi-session doctor

Checks what pi-session needs, one line each, and says how to fix each
failure: Node's version, pi and its version, pi-session's extension, the
engine socket, its round-trip latency, and the state directories. Inside
pi (PI_SESSION_SOCKET set) it checks the running engine host; elsewhere it
starts a short-lived one. Exit status 1 when a check fails.
`

// minNode is the oldest Node pi 1.6 runs on (its package.json engines).
var minNode = [3]int{22, 19, 0}

// finding is the outcome of one check.
type finding struct {
	level  string // "ok", "warn" or "FAIL"
	name   string
	detail string
	fix    string
}

func ok(name, format string, args ...any) finding {
	return finding{level: "ok", name: name, detail: fmt.Sprintf(format, args...)}
}

// String is the finding's one line: a detail that spans lines (an error
// joining several) is joined with "; ".
func (f finding) String() string {
	s := fmt.Sprintf("%-4s  %-9s  %s", f.level, f.name, oneLine(f.detail))
	if f.fix != "" {
		s += "; fix: " + oneLine(f.fix)
	}
	return s
}

// oneLine joins the non-empty lines of s with "; ".
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	var parts []string
	for _, l := range strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' }) {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, "; ")
}

// cmdDoctor runs the checks.
func cmdDoctor(ctx context.Context, inv *invocation) int {
	args, code, done := parseFlags(inv, newFlagSet("doctor"), inv.args, doctorUsage)
	if done {
		return code
	}
	if len(args) > 0 {
		return inv.errorf(exitUsage, "doctor takes no arguments (see pi-session doctor --help)")
	}
	findings := []finding{checkNode(ctx, inv.env), checkPi(ctx, inv.env), checkExtension(inv.env)}
	findings = append(findings, checkSocket(ctx, inv.env)...)
	findings = append(findings, checkDirs(inv.env), checkMarkerDir(inv.env), checkOwnDirs(inv.env, workingDir(inv.env)))
	code = 0
	for _, f := range findings {
		fmt.Fprintln(inv.stdout, f)
		if f.level == "FAIL" {
			code = 1
		}
	}
	return code
}

// lookPath finds an executable on the environment's PATH.
func lookPath(env *environ, name string) string {
	for _, dir := range filepath.SplitList(env.Get("PATH")) {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode().Perm()&0o111 != 0 {
			return p
		}
	}
	return ""
}

func checkNode(ctx context.Context, env *environ) finding {
	const fix = "install Node 22 (>= 22.19) first on PATH, e.g. from https://nodejs.org or your package manager"
	node := lookPath(env, "node")
	if node == "" {
		return finding{level: "FAIL", name: "node", detail: "not found on PATH (pi runs on Node)", fix: fix}
	}
	out, err := versionOf(ctx, env, node)
	if err != nil {
		return finding{level: "FAIL", name: "node", detail: failedRun(err), fix: fix}
	}
	v, ok := parseVersion(out)
	if !ok {
		return finding{level: "FAIL", name: "node", detail: fmt.Sprintf("%s: cannot read the version in %q", node, out), fix: fix}
	}
	if slices.Compare(v[:], minNode[:]) < 0 {
		return finding{level: "FAIL", name: "node", detail: fmt.Sprintf("%s at %s; pi 1.6 needs >= %d.%d.%d", out, node, minNode[0], minNode[1], minNode[2]), fix: fix}
	}
	return finding{level: "ok", name: "node", detail: fmt.Sprintf("%s at %s", out, node)}
}

func checkPi(ctx context.Context, env *environ) finding {
	pi, err := findPi(env)
	if err != nil {
		return finding{level: "FAIL", name: "pi", detail: err.Error(), fix: "npm install -g @earendil-works/pi-coding-agent@1.6, or set PI_SESSION_PI to the real pi"}
	}
	out, err := versionOf(ctx, env, pi)
	if err != nil {
		return finding{level: "FAIL", name: "pi", detail: failedRun(err), fix: "see the whole output and check that pi runs: " + pi + " --version"}
	}
	v, parsed := parseVersion(out)
	if !parsed || v[0] != 1 || v[1] != 6 {
		return finding{level: "warn", name: "pi", detail: fmt.Sprintf("%s at %s; pi-session is built and tested for pi 1.6", out, pi), fix: "npm install -g @earendil-works/pi-coding-agent@1.6"}
	}
	return ok("pi", "%s at %s", lastField(out), pi)
}

func checkExtension(env *environ) finding {
	switch v := env.Get(envExtension); v {
	case "off":
		return finding{level: "warn", name: "extension", detail: envExtension + "=off: pi runs without pi-session's extension", fix: "unset " + envExtension}
	case "":
	default:
		if !extension.IsPackage(v) {
			return finding{level: "FAIL", name: "extension", detail: fmt.Sprintf("%s=%s is not a pi-session extension package", envExtension, v), fix: "point " + envExtension + " at pi-session's extension/ directory, or unset it"}
		}
		return ok("extension", "%s=%s, passed to pi with -e", envExtension, v)
	}
	agentDir := paths.AgentDir(env.Get)
	settingsPath := filepath.Join(agentDir, "settings.json")
	settings, err := readSettings(settingsPath)
	if err != nil {
		return finding{level: "FAIL", name: "extension", detail: err.Error(), fix: "fix " + settingsPath + " (pi cannot read it either)"}
	}
	dir := registered(agentDir, settings)
	if dir == "" {
		return ok("extension", "bundled (%s), passed to pi with -e by pi-session; plain pi runs without it (for plain pi too: pi-session setup)", extension.Hash())
	}
	if stale := extension.Stale(dir); len(stale) > 0 {
		return finding{level: "warn", name: "extension", detail: fmt.Sprintf("installed at %s but differs from this pi-session's (%s)", dir, strings.Join(stale, ", ")), fix: "pi-session setup"}
	}
	return ok("extension", "installed at %s (registered in %s), current", dir, settingsPath)
}

// checkSocket checks the engine socket and its round-trip latency: the
// running host's when PI_SESSION_SOCKET is set, else a short-lived one's.
func checkSocket(ctx context.Context, env *environ) []finding {
	path := env.Get(hooks.EnvSocket)
	what := "the engine host of this pi"
	if path == "" {
		// The short-lived host's socket directory goes with it when doctor
		// made it (an unusable agent dir sends it to /tmp, say).
		existed := map[string]bool{}
		for _, d := range hooks.SocketDirs(env.Get) {
			if _, err := os.Lstat(d); err == nil {
				existed[d] = true
			}
		}
		p, err := hooks.SocketPath(env.Get, os.Getpid())
		if err == nil && !existed[filepath.Dir(p)] {
			defer os.Remove(filepath.Dir(p)) // only when empty; after the host's Close below
		}
		if err != nil {
			return []finding{{level: "FAIL", name: "socket", detail: err.Error(), fix: "make $XDG_RUNTIME_DIR or the agent directory writable, or set TMPDIR to a short private directory"}}
		}
		h, err := hooks.Listen(hooks.Config{Path: p, Version: Version(), Mode: "doctor"})
		if err != nil {
			return []finding{{level: "FAIL", name: "socket", detail: err.Error(), fix: "remove " + p + " if no pi-session uses it"}}
		}
		defer h.Close()
		go h.Serve(ctx)
		path, what = p, "a short-lived test host: no pi-session runs here"
	}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := hooks.Dial(dctx, path, hooks.Hello{Client: "doctor", PID: os.Getpid()})
	if err != nil {
		return []finding{{level: "FAIL", name: "socket", detail: fmt.Sprintf("%s: %v", path, err), fix: "restart pi under pi-session; if this persists, see <agent dir>/pi-session/host.jsonl"}}
	}
	defer c.Close()
	const n = 200
	rtts := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		t0 := time.Now()
		if _, _, err := c.Call(dctx, "ping", nil, nil); err != nil {
			return []finding{ok("socket", "%s reachable (%s)", path, what),
				{level: "FAIL", name: "latency", detail: fmt.Sprintf("ping %d of %d: %v", i+1, n, err), fix: "see <agent dir>/pi-session/host.jsonl"}}
		}
		rtts = append(rtts, time.Since(t0))
	}
	slices.Sort(rtts)
	return []finding{
		ok("socket", "%s reachable (%s; pi-session %s, protocol %d)", path, what, c.Hello.Version, c.Hello.Protocol),
		ok("latency", "round trip p50 %s, p99 %s over %d pings (Go client)", rtts[n/2].Round(time.Microsecond), rtts[n*99/100].Round(time.Microsecond), n),
	}
}

// checkDirs checks that pi-session can write where it keeps state.
func checkDirs(env *environ) finding {
	agentDir := paths.AgentDir(env.Get)
	dirs := []string{agentDir, paths.MarkerDir(env.Get), status.StoreFromEnv(env.Get).Dir(), filepath.Join(agentDir, "pi-session")}
	var bad []string
	for _, d := range dirs {
		if err := writable(d); err != nil {
			bad = append(bad, err.Error())
		}
	}
	if len(bad) > 0 {
		fix := "point PI_CODING_AGENT_DIR (and PI_SESSION_MARKER_DIR, PI_CONTEXT_BUDGET_STATE_DIR) elsewhere"
		if ps := unwritableDirs(env); len(ps) > 0 {
			fix = fixOf(ps)
		}
		return finding{level: "FAIL", name: "state", detail: strings.Join(bad, "; "), fix: "make them writable by uid " + strconv.Itoa(os.Getuid()) + ", or " + fix}
	}
	var shown []string
	for _, d := range dirs {
		if _, err := os.Stat(d); err != nil {
			d += " (can be created)"
		}
		shown = append(shown, d)
	}
	return ok("state", "writable: %s", strings.Join(shown, ", "))
}

// checkMarkerDir checks that relaunch markers can be trusted: their
// directory is the user's own and no one else can write to it.
func checkMarkerDir(env *environ) finding {
	dir := paths.MarkerDir(env.Get)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		if err := canWrite(dir); err != nil {
			return finding{level: "FAIL", name: "markers", detail: fmt.Sprintf("%s does not exist and cannot be created: %v (pi-session does not start)", dir, err),
				fix: fixOf([]dirProblem{{writeDirs(env)[1], err}})}
		}
		return ok("markers", "%s does not exist yet; pi-session creates it, mode 0700", dir)
	}
	if err := marker.CheckDir(dir); err != nil {
		msg, fix, _ := strings.Cut(strings.TrimPrefix(err.Error(), "marker: "), "; fix: ")
		return finding{level: "FAIL", name: "markers", detail: msg + " (relaunch is off until then)", fix: fix}
	}
	return ok("markers", "%s is yours and no one else can write to it", dir)
}

// checkOwnDirs checks the other directories pi-session writes into, for
// the agent dir and for the workspace cwd, by the markers' rule
// (owndir): refused ones fail, symbolic links are named.
func checkOwnDirs(env *environ, cwd string) finding {
	type ownDir struct {
		dir    string
		levels int // owndir.Check's: the part of the path that is pi-session's
		what   string
	}
	agentDir := paths.AgentDir(env.Get)
	dirs := []ownDir{
		{status.StoreFromEnv(env.Get).Dir(), 2, "status records"},
		{filepath.Join(agentDir, "context-relay"), 1, "relay notes"},
		{filepath.Join(agentDir, "summaries"), 1, "the recap config"},
	}
	if cwd != "" {
		dirs = append(dirs, ownDir{budget.HandoffDir(cwd), 2, "handoffs"}, ownDir{filepath.Join(cwd, ".pi", "context-store", "blobs"), 2, "offloaded results"})
	}
	var bad, fixes, links []string
	for _, d := range dirs {
		w, err := owndir.Check(d.dir, d.levels)
		if errors.Is(err, syscall.ENOTDIR) {
			continue // it cannot exist, so no one can have put anything there: the state line says why
		}
		if err != nil {
			msg, fix, _ := strings.Cut(strings.TrimPrefix(err.Error(), "owndir: "), "; fix: ")
			bad = append(bad, d.what+": "+msg)
			fixes = append(fixes, fix)
			continue
		}
		if w != "" {
			links = append(links, d.what+": "+w)
		}
	}
	switch {
	case len(bad) > 0:
		return finding{level: "FAIL", name: "dirs", detail: strings.Join(append(bad, links...), "; "), fix: strings.Join(fixes, "; ")}
	case len(links) > 0:
		return finding{level: "warn", name: "dirs", detail: strings.Join(links, "; ")}
	}
	return ok("dirs", "status, relay notes, recap config, handoffs and offload store directories are yours and no one else can write to them (or do not exist yet)")
}

// writable checks that a file can be created in dir, or in its nearest
// existing parent when dir does not exist yet (pi-session creates it).
func writable(dir string) error {
	d, err := nearestDir(dir)
	if err != nil {
		if _, ok := err.(notDirError); ok {
			return err
		}
		return fmt.Errorf("%s: %v", dir, err)
	}
	f, err := os.CreateTemp(d, ".pi-session-doctor-*")
	if err != nil {
		return fmt.Errorf("%s: %v", dir, err)
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}

// versionOf runs `prog --version` and returns its trimmed standard output.
// A failure is a *runError.
func versionOf(ctx context.Context, env *environ, prog string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, "--version")
	cmd.Env = env.List()
	out, err := cmd.Output()
	if err != nil {
		re := &runError{command: prog + " --version", err: err}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			for _, l := range strings.Split(string(ee.Stderr), "\n") {
				if l = strings.TrimRight(l, " \t\r"); strings.TrimSpace(l) != "" {
					re.stderr = append(re.stderr, l)
				}
			}
		}
		return "", re
	}
	return strings.TrimSpace(string(out)), nil
}

// runError is a program that failed, with what it said on stderr: a Node
// program that cannot start prints a stack trace of many lines there.
type runError struct {
	command string // as a user would type it
	err     error
	stderr  []string // its non-empty lines
}

// Error is one line: the failure, the first meaningful line of stderr,
// and where the rest is.
func (e *runError) Error() string {
	s := e.summary()
	if more := len(e.stderr) - 1; more > 0 {
		s += fmt.Sprintf(" (%d more %s: run %s)", more, plural(more, "line", "lines"), e.command)
	}
	return s
}

// summary is Error without the pointer to the rest.
func (e *runError) summary() string {
	s := e.command + ": " + e.err.Error()
	if len(e.stderr) == 0 {
		return s
	}
	s += ": " + meaningfulLine(e.stderr)
	for _, l := range e.stderr {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "Node.js v"); ok && !strings.ContainsAny(v, " \t") {
			s += " (Node.js v" + v + ")"
			break
		}
	}
	return s
}

// meaningfulLine picks the line of a program's error output that says
// what went wrong: an "...Error: ..." line of a stack trace, else the
// first line that is not a source location, a source excerpt, a caret
// line or a stack frame.
func meaningfulLine(lines []string) string {
	for _, l := range lines {
		t := strings.TrimSpace(l)
		name, _, ok := strings.Cut(t, ":")
		if i := strings.Index(name, " ["); i > 0 && strings.HasSuffix(name, "]") {
			name = name[:i] // Error [ERR_REQUIRE_ESM]
		}
		if ok && (strings.HasSuffix(name, "Error") || strings.HasSuffix(name, "Exception")) && !strings.ContainsAny(name, " /") {
			return t
		}
	}
	for _, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(t, "at "), strings.Trim(t, "^~ ") == "", strings.HasPrefix(t, "Node.js v"):
		case strings.HasPrefix(t, "/"), strings.HasPrefix(t, "file://"), strings.HasPrefix(t, "node:"):
		default:
			return t
		}
	}
	return strings.TrimSpace(lines[0])
}

// failedRun is a doctor finding's detail for a failed run: the summary
// and how many more lines there are (the fix says how to see them).
func failedRun(err error) string {
	var re *runError
	if !errors.As(err, &re) {
		return err.Error()
	}
	s := re.summary()
	if more := len(re.stderr) - 1; more > 0 {
		s += fmt.Sprintf(" (and %d more %s)", more, plural(more, "line", "lines"))
	}
	return s
}

// parseVersion reads "v22.19.0", "1.6.0" or "pi 1.6.0" (the last field).
func parseVersion(s string) ([3]int, bool) {
	var v [3]int
	parts := strings.SplitN(strings.TrimPrefix(lastField(s), "v"), ".", 3)
	if len(parts) != 3 {
		return v, false
	}
	for i, p := range parts {
		if j := strings.IndexFunc(p, func(r rune) bool { return r < '0' || r > '9' }); j >= 0 {
			p = p[:j]
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			return v, false
		}
		v[i] = n
	}
	return v, true
}

func lastField(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return f[len(f)-1]
}
