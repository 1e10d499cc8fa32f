package relay

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pi-session/pi-session/clip"
	"github.com/pi-session/pi-session/rules"
)

var meta = NoteMeta{N: 1, Path: "/agent/context-relay/s/1.md", TokensBefore: 90000}

func bigFacts() Facts {
	f := Facts{Cwd: "/home/dev/app", Leaving: 300}
	for i := range 60 {
		f.Files = append(f.Files, FileChange{Path: fmt.Sprintf("/home/dev/app/pkg%d/file%02d.go", i%7, i), Edits: i%3 + 1})
	}
	var task strings.Builder
	task.WriteString("Build the export feature. Requirements:\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&task, "%d. Requirement number %d: the exporter handles case %d with its own test, documented in docs/export.md.\n", i, i, i)
	}
	f.Task, f.TaskEntry, f.TaskTime = task.String(), "t0", "2026-12-01 09:00"
	f.Instructions = []Instruction{{EntryID: "t0", Time: "2026-12-01 09:00", Text: task.String()}}
	for i := range 6 {
		f.Instructions = append(f.Instructions, Instruction{EntryID: fmt.Sprintf("u%d", i), Time: "2026-12-01 10:00", Text: strings.Repeat(fmt.Sprintf("step %d detail ", i), 30)})
	}
	for i := range 12 {
		f.Commands = append(f.Commands, Command{Cmd: fmt.Sprintf("go test ./pkg%d/...", i), Status: "exit 0", Time: "2026-12-01 10:00"})
	}
	f.Constraints = []rules.Rule{{Text: "Never push to main.", EntryID: "t0"}, {Text: "Use tabs.", EntryID: "t0", SupersededBy: "Use spaces, not tabs."}, {Text: "Use spaces, not tabs.", EntryID: "u1"}}
	f.Answer = strings.Repeat("The exporter now handles cases 1 to 4. ", 20)
	return f
}

// TestLayoutFillsTheBudget: with room, every section is whole: all 60
// files, all 12 commands, the whole task, every instruction.
func TestLayoutFillsTheBudget(t *testing.T) {
	f := bigFacts()
	lim := DefaultConfig().Limits
	lim.Total = 40000
	note := Layout(f, nil, nil, meta, lim)
	if n := runes(note); n > lim.Total {
		t.Fatalf("note of %d characters over the total %d", n, lim.Total)
	}
	for _, fc := range f.Files {
		base := fc.Path[strings.LastIndexByte(fc.Path, '/')+1:]
		if !strings.Contains(note, base) {
			t.Errorf("file %s missing from a note with room", base)
		}
	}
	if strings.Contains(note, "more)") {
		t.Errorf("a note with room says some were left out:\n%s", note)
	}
	for _, c := range f.Commands {
		if !strings.Contains(note, c.Cmd) {
			t.Errorf("command %q missing", c.Cmd)
		}
	}
	if !strings.Contains(note, strings.TrimSpace(f.Task)) {
		t.Errorf("the task statement is not whole in a note with room")
	}
	for _, in := range f.Instructions[1:] {
		if !strings.Contains(note, oneLine(in.Text)) {
			t.Errorf("instruction %s is cut in a note with room", in.EntryID)
		}
	}
	if strings.Count(note, "Requirement number 1:") != 1 {
		t.Errorf("the task statement is listed %d times, want once", strings.Count(note, "Requirement number 1:"))
	}
}

// TestLayoutHostile: paths, commands, commits and extra sections with
// escape sequences and bytes that are not UTF-8 come out written out, and
// the note, measured as written, still fits its total.
func TestLayoutHostile(t *testing.T) {
	const h = "\x1b]0;PWNED\x07\x1b[2J\u009b31m\xff\r"
	f := bigFacts()
	for i := range f.Files {
		f.Files[i].Path = strings.Replace(f.Files[i].Path, "/file", "/"+h+"file", 1)
	}
	for i := range f.Commands {
		f.Commands[i].Cmd += " " + h
	}
	f.Task += h
	f.Answer += h
	git := []GitLog{{Dir: "/home/dev/app" + h, Commits: []string{"abc123 fix " + h}}}
	extra := []Section{{Title: "Extra " + h, Body: "body " + h}}
	lim := DefaultConfig().Limits
	for _, total := range []int{40000, 9500, 2500} {
		lim.Total = total
		note := Layout(f, git, extra, meta, lim)
		if n := utf8.RuneCountInString(note); n > total {
			t.Errorf("total %d: the note has %d characters", total, n)
		}
		if !utf8.ValidString(note) || strings.ContainsFunc(note, clip.IsControl) {
			t.Errorf("total %d: the note holds raw text:\n%q", total, note)
		}
		if total == 40000 && !strings.Contains(note, `\x1b]0;PWNED\x07`) {
			t.Errorf("total %d: the hostile text is not written out:\n%s", total, note)
		}
	}
}

