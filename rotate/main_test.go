package rotate

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The test binary doubles as the writer process of the multi-process tests:
// with ROTATE_CHILD set, TestMain runs one writer and exits.
//
//	ROTATE_CHILD=append  append ROTATE_LINES lines through a Log
//	ROTATE_CHILD=plain   append them with plain O_APPEND writes (the baseline)
//	ROTATE_CHILD=pause   like append, but stop inside the first rotation at
//	                     stage ROTATE_PAUSE_AT, print "paused <lines appended>",
//	                     and wait for a line on stdin before going on
//	ROTATE_CHILD=full, fsize, big, small: see fragmentChild
func TestMain(m *testing.M) {
	if mode := os.Getenv("ROTATE_CHILD"); mode != "" {
		if err := child(mode); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type childConfig struct {
	path      string
	writer    int
	lines     int
	size      int
	policy    Policy
	pauseAt   string
	startLine int
}

func (c childConfig) env(mode string) []string {
	return append(os.Environ(),
		"ROTATE_CHILD="+mode,
		"ROTATE_PATH="+c.path,
		"ROTATE_WRITER="+strconv.Itoa(c.writer),
		"ROTATE_LINES="+strconv.Itoa(c.lines),
		"ROTATE_SIZE="+strconv.Itoa(c.size),
		"ROTATE_MAX="+strconv.FormatInt(c.policy.MaxBytes, 10),
		"ROTATE_KEEP="+strconv.Itoa(c.policy.Keep),
		"ROTATE_PAUSE_AT="+c.pauseAt,
	)
}

func child(mode string) error {
	atoi := func(k string) int { n, _ := strconv.Atoi(os.Getenv(k)); return n }
	if fragmentModes[mode] {
		return fragmentChild(mode)
	}
	path := os.Getenv("ROTATE_PATH")
	w, lines, size := atoi("ROTATE_WRITER"), atoi("ROTATE_LINES"), atoi("ROTATE_SIZE")
	p := Policy{MaxBytes: int64(atoi("ROTATE_MAX")), Keep: atoi("ROTATE_KEEP")}
	if mode == "plain" {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		buf := make([]byte, 0, size)
		for n := 0; n < lines; n++ {
			if _, err := f.Write(testLine(buf, w, n, size)); err != nil {
				return err
			}
		}
		return nil
	}
	l, err := New(path, p)
	if err != nil {
		return err
	}
	defer l.Close()
	l.OnRotateError = func(err error) { fmt.Fprintln(os.Stderr, "rotate error:", err) }
	appended := 0
	if mode == "pause" {
		stage, paused := os.Getenv("ROTATE_PAUSE_AT"), false
		in := bufio.NewReader(os.Stdin)
		testHook = func(s string) {
			if s != stage || paused {
				return
			}
			paused = true
			fmt.Printf("paused %d\n", appended)
			in.ReadString('\n')
		}
	}
	buf := make([]byte, 0, size)
	for n := 0; n < lines; n++ {
		if err := l.Append(testLine(buf, w, n, size)); err != nil {
			return err
		}
		appended++
	}
	return nil
}

// testLine formats line n of writer w as exactly size bytes, newline included.
func testLine(buf []byte, w, n, size int) []byte {
	buf = fmt.Appendf(buf[:0], `{"w":%d,"n":%d,"pad":"`, w, n)
	for len(buf) < size-3 {
		buf = append(buf, 'x')
	}
	return append(buf, '"', '}', '\n')
}

type lineKey struct{ w, n int }

// readBack reads every line of the live file and the archives of the log at
// path, and counts each (writer, line) it finds. A line that is not a
// complete test line is an error.
func readBack(t testing.TB, path string, size int) (map[lineKey]int, int) {
	t.Helper()
	dir, live := filepath.Split(path)
	base := strings.TrimSuffix(live, ".jsonl")
	names, err := readNames(dir)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[lineKey]int{}
	files := 0
	for _, name := range names {
		if _, ok := ParseArchive(base, name); !ok && name != live {
			continue
		}
		files++
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if len(data) > 0 && data[len(data)-1] != '\n' {
			t.Errorf("%s ends without a newline", name)
		}
		for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
			if line == "" && len(data) == 0 {
				break
			}
			var v struct {
				W, N int
				Pad  string
			}
			if err := json.Unmarshal([]byte(line), &v); err != nil || len(line)+1 != size {
				t.Errorf("%s line %d is torn or foreign (%d bytes, %v): %.80q", name, i+1, len(line)+1, err, line)
				continue
			}
			seen[lineKey{v.W, v.N}]++
		}
	}
	return seen, files
}

// checkExactlyOnce reports lines missing or duplicated among writers×lines.
func checkExactlyOnce(t testing.TB, seen map[lineKey]int, writers, lines int) {
	t.Helper()
	bad := 0
	for w := 0; w < writers; w++ {
		for n := 0; n < lines; n++ {
			if c := seen[lineKey{w, n}]; c != 1 && bad < 10 {
				t.Errorf("writer %d line %d found %d times, want 1", w, n, c)
				bad++
			}
		}
	}
	if len(seen) != writers*lines {
		t.Errorf("read back %d distinct lines, want %d", len(seen), writers*lines)
	}
}
