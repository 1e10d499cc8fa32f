// Package paths says where pi and pi-session keep their files, from the environment.
package paths

import (
	"os"
	"path/filepath"
)

// Getenv looks up an environment variable; os.Getenv in production, a map in tests.
type Getenv func(string) string

// Home returns the user's home directory, from HOME or the password database.
func Home(getenv Getenv) string {
	if h := getenv("HOME"); h != "" {
		return h
	}
	h, _ := os.UserHomeDir()
	return h
}

// AgentDir is pi's agent directory: PI_CODING_AGENT_DIR or ~/.pi/agent.
func AgentDir(getenv Getenv) string {
	if d := getenv("PI_CODING_AGENT_DIR"); d != "" {
		return expandHome(d, getenv)
	}
	return filepath.Join(Home(getenv), ".pi", "agent")
}

// SessionAgentDir is the agent directory a session file belongs to:
// PI_CODING_AGENT_DIR when set, else <X> for a file pi keeps at
// <X>/sessions/<cwd>/<file>.jsonl (a session of another agent directory,
// such as the demo's), else AgentDir.
func SessionAgentDir(getenv Getenv, sessionFile string) string {
	if getenv("PI_CODING_AGENT_DIR") != "" {
		return AgentDir(getenv)
	}
	if abs, err := filepath.Abs(sessionFile); err == nil {
		sessions := filepath.Dir(filepath.Dir(abs))
		if filepath.Base(sessions) == "sessions" {
			return filepath.Dir(sessions)
		}
	}
	return AgentDir(getenv)
}

// MarkerDir is where relaunch markers live: PI_SESSION_MARKER_DIR or <agentDir>/relaunch.
func MarkerDir(getenv Getenv) string {
	if d := getenv("PI_SESSION_MARKER_DIR"); d != "" {
		return expandHome(d, getenv)
	}
	return filepath.Join(AgentDir(getenv), "relaunch")
}

// StateDir holds budget status records and telemetry logs:
// PI_CONTEXT_BUDGET_STATE_DIR or <agentDir>/context-budget.
func StateDir(getenv Getenv) string {
	if d := getenv("PI_CONTEXT_BUDGET_STATE_DIR"); d != "" {
		return expandHome(d, getenv)
	}
	return filepath.Join(AgentDir(getenv), "context-budget")
}

// expandHome expands a leading "~/" the way pi does for PI_CODING_AGENT_DIR.
func expandHome(p string, getenv Getenv) string {
	if p == "~" {
		return Home(getenv)
	}
	if len(p) >= 2 && p[0] == '~' && p[1] == '/' {
		return filepath.Join(Home(getenv), p[2:])
	}
	return p
}