// TestLayoutUnderPressure: at the default total the note fits, rules
// stay whole, and what gives way says so.
func TestLayoutUnderPressure(t *testing.T) {
	f := bigFacts()
	lim := DefaultConfig().Limits
	for _, total := range []int{9500, 4000, 2500, 1200} {
		lim.Total = total
		note := Layout(f, nil, nil, meta, lim)
		if n := runes(note); n > total {
			t.Errorf("total %d: the note has %d characters", total, n)
		}
		if !strings.Contains(note, "- Never push to main.") || !strings.Contains(note, "- Use spaces, not tabs.") {
			t.Errorf("total %d: a current rule is missing:\n%s", total, note)
		}
		if strings.Contains(note, "- Use tabs.\n") {
			t.Errorf("total %d: a superseded rule is listed as current", total)
		}
		if total == 9500 && !strings.Contains(note, "Requirement number 9") {
			t.Errorf("total %d: the task statement lost its end while other sections had room:\n%s", total, note)
		}
	}
}

// TestLayoutRuleCeiling: 10,000 current rules make a note past the total
// (rules never give way to it) but not past the hard ceiling, and the
// note says how many were left out.
func TestLayoutRuleCeiling(t *testing.T) {
	var f Facts
	for i := range 10000 {
		f.Constraints = append(f.Constraints, rules.Rule{Text: fmt.Sprintf("Never touch file%d.go.", i), EntryID: "u1"})
	}
	lim := DefaultConfig().Limits
	note := Layout(f, nil, nil, meta, lim)
	if n := runes(note); n > HardCeiling(lim)+2000 {
		t.Errorf("the note has %d characters, past the ceiling %d", n, HardCeiling(lim))
	}
	m := regexp.MustCompile(`\((\d+) older rules are left out`).FindStringSubmatch(note)
	if m == nil {
		t.Fatalf("the note does not say rules were left out:\n%.600s", note)
	}
	left, _ := strconv.Atoi(m[1])
	listed := strings.Count(note, "- Never touch file")
	if left+listed != 10000 || listed == 0 {
		t.Errorf("%d listed + %d said left out, want 10000", listed, left)
	}
	if !strings.Contains(note, "- Never touch file9999.go.") {
		t.Errorf("the newest rule is not listed")
	}
	if !strings.Contains(note, `recall({entryId: "u1"})`) {
		t.Errorf("the note does not say where recall finds the rest")
	}
}

func TestFilesSectionGroups(t *testing.T) {
	files := []FileChange{
		{Path: "/w/relay/note.go", Edits: 3},
		{Path: "/w/cmd/pi-session/main.go", Edits: 1},
		{Path: "/w/relay/facts.go", Write: true},
		{Path: "/elsewhere/x.txt", Write: true, Edits: 2},
		{Path: "README.md", Edits: 1},
	}
	got := filesSection(files, "/w", unlimited)
	want := "## Files changed (edit/write; by directory, latest first)\n" +
		"- relay/: note.go (3 edits), facts.go (written)\n" +
		"- cmd/pi-session/: main.go (1 edit)\n" +
		"- /elsewhere/: x.txt (written, 2 edits)\n" +
		"- ./: README.md (1 edit)\n"
	if got != want {
		t.Errorf("filesSection:\n%s\nwant:\n%s", got, want)
	}
	small := filesSection(files, "/w", 120)
	if runes(small) > 120 || !strings.Contains(small, "more)") {
		t.Errorf("filesSection at 120: %d characters, want at most 120 and a count of the rest:\n%s", runes(small), small)
	}
}

// TestLayoutGivesOnlyWhatItMust: a 90 KB last answer is cut to what the
// note has room for, not to its own limit while the room stays empty.
func TestLayoutGivesOnlyWhatItMust(t *testing.T) {
	f := Facts{Answer: strings.Repeat("filler line of the long report. ", 3000)}
	lim := DefaultConfig().Limits
	note := Layout(f, nil, nil, meta, lim)
	if n := runes(note); n > lim.Total || n < lim.Total-300 {
		t.Errorf("the note has %d characters: want the answer to fill it up to about %d", n, lim.Total)
	}
}
