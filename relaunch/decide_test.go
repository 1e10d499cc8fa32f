package relaunch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/pi-session/pi-session/jsonpos"
	"github.com/pi-session/pi-session/marker"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func good() Input {
	return Input{
		Observed: Observed{
			MarkerPath: "/m/1-abc.json",
			Marker:     marker.Marker{Cwd: "/w", Handoff: "/w/h.md", LaunchID: "abc"},
		},
		LaunchID: "abc",
		Args:     []string{"--model", "x", "first request"},
		Now:      t0,
		Limit:    5,
	}
}

func TestDecide(t *testing.T) {
	lp := "/w/p.md"
	tests := []struct {
		name   string
		edit   func(*Input)
		reason Reason
		msg    string // substring of the message
	}{
		{"relaunch", func(*Input) {}, -1, "relaunching pi in /w to continue from /w/h.md"},
		{"seed marker without launch id", func(in *Input) { in.Marker.LaunchID = "" }, -1, "relaunching"},
		{"no marker is a plain exit", func(in *Input) { in.MarkerErr = fs.ErrNotExist }, NoMarker, ""},
		{"no marker after a failure", func(in *Input) { in.MarkerErr = fs.ErrNotExist; in.Exit.Code = 3 }, NoMarker, ""},
		{"SIGTERM to pi-session even though pi exited 0", func(in *Input) { in.Interrupted = syscall.SIGTERM }, Interrupted, "pi-session received SIGTERM"},
		{"pi killed", func(in *Input) { in.Exit.Signal = syscall.SIGKILL }, Signaled, "pi died by SIGKILL (status 137), which is not a relaunch authorization"},
		{"pi exit 143", func(in *Input) { in.Exit.Code = 143 }, NonZero, "pi exited with status 143"},
		{"non-zero", func(in *Input) { in.Exit.Code = 7 }, NonZero, "status 7"},
		{"invalid marker", func(in *Input) {
			in.MarkerErr = &marker.Error{Path: "/m/1-abc.json", Pos: jsonpos.Pos{Line: 2, Column: 9}, Field: "cwd", What: "want a string or null, got a number", Kind: marker.ErrField}
		}, Invalid, `not relaunching: invalid marker: /m/1-abc.json:2:9: field "cwd": want a string or null, got a number; marker kept at /m/1-abc.json`},
		{"untrusted marker", func(in *Input) {
			in.MarkerErr = &marker.Error{Path: "/m/1-abc.json", What: "the marker is writable by others (mode 0666), so they could have written it: refused; fix: chmod go-w /m/1-abc.json", Kind: marker.ErrUntrusted}
		}, Untrusted, `not relaunching: untrusted /m/1-abc.json: the marker is writable by others (mode 0666), so they could have written it: refused; fix: chmod go-w /m/1-abc.json; marker kept at /m/1-abc.json`},
		{"foreign marker", func(in *Input) { in.Marker.LaunchID = "zzz" }, Foreign, "written for launch zzz, not this launch abc"},
		{"bad cwd", func(in *Input) { in.CwdErr = errors.New("not a directory") }, BadCwd, `cwd "/w" is not an existing absolute directory: not a directory`},
		{"missing handoff", func(in *Input) { in.HandoffErr = fs.ErrNotExist }, BadHandoff, `handoff "/w/h.md"`},
		{"bad launch prompt", func(in *Input) { in.Marker.LaunchPrompt = &lp; in.LaunchPromptErr = fs.ErrPermission }, BadPrompt, `launch prompt "/w/p.md"`},
		{"rpc mode", func(in *Input) { in.Mode = "rpc" }, RPCMode, "--mode rpc"},
		{"budget spent", func(in *Input) {
			for i := 5; i >= 1; i-- {
				in.History = append(in.History, t0.Add(-time.Duration(i)*10*time.Minute))
			}
		}, Budget, "5 relaunches in the last hour reach the limit of 5"},
		{"budget freed by the rolling window", func(in *Input) {
			in.History = []time.Time{t0.Add(-61 * time.Minute), t0.Add(-40 * time.Minute), t0.Add(-30 * time.Minute), t0.Add(-20 * time.Minute), t0.Add(-10 * time.Minute)}
		}, -1, "relaunching"},
		{"one relaunch against a limit of one", func(in *Input) {
			in.Limit = 1
			in.History = []time.Time{t0.Add(-10 * time.Minute)}
		}, Budget, "1 relaunch in the last hour reaches the limit of 1"},
		{"limit zero turns relaunch off", func(in *Input) { in.Limit = 0 }, Budget, "relaunching is off"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := good()
			tt.edit(&in)
			d := Decide(in)
			if tt.reason == -1 {
				if !d.Relaunch {
					t.Fatalf("Decide = stop %v (%s), want relaunch", d.Reason, d.Message)
				}
			} else if d.Relaunch || d.Reason != tt.reason {
				t.Fatalf("Decide = relaunch %v reason %v (%s), want stop %v", d.Relaunch, d.Reason, d.Message, tt.reason)
			}
			if !strings.Contains(d.Message, tt.msg) {
				t.Errorf("message %q does not contain %q", d.Message, tt.msg)
			}
			if tt.reason > NoMarker && !strings.HasSuffix(d.Message, "marker kept at /m/1-abc.json") {
				t.Errorf("stop message %q does not say the marker is kept", d.Message)
			}
			if tt.reason > NoMarker && d.Message != "not relaunching: "+d.Why+"; marker kept at /m/1-abc.json" {
				t.Errorf("Why = %q is not the reason in the message %q", d.Why, d.Message)
			}
			if tt.reason == NoMarker && d.Message != "" {
				t.Errorf("plain exit message = %q, want none", d.Message)
			}
		})
	}
}

