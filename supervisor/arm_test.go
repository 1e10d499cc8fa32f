package supervisor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pi-session/pi-session/hooks"
	"github.com/pi-session/pi-session/marker"
)

func TestArmRelaunch(t *testing.T) {
	dir, err := os.MkdirTemp("", "arm")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	handoff := filepath.Join(dir, "handoff.md")
	os.WriteFile(handoff, []byte("# Handoff\n"), 0o600)
	id, _ := marker.NewLaunchID()
	a := marker.Assignment{Path: marker.Path(dir, 1, id), LaunchID: id}

	r := &Relauncher{}
	h, err := hooks.Listen(hooks.Config{Path: filepath.Join(dir, "s.sock"), Owns: r.Owns})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := h.Register(r.Engine()); err != nil {
		t.Fatal(err)
	}
	go h.Serve(context.Background())

	arm := func(role string, p ArmParams) error {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := hooks.Dial(ctx, h.Path(), hooks.Hello{Client: "test", Role: role, Cwd: dir})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, _, err = c.Call(ctx, "supervisor.armRelaunch", p, nil)
		return err
	}
	code := func(err error) int {
		var e *hooks.Error
		if errors.As(err, &e) {
			return e.Code
		}
		return 0
	}

	// No launch yet, then a launch whose pi is another process.
	if err := arm(hooks.RoleMain, ArmParams{Handoff: handoff}); code(err) != hooks.CodeRefused {
		t.Errorf("arm with no launch = %v, want refused", err)
	}
	r.Arm(os.Getpid()+100000, a)
	if err := arm(hooks.RoleMain, ArmParams{Handoff: handoff}); code(err) != hooks.CodeRefused || !strings.Contains(err.Error(), "is not the pi this pi-session launched") {
		t.Errorf("arm from another process = %v, want refused", err)
	}
	// This process is the launched pi from here on.
	r.Arm(os.Getpid(), a)
	if err := arm(hooks.RoleChild, ArmParams{Handoff: handoff}); code(err) != hooks.CodeRefused || !strings.Contains(err.Error(), "main session") {
		t.Errorf("arm from a child session = %v, want refused", err)
	}
	if err := arm(hooks.RoleMain, ArmParams{Handoff: filepath.Join(dir, "missing.md")}); code(err) != hooks.CodeInvalidParams {
		t.Errorf("arm with a missing handoff = %v, want invalid params", err)
	}
	if _, err := os.Stat(a.Path); !os.IsNotExist(err) {
		t.Errorf("a refused marker was left behind: %v", err)
	}
	if err := arm(hooks.RoleMain, ArmParams{Handoff: handoff}); err != nil {
		t.Fatalf("arm from the launched pi's main session: %v", err)
	}
	m, err := marker.Read(a.Path)
	if err != nil {
		t.Fatal(err)
	}
	if m.Cwd != dir || m.Handoff != handoff || m.LaunchID != id {
		t.Errorf("marker = %+v, want cwd %s (from hello), handoff %s, launch %s", m, dir, handoff, id)
	}
	if got := r.Marker(os.Getpid()); got != a.Path {
		t.Errorf("Marker(self) = %q, want %q", got, a.Path)
	}
	r.Disarm()
	if r.Owns(os.Getpid()) || r.Marker(os.Getpid()) != "" {
		t.Errorf("still armed after Disarm")
	}
}

// TestContinuation: what a relaunch continues from goes to the relaunched
// pi's first main session only; the first launch, another process, a
// child session, a later session and the launch after it get nothing.
func TestContinuation(t *testing.T) {
	peer := func(pid int, role, session string) *hooks.Peer {
		return &hooks.Peer{PID: pid, Hello: hooks.Hello{Role: role, SessionID: session}}
	}
	r := &Relauncher{}
	r.Arm(10, marker.Assignment{})
	if _, ok := r.ContinuationFor(peer(10, hooks.RoleMain, "s1")); ok {
		t.Errorf("the first launch continues something")
	}
	r.Disarm()
	c := Continuation{SessionFile: "/agent/sessions/s1.jsonl", Handoff: "/w/.ai-work/handoffs/s1-1.md"}
	r.Continue(&c)
	r.Arm(11, marker.Assignment{})
	for _, tt := range []struct {
		name string
		p    *hooks.Peer
		ok   bool
	}{
		{"another process", peer(12, hooks.RoleMain, "s2"), false},
		{"a child session", peer(11, hooks.RoleChild, "s2"), false},
		{"no session id", peer(11, hooks.RoleMain, ""), false},
		{"the first main session", peer(11, hooks.RoleMain, "s2"), true},
		{"it again (a reconnection)", peer(11, hooks.RoleMain, "s2"), true},
		{"a session switched to", peer(11, hooks.RoleMain, "s3"), false},
	} {
		got, ok := r.ContinuationFor(tt.p)
		if ok != tt.ok || ok && got != c {
			t.Errorf("%s: ContinuationFor = %+v, %v; want %v", tt.name, got, ok, tt.ok)
		}
	}
	r.Disarm()
	r.Arm(13, marker.Assignment{})
	if _, ok := r.ContinuationFor(peer(13, hooks.RoleMain, "s4")); ok {
		t.Errorf("the launch after the relaunch continues it too")
	}
}
