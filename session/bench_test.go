package session

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// benchSize is the size of the generated session the benchmarks read.
const benchSize = 200 << 20

// sessionWriter writes a recorded-style session: the entries of the
// recorded fixtures but compactions, over and over, chained into one long
// branch with fresh ids, plus the large tool results real sessions have (a
// 256 KB one every 200 entries, and one of 20 MB on a single line).
type sessionWriter struct {
	w         *bufio.Writer
	templates [][]byte // fixture entries without id and parentId
	n         int      // entries written
	written   int64
}

func newSessionWriter(tb testing.TB, w io.Writer) *sessionWriter {
	tb.Helper()
	sw := &sessionWriter{w: bufio.NewWriterSize(w, 1<<20)}
	for _, name := range recorded {
		f, err := Open(filepath.Join("testdata", name+".jsonl"))
		if err != nil {
			tb.Fatal(err)
		}
		for _, e := range f.Entries {
			// Compactions would cut the projection short; the benchmarks
			// want the worst case, a long session never compacted. A
			// context edit's target is an id of the fixture, which the
			// generated session does not have.
			if e.Type != "compaction" && e.Type != "context_edit" {
				sw.templates = append(sw.templates, withoutMember(withoutMember(e.Raw, "id"), "parentId"))
			}
		}
	}
	return sw
}

func (sw *sessionWriter) header() {
	sw.line([]byte(`{"type":"session","version":3,"id":"01a22bbf-2884-712b-9bda-3227b3d5ef5d","timestamp":"2026-11-30T09:17:57.765Z","cwd":"/tmp/bench"}`))
}

func (sw *sessionWriter) line(b []byte) {
	sw.w.Write(b)
	sw.w.WriteByte('\n')
	sw.written += int64(len(b) + 1)
}

func (sw *sessionWriter) entry(body []byte) {
	id := fmt.Sprintf(`{"id":"%08x","parentId":`, sw.n+1)
	parent := "null,"
	if sw.n > 0 {
		parent = fmt.Sprintf(`"%08x",`, sw.n)
	}
	sw.n++
	sw.w.WriteString(id)
	sw.w.WriteString(parent)
	sw.line(body[1:])
	sw.written += int64(len(id) + len(parent))
}

func bigToolResult(size int) []byte {
	var text strings.Builder
	for i := 1; text.Len() < size; i++ {
		fmt.Fprintf(&text, `line %d of a long tool output, \"quoted\" and tab\tseparated\n`, i)
	}
	return []byte(`{"type":"message","timestamp":"2026-11-30T09:19:00.880Z","message":{"role":"toolResult","toolCallId":"tool:1","toolName":"bash","content":[{"type":"text","text":"` +
		text.String() + `"}],"isError":false,"timestamp":1796030340880}}`)
}

// fill writes entries until at least size bytes have been written.
func (sw *sessionWriter) fill(size int64, huge bool) {
	medium := bigToolResult(256 << 10)
	for i := 0; sw.written < size; i++ {
		switch {
		case huge && i == 1000:
			sw.entry(bigToolResult(20 << 20))
		case i%200 == 199:
			sw.entry(medium)
		default:
			sw.entry(sw.templates[i%len(sw.templates)])
		}
	}
	if err := sw.w.Flush(); err != nil {
		panic(err)
	}
}

