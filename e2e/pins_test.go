package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pi-session/pi-session/pitest"
	"github.com/pi-session/pi-session/session"
)

// noteOf is the relay note a request carries: its first user message,
// when that is a compaction summary.
func noteOf(t *testing.T, r pitest.Request) string {
	t.Helper()
	for _, m := range r.Decoded() {
		if m.Role == "user" {
			if text := m.Text(); strings.HasPrefix(text, session.CompactionSummaryPrefix) {
				return text
			}
			break
		}
	}
	t.Fatalf("the request carries no note: %v", r.Decoded())
	return ""
}

// customEntries are a session file's custom entries of pi-session's
// types, in file order: {customType, data}.
func customEntries(t *testing.T, path string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(data(t, path))), "\n") {
		var e map[string]any
		if json.Unmarshal([]byte(line), &e) == nil && e["type"] == "custom" && strings.HasPrefix(e["customType"].(string), "pi-session:") {
			out = append(out, map[string]any{"customType": e["customType"], "data": e["data"]})
		}
	}
	return out
}

const pinsHeader = " on this branch (verbatim in every relay note and handoff; /unpin <n> removes one):"

// TestPinRelay: /pin with a rule and /pin alone (the last message) pin
// two rules the model never sees as messages; bad input is answered;
// /relay's note then begins with both, verbatim, and the next request
// carries it; /resume keeps them, and pi-session engine pins lists them
// as /pins does.
func TestPinRelay(t *testing.T) {
	e := pitest.NewEnv(t)
	prompts := append(slices.Clone(relayPrompts), "Each migration gets a down script.\nAnd it is tested.")
	steps := append(longSteps(len(prompts), 40000), map[string]any{"text": "after the relay"})
	e.Scenario(map[string]any{"steps": steps})
	rpc := startRelaySession(t, e)
	for _, p := range prompts {
		rpc.Prompt(p)
	}
	const rule = "Never force-push to a shared branch."
	for _, c := range []struct{ cmd, want string }{
		{"/pin " + rule, `pinned as 1: "` + rule + `"`},
		{"/pin", `pinned as 2: "Each migration gets a down script.` + "\n" + `And it is tested."`},
		{"/pin   " + rule + "  ", `/pin: already pinned as 1: "` + rule + `"`},
		{"/pin clear \x1b[2J screen", `/pin: the pin holds a control character (\x1b at character 7), which could reach the terminal: "clear \x1b[2J screen"; write the rule without it`},
		{"/pin " + strings.Repeat("x", 2001), "/pin: the pin is 2001 characters, over the limit of 2000; pin the rule itself, shorter"},
		{"/unpin", "/unpin: which pin? /unpin <n> with n from 1 to 2 (/pins lists them)"},
		{"/unpin two", `/unpin: "two" is not a pin number: /unpin <n> with n from 1 to 2 (/pins lists them)`},
		{"/unpin 3", "/unpin: there is no pin 3: this branch has 2 pins (/pins lists them)"},
		{"/pins", "2 pins" + pinsHeader + "\n  1. " + rule + "\n  2. Each migration gets a down script.\n     And it is tested."},
	} {
		mark := rpc.Prompt(c.cmd)
		if got := strings.Join(rpc.Notices(mark), "\n"); !strings.Contains(got, c.want) {
			t.Errorf("%.40q answered %q, want %q", c.cmd, got, c.want)
		}
	}
	before := len(e.Requests())
	for _, r := range e.Requests() {
		if b, _ := json.Marshal(r.Messages); strings.Contains(string(b), "force-push") {
			t.Fatalf("a pin reached the model as a message: request %d", r.N)
		}
	}
	mark := rpc.Prompt("/relay")
	if got := strings.Join(rpc.Notices(mark), "\n"); !strings.Contains(got, "context-relay: relayed") {
		t.Fatalf("/relay: %s\nstderr:\n%s", got, rpc.Stderr())
	}
	rpc.Prompt("p8: carry on")
	reqs := e.Requests()
	if len(reqs) != before+1 {
		t.Fatalf("%d requests after the relay, want 1", len(reqs)-before)
	}
	note := noteOf(t, reqs[before])
	section := "\n## Pinned rules (the user pinned these with /pin: verbatim, current until unpinned)\n- " + rule + "\n- Each migration gets a down script.\n  And it is tested.\n"
	i := strings.Index(note, section)
	if i < 0 || i != strings.Index(note, "\n## ") {
		t.Errorf("the note does not begin with the pins:\n%s", note)
	}
	if j := strings.Index(note, "## Constraints"); j >= 0 && j < i {
		t.Errorf("the constraints come before the pins")
	}
	sf := sessionFile(t, rpc)
	if code := rpc.Close(); code != 0 {
		t.Fatalf("pi exit %d; stderr:\n%s", code, rpc.Stderr())
	}

	// /resume: the same session file, a new pi, the same pins.
	rpc = startRelaySession(t, e, "--session", sf)
	mark = rpc.Prompt("/pins")
	want := "2 pins" + pinsHeader + "\n  1. " + rule + "\n  2. Each migration gets a down script.\n     And it is tested."
	if got := strings.Join(rpc.Notices(mark), "\n"); !strings.Contains(got, want) {
		t.Errorf("/pins after resuming: %q, want %q", got, want)
	}
	rpc.Close()
	out, err := e.Command(pitest.Binary(t), "engine", "pins", sf).CombinedOutput()
	if err != nil || string(out) != want+"\n" {
		t.Errorf("pi-session engine pins: %v\n%s\nwant:\n%s", err, out, want)
	}
}

