package rotate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Appends cut short: a full disk (a real full tmpfs, and a file size limit)
// and writers killed in the middle of large lines. Each loops and counts;
// what must hold every time is that a failed or interrupted append costs at
// most its own line: every line whose Append returned nil is read back
// exactly once, and the remains are reported by ReadLines as fragments.

var fragmentModes = map[string]bool{"full": true, "fsize": true, "big": true, "small": true}

// outcome is what a writer process says it did: the lines whose Append
// returned nil, and for the others how many bytes the failed write left.
type outcome struct {
	Writer  int        `json:"writer"`
	OK      []int      `json:"ok"`
	Failed  [][2]int64 `json:"failed"` // line, bytes written
	Partial int        `json:"partial"`
}

// fragmentChild runs one writer process:
//
//	full   append ROTATE_LINES lines of 100 B to 8 KiB (the parent fills and
//	       frees the disk meanwhile), then print its outcome
//	fsize  the same, under a file size limit it moves below and above the
//	       file's size as it goes (RLIMIT_FSIZE: the kernel cuts the write)
//	big    append 64 KiB and 1 MiB lines for ever, writing one byte to fd 3
//	       just before each write(2) ('w' and 'W'), until killed
//	small  append 200-byte lines until the file ROTATE_STOP exists, then
//	       print its outcome
func fragmentChild(mode string) error {
	atoi := func(k string) int { n, _ := strconv.Atoi(os.Getenv(k)); return n }
	w, lines := atoi("ROTATE_WRITER"), atoi("ROTATE_LINES")
	l, err := New(os.Getenv("ROTATE_PATH"), Policy{MaxBytes: 1 << 40, Keep: 1})
	if err != nil {
		return err
	}
	defer l.Close()
	rng := rand.New(rand.NewPCG(uint64(w), uint64(os.Getpid())))
	out := outcome{Writer: w, OK: []int{}, Failed: [][2]int64{}}
	record := func(n int, err error) {
		if err == nil {
			out.OK = append(out.OK, n)
			return
		}
		var wrote int64
		if _, e := fmt.Sscanf(err.Error()[strings.Index(err.Error(), "wrote "):], "wrote %d", &wrote); e != nil {
			wrote = -1
		}
		if wrote > 0 {
			out.Partial++
		}
		out.Failed = append(out.Failed, [2]int64{int64(n), wrote})
	}
	switch mode {
	case "full", "fsize":
		if mode == "fsize" {
			signal.Ignore(syscall.SIGXFSZ) // a write past the limit fails with EFBIG instead
		}
		var buf []byte
		for n := 0; n < lines; n++ {
			if mode == "fsize" && n%7 == 0 {
				limit := uint64(unix.RLIM_INFINITY)
				if n%14 == 0 { // every other time: cut below the next few lines
					fi, _ := os.Stat(os.Getenv("ROTATE_PATH"))
					var size int64
					if fi != nil {
						size = fi.Size()
					}
					limit = uint64(size) + uint64(rng.IntN(16<<10))
				}
				if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: limit, Max: unix.RLIM_INFINITY}); err != nil {
					return err
				}
			}
			buf = testLine(buf, w, n, 100+rng.IntN(8<<10))
			record(n, l.Append(buf))
		}
	case "big":
		report := os.NewFile(3, "report")
		var buf []byte
		for n := 0; ; n++ {
			size, mark := 64<<10, byte('w')
			if n%2 == 1 {
				size, mark = 1<<20, 'W'
			}
			testHook = func(s string) {
				if s == "writing" {
					report.Write([]byte{mark})
				}
			}
			buf = testLine(buf, w, n, size)
			if err := l.Append(buf); err != nil {
				return err
			}
		}
	case "small":
		var buf []byte
		stop := os.Getenv("ROTATE_STOP")
		for n := 0; ; n++ {
			if n%50 == 0 {
				if _, err := os.Stat(stop); err == nil {
					break
				}
			}
			buf = testLine(buf, w, n, 200)
			record(n, l.Append(buf))
		}
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}

// startWriter starts one writer process of the given mode.
func startWriter(t *testing.T, mode, path string, w, lines int, extra ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{
		"ROTATE_CHILD=" + mode, "ROTATE_PATH=" + path,
		"ROTATE_WRITER=" + strconv.Itoa(w), "ROTATE_LINES=" + strconv.Itoa(lines),
	}, extra...)...)
	stdout, stderr := new(bytes.Buffer), new(bytes.Buffer)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	return cmd, stdout, stderr
}

