package marker

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestWhyPath(t *testing.T) {
	p := Path("/m", 42, "0123abcd")
	if got, want := WhyPath(p), "/m/42-0123abcd.json.why"; got != want {
		t.Errorf("WhyPath(%q) = %q, want %q", p, got, want)
	}
	if _, _, ok := ParseName(filepath.Base(WhyPath(p))); ok {
		t.Errorf("ParseName(%q) takes a reason file for a marker", filepath.Base(WhyPath(p)))
	}
}

func TestParseWhy(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		in   string
		want Why
		err  string
	}{
		{`{"marker":"/m/1-ab.json","reason":"nonzero","message":"pi exited with status 3","at":"2026-01-02T03:04:05Z","pid":7,"startTicks":99,"bootId":"b"}`,
			Why{Marker: "/m/1-ab.json", Reason: "nonzero", Message: "pi exited with status 3", At: at, PID: 7, StartTicks: 99, BootID: "b"}, ""},
		{`{"future":"field","pid":7}`, Why{PID: 7}, ""},
		{`{"pid":"7"}`, Why{}, `marker: why: field "pid": want int, got string`},
		{`{"pid":-1}`, Why{}, `marker: why: field "pid": -1 is not a pid`},
		{`{"at":"yesterday"}`, Why{}, `marker: why: not a JSON object`},
		{`{} {}`, Why{}, "marker: why: data after the object"},
		{``, Why{}, "marker: why: not a JSON object: EOF"},
		{`{"message":"` + strings.Repeat("x", MaxWhySize) + `"}`, Why{}, "marker: why: larger than 65536 bytes"},
	}
	for _, tt := range tests {
		got, err := ParseWhy([]byte(tt.in))
		if tt.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tt.err) {
				t.Errorf("ParseWhy(%.60q) error = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseWhy(%.60q) error = %v", tt.in, err)
			continue
		}
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("ParseWhy(%.60q) (-want +got):\n%s", tt.in, d)
		}
	}
}

func TestListRetained(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	a, b, c := Path(dir, 5, "aa"), Path(dir, 6, "bb"), Path(dir, 7, "cc")
	write(filepath.Base(a), `{}`)
	if err := WriteWhy(Why{Marker: a, Reason: "nonzero", Message: "pi exited with status 3", PID: 9}); err != nil {
		t.Fatal(err)
	}
	write(filepath.Base(b), `{}`)                    // no reason file
	write(filepath.Base(b)+".why", `{"pid":"x"}`)    // unreadable reason: not ours to judge
	write("8-dd.json.why", `{}`)                     // a reason file without its marker
	write("notes.txt", "not a marker")               // ignored
	write(filepath.Base(c)+".tmp", "an atomic temp") // ignored
	list, orphans, err := ListRetained(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Path != a || list[1].Path != b {
		t.Fatalf("ListRetained = %+v, want markers %s and %s", list, a, b)
	}
	if list[0].Why == nil || list[0].Why.Message != "pi exited with status 3" || list[0].PID != 5 {
		t.Errorf("marker a = %+v, want its reason and pid 5", list[0])
	}
	if list[1].Why != nil || list[1].WhyErr == nil || !strings.Contains(list[1].WhyErr.Error(), `field "pid"`) {
		t.Errorf("marker b = %+v, want an unreadable reason naming the field", list[1])
	}
	if d := cmp.Diff([]string{filepath.Join(dir, "8-dd.json.why")}, orphans); d != "" {
		t.Errorf("orphans (-want +got):\n%s", d)
	}
	if err := RemoveRetained(a); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{a, WhyPath(a)} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still there after RemoveRetained: %v", p, err)
		}
	}
	if list, _, err := ListRetained(filepath.Join(dir, "none")); err != nil || list != nil {
		t.Errorf("ListRetained(missing dir) = %v, %v; want nothing", list, err)
	}
}

func TestRetainedFate(t *testing.T) {
	now := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
	week := 7 * 24 * time.Hour
	old, recent := now.Add(-week-time.Second), now.Add(-week)
	tests := []struct {
		name  string
		r     Retained
		owner Owner
		want  Fate
	}{
		{"old, gone", Retained{ModTime: old}, OwnerGone, RemoveOld},
		{"old by its reason, gone", Retained{ModTime: now, Why: &Why{At: old}}, OwnerGone, RemoveOld},
		{"exactly 7 days", Retained{ModTime: recent}, OwnerGone, KeepRecent},
		{"recent by its reason", Retained{ModTime: old, Why: &Why{At: now}}, OwnerGone, KeepRecent},
		{"old, still running", Retained{ModTime: old}, OwnerRunning, KeepRunning},
		{"old, unknown", Retained{ModTime: old}, OwnerUnknown, KeepUnknown},
		{"unreadable reason", Retained{ModTime: old, WhyErr: errors.New("x")}, OwnerGone, KeepNotOwned},
	}
	for _, tt := range tests {
		if got := RetainedFate(tt.r, tt.owner, now, week); got != tt.want {
			t.Errorf("RetainedFate(%s) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func FuzzParseWhy(f *testing.F) {
	f.Add([]byte(`{"marker":"/m/1-ab.json","reason":"nonzero","message":"m","at":"2026-01-02T03:04:05Z","pid":7}`))
	f.Add([]byte(`{"pid":-1}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		w, err := ParseWhy(data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "marker: why: ") {
				t.Errorf("ParseWhy error %q lacks the package prefix", err)
			}
			return
		}
		if w.PID < 0 {
			t.Errorf("ParseWhy accepted pid %d", w.PID)
		}
	})
}