// TestPinHandoffRelaunch: /pin twice, then /handoff under pi-session: the
// handoff begins with the pins; the relaunched pi's session starts with a
// pi-session:continues entry naming the previous session file and the
// handoff, and copies of the pins; its /pins lists them, and its next relay
// note carries them.
func TestPinHandoffRelaunch(t *testing.T) {
	e := pitest.NewEnv(t)
	if err := os.WriteFile(filepath.Join(e.Agent, "settings.json"), []byte(`{"compaction":{"keepRecentTokens":1}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	e.Scenario(map[string]any{"steps": []map[string]any{
		{"text": "faux: ${lastUser}"},
		{"tool": "context_handoff", "args": map[string]any{"goal": "keep going", "next_step": "continue", "facts": "none"}},
		{"text": "handed off"},
		{"text": "faux: ${lastUser}"},
		{"text": "faux: ${lastUser}"},
		{"text": "after the relay"},
	}})
	tm := pitest.StartTerm(t, e.Command(pitest.Binary(t), e.PiArgs()...))
	tm.WaitReady(1)
	tm.Submit("Keep every commit small.")
	tm.WaitFor("faux: Keep every commit small.")
	tm.Submit("/pin")
	tm.WaitFor(`pinned as 1: "Keep every commit small."`)
	tm.Submit("/pin Never push to main.")
	tm.WaitFor(`pinned as 2: "Never push to main."`)
	tm.Submit("/handoff")
	tm.WaitFor("pi-session: relaunching pi in ")
	tm.WaitReady(2)
	tm.WaitFor("pi-session: 2 pins carried over from the previous session (/pins lists them)")
	tm.WaitFor("faux: continue from")
	tm.Submit("/pins")
	tm.WaitFor("2 pins on this branch")
	tm.WaitFor("1. Keep every commit small.")
	tm.WaitFor("2. Never push to main.")
	tm.Submit("next")
	tm.WaitFor("faux: next")
	tm.Submit("/relay")
	tm.WaitFor("context-relay: relayed")
	tm.Submit("and now")
	tm.WaitFor("after the relay")

	reqs := e.Requests()
	if len(reqs) != 6 {
		t.Fatalf("model requests = %d, want 6", len(reqs))
	}
	m := regexp.MustCompile(`^continue from (/\S+\.md)$`).FindStringSubmatch(reqs[3].LastUser())
	if m == nil {
		t.Fatalf("the relaunched pi's first request = %q", reqs[3].LastUser())
	}
	handoff := m[1]
	const pinned = "- Keep every commit small.\n- Never push to main.\n"
	if doc := string(data(t, handoff)); !strings.Contains(doc, "## Pinned rules (the user pinned these with /pin: verbatim, current until unpinned)\n\n"+pinned+"\n## Goal") {
		t.Errorf("the handoff does not begin with the pins:\n%s", doc)
	}
	if note := noteOf(t, reqs[5]); !strings.Contains(note, "## Pinned rules (the user pinned these with /pin: verbatim, current until unpinned)\n"+pinned) {
		t.Errorf("the relaunched pi's note lacks the pins:\n%s", note)
	}
	files, _ := filepath.Glob(filepath.Join(e.Agent, "sessions", "*", "*.jsonl"))
	slices.Sort(files) // named by start time
	if len(files) != 2 {
		t.Fatalf("session files %v, want the first and the relaunched one", files)
	}
	first, second := customEntries(t, files[0]), customEntries(t, files[1])
	if len(first) != 2 {
		t.Errorf("the first session's entries: %v, want its two pins", first)
	}
	want := []map[string]any{
		{"customType": "pi-session:continues", "data": map[string]any{"sessionFile": files[0], "handoff": handoff}},
		{"customType": "pi-session:pin", "data": map[string]any{"text": "Keep every commit small.", "from": files[0]}},
		{"customType": "pi-session:pin", "data": map[string]any{"text": "Never push to main.", "from": files[0]}},
	}
	if b, w := mustJSON(second), mustJSON(want); b != w {
		t.Errorf("the relaunched session's entries:\n%s\nwant:\n%s", b, w)
	}
	out, err := exec.Command(pitest.Binary(t), "engine", "pins", files[1]).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "  1. Keep every commit small.\n  2. Never push to main.\n") {
		t.Errorf("engine pins of the relaunched session: %v\n%s", err, out)
	}
	tm.Submit("/quit")
	if code := tm.Wait(); code != 0 {
		t.Fatalf("exit status %d; screen:\n%s", code, tm.Screen())
	}
	assertNoMarkers(t, e)
}

func mustJSON(v any) string {
	b, _ := json.MarshalIndent(v, "", " ")
	return string(b)
}

// TestRelayDisabled: "enabled": false in context-relay.json: the model's
// requests declare no recall tool, /relay is no command (it goes to the
// model as text), no automatic relay runs, /pi-session says the relay is
// off, and /pin still works. With the file saying true, the same session
// has recall and /relay.
func TestRelayDisabled(t *testing.T) {
	for _, enabled := range []bool{false, true} {
		t.Run(map[bool]string{false: "off", true: "on"}[enabled], func(t *testing.T) {
			e := pitest.NewEnv(t)
			cfg := `{"enabled": false, "auto": {"inputMinTokens": 1000}}`
			if enabled {
				cfg = `{"enabled": true, "auto": {"onInput": false}}`
			}
			writeRelayConfig(t, e, cfg)
			e.Scenario(map[string]any{"steps": []map[string]any{{"text": "one", "filler": 8000}, {"text": "two"}, {"text": "three"}}})
			rpc := startRelaySession(t, e)
			rpc.Prompt("hello")
			mark := rpc.Prompt("a second prompt, past inputMinTokens")
			if strings.Contains(strings.Join(rpc.Notices(mark), "\n"), "auto relay") {
				t.Errorf("an automatic relay ran")
			}
			mark = rpc.Prompt("/relay")
			reqs := e.Requests()
			hasRecall := slices.Contains(reqs[0].Tools, "recall")
			if hasRecall != enabled || !slices.Contains(reqs[0].Tools, "context_handoff") {
				t.Errorf("the first request declares tools %v; recall among them = %v, want %v", reqs[0].Tools, hasRecall, enabled)
			}
			toModel := len(reqs) == 3 && reqs[2].LastUser() == "/relay"
			if toModel == enabled {
				t.Errorf("/relay went to the model as text = %v, want %v; notices %v", toModel, !enabled, rpc.Notices(mark))
			}
			mark = rpc.Prompt("/pi-session")
			report := strings.Join(rpc.Notices(mark), "\n")
			off := `relay     off ("enabled": false in ` + filepath.Join(e.Agent, "context-relay.json") + `): no /relay, no recall tool, no automatic relays; /pin still pins, and handoffs carry the pins`
			if strings.Contains(report, off) == enabled || strings.Contains(report, "relay     on;") != enabled || !strings.Contains(report, "pins      none on this branch (/pin <rule> pins one, /pins lists them)") {
				t.Errorf("/pi-session:\n%s", report)
			}
			mark = rpc.Prompt("/pin Keep it small.")
			if got := strings.Join(rpc.Notices(mark), "\n"); !strings.Contains(got, `pinned as 1: "Keep it small."`) {
				t.Errorf("/pin with the relay %v: %q", enabled, got)
			}
			rpc.Close()
		})
	}
}
