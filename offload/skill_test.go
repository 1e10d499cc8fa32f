package offload

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// The skill follows pi's skill format: frontmatter with a valid name and a
// description of at most 1024 characters, then instructions; and the tool
// arguments it teaches are the ones ctx_read accepts.
func TestSkillFile(t *testing.T) {
	data, err := os.ReadFile("../extension/skills/context-handles/SKILL.md") // shipped in the extension package
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	front, body, ok := strings.Cut(strings.TrimPrefix(s, "---\n"), "\n---\n")
	if !strings.HasPrefix(s, "---\n") || !ok {
		t.Fatal("SKILL.md does not start with a frontmatter block")
	}
	name := regexp.MustCompile(`(?m)^name: ([a-z0-9]+(?:-[a-z0-9]+)*)$`).FindStringSubmatch(front)
	desc := regexp.MustCompile(`(?m)^description: (.+)$`).FindStringSubmatch(front)
	if name == nil || len(name[1]) > 64 {
		t.Errorf("frontmatter name missing or invalid:\n%s", front)
	}
	if desc == nil || len(desc[1]) > 1024 || !strings.Contains(desc[1], "ce_") {
		t.Errorf("frontmatter description missing, too long or not about handles:\n%s", front)
	}
	for _, arg := range []string{`"offset"`, `"length"`, `"query"`, `"regex"`, `"ignoreCase"`, `"contextLines"`, `"maxMatches"`, `"cursor"`, `"section"`, `"jsonPath"`} {
		if !strings.Contains(body, arg) {
			t.Errorf("the skill does not teach the argument %s", arg)
		}
	}
	// Every ctx_read argument object in the skill parses.
	calls := regexp.MustCompile("`\\{\"id\": H, (.*?)\\}`").FindAllStringSubmatch(body, -1)
	if len(calls) < 6 {
		t.Errorf("found %d example calls in the skill, want the table's", len(calls))
	}
	for _, m := range calls {
		args := `{"id":"` + testID + `",` + m[1] + `}`
		if strings.Contains(args, "<") {
			continue // a placeholder such as <nextCursor>
		}
		if _, err := ParseReadArgs([]byte(args)); err != nil {
			t.Errorf("the skill's call %s does not parse: %v", args, err)
		}
	}
}
