package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/pi-session/pi-session/atomicfile"
	"github.com/pi-session/pi-session/extension"
	"github.com/pi-session/pi-session/paths"
)

const setupUsage = `usage: pi-session setup [--dry-run] [--undo]

Installs pi-session's extension for plain pi too: writes the extension
bundled in this binary to <agent dir>/pi-session/extension and registers it
in <agent dir>/settings.json ("packages"), keeping every other setting (the
file is written back in pi's own format). Plain pi then loads the
extension, which starts "pi-session serve" by itself. Running setup again
updates the files and changes nothing else. pi-session itself needs no
setup: it passes its extension to pi with -e unless the extension is
installed.
  --dry-run   say what would change; change nothing
  --undo      remove exactly what setup added: the settings entry (the
              settings file comes back byte for byte as it was before setup,
              unless it changed since), the extension directory, and the
              bundled copies pi-session keeps in <agent dir>/pi-session
              (it writes one again when it next starts pi); running it
              again changes nothing
Exit status: 0 done (or nothing to do); 64 usage error; 73 a file or
directory cannot be written (make the agent dir writable, or set
PI_CODING_AGENT_DIR); 78 settings.json is not JSON (nothing is changed).
`

// EnvExtension overrides the extension pi-session passes to pi: "off"
// passes none, a path passes that path (for developing the extension).
const envExtension = "PI_SESSION_EXTENSION"

// envBin names the pi-session binary pi's extension starts a host from
// (pi-session serve): under plain pi, and as a stand-in under pi-session.
const envBin = "PI_SESSION_BIN"

// setupDir is where setup installs the extension.
func setupDir(agentDir string) string { return filepath.Join(agentDir, "pi-session", "extension") }

// setupSource is how setup names the extension in settings.json: relative
// to the agent directory, as "pi install <dir>" writes it.
const setupSource = "pi-session/extension"

// cmdSetup installs the bundled extension for plain pi.
func cmdSetup(ctx context.Context, inv *invocation) int {
	fs := newFlagSet("setup")
	dryRun := fs.Bool("dry-run", false, "")
	undo := fs.Bool("undo", false, "")
	args, code, done := parseFlags(inv, fs, inv.args, setupUsage)
	if done {
		return code
	}
	if len(args) > 0 {
		return inv.errorf(exitUsage, "setup takes no arguments (see pi-session setup --help)")
	}
	if *undo {
		return setupUndo(inv, *dryRun)
	}
	agentDir := paths.AgentDir(inv.env.Get)
	dir := setupDir(agentDir)
	settingsPath := filepath.Join(agentDir, "settings.json")
	settings, err := readSettings(settingsPath)
	if err != nil {
		return inv.errorf(exitConfig, "setup: %v; fix the file or move it aside, then run setup again (nothing was changed)", err)
	}
	verb := func(done, would string) string { return dryVerb(*dryRun, done, would) }
	changed := false

	stale := extension.Stale(dir)
	exe, _ := os.Executable()
	record, _ := json.MarshalIndent(map[string]string{"binary": exe}, "", "  ")
	record = append(record, '\n')
	if old, err := os.ReadFile(filepath.Join(dir, "pi-session.json")); exe != "" && (err != nil || !bytes.Equal(old, record)) {
		stale = append(stale, "pi-session.json")
	}
	if len(stale) == 0 {
		fmt.Fprintf(inv.stdout, "extension   up to date in %s\n", dir)
	} else {
		if !*dryRun {
			if _, err := extension.Write(dir); err != nil {
				return cannotWrite(inv, agentDir, err, changed)
			}
			if exe != "" {
				if err := atomicfile.WriteFile(filepath.Join(dir, "pi-session.json"), record, 0o644); err != nil {
					return cannotWrite(inv, agentDir, err, true)
				}
			}
		}
		changed = true
		slices.Sort(stale)
		fmt.Fprintf(inv.stdout, "extension   %s %s in %s\n", verb("wrote", "write"), strings.Join(stale, ", "), dir)
	}

	if where := registered(agentDir, settings); where != "" {
		note := ""
		if filepath.Clean(where) != dir {
			note = fmt.Sprintf(" (a copy at %s, which setup does not update)", where)
		}
		fmt.Fprintf(inv.stdout, "settings    already registered in %s%s\n", settingsPath, note)
	} else {
		settings = addPackage(settings, setupSource)
		if !*dryRun {
			if err := writeSettingsForUndo(agentDir, settingsPath, formatSettings(settings)); err != nil {
				return cannotWrite(inv, agentDir, err, changed)
			}
		}
		changed = true
		fmt.Fprintf(inv.stdout, "settings    %s %q to \"packages\" in %s\n", verb("added", "add"), setupSource, settingsPath)
	}
	switch {
	case *dryRun && changed:
		fmt.Fprintln(inv.stdout, "dry run: nothing was changed")
	case changed:
		fmt.Fprintln(inv.stdout, "done: plain pi now loads pi-session's extension, which starts pi-session serve by itself; check with pi-session doctor")
	default:
		fmt.Fprintln(inv.stdout, "nothing to do: pi-session's extension is installed and current")
	}
	return 0
}

