package jsonpos

import (
	"fmt"
	"strings"
)

// NoticeProblems is how many problems a Notice lists.
const NoticeProblems = 3

// Notice is the one notice pi-session gives when a session starts and a
// configuration file has problems, the same for every engine's file:
// each problem as Message places it ("path:line:column: ..."), at most
// NoticeProblems of them, then how many more and where they are listed
// (listed, "" for nowhere); outcome says what the problems mean as a
// whole ("" when each says it). "" without problems.
func Notice(problems []string, outcome, listed string) string {
	switch len(problems) {
	case 0:
		return ""
	case 1:
		if outcome == "" {
			return "pi-session: " + problems[0]
		}
		return "pi-session: " + problems[0] + "; " + outcome
	}
	var b strings.Builder
	fmt.Fprintf(&b, "pi-session: %d configuration problems", len(problems))
	if outcome != "" {
		b.WriteString("; " + outcome)
	}
	b.WriteString(":")
	for i, p := range problems {
		if i == NoticeProblems {
			fmt.Fprintf(&b, "\n  ... %d more", len(problems)-NoticeProblems)
			if listed != "" {
				b.WriteString(": " + listed)
			}
			break
		}
		b.WriteString("\n  " + p)
	}
	return b.String()
}
