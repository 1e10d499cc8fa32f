package relay

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBuildCommand(t *testing.T) {
	for cmd, want := range map[string]bool{
		"go test ./relay -run TestX":                 true,
		"cd web && npm test":                         true,
		"CGO_ENABLED=0 go build ./...":               true,
		"timeout 60 cargo test --workspace":          true,
		"python -m pytest -x tests/":                 true,
		"npx tsc --noEmit":                           true,
		"./gradlew :app:test":                        true,
		"make -j4 check":                             true,
		"bash scripts/ci-test.sh":                    true,
		"ls -la":                                     false,
		"git status":                                 false,
		"grep -rn 'go test' .":                       false,
		"cat Makefile":                               false,
		"echo done; go vet ./... 2>&1 | head":        true,
		"docker build -t app .":                      true,
		"kubectl apply -f deploy.yaml":               false,
		"npm view react version":                     false,
		"node --test extension/pi-session/*.ts":      true,
		"sudo -E make install":                       true,
		"python3 -m http.server":                     false,
		"pnpm --filter web build":                    false, // a flag first: not read
		"uv run pytest":                              true,
		"bundle exec rspec spec/models/user_spec.rb": true,
	} {
		if got := BuildCommand(cmd); got != want {
			t.Errorf("BuildCommand(%q) = %v, want %v", cmd, got, want)
		}
	}
}

func TestResultStatus(t *testing.T) {
	for _, tt := range []struct {
		text    string
		isError bool
		want    string
	}{
		{"ok  \tgithub.com/x\t0.1s\n", false, "exit 0"},
		{"--- FAIL: TestX\nFAIL\n\nCommand exited with code 1", true, "exit 1"},
		{"partial output\n\nCommand timed out after 30 seconds", true, "timed out"},
		{"partial\n\nCommand aborted", true, "aborted"},
		{"spawn error", true, "failed"},
	} {
		if got := resultStatus(tt.text, tt.isError); got != tt.want {
			t.Errorf("resultStatus(%q, %v) = %q, want %q", tt.text, tt.isError, got, tt.want)
		}
	}
}

func TestCommandsList(t *testing.T) {
	c := newCommands()
	c.call("1", "go test ./...", "2026-12-01T10:00:00Z")
	c.result("1", "FAIL\nCommand exited with code 1", true)
	c.call("2", "ls", "2026-12-01T10:01:00Z")
	c.call("3", "go vet ./...", "2026-12-01T10:02:00Z")
	c.result("3", "", false)
	c.call("4", "go test ./...", "2026-12-01T10:03:00Z")
	c.result("4", "ok", false)
	want := []Command{
		{Cmd: "go test ./...", Status: "exit 0", Time: "2026-12-01 10:03", Runs: 2},
		{Cmd: "go vet ./...", Status: "exit 0", Time: "2026-12-01 10:02", Runs: 1},
	}
	if d := cmp.Diff(want, c.list()); d != "" {
		t.Errorf("list mismatch (-want +got):\n%s", d)
	}
}

func TestTextTail(t *testing.T) {
	raw := []byte(`[{"type":"text","text":"` + strings.Repeat("x", 5000) + `\nFAIL\n\nCommand exited with code 2"}]`)
	got := textTail(raw, 40)
	if !strings.HasSuffix(got, "Command exited with code 2") || len(got) > 40 {
		t.Errorf("textTail = %q, want the last 40 bytes", got)
	}
	if got := textTail([]byte(`[{"type":"text","text":"ok"},{"type":"text","text":"Command aborted"}]`), 400); got != "ok\nCommand aborted" {
		t.Errorf("textTail of two pieces = %q", got)
	}
}