// cannotWrite reports a write setup could not make (a read-only agent
// dir, say) with a fix, and what was changed before it.
func cannotWrite(inv *invocation, agentDir string, err error, changed bool) int {
	state := "nothing was changed"
	if changed {
		state = "the extension files were written, settings.json was not changed; pi-session setup --undo removes them"
	}
	return inv.errorf(exitCantCreate, "setup: %v; %s, or set PI_CODING_AGENT_DIR to a directory you can write (%s)", err, writeFix(err, agentDir), state)
}

// writeFix says what to do about a write that failed under agentDir, by
// its cause: a file where a directory must be, no permission, a read-only
// or full file system.
func writeFix(err error, agentDir string) string {
	var pe *os.PathError
	path := agentDir
	if errors.As(err, &pe) {
		path = pe.Path
	}
	switch {
	case errors.Is(err, syscall.ENOTDIR):
		return "a file stands where a directory must be, on the way to " + path + ": move it aside"
	case errors.Is(err, syscall.EEXIST):
		return path + " exists and is not what setup writes: move it aside"
	case errors.Is(err, syscall.EROFS):
		return path + " is on a read-only file system"
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return "free some space on the file system of " + path
	default:
		return "make " + agentDir + " writable by you"
	}
}

// member is one top-level member of settings.json, kept as written.
type member struct {
	key   string
	value json.RawMessage
}

// readSettings reads pi's settings.json as an ordered list of members. A
// missing file has none; anything but a JSON object is an error.
func readSettings(path string) ([]member, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, nil // no such file (a parent may be a file: writing it will say so)
	}
	if err != nil {
		return nil, err
	}
	if err := notObjectError(path, b, "a JSON object of pi's settings"); err != nil {
		return nil, err
	}
	ms, err := parseObject(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ms, nil
}

// parseObject splits a JSON object into its members, in order, with their
// values as written.
func parseObject(b []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	t, err := dec.Token()
	if err != nil || t != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	var ms []member
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("not valid JSON: %w", err)
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("not valid JSON: %w", err)
		}
		ms = append(ms, member{key, v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("not valid JSON: data after the object")
	}
	return ms, nil
}

// formatSettings writes members the way pi writes settings.json
// (JSON.stringify with two-space indentation).
func formatSettings(ms []member) []byte {
	if len(ms) == 0 {
		return []byte("{}\n")
	}
	var b bytes.Buffer
	b.WriteString("{\n")
	for i, m := range ms {
		key, _ := json.Marshal(m.key)
		var v bytes.Buffer
		if err := json.Indent(&v, m.value, "  ", "  "); err != nil {
			v.Reset()
			v.Write(m.value)
		}
		fmt.Fprintf(&b, "  %s: %s", key, v.Bytes())
		if i < len(ms)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("}\n")
	return b.Bytes()
}

// lookup returns the value of key (the last one, as JSON.parse keeps).
func lookup(ms []member, key string) json.RawMessage {
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].key == key {
			return ms[i].value
		}
	}
	return nil
}

