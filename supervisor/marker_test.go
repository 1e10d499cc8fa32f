package supervisor

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/pi-session/pi-session/marker"
)

// TestMarkerNamedAfterWrapperPID: on both paths, the pi a Supervisor
// launches sees basename(PI_RELAUNCH_MARKER) ==
// $PI_SESSION_WRAPPER_PID-$PI_SESSION_LAUNCH_ID.json with
// PI_SESSION_WRAPPER_PID its parent, so an extension written for the
// seed's wrapper (marker.AssignmentFromEnv) accepts the assignment; and
// Started reports the same wrapper pid, which names the marker the
// supervisor reads.
func TestMarkerNamedAfterWrapperPID(t *testing.T) {
	for _, path := range []string{"pty", "plain"} {
		t.Run(path, func(t *testing.T) {
			dir := t.TempDir()
			id, err := marker.NewLaunchID()
			if err != nil {
				t.Fatal(err)
			}
			l := fakeLaunch(t, "assignment",
				marker.EnvWrapper+"=1",
				marker.EnvWrapperPID+"="+strconv.Itoa(os.Getpid()),
				marker.EnvLaunchID+"="+id,
				marker.EnvMarker+"="+marker.Path(dir, os.Getpid(), id))
			var wrapperPID int
			l.Started = func(_, w int) { wrapperPID = w }
			var out string
			var res Result
			if path == "pty" {
				u := newUserTerm(t)
				s := New(Options{Stdin: u.tty, Stdout: u.tty, Stderr: u.tty, Leader: leader(t)})
				res, err = s.Run(context.Background(), l)
				s.Close()
				u.waitFor(t, "assignment ")
				out = u.output()
			} else {
				stdin, _ := os.Open(os.DevNull)
				defer stdin.Close()
				outFile := filepath.Join(t.TempDir(), "out")
				w, _ := os.Create(outFile)
				s := New(Options{Stdin: stdin, Stdout: w, Stderr: w})
				res, err = s.Run(context.Background(), l)
				s.Close()
				w.Close()
				b, _ := os.ReadFile(outFile)
				out = string(b)
			}
			if err != nil || res.Status() != 0 {
				t.Fatalf("Run = %+v, %v; the child said:\n%s", res, err, out)
			}
			m := regexp.MustCompile(`ppid=(\d+) wrapper=(\d+) base=(\S+)`).FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("the child said:\n%s", out)
			}
			want := m[2] + "-" + id + ".json"
			if m[1] != m[2] || m[3] != want {
				t.Errorf("child: ppid %s, PI_SESSION_WRAPPER_PID %s, marker %s; want the parent's pid in both and the marker %s", m[1], m[2], m[3], want)
			}
			if strconv.Itoa(wrapperPID) != m[2] {
				t.Errorf("Started reported wrapper pid %d, the child sees %s", wrapperPID, m[2])
			}
			if path == "plain" && wrapperPID != os.Getpid() || path == "pty" && wrapperPID == os.Getpid() {
				t.Errorf("%s: wrapper pid %d (supervisor %d); want the supervisor without a PTY, its session leader with one", path, wrapperPID, os.Getpid())
			}
			if want := "assignment ok " + marker.Path(dir, wrapperPID, id); !regexp.MustCompile(regexp.QuoteMeta(want)).MatchString(out) {
				t.Errorf("the child's own check did not accept the assignment; it said:\n%s", out)
			}
		})
	}
}