// finish waits for a writer and returns its outcome.
func finish(t *testing.T, cmd *exec.Cmd, stdout, stderr *bytes.Buffer) outcome {
	t.Helper()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("writer: %v\n%s", err, stderr)
	}
	var o outcome
	if err := json.Unmarshal(stdout.Bytes(), &o); err != nil {
		t.Fatalf("writer outcome %q: %v\n%s", stdout, err, stderr)
	}
	return o
}

// readLog reads a log file through ReadLines, counting each test line and
// each fragment. A valid line that is not a whole test line is an error.
func readLog(t *testing.T, path string) (map[lineKey]int, []Fragment) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := map[lineKey]int{}
	var frags []Fragment
	err = ReadLines(f, filepath.Base(path), 2<<20, func(line []byte) error {
		var v struct{ W, N int }
		var pad struct{ Pad string }
		if json.Unmarshal(line, &v) != nil || json.Unmarshal(line, &pad) != nil || len(line)+1 < 100 {
			t.Errorf("a valid line that is not a test line: %.100q", line)
		}
		seen[lineKey{v.W, v.N}]++
		return nil
	}, func(fr Fragment) { frags = append(frags, fr) })
	if err != nil {
		t.Fatal(err)
	}
	return seen, frags
}

// checkOutcomes: every line a writer saw succeed is there exactly once, and
// no line it saw fail is there at all.
func checkOutcomes(t *testing.T, seen map[lineKey]int, outs []outcome) (ok, failed, partial int) {
	t.Helper()
	bad := 0
	for _, o := range outs {
		for _, n := range o.OK {
			if c := seen[lineKey{o.Writer, n}]; c != 1 && bad < 10 {
				t.Errorf("writer %d line %d (appended) found %d times, want 1", o.Writer, n, c)
				bad++
			}
		}
		for _, f := range o.Failed {
			if c := seen[lineKey{o.Writer, int(f[0])}]; c != 0 && bad < 10 {
				t.Errorf("writer %d line %d (failed after %d bytes) found %d times, want 0", o.Writer, f[0], f[1], c)
				bad++
			}
		}
		ok, failed, partial = ok+len(o.OK), failed+len(o.Failed), partial+o.Partial
	}
	return ok, failed, partial
}

// mountTmpfs mounts a tmpfs of size bytes on a fresh directory.
func mountTmpfs(t *testing.T, size int) (string, error) {
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		return "", err
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir, nil
}

// TestFullTmpfs: three writer processes append to one log on a real 4 MiB
// tmpfs while the test fills the disk up to a few KiB and frees it again,
// over and over. Appends fail, many of them after writing part of their
// line; none may cost another writer's line.
func TestFullTmpfs(t *testing.T) {
	dir, err := mountTmpfs(t, 4<<20)
	if err != nil {
		t.Skipf("cannot mount a tmpfs here (%v); TestFileSizeLimit cuts writes with RLIMIT_FSIZE instead", err)
	}
	path := filepath.Join(dir, "events.jsonl")
	filler := filepath.Join(dir, "filler")
	const writers, lines = 3, 600
	type proc struct {
		cmd            *exec.Cmd
		stdout, stderr *bytes.Buffer
	}
	var procs []proc
	for w := 0; w < writers; w++ {
		cmd, o, e := startWriter(t, "full", path, w, lines)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, proc{cmd, o, e})
	}
	done := make(chan struct{})
	go func() {
		for _, p := range procs {
			p.cmd.Wait()
		}
		close(done)
	}()
	fills := 0
	rng := rand.New(rand.NewPCG(1, 2))
	for running := true; running; {
		select {
		case <-done:
			running = false
			continue
		default:
		}
		// Fill the disk but for a few KiB, let the writers run into it,
		// then free it.
		var st unix.Statfs_t
		if err := unix.Statfs(dir, &st); err != nil {
			t.Fatal(err)
		}
		free := int64(st.Bavail)*st.Bsize - int64(rng.IntN(12<<10))
		if f, err := os.OpenFile(filler, os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
			if free > 0 {
				unix.Fallocate(int(f.Fd()), 0, 0, free)
			}
			f.Close()
			fills++
		}
		time.Sleep(time.Duration(1+rng.IntN(3)) * time.Millisecond)
		os.Remove(filler)
		time.Sleep(time.Duration(rng.IntN(2)) * time.Millisecond)
	}
	var outs []outcome
	for _, p := range procs {
		var o outcome
		if err := json.Unmarshal(p.stdout.Bytes(), &o); err != nil {
			t.Fatalf("writer outcome %q: %v\n%s", p.stdout, err, p.stderr)
		}
		outs = append(outs, o)
	}
	seen, frags := readLog(t, path)
	ok, failed, partial := checkOutcomes(t, seen, outs)
	t.Logf("full tmpfs: %d fills; %d appends ok, %d failed (%d after writing part of the line); %d fragments reported", fills, ok, failed, partial, len(frags))
	if partial == 0 {
		t.Errorf("no append was cut short: the disk never filled in the middle of a line, the test proved nothing")
	}
}

