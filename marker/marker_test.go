package marker

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pi-session/pi-session/golden"
)

func ptr(s string) *string { return &s }

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Marker
		wantErr string
	}{
		{
			name: "seed format without launchId",
			in:   `{"cwd":"/w","launchPrompt":null,"handoff":"/w/h.md","sessionFile":null}`,
			want: Marker{Cwd: "/w", Handoff: "/w/h.md"},
		},
		{
			name: "all fields and unknown extras",
			in:   `{"cwd":"/w","launchPrompt":"/w/p.md","handoff":"/w/h.md","sessionFile":"/s.jsonl","launchId":"ab12","future":[1,2]}`,
			want: Marker{Cwd: "/w", LaunchPrompt: ptr("/w/p.md"), Handoff: "/w/h.md", SessionFile: ptr("/s.jsonl"), LaunchID: "ab12"},
		},
		{
			name: "nullable fields may be absent",
			in:   `{"cwd":"/w","handoff":"/w/h.md"}`,
			want: Marker{Cwd: "/w", Handoff: "/w/h.md"},
		},
		{name: "missing cwd", in: `{"handoff":"/h"}`, wantErr: `line 1, column 1: field "cwd": missing, want a non-empty string`},
		{name: "empty handoff", in: `{"cwd":"/w","handoff":""}`, wantErr: `line 1, column 23: field "handoff": empty, want a non-empty string`},
		{name: "cwd is a number", in: `{"cwd":7,"handoff":"/h"}`, wantErr: `line 1, column 8: field "cwd": want a string or null, got a number`},
		{name: "launchPrompt is an object", in: `{"cwd":"/w","handoff":"/h","launchPrompt":{}}`, wantErr: `field "launchPrompt": want a string or null, got an object`},
		{name: "launchId is a boolean", in: `{"cwd":"/w","handoff":"/h","launchId":true}`, wantErr: `field "launchId": want a string or null, got a boolean`},
		{name: "NUL in a path", in: `{"cwd":"/w\u0000x","handoff":"/h"}`, wantErr: `field "cwd": contains a NUL byte`},
		{name: "array", in: `["cwd"]`, wantErr: "line 1, column 1: want a JSON object, got an array"},
		{name: "null", in: `null`, wantErr: "want a JSON object, got null"},
		{name: "truncated", in: `{"cwd":"/w","hand`, wantErr: "line 1, column 18: unexpected end of file"},
		{name: "two objects", in: `{"cwd":"/w","handoff":"/h"}{}`, wantErr: "line 1, column 28: invalid JSON: invalid character '{' after top-level value"},
		{name: "empty file", in: ``, wantErr: "empty file"},
		{name: "too large", in: `{"cwd":"/w","handoff":"/h","pad":"` + strings.Repeat("x", MaxSize) + `"}`, wantErr: "more than the 64 KiB a marker may hold"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse(%.60q) error = %v, want one containing %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("Parse(%q) mismatch (-want +got):\n%s", tt.in, d)
			}
		})
	}
}

func TestWriteReadRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := Path(dir, 4242, "0123abcd")
	want := Marker{Cwd: dir, LaunchPrompt: ptr("/p.md"), Handoff: "/h.md", LaunchID: "0123abcd"}
	if err := Write(path, want); err != nil {
		t.Fatalf("Write: %v", err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("marker mode = %v, want 0600", fi.Mode().Perm())
	}
	got, err := Read(path)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Read after Write mismatch (-want +got):\n%s", d)
	}
}

