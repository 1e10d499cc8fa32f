package session

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/pi-session/pi-session/golden"
)

// TestDiagnosticFixtures reads every file of testdata/diagnostics the two
// ways engines do, incrementally (Open, which leaves an incomplete last
// line for later) and whole (Parse), and compares what is reported with a
// golden file: every diagnostic names the file, the line and the field.
func TestDiagnosticFixtures(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "diagnostics", "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	var b strings.Builder
	for _, path := range files {
		fmt.Fprintf(&b, "== %s\n", filepath.Base(path))
		f, err := Open(path)
		fmt.Fprintf(&b, "Open:%s", describeRead(t, path, f, err))
		fd, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		pf, err := Parse(fd)
		fd.Close()
		fmt.Fprintf(&b, "Parse:%s", describeRead(t, path, pf, err))
	}
	golden.Check(t, filepath.Join("testdata", "diagnostics.golden"), b.String())
}

// describeRead renders a read for the golden file and checks what every
// diagnostic must hold: the file's name, a line, bounded text.
func describeRead(t *testing.T, path string, f *File, err error) string {
	t.Helper()
	var b strings.Builder
	if err != nil {
		var d Diagnostic
		if !errors.As(err, &d) || d.File != path || d.Line < 1 {
			t.Errorf("%s: the error %v is no Diagnostic naming the file and a line", path, err)
		}
		fmt.Fprintf(&b, " error [%s] %v\n", d.Field, err)
		return b.String()
	}
	fmt.Fprintf(&b, " %d entries", len(f.Entries))
	if f.Omitted > 0 {
		fmt.Fprintf(&b, ", %d diagnostics omitted", f.Omitted)
	}
	b.WriteString("\n")
	all := f.AllDiagnostics()
	for i, d := range all {
		if d.File != path || d.Line < 1 || !strings.HasPrefix(d.Error(), "session: "+path+":") {
			t.Errorf("%s: diagnostic %q does not name the file and a line", path, d)
		}
		if len(d.Error()) > 2000 {
			t.Errorf("%s: diagnostic of %d bytes", path, len(d.Error()))
		}
		if i >= 12 {
			fmt.Fprintf(&b, "  ... %d more\n", len(all)-i)
			break
		}
		fmt.Fprintf(&b, "  [%s] %v\n", d.Field, d)
	}
	if len(all) > MaxDiagnostics+1 {
		t.Errorf("%s: %d diagnostics kept, want at most %d", path, len(all), MaxDiagnostics+1)
	}
	return b.String()
}

// TestIncompleteLineFollowed: the incomplete last line is reported while
// it lasts, and the report goes once pi finishes the line.
func TestIncompleteLineFollowed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	appendTo(t, path, hdr+"\n"+ent("a", "")+"\n"+`{"type":"custom","id":"b","par`)
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	all := f.AllDiagnostics()
	if len(all) != 1 || !errors.Is(all[0], ErrIncomplete) || all[0].Line != 3 || all[0].File != path {
		t.Fatalf("AllDiagnostics = %v, want the incomplete line 3 of %s", all, path)
	}
	if len(f.Diagnostics) != 0 {
		t.Errorf("Diagnostics = %v: an incomplete line is not a lasting problem", f.Diagnostics)
	}
	appendTo(t, path, `entId":"a"}`+"\n")
	if n := mustUpdate(t, f); n != 1 {
		t.Fatalf("Update read %d entries, want 1", n)
	}
	if all := f.AllDiagnostics(); len(all) != 0 {
		t.Errorf("after the line was finished: AllDiagnostics = %v, want none", all)
	}
}

// TestDeepLineBounded reads the 100,000-deep fixture and builds its
// branch, projection and estimates: the line is reported once, and reading
// allocates a bounded multiple of the file's size.
func TestDeepLineBounded(t *testing.T) {
	path := filepath.Join("testdata", "diagnostics", "deep-100000.jsonl")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	branch, err := f.Branch("")
	if err != nil {
		t.Fatal(err)
	}
	msgs := Project(branch)
	LLMMessages(msgs)
	EstimateTokens(msgs)
	EstimateContextTokens(branch, msgs)
	for _, e := range f.Entries {
		e.Decode()
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > uint64(64*fi.Size())+8<<20 {
		t.Errorf("reading a %d-byte file allocated %d bytes", fi.Size(), grew)
	}
	var deep []Diagnostic
	for _, d := range f.Diagnostics {
		if errors.Is(d, ErrTooDeep) {
			deep = append(deep, d)
		}
	}
	if len(deep) != 2 || deep[0].Field != "message.content" || deep[1].Field != "data" {
		t.Errorf("deep diagnostics = %v, want message.content on line 2 and data on line 4", deep)
	}
}
