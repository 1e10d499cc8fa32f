package recap

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pi-session/pi-session/pitest"
	"github.com/pi-session/pi-session/session"
)

// BenchmarkPrepare50MB: run selection, serialization and redaction of a
// run of 50 MB (one user request, 200 tool calls whose results are 256 KB
// of build output with escapes, secrets among them), against reading the
// session file once with session/ in the same run. It reports
// x-read = (read + prepare) / read, which is what `pi-session engine
// recap` does, prepare-x-read = prepare alone / read (the engine host
// keeps the file read), and the growth of the peak resident set of each.
// Nothing is asserted.
func BenchmarkPrepare50MB(b *testing.B) {
	path := filepath.Join(b.TempDir(), "run.jsonl")
	writeBenchRun(b, path, 50<<20)
	info, _ := os.Stat(path)
	read := func() *session.File {
		f, err := session.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		return f
	}
	read() // warm the page cache
	b.SetBytes(info.Size())
	b.ResetTimer()
	var tRead, tPrep time.Duration
	var p *Prepared
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		f := read()
		t1 := time.Now()
		var err error
		if p, err = Prepare(f, Run{Last: true}); err != nil {
			b.Fatal(err)
		}
		tPrep += time.Since(t1)
		b.StopTimer()
		t2 := time.Now()
		read()
		tRead += time.Since(t2)
		_ = t0
		b.StartTimer()
	}
	b.StopTimer()
	var f *session.File
	readPeak := pitest.PeakMiB(func() { f = read() })
	prepPeak := pitest.PeakMiB(func() { _, _ = Prepare(read(), Run{Last: true}) })
	_ = f
	b.ReportMetric(float64(tRead.Milliseconds())/float64(b.N), "read-ms")
	b.ReportMetric(float64(tPrep.Milliseconds())/float64(b.N), "prepare-ms")
	b.ReportMetric(float64(tRead+tPrep)/float64(tRead), "x-read")
	b.ReportMetric(float64(tPrep)/float64(tRead), "prepare-x-read")
	b.ReportMetric(readPeak, "read-peak-MiB")
	b.ReportMetric(prepPeak, "read+prepare-peak-MiB")
	b.ReportMetric(float64(p.Redactions), "redactions")
	b.ReportMetric(float64(len(p.UserMessage)), "request-bytes")
}

// writeBenchRun writes a session of about size bytes: one run of tool
// calls with large results.
func writeBenchRun(b *testing.B, path string, size int64) {
	fd, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer fd.Close()
	w := bufio.NewWriterSize(fd, 1<<20)
	var out strings.Builder
	for i := 1; out.Len() < 256<<10; i++ {
		switch {
		case i == 3 || i%500 == 0:
			fmt.Fprintf(&out, `export GITHUB_TOKEN=ghp_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL%02d\n`, i%100)
		case i%97 == 0:
			fmt.Fprintf(&out, `{\"level\":\"error\",\"msg\":\"request failed\",\"status\":503,\"attempt\":%d}\n`, i)
		default:
			fmt.Fprintf(&out, `step %05d: compiling module_%d with \"-O2 -Wall\"\t... ok\n`, i, i%300)
		}
	}
	result := out.String()
	n := 0
	var written int64
	line := func(body string) {
		n++
		parent := "null"
		if n > 1 {
			parent = `"` + fmt.Sprintf("%08x", n-1) + `"`
		}
		s := fmt.Sprintf(`{"type":"message","id":"%08x","parentId":%s,"timestamp":"2026-12-01T10:00:00.000Z","message":%s}`+"\n", n, parent, body)
		w.WriteString(s)
		written += int64(len(s))
	}
	w.WriteString(`{"type":"session","version":3,"id":"bench","timestamp":"2026-12-01T10:00:00.000Z","cwd":"/w"}` + "\n")
	line(`{"role":"user","content":[{"type":"text","text":"Build every module and fix what fails."}],"timestamp":1}`)
	for i := 0; written < size; i++ {
		line(`{"role":"assistant","content":[{"type":"text","text":"Building step ` + strconv.Itoa(i) + `."},{"type":"toolCall","id":"c` + strconv.Itoa(i) + `","name":"bash","arguments":{"command":"make -C module_` + strconv.Itoa(i) + ` all 2>&1"}}],"stopReason":"toolUse","timestamp":2}`)
		line(`{"role":"toolResult","toolCallId":"c` + strconv.Itoa(i) + `","toolName":"bash","content":[{"type":"text","text":"` + result + `"}],"isError":false,"timestamp":3}`)
	}
	line(`{"role":"assistant","content":[{"type":"text","text":"Every module builds."}],"stopReason":"stop","timestamp":4}`)
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRedactAdversarial runs the redactor on 48 KB inputs built to
// make naive scanners quadratic (runs of token prefixes, assignments,
// unclosed quotes, tags, key headers, escapes, table headers, YAML block
// indicators, box borders, pipes, names about secrets with values to
// weigh); each should take about as long as ordinary text.
func BenchmarkRedactAdversarial(b *testing.B) {
	cases := map[string]string{
		"ordinary":        strings.Repeat("line 42 of a long tool output, \"quoted\" and tab\tseparated\n", 800),
		"token prefixes":  strings.Repeat("sk-", 16000),
		"assignments":     strings.Repeat("token=", 8000),
		"unclosed quotes": strings.Repeat(`password:"`, 4800),
		"tags":            strings.Repeat(`<password>`, 4800),
		"key headers":     strings.Repeat("-----BEGIN RSA PRIVATE KEY-----", 1500),
		"urls":            strings.Repeat("a://", 12000),
		"flags":           strings.Repeat("--password ", 4300),
		"wrapped tokens":  strings.Repeat("ghp_\n", 9600),
		"percent escapes": strings.Repeat("%41%", 12000),
		"hex text":        strings.Repeat("746f6b656e3d", 8000),
		"x escapes":       strings.Repeat(`\x41`, 12000),
		"table headers":   strings.Repeat("name,password\n", 3400),
		"named values":    strings.Repeat("name: TOKEN value: ", 2500),
		"yaml blocks":     strings.Repeat("token: |\n", 4800),
		"boxes":           strings.Repeat("ghp_abc │\n│ ", 4000),
		"echo pipes":      strings.Repeat("echo x | ", 5300),
		"names about":     strings.Repeat("private_key_id=3f1e7c2a9b4d4e8fa1c6 token_count=12 ", 960),
	}
	for name, s := range cases {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			for i := 0; i < b.N; i++ {
				Redact(s)
			}
		})
	}
}