func TestReadRefusals(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	if err := os.WriteFile(good, []byte(`{"cwd":"/w","handoff":"/h"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, make([]byte, MaxSize+10), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		is   error
	}{
		{filepath.Join(dir, "missing.json"), fs.ErrNotExist},
		{link, ErrNotRegular},
		{dir, ErrNotRegular},
		{fifo, ErrNotRegular},
		{big, ErrTooLarge},
	}
	for _, tt := range tests {
		if _, err := Read(tt.path); !errors.Is(err, tt.is) {
			t.Errorf("Read(%s) error = %v, want errors.Is %v", filepath.Base(tt.path), err, tt.is)
		}
	}
}

func TestParseName(t *testing.T) {
	tests := []struct {
		name string
		pid  int
		id   string
		ok   bool
	}{
		{"123-abcdef.json", 123, "abcdef", true},
		{"123-ABC.json", 0, "", false},
		{"0123-ab.json", 0, "", false},
		{"-ab.json", 0, "", false},
		{"123-.json", 0, "", false},
		{"123-ab.json.tmp", 0, "", false},
		{"x-ab.json", 0, "", false},
		{".123-ab.json.tmp-99", 0, "", false},
	}
	for _, tt := range tests {
		pid, id, ok := ParseName(tt.name)
		if pid != tt.pid || id != tt.id || ok != tt.ok {
			t.Errorf("ParseName(%q) = %d, %q, %v; want %d, %q, %v", tt.name, pid, id, ok, tt.pid, tt.id, tt.ok)
		}
	}
}

func TestAssignmentFromEnv(t *testing.T) {
	base := map[string]string{
		EnvWrapper:    "1",
		EnvWrapperPID: "100",
		EnvLaunchID:   "abc123",
		EnvMarker:     "/m/100-abc123.json",
	}
	with := func(k, v string) func(string) string {
		m := map[string]string{}
		for a, b := range base {
			m[a] = b
		}
		if v == "<unset>" {
			delete(m, k)
		} else if k != "" {
			m[k] = v
		}
		return func(s string) string { return m[s] }
	}
	a, err := AssignmentFromEnv(with("", ""), 100)
	if err != nil {
		t.Fatalf("AssignmentFromEnv(own child): %v", err)
	}
	if want := (Assignment{Path: "/m/100-abc123.json", LaunchID: "abc123", WrapperPID: 100}); a != want {
		t.Errorf("AssignmentFromEnv = %+v, want %+v", a, want)
	}
	refusals := []struct {
		name   string
		getenv func(string) string
		ppid   int
		want   string
	}{
		{"descendant (different parent)", with("", ""), 101, "parent pid 101"},
		{"no wrapper", with(EnvWrapper, "<unset>"), 100, "PI_SESSION_WRAPPER is not 1"},
		{"bad pid", with(EnvWrapperPID, "x"), 100, "is not a pid"},
		{"relative marker", with(EnvMarker, "100-abc123.json"), 100, "not an absolute path"},
		{"marker for another launch", with(EnvLaunchID, "ffff"), 100, `is not <dir>/100-ffff.json`},
		{"marker name without nonce", with(EnvMarker, "/m/marker.json"), 100, "is not <dir>/100-abc123.json"},
		{"marker named after another pid", with(EnvMarker, "/m/77-abc123.json"), 100, `PI_RELAUNCH_MARKER="/m/77-abc123.json" is not <dir>/100-abc123.json (PI_SESSION_WRAPPER_PID-PI_SESSION_LAUNCH_ID)`},
	}
	for _, tt := range refusals {
		_, err := AssignmentFromEnv(tt.getenv, tt.ppid)
		if !errors.Is(err, ErrNotOwner) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error = %v, want ErrNotOwner containing %q", tt.name, err, tt.want)
		}
	}
}

func TestWriteAssignedStampsLaunchID(t *testing.T) {
	dir := t.TempDir()
	a := Assignment{Path: Path(dir, 9, "beef"), LaunchID: "beef", WrapperPID: 9}
	if err := WriteAssigned(a, Marker{Cwd: dir, Handoff: "/h", LaunchID: "forged"}); err != nil {
		t.Fatal(err)
	}
	m, err := Read(a.Path)
	if err != nil {
		t.Fatal(err)
	}
	if m.LaunchID != "beef" {
		t.Errorf("launchId = %q, want the assignment's %q", m.LaunchID, "beef")
	}
}

func TestNewLaunchIDIsFreshHex(t *testing.T) {
	a, err := NewLaunchID()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewLaunchID()
	if a == b || len(a) != 32 || !isHex(a) {
		t.Errorf("NewLaunchID() = %q, %q; want two different 32-digit hex ids", a, b)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"cwd":"/w","launchPrompt":null,"handoff":"/w/h.md","sessionFile":null,"launchId":"ab"}`))
	f.Add([]byte(`{"cwd":"/w","handoff":"/h","launchPrompt":"/p"}`))
	f.Add([]byte(`{"cwd":1}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(""))
	f.Add([]byte("{\"cwd\": \"/w\",\n \"handoff\": null}"))
	f.Add([]byte("\xef\xbb\xbf{}"))
	f.Add([]byte(`{"cwd":"/w","handoff":"/h"} x`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(data)
		if err != nil {
			if m != (Marker{}) {
				t.Fatalf("Parse returned a non-zero marker with error %v", err)
			}
			var me *Error
			if !errors.As(err, &me) {
				t.Fatalf("Parse error %v is not a *marker.Error", err)
			}
			lines := bytes.Count(data, []byte{'\n'}) + 1
			if !errors.Is(err, ErrTooLarge) && (me.Pos.Line < 1 || me.Pos.Line > lines || me.Pos.Column < 1) {
				t.Fatalf("Parse(%q) error %q has no place in the input (%v)", data, err, me.Pos)
			}
			if msg := err.Error(); len(msg) > 300 || (!errors.Is(err, ErrTooLarge) && !strings.Contains(msg, fmt.Sprintf("line %d, column %d", me.Pos.Line, me.Pos.Column))) {
				t.Fatalf("Parse(%q) error %q is unbounded or lacks its line", data, msg)
			}
			return
		}
		if m.Cwd == "" || m.Handoff == "" {
			t.Fatalf("Parse accepted a marker without cwd or handoff: %+v", m)
		}
		b, err := Marshal(m)
		if err != nil {
			t.Fatalf("Marshal(%+v): %v", m, err)
		}
		m2, err := Parse(b)
		if err != nil {
			t.Fatalf("Parse(Marshal(m)) failed: %v\n%s", err, b)
		}
		if d := cmp.Diff(m, m2); d != "" {
			t.Fatalf("round trip mismatch (-first +second):\n%s", d)
		}
	})
}

// TestReadGolden: every marker fixture in testdata/read, read from a
// private directory, with the message pi-session prints for it.
func TestReadGolden(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "read", "*.json"))
	if len(files) == 0 {
		t.Fatal("no fixtures")
	}
	dir := t.TempDir()
	var b strings.Builder
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, filepath.Base(file))
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		m, err := Read(path)
		line := fmt.Sprintf("ok, cwd %q, handoff %q", m.Cwd, m.Handoff)
		if err != nil {
			line = strings.ReplaceAll(err.Error(), dir+"/", "")
		}
		fmt.Fprintf(&b, "%-26s %s\n", filepath.Base(file), line)
	}
	golden.Check(t, filepath.Join("testdata", "read.golden"), b.String())
}

// TestUntrustedMarkers: a marker or a marker directory anyone but this
// user could have written is refused with the reason, and left in place.
func TestUntrustedMarkers(t *testing.T) {
	other := os.Geteuid() + 4242
	content := []byte(`{"cwd":"/w","handoff":"/w/h.md"}`)
	cases := []struct {
		name  string
		setup func(t *testing.T, dir, path string)
		want  string
	}{
		{"marker writable by all", func(t *testing.T, dir, path string) { chmod(t, path, 0o666) },
			"the marker is writable by others (mode 0666), so they could have written it: refused; fix: chmod go-w "},
		{"marker writable by its group", func(t *testing.T, dir, path string) { chmod(t, path, 0o620) },
			"the marker is writable by its group (mode 0620)"},
		{"directory writable by all", func(t *testing.T, dir, path string) { chmod(t, dir, 0o777) },
			"the marker directory is writable by others (mode 0777)"},
		{"sticky directory writable by all", func(t *testing.T, dir, path string) { chmod(t, dir, 0o777|os.ModeSticky) },
			"the marker directory is writable by others (mode 0777)"},
		{"directory writable by its group", func(t *testing.T, dir, path string) { chmod(t, dir, 0o770) },
			"the marker directory is writable by its group (mode 0770)"},
		{"marker of another user", func(t *testing.T, dir, path string) { chown(t, path, other) },
			fmt.Sprintf("the marker is owned by uid %d, not by you (uid %d): refused", other, os.Geteuid())},
		{"directory of another user", func(t *testing.T, dir, path string) { chown(t, dir, other) },
			fmt.Sprintf("the marker directory is owned by uid %d, not by you (uid %d)", other, os.Geteuid())},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "relaunch")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			path := Path(dir, 4242, "ab12")
			if err := os.WriteFile(path, content, 0o600); err != nil {
				t.Fatal(err)
			}
			tc.setup(t, dir, path)
			_, err := Read(path)
			if !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Read = %v, want ErrUntrusted saying %q", err, tc.want)
			}
			if got, _ := os.ReadFile(path); string(got) != string(content) {
				t.Errorf("the refused marker was changed or removed: %q", got)
			}
			if strings.Contains(tc.name, "directory") {
				if err := Write(Path(dir, 4242, "cd34"), Marker{Cwd: "/w", Handoff: "/h"}); !errors.Is(err, ErrUntrusted) {
					t.Errorf("Write into the untrusted directory = %v, want ErrUntrusted", err)
				}
			}
		})
	}
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// chown gives path to another user; only root can, so the test needs
// root for these two cases and says so otherwise.
func chown(t *testing.T, path string, uid int) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("giving a file to another user needs root")
	}
	if err := os.Chown(path, uid, uid); err != nil {
		t.Fatal(err)
	}
}
