package rotate

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

var large = flag.Bool("large", false, "run the multi-process test at full size (8 writers x 200k lines)")

// startWriters runs one writer process per config and waits for all.
func runWriters(t testing.TB, mode string, cfgs []childConfig) {
	t.Helper()
	cmds := make([]*exec.Cmd, len(cfgs))
	outs := make([]*bytes.Buffer, len(cfgs))
	for i, c := range cfgs {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = c.env(mode)
		outs[i] = new(bytes.Buffer)
		cmd.Stdout, cmd.Stderr = outs[i], outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("writer %d: %v\n%s", i, err, outs[i])
		} else if s := outs[i].String(); strings.Contains(s, "rotate error") {
			t.Errorf("writer %d reported: %s", i, s)
		}
	}
}

func TestManyProcessesLoseNothing(t *testing.T) {
	writers, lines, size := 8, 10_000, 200
	p := Policy{MaxBytes: 32 << 10, Keep: 1 << 20} // ~490 rotations, none pruned
	if *large {
		lines, p.MaxBytes = 200_000, 1<<20
	}
	path := filepath.Join(t.TempDir(), "state", "events.jsonl")
	cfgs := make([]childConfig, writers)
	for w := range cfgs {
		cfgs[w] = childConfig{path: path, writer: w, lines: lines, size: size, policy: p}
	}
	runWriters(t, "append", cfgs)
	seen, files := readBack(t, path, size)
	checkExactlyOnce(t, seen, writers, lines)
	// Contended rotations are skipped, so files run past the cap; still,
	// far fewer files than this means rotation hardly happened.
	if min := int64(writers*lines*size) / p.MaxBytes / 8; int64(files) < min {
		t.Errorf("read %d files, want at least %d: too few rotations to test anything", files, min)
	}
	t.Logf("%d writers x %d lines over %d files", writers, lines, files)
}

// pausedWriter starts a writer that stops inside its first rotation at
// stage, holding the rotation lock, and returns once it has said so.
type pausedWriter struct {
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	out      *bytes.Buffer
	appended int // lines committed before the pause
}

func startPaused(t *testing.T, c childConfig) *pausedWriter {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = c.env("pause")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	pw := &pausedWriter{cmd: cmd, stdin: stdin, out: new(bytes.Buffer)}
	cmd.Stderr = pw.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if _, err2 := fmt.Sscanf(line, "paused %d", &pw.appended); err != nil || err2 != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("writer did not pause: %q, %v, %v\n%s", line, err, err2, pw.out)
	}
	return pw
}

func TestKilledDuringRotationLosesNothing(t *testing.T) {
	for _, stage := range []string{"locked", "planned", "renamed"} {
		t.Run(stage, func(t *testing.T) {
			size := 100
			p := Policy{MaxBytes: 2000, Keep: 1000}
			path := filepath.Join(t.TempDir(), "events.jsonl")
			pw := startPaused(t, childConfig{path: path, writer: 0, lines: 1000, size: size, policy: p, pauseAt: stage})
			if pw.appended < 20 {
				t.Fatalf("writer paused after %d lines, want at least 20 (one full file)", pw.appended)
			}
			if err := pw.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			pw.cmd.Wait()

			// The next writer takes the lock (the kernel released the dead
			// holder's flock) and rotates on its first append.
			l, err := New(path, p)
			if err != nil {
				t.Fatal(err)
			}
			var rotateErr error
			l.OnRotateError = func(err error) { rotateErr = err }
			before := archives(t, path)
			const more = 50
			buf := make([]byte, 0, size)
			for n := 0; n < more; n++ {
				if err := l.Append(testLine(buf, 1, n, size)); err != nil {
					t.Fatal(err)
				}
				if n == 0 && len(archives(t, path)) == len(before) && stage != "renamed" {
					t.Errorf("first append after the kill did not rotate (archives %v)", before)
				}
			}
			l.Close()
			if rotateErr != nil {
				t.Errorf("rotation after the kill failed: %v", rotateErr)
			}
			seen, _ := readBack(t, path, size)
			for n := 0; n < pw.appended; n++ {
				if c := seen[lineKey{0, n}]; c != 1 {
					t.Errorf("committed line %d of the killed writer found %d times, want 1", n, c)
				}
			}
			if c := seen[lineKey{0, pw.appended}]; c != 0 {
				t.Errorf("the line being appended when the writer was killed was found %d times, want 0", c)
			}
			checkExactlyOnce(t, filterWriter(seen, 1), 1, more)
		})
	}
}

func filterWriter(seen map[lineKey]int, w int) map[lineKey]int {
	out := map[lineKey]int{}
	for k, c := range seen {
		if k.w == w {
			out[lineKey{0, k.n}] = c
		}
	}
	return out
}

func archives(t *testing.T, path string) []string {
	t.Helper()
	names, err := readNames(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if _, ok := ParseArchive("events", n); ok {
			out = append(out, n)
		}
	}
	return out
}

// A holder that stalls inside a rotation blocks rotation (not appends) until
// its lock is older than StaleLock; then another writer re-checks it, breaks
// it and rotates. When the stalled holder wakes, it sees the live file is
// not the one it planned for and leaves it alone.
func TestStalledHolderLockBrokenWhenStale(t *testing.T) {
	size := 100
	p := Policy{MaxBytes: 2000, Keep: 1000, StaleLock: 10 * time.Second}
	path := filepath.Join(t.TempDir(), "events.jsonl")
	pw := startPaused(t, childConfig{path: path, writer: 0, lines: 200, size: size, policy: p, pauseAt: "planned"})

	l, err := New(path, p)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var rotateErr error
	l.OnRotateError = func(err error) { rotateErr = err }
	buf := make([]byte, 0, size)
	n := 0
	appendOne := func() {
		t.Helper()
		if err := l.Append(testLine(buf, 1, n, size)); err != nil {
			t.Fatal(err)
		}
		n++
	}

	// A young lock: the append goes to the full live file, which passes the cap.
	appendOne()
	appendOne()
	if got := len(archives(t, path)); got != 0 {
		t.Errorf("%d archives while the lock is held, want 0", got)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() <= p.MaxBytes {
		t.Errorf("live file = %v, %v; want it past the %d-byte cap while rotation is locked", fi.Size(), err, p.MaxBytes)
	}

	// Age the lock past StaleLock: the next append breaks it and rotates.
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(path+".lock", old, old); err != nil {
		t.Fatal(err)
	}
	appendOne()
	if got := len(archives(t, path)); got != 1 {
		t.Errorf("%d archives after the lock went stale, want 1", got)
	}
	if rotateErr != nil {
		t.Errorf("rotation failed: %v", rotateErr)
	}

	// Wake the stalled holder; it finishes its own appends.
	fmt.Fprintln(pw.stdin, "go")
	if err := pw.cmd.Wait(); err != nil {
		t.Fatalf("stalled writer: %v\n%s", err, pw.out)
	}
	for range 30 {
		appendOne()
	}
	seen, _ := readBack(t, path, size)
	checkExactlyOnce(t, filterWriter(seen, 0), 1, 200)
	checkExactlyOnce(t, filterWriter(seen, 1), 1, n)
}
