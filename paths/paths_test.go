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
