package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pi-session/pi-session/atomicfile"
	"github.com/pi-session/pi-session/extension"
	"github.com/pi-session/pi-session/paths"
)

// undoRecord is what setup keeps so that --undo can give settings.json
// back byte for byte: the file as it was before setup changed it, and a
// digest of what setup wrote.
type undoRecord struct {
	Settings string      `json:"settings"` // the file setup changed (symlinks resolved)
	Existed  bool        `json:"existed"`  // false: setup created it
	Mode     fs.FileMode `json:"mode"`
	Before   []byte      `json:"before"`  // its bytes before setup (base64)
	Written  string      `json:"written"` // SHA-256 of the bytes setup wrote
}

// undoPath is where setup keeps its undoRecord.
func undoPath(agentDir string) string {
	return filepath.Join(agentDir, "pi-session", "setup-undo.json")
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// settingsTarget is the file a write of settings.json lands in: the
// target of a symlink (a settings file kept with dotfiles stays a link).
func settingsTarget(settingsPath string) string {
	if t, err := filepath.EvalSymlinks(settingsPath); err == nil {
		return t
	}
	return settingsPath
}

// writeSettingsForUndo writes settings.json for setup, first recording how
// it was, so that setup --undo can restore it exactly.
func writeSettingsForUndo(agentDir, settingsPath string, data []byte) error {
	target := settingsTarget(settingsPath)
	rec := undoRecord{Settings: target, Mode: 0o600, Written: digest(data)}
	if fi, err := os.Stat(target); err == nil {
		before, err := os.ReadFile(target)
		if err != nil {
			return err
		}
		rec.Existed, rec.Mode, rec.Before = true, fi.Mode().Perm(), before
	}
	if err := os.MkdirAll(filepath.Dir(undoPath(agentDir)), 0o700); err != nil {
		return err
	}
	b, _ := json.MarshalIndent(rec, "", "  ")
	if err := atomicfile.WriteFile(undoPath(agentDir), append(b, '\n'), 0o600); err != nil {
		return err
	}
	return atomicfile.WriteFile(target, data, rec.Mode)
}

// readUndoRecord reads setup's record; nil when there is none (or it is
// unreadable: undo then removes the settings entry without it).
func readUndoRecord(agentDir string) *undoRecord {
	b, err := os.ReadFile(undoPath(agentDir))
	if err != nil {
		return nil
	}
	var rec undoRecord
	if json.Unmarshal(b, &rec) != nil || rec.Settings == "" {
		return nil
	}
	return &rec
}

// setupUndo removes what setup added: its settings entry (restoring the
// file as it was before setup when nothing else changed it since), its
// extension directory, pi-session's bundled copies and setup's own record.
func setupUndo(inv *invocation, dryRun bool) int {
	agentDir := paths.AgentDir(inv.env.Get)
	dir := setupDir(agentDir)
	settingsPath := filepath.Join(agentDir, "settings.json")
	settings, err := readSettings(settingsPath)
	if err != nil {
		return inv.errorf(exitConfig, "setup --undo: %v; fix the file or move it aside, then run setup --undo again (nothing was changed)", err)
	}
	verb := func(done, would string) string { return dryVerb(dryRun, done, would) }
	fail := func(err error, changed bool) int {
		state := "nothing was changed"
		if changed {
			state = "what is listed above was done"
		}
		return inv.errorf(exitCantCreate, "setup --undo: %v; %s, then run setup --undo again (%s)", err, writeFix(err, agentDir), state)
	}
	changed := false

	// The settings entry first, while the extension directory still shows
	// which entries name it.
	target := settingsTarget(settingsPath)
	current, _ := os.ReadFile(target)
	rest, removed := withoutEntries(agentDir, settings, dir)
	rec := readUndoRecord(agentDir)
	switch {
	case rec != nil && rec.Settings == target && digest(current) == rec.Written && rec.Existed:
		if !dryRun {
			if err := atomicfile.WriteFile(target, rec.Before, rec.Mode); err != nil {
				return fail(err, changed)
			}
		}
		fmt.Fprintf(inv.stdout, "settings    %s %s as it was before setup\n", verb("restored", "restore"), settingsPath)
		changed = true
	case rec != nil && rec.Settings == target && digest(current) == rec.Written:
		if !dryRun {
			if err := os.Remove(target); err != nil {
				return fail(err, changed)
			}
		}
		fmt.Fprintf(inv.stdout, "settings    %s %s, which setup had created\n", verb("removed", "remove"), settingsPath)
		changed = true
	case removed > 0:
		if !dryRun {
			if err := atomicfile.WriteFile(target, formatSettings(rest), fileMode(target, 0o600)); err != nil {
				return fail(err, changed)
			}
		}
		fmt.Fprintf(inv.stdout, "settings    %s %q from %s (the file changed since setup: the rest is kept, in pi's format)\n", verb("removed", "remove"), setupSource, settingsPath)
		changed = true
	default:
		fmt.Fprintf(inv.stdout, "settings    no entry of setup's in %s\n", settingsPath)
	}

	if extension.IsPackage(dir) {
		if !dryRun {
			if err := os.RemoveAll(dir); err != nil {
				return fail(err, changed)
			}
		}
		fmt.Fprintf(inv.stdout, "extension   %s %s\n", verb("removed", "remove"), dir)
		changed = true
	} else {
		fmt.Fprintf(inv.stdout, "extension   not installed in %s\n", dir)
	}

	bundled, _ := filepath.Glob(filepath.Join(agentDir, "pi-session", "bundled-*"))
	bundled = slices.DeleteFunc(bundled, func(d string) bool { return !extension.IsPackage(d) })
	for _, d := range bundled {
		if !dryRun {
			if err := os.RemoveAll(d); err != nil {
				return fail(err, changed)
			}
		}
		fmt.Fprintf(inv.stdout, "bundled     %s %s (pi-session writes its copy again when it next starts pi)\n", verb("removed", "remove"), d)
		changed = true
	}

	if !dryRun {
		if err := os.Remove(undoPath(agentDir)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fail(err, changed)
		}
		os.Remove(filepath.Join(agentDir, "pi-session")) // only when empty
	}
	switch {
	case dryRun && changed:
		fmt.Fprintln(inv.stdout, "dry run: nothing was changed")
	case changed:
		fmt.Fprintln(inv.stdout, "done: plain pi no longer loads pi-session's extension (pi-session itself still passes its own with -e)")
	default:
		fmt.Fprintln(inv.stdout, "nothing to undo: setup's settings entry and files are not there")
	}
	return 0
}

// withoutEntries drops from "packages" and "extensions" the entries that
// name setup's directory dir, and says how many there were.
func withoutEntries(agentDir string, ms []member, dir string) ([]member, int) {
	removed := 0
	out := slices.Clone(ms)
	for i, m := range out {
		if m.key != "packages" && m.key != "extensions" {
			continue
		}
		var list []json.RawMessage
		if json.Unmarshal(m.value, &list) != nil {
			continue
		}
		kept := list[:0:0]
		for _, raw := range list {
			if namesDir(agentDir, raw, dir) {
				removed++
				continue
			}
			kept = append(kept, raw)
		}
		if len(kept) != len(list) {
			v, _ := json.Marshal(kept)
			out[i].value = v
		}
	}
	return out, removed
}

// namesDir reports whether a settings entry (a source string or an object
// with a source) names directory dir or a file in it.
func namesDir(agentDir string, raw json.RawMessage, dir string) bool {
	var src string
	if json.Unmarshal(raw, &src) != nil {
		var obj struct{ Source string }
		if json.Unmarshal(raw, &obj) != nil {
			return false
		}
		src = obj.Source
	}
	p := localSource(agentDir, src)
	return p != "" && (p == dir || strings.HasPrefix(p, dir+string(filepath.Separator)))
}

// fileMode is path's permission bits, or def when it cannot be read.
func fileMode(path string, def fs.FileMode) fs.FileMode {
	if fi, err := os.Stat(path); err == nil {
		return fi.Mode().Perm()
	}
	return def
}

// dryVerb is done, or "would " + would in a dry run.
func dryVerb(dry bool, done, would string) string {
	if dry {
		return "would " + would
	}
	return done
}
