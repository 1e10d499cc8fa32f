package marker

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
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
		{name: "missing cwd", in: `{"handoff":"/h"}`, wantErr: `"cwd": missing`},
		{name: "empty handoff", in: `{"cwd":"/w","handoff":""}`, wantErr: `"handoff": missing`},
		{name: "cwd is a number", in: `{"cwd":7,"handoff":"/h"}`, wantErr: `"cwd": want a string or null, got a number`},
		{name: "launchPrompt is an object", in: `{"cwd":"/w","handoff":"/h","launchPrompt":{}}`, wantErr: `"launchPrompt": want a string or null, got an object`},
		{name: "launchId is a boolean", in: `{"cwd":"/w","handoff":"/h","launchId":true}`, wantErr: `"launchId": want a string or null, got a boolean`},
		{name: "NUL in a path", in: `{"cwd":"/w\u0000x","handoff":"/h"}`, wantErr: `"cwd": contains a NUL byte`},
		{name: "array", in: `["cwd"]`, wantErr: "not a JSON object"},
		{name: "null", in: `null`, wantErr: "not a JSON object"},
		{name: "truncated", in: `{"cwd":"/w","hand`, wantErr: "not a JSON object"},
		{name: "two objects", in: `{"cwd":"/w","handoff":"/h"}{}`, wantErr: "data after the object"},
		{name: "empty file", in: ``, wantErr: "not a JSON object"},
		{name: "too large", in: `{"cwd":"/w","handoff":"/h","pad":"` + strings.Repeat("x", MaxSize) + `"}`, wantErr: "larger than 64 KiB"},
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
		EnvMarker:     "/m/77-abc123.json",
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
	if want := (Assignment{Path: "/m/77-abc123.json", LaunchID: "abc123", WrapperPID: 100}); a != want {
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
		{"relative marker", with(EnvMarker, "77-abc123.json"), 100, "not an absolute path"},
		{"marker for another launch", with(EnvLaunchID, "ffff"), 100, "does not name launch"},
		{"marker name without nonce", with(EnvMarker, "/m/marker.json"), 100, "does not name launch"},
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
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(data)
		if err != nil {
			if m != (Marker{}) {
				t.Fatalf("Parse returned a non-zero marker with error %v", err)
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
