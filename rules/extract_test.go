package rules

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestExtract: whole messages, in several languages, as a note lists
// their rules: current ones (with their subject), superseded ones with
// what replaced them, and the rest left out.
func TestExtract(t *testing.T) {
	tests := []struct {
		name       string
		msgs       []string
		current    []string // Text of a current rule contains each
		superseded []string // Text of a superseded rule contains each
		absent     []string // no rule's Text contains these
	}{
		{
			name:    "a bullet keeps its heading and a labelled item stays whole",
			msgs:    []string{"## Testing\n- Always run go test -race.\n- `pom.xml`: managed by the release plugin. Do not change this file."},
			current: []string{"Testing: Always run go test -race.", "`pom.xml`: managed by the release plugin. Do not change this file."},
		},
		{
			name:    "rules among task text, after fenced code, in parentheses",
			msgs:    []string{"Port the invoice endpoint to Kotlin.\n```sh\nnever-run-this --force\n```\nDon't add new dependencies without asking me. Then update the changelog (and please never force-push)."},
			current: []string{"Don't add new dependencies without asking me.", "never force-push"},
			absent:  []string{"never-run-this"},
		},
		{
			name:   "reports, questions and quoted text are not rules",
			msgs:   []string{"The old code never closed the file. Should we always run the linter?\n> Never use globals.\nThe error says \"must not be null\"."},
			absent: []string{"never closed", "always run the linter", "Never use globals"},
		},
		{
			name:       "a revocation in a later message",
			msgs:       []string{"Never push to main without asking me.", "You can push to main again, CI is green."},
			superseded: []string{"Never push to main"},
		},
		{
			name:       "a Japanese revision",
			msgs:       []string{"コメントは日本語で書いてください。", "やっぱりコメントは英語でお願いします。"},
			current:    []string{"やっぱりコメントは英語でお願いします。"},
			superseded: []string{"コメントは日本語で書いてください。"},
		},
		{
			name:       "use X instead of Y replaces the rule that asked for Y",
			msgs:       []string{"Use npm for every install.", "Actually, use pnpm instead of npm."},
			current:    []string{"Actually, use pnpm instead of npm."},
			superseded: []string{"Use npm for every install."},
		},
		{
			name:    "the rules of one message stand beside each other",
			msgs:    []string{"- Never squash commits.\n- Always squash fixups before review."},
			current: []string{"Never squash commits.", "Always squash fixups before review."},
		},
		{
			name:    "rules in German, Chinese, Korean, Russian and Spanish",
			msgs:    []string{"Bitte keine neuen Abhängigkeiten.\n请勿修改 `migrations/` 目录。\n커밋 메시지는 항상 영어로 작성해 주세요.\nИспользуй только стандартную библиотеку.\nNada de `println` en producción."},
			current: []string{"Bitte keine neuen Abhängigkeiten.", "请勿修改 `migrations/` 目录。", "커밋 메시지는 항상 영어로 작성해 주세요.", "Используй только стандартную библиотеку.", "Nada de `println` en producción."},
		},
	}
	for _, tt := range tests {
		var msgs []Message
		for i, m := range tt.msgs {
			msgs = append(msgs, Message{EntryID: string(rune('a' + i)), Text: m})
		}
		got := Extract(msgs)
		has := func(s string, current bool) bool {
			for _, r := range got {
				if r.Current() == current && strings.Contains(r.Text, s) {
					return true
				}
			}
			return false
		}
		var texts []string
		for _, r := range got {
			texts = append(texts, r.Text+" <- "+r.SupersededBy)
		}
		for _, s := range tt.current {
			if !has(s, true) {
				t.Errorf("%s: no current rule holds %q; got %q", tt.name, s, texts)
			}
		}
		for _, s := range tt.superseded {
			if !has(s, false) || has(s, true) {
				t.Errorf("%s: %q is not (only) superseded; got %q", tt.name, s, texts)
			}
		}
		for _, s := range tt.absent {
			if has(s, true) || has(s, false) {
				t.Errorf("%s: %q is listed as a rule; got %q", tt.name, s, texts)
			}
		}
	}
}

