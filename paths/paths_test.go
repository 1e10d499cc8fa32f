package paths

import "testing"

func env(m map[string]string) Getenv { return func(k string) string { return m[k] } }

func TestDirs(t *testing.T) {
	tests := []struct {
		name                    string
		env                     map[string]string
		agent, marker, stateDir string
	}{
		{"defaults", map[string]string{"HOME": "/h"}, "/h/.pi/agent", "/h/.pi/agent/relaunch", "/h/.pi/agent/context-budget"},
		{"agent dir moved", map[string]string{"HOME": "/h", "PI_CODING_AGENT_DIR": "/a"}, "/a", "/a/relaunch", "/a/context-budget"},
		{"tilde", map[string]string{"HOME": "/h", "PI_CODING_AGENT_DIR": "~/x"}, "/h/x", "/h/x/relaunch", "/h/x/context-budget"},
		{"overrides", map[string]string{"HOME": "/h", "PI_SESSION_MARKER_DIR": "/m", "PI_CONTEXT_BUDGET_STATE_DIR": "/s"}, "/h/.pi/agent", "/m", "/s"},
	}
	for _, tt := range tests {
		g := env(tt.env)
		if got := AgentDir(g); got != tt.agent {
			t.Errorf("%s: AgentDir = %q, want %q", tt.name, got, tt.agent)
		}
		if got := MarkerDir(g); got != tt.marker {
			t.Errorf("%s: MarkerDir = %q, want %q", tt.name, got, tt.marker)
		}
		if got := StateDir(g); got != tt.stateDir {
			t.Errorf("%s: StateDir = %q, want %q", tt.name, got, tt.stateDir)
		}
	}
}

func TestSessionAgentDir(t *testing.T) {
	home := env(map[string]string{"HOME": "/home/u"})
	set := env(map[string]string{"HOME": "/home/u", "PI_CODING_AGENT_DIR": "/agent"})
	for _, c := range []struct {
		getenv Getenv
		file   string
		want   string
	}{
		{home, "/tmp/demo/agent/sessions/--tmp-demo-work--/2026_x.jsonl", "/tmp/demo/agent"},
		{home, "/home/u/.pi/agent/sessions/--w--/s.jsonl", "/home/u/.pi/agent"},
		{home, "/tmp/s.jsonl", "/home/u/.pi/agent"},
		{home, "/tmp/sessions/s.jsonl", "/home/u/.pi/agent"},
		{set, "/tmp/demo/agent/sessions/--w--/s.jsonl", "/agent"},
	} {
		if got := SessionAgentDir(c.getenv, c.file); got != c.want {
			t.Errorf("SessionAgentDir(%s) = %s, want %s", c.file, got, c.want)
		}
	}
}
