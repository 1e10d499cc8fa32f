package relaunch

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// render shows items compactly: kind:token token | ...
func render(items []Item) string {
	var parts []string
	for _, it := range items {
		parts = append(parts, it.Kind.String()+":"+strings.Join(it.Tokens, " "))
	}
	return strings.Join(parts, " | ")
}

func TestParse(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--model", "x", "--", "@/abs/launch.md", "request"},
			"option:--model x | separator:-- | file:@/abs/launch.md | message:request"},
		{[]string{"-c", "--session", "abc", "--session-id", "s1", "--fork", "f", "-r"},
			"selector:-c | selector:--session abc | selector:--session-id s1 | selector:--fork f | selector:-r"},
		{[]string{"-p", "hello", "@a.md", "more"},
			"option:-p | message:hello | file:@a.md | message:more"},
		{[]string{"-p", "@a.md"}, "option:-p | file:@a.md"},
		{[]string{"-p", "---yaml"}, "option:-p | message:---yaml"},
		{[]string{"-p", "-nc"}, "option:-p | option:-nc"},
		// value-taking built-ins consume the next argument even when it looks like a flag
		{[]string{"--system-prompt", "-be terse", "-e", "@ext.ts", "msg"},
			"option:--system-prompt -be terse | option:-e @ext.ts | message:msg"},
		{[]string{"--mode", "-p"}, "option:--mode | option:-p"},
		{[]string{"--mode", "json", "q"}, "option:--mode json | message:q"},
		{[]string{"--no-session", "msg"}, "option:--no-session | message:msg"},
		// unknown long flags read a value the way pi does
		{[]string{"--plan", "do it"}, "option:--plan do it"},
		{[]string{"--plan", "@f.md"}, "option:--plan | file:@f.md"},
		{[]string{"--plan=x", "do it"}, "option:--plan=x | message:do it"},
		{[]string{"--list-models", "son", "q"}, "option:--list-models son | message:q"},
		{[]string{"--list-models", "@x"}, "option:--list-models | file:@x"},
		{[]string{"--tui-mode", "regular", "q"}, "option:--tui-mode regular | message:q"},
		{[]string{"--use-theme", "-x"}, "option:--use-theme | option:-x"},
		{[]string{"--name", "n", "-n"}, "option:--name n | option:-n"},
		{[]string{"--model"}, "option:--model"},
		{[]string{"-zz", "q"}, "option:-zz | message:q"},
		{nil, ""},
	}
	for _, tt := range tests {
		if got := render(Parse(tt.args)); got != tt.want {
			t.Errorf("Parse(%q)\n got  %s\n want %s", tt.args, got, tt.want)
		}
	}
}

func TestArgv(t *testing.T) {
	lp := "/w/h.launch-prompt.md"
	tests := []struct {
		args []string
		lp   *string
		want []string
	}{
		{[]string{"--model", "x", "--", "@/abs/launch.md", "request"}, &lp,
			[]string{"--model", "x", "--", "@" + lp, "continue from /w/h.md"}},
		{[]string{"-c", "--thinking", "high", "fix it", "@notes.md"}, nil,
			[]string{"--thinking", "high", "--", "continue from /w/h.md"}},
		{[]string{"-p", "q", "--session", "s.jsonl", "--plan=a"}, nil,
			[]string{"-p", "--plan=a", "--", "continue from /w/h.md"}},
		{[]string{"--plan"}, nil, []string{"--plan", "--", "continue from /w/h.md"}},
		{nil, nil, []string{"--", "continue from /w/h.md"}},
	}
	for _, tt := range tests {
		got := Argv(tt.args, tt.lp, "/w/h.md")
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("Argv(%q) mismatch (-want +got):\n%s", tt.args, d)
		}
	}
}

func TestMode(t *testing.T) {
	tests := map[string][]string{
		"":      {"q"},
		"print": {"-p", "q"},
		"json":  {"--mode", "json", "-p"},
		"rpc":   {"--mode", "rpc"},
	}
	for want, args := range tests {
		if got := Mode(Parse(args)); got != want {
			t.Errorf("Mode(%q) = %q, want %q", args, got, want)
		}
	}
}

// FuzzParse checks that parsing loses nothing: the items' tokens are exactly
// the arguments, and Argv never keeps a message or selector.
func FuzzParse(f *testing.F) {
	f.Add("--model\x00x\x00--\x00@l.md\x00req")
	f.Add("-p\x00q\x00--plan\x00v\x00-c")
	f.Fuzz(func(t *testing.T, joined string) {
		args := strings.Split(joined, "\x00")
		items := Parse(args)
		var back []string
		for _, it := range items {
			if len(it.Tokens) == 0 || len(it.Tokens) > 2 {
				t.Fatalf("item %v has %d tokens", it, len(it.Tokens))
			}
			back = append(back, it.Tokens...)
		}
		if d := cmp.Diff(args, back); d != "" {
			t.Fatalf("Parse lost or invented arguments (-in +out):\n%s", d)
		}
		argv := Argv(args, nil, "/h")
		if argv[len(argv)-1] != "continue from /h" || argv[len(argv)-2] != "--" {
			t.Fatalf("Argv(%q) = %q, want it to end with -- and the continuation", args, argv)
		}
		for _, it := range Parse(argv[:len(argv)-2]) {
			if it.Kind == Selector || it.Kind == Separator {
				t.Fatalf("Argv(%q) = %q keeps a %v", args, argv, it.Kind)
			}
		}
	})
}

func TestRelocate(t *testing.T) {
	isFile := func(p string) bool { return p == "/start/prompt.md" }
	args := []string{"-e", "./ext.ts", "--extension", "npm:@x/y", "-e", "builtin:mcp", "--skill", "skills",
		"--theme", "/abs/t.json", "--session-dir", "~/s", "--system-prompt", "prompt.md",
		"--append-system-prompt", "be brief", "--model", "m", "@rel.md", "msg"}
	want := []string{"-e", "/start/ext.ts", "--extension", "npm:@x/y", "-e", "builtin:mcp", "--skill", "/start/skills",
		"--theme", "/abs/t.json", "--session-dir", "~/s", "--system-prompt", "/start/prompt.md",
		"--append-system-prompt", "be brief", "--model", "m", "@rel.md", "msg"}
	if d := cmp.Diff(want, Relocate(args, "/start", isFile)); d != "" {
		t.Errorf("Relocate mismatch (-want +got):\n%s", d)
	}
}