// TestFileSizeLimit: the same with the kernel's file size limit
// (RLIMIT_FSIZE), which each writer moves below the file's size now and
// then, so that its write is cut where the limit falls: a real short write
// by the filesystem, without root.
func TestFileSizeLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	const writers, lines = 3, 400
	var outs []outcome
	var cmds []*exec.Cmd
	var bufs [][2]*bytes.Buffer
	for w := 0; w < writers; w++ {
		cmd, o, e := startWriter(t, "fsize", path, w, lines)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, bufs = append(cmds, cmd), append(bufs, [2]*bytes.Buffer{o, e})
	}
	for i, cmd := range cmds {
		outs = append(outs, finish(t, cmd, bufs[i][0], bufs[i][1]))
	}
	seen, frags := readLog(t, path)
	ok, failed, partial := checkOutcomes(t, seen, outs)
	t.Logf("file size limit: %d appends ok, %d failed (%d after writing part of the line); %d fragments reported", ok, failed, partial, len(frags))
	if partial == 0 {
		t.Errorf("no append was cut short by the limit, the test proved nothing")
	}
}

// TestKilledMidLine: a writer appending 64 KiB and 1 MiB lines is killed
// (SIGKILL) at a random point shortly after it starts a write(2), again
// and again, while two writers append small lines beside it. Every small
// line must be read back exactly once; the killed writer's lines are whole
// or reported as fragments.
func TestKilledMidLine(t *testing.T) {
	kills := 40
	if *large {
		kills = 400
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "events.jsonl")
	stop := filepath.Join(dir, "stop")
	var smalls []*exec.Cmd
	var bufs [][2]*bytes.Buffer
	for w := 0; w < 2; w++ {
		cmd, o, e := startWriter(t, "small", path, w, 0, "ROTATE_STOP="+stop)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		smalls, bufs = append(smalls, cmd), append(bufs, [2]*bytes.Buffer{o, e})
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for k := 0; k < kills; k++ {
		cmd, _, stderr := startWriter(t, "big", path, 100+k, 0)
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.ExtraFiles = []*os.File{w}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		w.Close()
		// Let it finish a few lines first, then kill it soon after it
		// starts writing a 64 KiB or a 1 MiB line.
		br := bufio.NewReader(r)
		want := byte('w')
		if k%2 == 1 {
			want = 'W'
		}
		for seen := 0; seen < 2; {
			b, err := br.ReadByte()
			if err != nil {
				t.Fatalf("big writer ended: %v\n%s", err, stderr)
			}
			if b == want {
				seen++
			}
		}
		time.Sleep(time.Duration(rng.IntN(100)) * time.Microsecond)
		cmd.Process.Signal(syscall.SIGKILL)
		if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
			t.Fatalf("big writer %d: %v, want killed\n%s", k, err, stderr)
		}
		r.Close()
	}
	if err := os.WriteFile(stop, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var outs []outcome
	for i, cmd := range smalls {
		outs = append(outs, finish(t, cmd, bufs[i][0], bufs[i][1]))
	}
	seen, frags := readLog(t, path)
	ok, failed, _ := checkOutcomes(t, seen, outs)
	if failed > 0 {
		t.Errorf("%d small appends failed, want none", failed)
	}
	whole := 0
	for key, c := range seen {
		if key.w >= 100 {
			whole++
			if c != 1 {
				t.Errorf("big line %v found %d times, want at most 1", key, c)
			}
		}
	}
	t.Logf("killed mid-line: %d kills; %d small lines ok; %d big lines whole; %d fragments reported", kills, ok, whole, len(frags))
	if len(frags) == 0 {
		t.Errorf("no kill landed inside a write, the test proved nothing")
	}
	if ok == 0 {
		t.Errorf("the small writers appended nothing")
	}
}