// shared is the generated session the read-only benchmarks share, made once
// per test binary run and removed by TestMain.
var shared struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// sharedSession returns the path of a session of about benchSize bytes.
func sharedSession(b *testing.B) string {
	b.Helper()
	shared.once.Do(func() {
		if shared.dir, shared.err = os.MkdirTemp("", "session-bench-"); shared.err == nil {
			shared.path, _ = generate(b, shared.dir)
		}
	})
	if shared.err != nil {
		b.Fatal(shared.err)
	}
	return shared.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// generate writes a session of about benchSize bytes into dir.
func generate(b *testing.B, dir string) (string, *sessionWriter) {
	b.Helper()
	path := filepath.Join(dir, "big.jsonl")
	fd, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer fd.Close()
	sw := newSessionWriter(b, fd)
	sw.header()
	sw.fill(benchSize, true)
	return path, sw
}

// catTime is how long `cat path > /dev/null` takes.
func catTime(b *testing.B, path string) time.Duration {
	b.Helper()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer null.Close()
	cmd := exec.Command("cat", path)
	cmd.Stdout = null
	start := time.Now()
	if err := cmd.Run(); err != nil {
		b.Skipf("cat: %v", err)
	}
	return time.Since(start)
}

// BenchmarkReader streams a 200 MB session through a Reader (entries are
// dropped as they come, so memory stays bounded) and reports the time
// relative to `cat file > /dev/null` on the same file in the same run.
func BenchmarkReader(b *testing.B) {
	path := sharedSession(b)
	info, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	catTime(b, path) // warm the page cache
	b.SetBytes(info.Size())
	b.ReportAllocs()
	b.ResetTimer()
	var read, cat time.Duration
	entries := 0
	for i := 0; i < b.N; i++ {
		start := time.Now()
		fd, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		r := NewReader(fd)
		entries = 0
		for {
			_, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			entries++
		}
		fd.Close()
		read += time.Since(start)
		b.StopTimer()
		cat += catTime(b, path)
		b.StartTimer()
	}
	b.ReportMetric(float64(read)/float64(cat), "x-cat")
	b.ReportMetric(float64(entries), "entries")
}

// BenchmarkOpen reads a 200 MB session into a File (all entries kept).
func BenchmarkOpen(b *testing.B) {
	path := sharedSession(b)
	info, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	catTime(b, path)
	b.SetBytes(info.Size())
	b.ReportAllocs()
	b.ResetTimer()
	var read, cat time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		f, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		read += time.Since(start)
		if len(f.Diagnostics) > 0 {
			b.Fatalf("diagnostics: %v", f.Diagnostics[:1])
		}
		b.StopTimer()
		cat += catTime(b, path)
		b.StartTimer()
	}
	b.ReportMetric(float64(read)/float64(cat), "x-cat")
}

// BenchmarkUpdate measures resuming: pi appends 1 MB to a 200 MB session,
// and File.Update reads just that.
func BenchmarkUpdate(b *testing.B) {
	path, sw := generate(b, b.TempDir())
	f, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	fd, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer fd.Close()
	sw.w.Reset(fd)
	b.SetBytes(1 << 20)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		before := sw.written
		sw.fill(before+1<<20, false)
		b.StartTimer()
		n, err := f.Update()
		if err != nil || n == 0 {
			b.Fatalf("Update = %d, %v", n, err)
		}
	}
	b.StopTimer()
	if f.Offset() != sw.written {
		b.Fatalf("Offset = %d after writing %d", f.Offset(), sw.written)
	}
}

// BenchmarkDescribe is what a session.describe call costs on a 200 MB
// session already read: the branch from the leaf, its projection and pi's
// token estimates. "cold" is the first call; later calls ("warm") reuse the
// estimates kept with the entries.
func BenchmarkDescribe(b *testing.B) {
	path := sharedSession(b)
	f, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	info, _ := os.Stat(path)
	describe := func(b *testing.B) int {
		branch, err := f.Branch("")
		if err != nil {
			b.Fatal(err)
		}
		msgs := Project(branch)
		_ = EstimateTokens(msgs)
		_ = EstimateContextTokens(branch, msgs)
		return len(msgs)
	}
	for _, cold := range []bool{true, false} {
		name := "warm"
		if cold {
			name = "cold"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(info.Size())
			b.ReportAllocs()
			n := 0
			for i := 0; i < b.N; i++ {
				if cold {
					b.StopTimer()
					for _, e := range f.Entries {
						e.tokens = 0
					}
					b.StartTimer()
				}
				n = describe(b)
			}
			b.ReportMetric(float64(n), "messages")
		})
	}
}

// TestSessionWriter keeps the benchmark generator honest on a small scale.
func TestSessionWriter(t *testing.T) {
	var buf bytes.Buffer
	sw := newSessionWriter(t, &buf)
	sw.header()
	sw.fill(2<<20, false)
	if int64(buf.Len()) != sw.written {
		t.Fatalf("written = %d, buffer holds %d", sw.written, buf.Len())
	}
	f, err := Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Diagnostics) > 0 || len(f.Entries) != sw.n {
		t.Fatalf("%d entries (want %d), diagnostics %v", len(f.Entries), sw.n, f.Diagnostics)
	}
	branch, err := f.Branch("")
	if err != nil || len(branch) != sw.n {
		t.Fatalf("Branch: %d entries, %v; want %d", len(branch), err, sw.n)
	}
}

// BenchmarkScanLine is the per-line validation and member scan alone, on
// the lines of the generated session's kinds (fixture entries and a 256 KB
// tool result).
func BenchmarkScanLine(b *testing.B) {
	var buf bytes.Buffer
	sw := newSessionWriter(b, &buf)
	sw.fill(4<<20, false)
	lines := bytes.Split(bytes.TrimSuffix(buf.Bytes(), []byte("\n")), []byte("\n"))
	b.SetBytes(int64(buf.Len()))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, l := range lines {
			if k, _, err := scanLine(l); k != lineObject {
				b.Fatal(err)
			}
		}
	}
}
