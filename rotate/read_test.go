package rotate

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pi-session/pi-session/golden"
)

// readAll runs ReadLines over data and writes what it passed on and what it
// skipped, one per line, the way the golden files show it.
func readAll(t testing.TB, name string, data []byte, maxLine int) string {
	t.Helper()
	var b strings.Builder
	err := ReadLines(bytes.NewReader(data), name, maxLine,
		func(line []byte) error { fmt.Fprintf(&b, "line  %q\n", line); return nil },
		func(f Fragment) { fmt.Fprintf(&b, "skip  %s\n", f) })
	if err != nil {
		fmt.Fprintf(&b, "error %v\n", err)
	}
	return b.String()
}

func TestReadLinesGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "read", "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".jsonl")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", "read", name+".golden"), readAll(t, filepath.Base(file), data, 100))
		})
	}
}

func TestReadLinesStopsOnCallbackError(t *testing.T) {
	stop := fmt.Errorf("enough")
	n := 0
	err := ReadLines(strings.NewReader("{}\n{}\n{}\n"), "x", 0, func([]byte) error { n++; return stop }, nil)
	if err != stop || n != 1 {
		t.Errorf("ReadLines = %v after %d lines, want the callback's error after 1", err, n)
	}
}

// A line appended after a fragment left by an append cut short lands glued
// to it; the writer notices and writes the line again on a line of its own.
func TestAppendAfterFragment(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	if err := os.WriteFile(path, []byte("{\"w\":9,\"n\":0}\n{\"w\":9,\"n\":1,\"pad\":\"xx"), 0o600); err != nil {
		t.Fatal(err)
	}
	l := newLog(t, path, Policy{MaxBytes: 1 << 20, Keep: 5})
	appendLines(t, l, 0, 0, 2, 100)
	data, _ := os.ReadFile(path)
	got := readAll(t, "events.jsonl", data, 0)
	line := func(n int) string {
		return `{\"w\":0,\"n\":` + strconv.Itoa(n) + `,\"pad\":\"` + strings.Repeat("x", 77) + `\"}`
	}
	want := `line  "{\"w\":9,\"n\":0}"
skip  events.jsonl:2: skipped 121 bytes at offset 14: not a JSON line (the remains of an append cut short, or text another program wrote)
line  "` + line(0) + `"
line  "` + line(1) + `"
`
	if got != want {
		t.Errorf("after a fragment, read back:\n%s\nwant:\n%s", got, want)
	}
}

// Another writer's append cut short between this writer's look at the end
// of the file and its write glues this line to the fragment; the writer
// notices and writes the line again, so only the fragment is lost.
func TestLineGluedToAFragmentIsWrittenAgain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	l := newLog(t, path, Policy{MaxBytes: 1 << 20, Keep: 5})
	appendLines(t, l, 0, 0, 1, 100)
	cuts := 0
	testHook = func(s string) {
		if s != "writing" || cuts == 2 {
			return
		}
		cuts++
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Error(err)
			return
		}
		f.WriteString(`{"w":1,"n":0,"pad":"cut sh`)
		f.Close()
	}
	defer func() { testHook = nil }()
	appendLines(t, l, 0, 1, 3, 100)
	testHook = nil
	data, _ := os.ReadFile(path)
	seen := map[lineKey]int{}
	var frags []Fragment
	ReadLines(bytes.NewReader(data), "events.jsonl", 0, func(line []byte) error {
		var w, n int
		fmt.Sscanf(string(line), `{"w":%d,"n":%d`, &w, &n)
		seen[lineKey{w, n}]++
		return nil
	}, func(f Fragment) { frags = append(frags, f) })
	checkExactlyOnce(t, seen, 1, 3)
	if len(frags) != 2 {
		t.Errorf("fragments = %v, want the two glued lines", frags)
	}
}

// FuzzReadLines: whatever a log holds, ReadLines passes on only valid JSON
// lines, reports every other non-blank line with a line number within the
// file, and accounts for every byte.
func FuzzReadLines(f *testing.F) {
	for _, s := range []string{"", "{}\n", "{\"a\":1}\n{\"b", "x\n\n{}\r\n", "{\"a\":\"\\n\"}{}\n", "\xef\xbb\xbf{}\n", strings.Repeat("{", 300) + "\n{}"} {
		f.Add([]byte(s), 64)
	}
	f.Fuzz(func(t *testing.T, data []byte, maxLine int) {
		maxLine = maxLine%512 + 1
		if maxLine < 1 {
			maxLine += 512
		}
		lines := bytes.Count(data, []byte{'\n'}) + 1
		var total int64
		err := ReadLines(bytes.NewReader(data), "f", maxLine, func(line []byte) error {
			if len(line) > maxLine {
				t.Fatalf("passed on a %d-byte line over the %d limit", len(line), maxLine)
			}
			total += int64(len(line))
			return nil
		}, func(fr Fragment) {
			if fr.Line < 1 || fr.Line > lines || fr.Offset < 0 || fr.Offset+fr.Size > int64(len(data)) {
				t.Fatalf("fragment %+v outside the %d-byte, %d-line input", fr, len(data), lines)
			}
			if s := fr.String(); !strings.Contains(s, fmt.Sprintf("f:%d:", fr.Line)) || !utf8.ValidString(s) || len(s) > 300 {
				t.Fatalf("fragment message %q lacks its line or is unbounded", s)
			}
			total += fr.Size
		})
		if err != nil {
			t.Fatal(err)
		}
		if total > int64(len(data)) {
			t.Fatalf("accounted %d bytes of %d", total, len(data))
		}
	})
}
