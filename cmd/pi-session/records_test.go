package main

import (
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/pi-session/pi-session/clip"
	"github.com/pi-session/pi-session/status"
	"github.com/pi-session/pi-session/supervisor"
)

func TestTextLines(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"Error: Unknown option: -z\n", []string{"Error: Unknown option: -z"}},
		{"\x1b[?2004h\x1b[31mError:\x1b[0m bad\r\n\r\n  next  \n", []string{"Error: bad", "next"}},
		{"\x1b]0;title\x07a\x1b]52;c;aGk=\x1b\\b\n", []string{"ab"}},
		{"\x1bPqdcs\x1b\\x\x1b(By\x1b7z", []string{"xyz"}},
		{"progress 10%\rprogress 100%\n", []string{"progress 10%", "progress 100%"}},
		{"a\tb\x00\x01\x7fc", []string{"a bc"}},
		{"cut \x1b[31", []string{"cut"}},
		{"cut \x1b]0;never ends", []string{"cut"}},
		{"end\x1b", []string{"end"}},
	} {
		if diff := cmp.Diff(tt.want, textLines([]byte(tt.in))); diff != "" {
			t.Errorf("textLines(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func FuzzTextLines(f *testing.F) {
	for _, s := range []string{"Error: x\n", "\x1b[31mred\x1b[0m\r\n", "\x1b]52;c;x\x07y", "\x1bP\x1b\\", "\xff\xfe\n\t"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		lines := textLines(b)
		for _, l := range lines {
			if l == "" || l != strings.TrimSpace(l) || strings.ContainsAny(l, "\x1b\r\n\x07") {
				t.Fatalf("textLines(%q) gave line %q", b, l)
			}
		}
		note := earlyNote(b)
		if strings.ContainsFunc(note, clip.IsControl) || !utf8.ValidString(note) || (len(lines) == 0) != (note == "") {
			t.Fatalf("earlyNote(%q) = %q", b, note)
		}
	})
}

func TestHowEnded(t *testing.T) {
	for _, tt := range []struct {
		res     supervisor.Result
		by, sig string
		cut     string // cutShort, said false
		cutSaid string // cutShort, said true
	}{
		{supervisor.Result{}, status.EndExit, "", "", ""},
		{supervisor.Result{Code: 1}, status.EndExit, "", "the fresh pi exited with status 1 before its session started", ""},
		{supervisor.Result{Signal: syscall.SIGINT}, status.EndInterrupt, "SIGINT",
			"the fresh pi was interrupted (SIGINT) before its session started", "the fresh pi was interrupted (SIGINT)"},
		{supervisor.Result{Signal: syscall.SIGTERM, Interrupted: syscall.SIGTERM}, status.EndInterrupt, "SIGTERM",
			"the fresh pi was interrupted (SIGTERM) before its session started", "the fresh pi was interrupted (SIGTERM)"},
		{supervisor.Result{Signal: syscall.SIGTERM}, status.EndSignal, "SIGTERM",
			"the fresh pi was killed (SIGTERM) before its session started", "the fresh pi was killed (SIGTERM)"},
		{supervisor.Result{Signal: syscall.SIGKILL, Interrupted: syscall.SIGHUP}, status.EndSignal, "SIGKILL",
			"the fresh pi was killed (SIGKILL) before its session started", "the fresh pi was killed (SIGKILL)"},
		{supervisor.Result{Code: 0, Interrupted: syscall.SIGTERM}, status.EndExit, "", "", ""},
	} {
		by, sig := howEnded(tt.res)
		got := []string{by, sig, cutShort(tt.res, false), cutShort(tt.res, true)}
		if diff := cmp.Diff([]string{tt.by, tt.sig, tt.cut, tt.cutSaid}, got); diff != "" {
			t.Errorf("%+v (-want +got):\n%s", tt.res, diff)
		}
	}
}

func TestContinueCommand(t *testing.T) {
	for _, tt := range []struct {
		argv0, dir string
		argv       []string
		want       string
	}{
		{"pi-session", "/w/repo", []string{"--model", "x", "--", "continue from /w/repo/.ai-work/handoffs/s-1.md"},
			"cd /w/repo && pi-session --model x -- 'continue from /w/repo/.ai-work/handoffs/s-1.md'"},
		{"./bin/pi-session", "/w/it's here", []string{"-e", "/w/ext.ts", "--", "@/w/p.md", "continue from /h.md"},
			`cd '/w/it'\''s here' && /abs/pi-session -e /w/ext.ts -- @/w/p.md 'continue from /h.md'`},
		{"", "/w", []string{"--name", "", "--"}, "cd /w && /abs/pi-session --name '' --"},
	} {
		if got := continueCommand(tt.argv0, "/abs/pi-session", tt.dir, tt.argv); got != tt.want {
			t.Errorf("continueCommand(%q, %q, %q) =\n %s\nwant\n %s", tt.argv0, tt.dir, tt.argv, got, tt.want)
		}
	}
}
