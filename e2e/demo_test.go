package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pi-session/pi-session/pitest"
)

// runDemo runs make demo's script in print mode (not at a terminal) with
// TMPDIR in a directory of the test's own, and returns its output.
func runDemo(t *testing.T, tmp string, env ...string) string {
	t.Helper()
	root := pitest.Root(t)
	cmd := exec.Command("bash", filepath.Join(root, "demo", "run.sh"))
	cmd.Dir = root
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + tmp, "TMPDIR=" + tmp, "DEMO_PI_SESSION=" + pitest.Binary(t)}, env...)
	pitest.ToolsBin(t) // the demo needs the pinned pi: fail, not skip, without it
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo/run.sh: %v\n%s", err, out)
	}
	return string(out)
}

// TestDemoLeavesNothing: the demo plays its story, prints the build log's
// size it measured, and leaves nothing in TMPDIR (pi's bash output files
// included); with KEEP=1 it keeps its directory and says where.
func TestDemoLeavesNothing(t *testing.T) {
	tmp := t.TempDir()
	out := runDemo(t, tmp)
	for _, want := range []string{"build log for pi's bash: 1,212,902 bytes", "I read back only what matters with ctx_read", "handoff written: "} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	// The text fits 80 columns, wrapped at spaces and never inside a word:
	// a longer line is one word (a path) after its indentation, and the long
	// report's preview ends with a whole line.
	for i, line := range strings.Split(out, "\n") {
		if utf8.RuneCountInString(line) > 80 && strings.Contains(strings.TrimSpace(line), " ") {
			t.Errorf("demo output line %d is over 80 columns: %q", i+1, line)
		}
	}
	if !regexp.MustCompile(`checked ok\n  … \(\d+ characters in all\)\n`).MatchString(out) {
		t.Errorf("the long report's preview does not end with a whole line:\n%s", out)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("the demo left %v in TMPDIR", names)
	}

	keep := t.TempDir()
	out = runDemo(t, keep, "KEEP=1")
	m := regexp.MustCompile(`demo: the files of this run are kept in (\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("KEEP=1: no line saying where the files are:\n%s", out)
	}
	if filepath.Dir(m[1]) != keep {
		t.Errorf("KEEP=1 kept %s, want a directory in TMPDIR %s", m[1], keep)
	}
	logs, _ := filepath.Glob(filepath.Join(m[1], "tmp", "pi-bash-*.log"))
	if len(logs) == 0 {
		t.Errorf("pi's bash output file is not in the demo's own TMPDIR %s", filepath.Join(m[1], "tmp"))
	}
}
