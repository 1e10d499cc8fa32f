// Package extension holds pi-session's bundled pi extension (TypeScript, a pi package) and writes it where pi can load it.
package extension

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/pi-session/pi-session/atomicfile"
)

//go:embed package.json pi-session/*.ts skills
var files embed.FS

// Files returns the package's files by slash-separated path relative to
// its root (package.json, pi-session/index.ts, ...), tests left out.
func Files() map[string][]byte {
	out := map[string][]byte{}
	fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, ".test.ts") {
			return err
		}
		b, err := files.ReadFile(p)
		if err == nil {
			out[p] = b
		}
		return err
	})
	return out
}

// Hash identifies the bundled files' content: the first 12 hex digits of
// a SHA-256 over their names and bytes.
func Hash() string { return hash() }

var hash = sync.OnceValue(func() string {
	fm := Files()
	names := make([]string, 0, len(fm))
	for n := range fm {
		names = append(names, n)
	}
	slices.Sort(names)
	h := sha256.New()
	for _, n := range names {
		fmt.Fprintf(h, "%s\x00%d\x00", n, len(fm[n]))
		h.Write(fm[n])
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
})

// stamp marks a directory WriteOnce completed.
const stamp = ".complete"

// WriteOnce is Write for a directory whose name carries Hash, so that its
// content never changes: the first call writes the files and then a
// stamp; later calls only look for the stamp.
func WriteOnce(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, stamp)); err == nil {
		return nil
	}
	if _, err := Write(dir); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, stamp), []byte(Hash()+"\n"), 0o644); err != nil {
		return fmt.Errorf("extension: %w", err)
	}
	return nil
}

// Stale lists the bundled files that are missing from dir or differ there.
func Stale(dir string) []string {
	var out []string
	for n, b := range Files() {
		have, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(n)))
		if err != nil || !bytes.Equal(have, b) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// Write makes dir hold the bundled package: it writes each file that is
// missing or differs (atomically, mode 0644 in 0755 directories) and
// leaves the others and any extra files alone. It returns the files it
// wrote.
func Write(dir string) ([]string, error) {
	stale := Stale(dir)
	fm := Files()
	for _, n := range stale {
		p := filepath.Join(dir, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, fmt.Errorf("extension: %w", err)
		}
		if err := atomicfile.WriteFile(p, fm[n], 0o644); err != nil {
			return nil, fmt.Errorf("extension: write %s: %w", p, err)
		}
	}
	return stale, nil
}

// Name is the package's name in package.json.
const Name = "pi-session"

// IsPackage reports whether dir holds a pi-session extension package (any
// version): a package.json whose name is Name.
func IsPackage(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return false
	}
	var pkg struct{ Name string }
	return json.Unmarshal(b, &pkg) == nil && pkg.Name == Name
}