// TestExtractConcurrent: a long session is read on several cores; the
// rules are those of reading it message by message, in order (and go test
// -race sees the workers share the model).
func TestExtractConcurrent(t *testing.T) {
	var msgs []Message
	for i := range 120 {
		msgs = append(msgs, Message{EntryID: string(rune('A' + i%26)), Text: []string{
			"Never push to main.", "fix the flaky test in parser_test.go", "コメントは日本語で書くこと。",
			"Bitte keine neuen Abhängigkeiten.", "ok thanks", "You can push to main again.",
		}[i%6]})
	}
	m := *Default()
	m.cache = &classCache{}
	got := m.Extract(msgs)
	seq := *Default()
	seq.cache = &classCache{}
	var want []Rule
	for i := range msgs {
		// Message by message: the cache holds the earlier ones.
		want = seq.Extract(msgs[:i+1])
	}
	if len(got) != len(want) {
		t.Fatalf("%d rules read concurrently, %d in order", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("rule %d: %+v concurrently, %+v in order", i, got[i], want[i])
		}
	}
}

// TestExtractAcrossBatches: messages are read and merged in batches, and
// only the latest current rules keep their subjects: a revision batches
// later still finds the rule it replaces, and a revoked rule said again
// after hundreds of other rules is current again, and can be revoked again
// (its subject read anew).
func TestExtractAcrossBatches(t *testing.T) {
	var msgs []Message
	add := func(text string) { msgs = append(msgs, Message{EntryID: fmt.Sprintf("m%d", len(msgs)), Text: text}) }
	add("Use tabs for indentation.")
	for i := range 2 * batchMessages {
		add(fmt.Sprintf("ok, step %d looks good", i))
	}
	add("Actually, use spaces for indentation instead of tabs.")
	add("Never force-push to main.")
	add("You can force-push to main again.")
	for i := range 2 * maxCurrent {
		add(fmt.Sprintf("Always run the linter on module%d before you commit.", i))
	}
	add("Never force-push to main.")
	add("You can force-push to main again.")
	got := map[string]Rule{}
	for _, r := range Extract(msgs) {
		got[r.Text] = r
	}
	if r := got["Use tabs for indentation."]; r.Current() || !strings.Contains(r.SupersededBy, "spaces") {
		t.Errorf("the tabs rule, revised two batches later: %+v", r)
	}
	if r := got["Never force-push to main."]; r.EntryID != fmt.Sprintf("m%d", len(msgs)-2) || !r.Revoked {
		t.Errorf("the force-push rule, said again and revoked again: %+v", r)
	}
	if r := got["Always run the linter on module7 before you commit."]; !r.Current() {
		t.Errorf("a rule nothing replaced: %+v", r)
	}
}

// TestExtractForgetsPastMaxRules: of more rules than MaxRules, the oldest
// are let go of and counted, with the message of the oldest; the newest
// are kept.
func TestExtractForgetsPastMaxRules(t *testing.T) {
	var msgs []Message
	total := 0
	for m := 0; total < 3*MaxRules+500; m++ {
		var b strings.Builder
		for range 100 {
			fmt.Fprintf(&b, "Never touch file%d.go. ", total)
			total++
		}
		msgs = append(msgs, Message{EntryID: fmt.Sprintf("m%d", m), Text: b.String()})
	}
	got, forgotten := Default().ExtractSeq(slices.Values(msgs))
	if len(got) != MaxRules || forgotten.Current != total-MaxRules || forgotten.EntryID != "m0" {
		t.Fatalf("%d rules kept, %+v forgotten, of %d; want %d kept, the rest forgotten from m0", len(got), forgotten, total, MaxRules)
	}
	if last := got[len(got)-1].Text; last != fmt.Sprintf("Never touch file%d.go.", total-1) {
		t.Errorf("the newest rule kept is %q", last)
	}
}
