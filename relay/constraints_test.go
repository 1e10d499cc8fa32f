package relay

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestIsInstruction(t *testing.T) {
	tests := []struct {
		s    string
		want bool
	}{
		{"Never push to main.", true},
		{"Always run go vet before committing.", true},
		{"You must keep the public API stable.", true},
		{"Do not touch the vendor directory.", true},
		{"Don't add new dependencies", true},
		{"Use spaces, not tabs.", true},
		{"Use pflag for flags.", true},
		{"Only edit files under relay/.", true},
		{"Keep answers short.", true},
		{"Please, keep the README plain.", true},
		{"and use British spelling in docs", true},
		{"Make sure every test can fail.", true},
		{"This is the only file we have.", false},
		{"We use it for the build.", false},
		{"Can you never do that again?", false},
		{"What does the build log say", false},
		{"Read notes.txt and tell me what it says.", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := IsInstruction(tt.s); got != tt.want {
			t.Errorf("IsInstruction(%q) = %v, want %v", tt.s, got, tt.want)
		}
	}
}

func TestSentences(t *testing.T) {
	got := Sentences("Fix the build. Never push to main!\n- Use spaces, not tabs.\n2. Keep e.g. notes.txt as it is. Why?")
	want := []string{"Fix the build.", "Never push to main!", "Use spaces, not tabs.", "Keep e.g. notes.txt as it is.", "Why?"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Sentences mismatch (-want +got):\n%s", d)
	}
}

func TestExtractConstraints(t *testing.T) {
	tests := []struct {
		name string
		msgs []UserText
		want []Constraint
	}{
		{
			name: "in any position of a longer message",
			msgs: []UserText{{"u1", "Look at the failing test in relay. Never push to main. Then tell me what broke."}},
			want: []Constraint{{Text: "Never push to main.", EntryID: "u1"}},
		},
		{
			name: "a repeat is one constraint, named by its latest message",
			msgs: []UserText{{"u1", "Never push to main."}, {"u2", "never push to main"}},
			want: []Constraint{{Text: "Never push to main.", EntryID: "u2"}},
		},
		{
			name: "use X, not Y replaces an earlier use of Y",
			msgs: []UserText{{"u1", "Use tabs for indentation."}, {"u2", "Use spaces, not tabs."}},
			want: []Constraint{
				{Text: "Use tabs for indentation.", EntryID: "u1", SupersededBy: "Use spaces, not tabs."},
				{Text: "Use spaces, not tabs.", EntryID: "u2"},
			},
		},
		{
			name: "the opposite polarity on the same subject",
			msgs: []UserText{{"u1", "Always squash commits."}, {"u2", "Never squash commits."}},
			want: []Constraint{
				{Text: "Always squash commits.", EntryID: "u1", SupersededBy: "Never squash commits."},
				{Text: "Never squash commits.", EntryID: "u2"},
			},
		},
		{
			name: "a revision with from now on",
			msgs: []UserText{{"u1", "Only run the unit tests."}, {"u2", "From now on run the unit tests and the e2e tests."}},
			want: []Constraint{
				{Text: "Only run the unit tests.", EntryID: "u1", SupersededBy: "From now on run the unit tests and the e2e tests."},
				{Text: "From now on run the unit tests and the e2e tests.", EntryID: "u2"},
			},
		},
		{
			name: "unrelated rules both stand",
			msgs: []UserText{{"u1", "Never push to main."}, {"u2", "Always run gofmt."}},
			want: []Constraint{{Text: "Never push to main.", EntryID: "u1"}, {Text: "Always run gofmt.", EntryID: "u2"}},
		},
		{
			name: "said again after being superseded, it is current again",
			msgs: []UserText{{"u1", "Always squash commits."}, {"u2", "Never squash commits."}, {"u3", "Always squash commits."}},
			want: []Constraint{
				{Text: "Always squash commits.", EntryID: "u3"},
				{Text: "Never squash commits.", EntryID: "u2", SupersededBy: "Always squash commits."},
			},
		},
		{
			name: "questions and prose are not constraints",
			msgs: []UserText{{"u1", "Should we never cache this? The only file is big."}},
			want: nil,
		},
	}
	for _, tt := range tests {
		got := ExtractConstraints(tt.msgs)
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("%s: ExtractConstraints mismatch (-want +got):\n%s", tt.name, d)
		}
	}
}

// TestExtractConstraintsWindow: a new instruction is compared with the
// latest maxCurrent current ones only, which keeps a message of thousands
// of rules linear (10,000 took over two minutes when every new one was
// compared with every earlier one, recomputing both). Inside the window a
// contradiction still supersedes; past it, it no longer does.
func TestExtractConstraintsWindow(t *testing.T) {
	var b strings.Builder
	b.WriteString("Never use tabs.\n")
	for i := range maxCurrent {
		fmt.Fprintf(&b, "Always run check%d.\n", i)
	}
	b.WriteString("Always use tabs.\nNever run check199.\n")
	got := ExtractConstraints([]UserText{{"u1", b.String()}})
	if len(got) != maxCurrent+3 {
		t.Fatalf("%d constraints, want %d", len(got), maxCurrent+3)
	}
	if got[0].SupersededBy != "" {
		t.Errorf("an instruction %d current ones back was compared: superseded by %q", maxCurrent, got[0].SupersededBy)
	}
	if got[maxCurrent].SupersededBy != "Never run check199." {
		t.Errorf("the latest %q: superseded by %q, want by the contradiction", got[maxCurrent].Text, got[maxCurrent].SupersededBy)
	}
}

func BenchmarkExtractConstraints(b *testing.B) {
	var s strings.Builder
	for i := range 10000 {
		fmt.Fprintf(&s, "You must never touch file%d.go and always run test%d. ", i, i)
	}
	msgs := []UserText{{"u1", s.String()}}
	for b.Loop() {
		ExtractConstraints(msgs)
	}
}
