package main

import (
	"errors"
	"testing"
)

func TestDirsFix(t *testing.T) {
	ro := errors.New("write in /h: read-only file system")
	agent := writeDir{"pi's agent directory", "/h/.pi/agent", "PI_CODING_AGENT_DIR"}
	markers := writeDir{"the markers", "/h/.pi/agent/relaunch", "PI_CODING_AGENT_DIR"}
	own := writeDir{"the markers", "/m", "PI_SESSION_MARKER_DIR"}
	state := writeDir{"the records", "/s", "PI_CONTEXT_BUDGET_STATE_DIR"}
	for _, tt := range []struct {
		ps   []dirProblem
		want string
	}{
		{[]dirProblem{{agent, ro}, {markers, ro}},
			"cannot write pi's agent directory /h/.pi/agent, the markers /h/.pi/agent/relaunch (write in /h: read-only file system): set PI_CODING_AGENT_DIR to a writable directory"},
		{[]dirProblem{{own, errors.New("denied")}},
			"cannot write the markers /m (denied): set PI_SESSION_MARKER_DIR to a writable directory"},
		{[]dirProblem{{agent, ro}, {own, errors.New("x")}, {state, errors.New("x")}},
			"cannot write pi's agent directory /h/.pi/agent (write in /h: read-only file system); the markers /m, the records /s (x): set PI_CODING_AGENT_DIR, PI_SESSION_MARKER_DIR and PI_CONTEXT_BUDGET_STATE_DIR to writable directories"},
	} {
		if got := dirsFix(tt.ps); got != tt.want {
			t.Errorf("dirsFix =\n %s\nwant\n %s", got, tt.want)
		}
	}
	if got, want := fixOf([]dirProblem{{agent, ro}, {own, ro}}), "set PI_CODING_AGENT_DIR and PI_SESSION_MARKER_DIR to writable directories"; got != want {
		t.Errorf("fixOf = %q, want %q", got, want)
	}
}