func TestDecideRelaunchArgs(t *testing.T) {
	lp := "/w/h.launch-prompt.md"
	in := good()
	in.Marker.LaunchPrompt = &lp
	in.Args = []string{"--model", "x", "-c", "--", "@/abs/launch.md", "request"}
	d := Decide(in)
	want := Decision{
		Relaunch: true,
		Argv:     []string{"--model", "x", "--", "@/w/h.launch-prompt.md", "continue from /w/h.md"},
		Dir:      "/w",
		Message:  "relaunching pi in /w to continue from /w/h.md",
	}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("Decide mismatch (-want +got):\n%s", diff)
	}
}

// TestBudgetSixthWithinHour simulates a wrapper relaunching as fast as it is
// allowed with an injected clock: five relaunches pass, the sixth within the
// hour stops, and one more passes once the first leaves the window.
func TestBudgetSixthWithinHour(t *testing.T) {
	var history []time.Time
	now := t0
	for i := 1; i <= 6; i++ {
		in := good()
		in.Now, in.History = now, history
		d := Decide(in)
		if i <= 5 && !d.Relaunch {
			t.Fatalf("relaunch %d at +%v stopped: %s", i, now.Sub(t0), d.Message)
		}
		if i == 6 {
			if d.Relaunch || d.Reason != Budget {
				t.Fatalf("relaunch 6 within the hour = %+v, want a Budget stop", d)
			}
			want := fmt.Sprintf("next is allowed at %s", t0.Add(time.Hour).Local().Format("15:04:05"))
			if !strings.Contains(d.Message, want) {
				t.Errorf("message %q does not contain %q", d.Message, want)
			}
		}
		if d.Relaunch {
			history = append(history, now)
		}
		now = now.Add(time.Minute)
	}
	in := good()
	in.Now, in.History = t0.Add(time.Hour), history
	if d := Decide(in); !d.Relaunch {
		t.Errorf("relaunch one hour after the first = %s, want relaunch", d.Message)
	}
}

func TestInspect(t *testing.T) {
	dir := t.TempDir()
	handoff := filepath.Join(dir, "h.md")
	if err := os.WriteFile(handoff, []byte("# handoff\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mpath := marker.Path(dir, 1, "abc")
	write := func(m marker.Marker) {
		t.Helper()
		if err := marker.Write(mpath, m); err != nil {
			t.Fatal(err)
		}
	}
	missing := filepath.Join(dir, "missing.md")

	o := Inspect(mpath, Exit{}, 0, OS{})
	if !errors.Is(o.MarkerErr, fs.ErrNotExist) {
		t.Errorf("Inspect without a marker: MarkerErr = %v, want ErrNotExist", o.MarkerErr)
	}

	write(marker.Marker{Cwd: dir, Handoff: handoff, LaunchPrompt: &missing})
	o = Inspect(mpath, Exit{}, 0, OS{})
	if o.MarkerErr != nil || o.CwdErr != nil || o.HandoffErr != nil {
		t.Errorf("Inspect(valid) = %+v, want no errors but the launch prompt's", o)
	}
	if !errors.Is(o.LaunchPromptErr, fs.ErrNotExist) {
		t.Errorf("LaunchPromptErr = %v, want ErrNotExist", o.LaunchPromptErr)
	}

	write(marker.Marker{Cwd: "relative", Handoff: dir})
	o = Inspect(mpath, Exit{}, 0, OS{})
	if o.CwdErr == nil || !strings.Contains(o.CwdErr.Error(), "not an absolute path") {
		t.Errorf("CwdErr = %v, want 'not an absolute path'", o.CwdErr)
	}
	if o.HandoffErr == nil || !strings.Contains(o.HandoffErr.Error(), "a directory, not a regular file") {
		t.Errorf("HandoffErr = %v, want a directory error", o.HandoffErr)
	}

	write(marker.Marker{Cwd: handoff, Handoff: handoff})
	o = Inspect(mpath, Exit{}, 0, OS{})
	if o.CwdErr == nil || !strings.Contains(o.CwdErr.Error(), "not a directory") {
		t.Errorf("CwdErr = %v, want 'not a directory'", o.CwdErr)
	}

	if os.Geteuid() != 0 { // root reads anything
		if err := os.Chmod(handoff, 0); err != nil {
			t.Fatal(err)
		}
		write(marker.Marker{Cwd: dir, Handoff: handoff})
		o = Inspect(mpath, Exit{}, 0, OS{})
		if !errors.Is(o.HandoffErr, fs.ErrPermission) {
			t.Errorf("HandoffErr for an unreadable file = %v, want ErrPermission", o.HandoffErr)
		}
	}
}