// addPackage appends source to the "packages" array, creating it.
func addPackage(ms []member, source string) []member {
	src, _ := json.Marshal(source)
	var list []json.RawMessage
	if v := lookup(ms, "packages"); v != nil {
		if json.Unmarshal(v, &list) != nil {
			list = nil // not an array: pi ignores it; replace it
		}
	}
	list = append(list, src)
	value, _ := json.Marshal(list)
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].key == "packages" {
			ms = slices.Clone(ms)
			ms[i].value = value
			return ms
		}
	}
	return append(slices.Clone(ms), member{"packages", value})
}

// registered returns the directory of a pi-session extension package that
// settings load (from "packages" or "extensions"), or "".
func registered(agentDir string, ms []member) string {
	for _, key := range []string{"packages", "extensions"} {
		var list []json.RawMessage
		if json.Unmarshal(lookup(ms, key), &list) != nil {
			continue
		}
		for _, raw := range list {
			var src string
			if json.Unmarshal(raw, &src) != nil {
				var obj struct{ Source string }
				if json.Unmarshal(raw, &obj) != nil {
					continue
				}
				src = obj.Source
			}
			if dir := packageOf(agentDir, src); dir != "" {
				return dir
			}
		}
	}
	return ""
}

// packageOf resolves a settings source the way pi does for local paths
// (relative to the agent directory, ~ for home) and returns the pi-session
// package it names (the package directory, or a file one directory down in it), or "".
func packageOf(agentDir, src string) string {
	src = localSource(agentDir, src)
	if src == "" {
		return ""
	}
	for _, dir := range []string{src, filepath.Dir(filepath.Dir(src))} {
		if extension.IsPackage(dir) {
			return dir
		}
	}
	return ""
}

// localSource resolves a settings source that names a local path the way
// pi does (relative to the agent directory, ~ for home, file://); it is ""
// for any other source (npm:, git:, ...).
func localSource(agentDir, src string) string {
	src = strings.TrimSpace(src)
	for _, p := range []string{"npm:", "git:", "github:", "http:", "https:", "ssh:", "builtin:"} {
		if strings.HasPrefix(src, p) {
			return ""
		}
	}
	src = strings.TrimPrefix(src, "file://")
	if src == "" {
		return ""
	}
	if src == "~" || strings.HasPrefix(src, "~/") {
		home, _ := os.UserHomeDir()
		src = filepath.Join(home, strings.TrimPrefix(src, "~"))
	}
	if !filepath.IsAbs(src) {
		src = filepath.Join(agentDir, src)
	}
	return filepath.Clean(src)
}

// extensionArgs are the arguments that load pi-session's extension into
// pi: none when PI_SESSION_EXTENSION=off or when the user installed it
// (setup) and did not turn installed extensions off with -ne; otherwise
// -e with the bundled copy, written to <agentDir>/pi-session/bundled-<hash>.
// An installed copy in setup's directory is brought up to date first.
func extensionArgs(env *environ, piArgs []string) ([]string, error) {
	switch v := env.Get(envExtension); v {
	case "off":
		return nil, nil
	case "":
	default:
		return []string{"-e", v}, nil
	}
	if passesOwn(piArgs) {
		return nil, nil
	}
	agentDir := paths.AgentDir(env.Get)
	settings, _ := readSettings(filepath.Join(agentDir, "settings.json"))
	if dir := registered(agentDir, settings); dir != "" && !noExtensions(piArgs) {
		if dir == setupDir(agentDir) {
			if _, err := extension.Write(dir); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}
	dir := filepath.Join(agentDir, "pi-session", "bundled-"+extension.Hash())
	if err := extension.WriteOnce(dir); err != nil {
		return nil, err
	}
	return []string{"-e", dir}, nil
}

// passesOwn reports whether pi's arguments already load a pi-session
// extension with -e (a checkout being worked on, say).
func passesOwn(args []string) bool {
	for i, a := range args {
		v, ok := "", false
		switch {
		case a == "--":
			return false
		case a == "-e" || a == "--extension":
			if i+1 < len(args) {
				v, ok = args[i+1], true
			}
		default:
			v, ok = strings.CutPrefix(a, "--extension=")
		}
		if ok && packageOf("", v) != "" {
			return true
		}
	}
	return false
}

// noExtensions reports whether pi's arguments turn off installed
// extensions (-ne, --no-extensions); explicit -e ones still load.
func noExtensions(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-ne", "--no-extensions":
			return true
		}
	}
	return false
}
