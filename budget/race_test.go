package budget

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Tests whose processes race run children: this test binary with
// BUDGET_CHILD set to the part they play.
func TestMain(m *testing.M) {
	switch os.Getenv("BUDGET_CHILD") {
	case "handoffs":
		os.Exit(handoffChild(os.Getenv("BUDGET_CHILD_AGENT"), os.Getenv("BUDGET_CHILD_CWD")))
	case "killed-host":
		os.Exit(killedHostChild(os.Getenv("BUDGET_CHILD_AGENT"), os.Getenv("BUDGET_CHILD_CWD")))
	}
	os.Exit(m.Run())
}

// handoffReply is what a child answers for one context_handoff.
type handoffReply struct {
	Path    string `json:"path"`
	IsError bool   `json:"isError"`
	Text    string `json:"text"`
}

// handoffChild is one pi's engine host: one line with a token on stdin
// makes a context_handoff whose goal names the token, one JSON reply on
// stdout, until stdin ends.
func handoffChild(agent, cwd string) int {
	vars := map[string]string{"PI_CODING_AGENT_DIR": agent, "HOME": filepath.Dir(agent)}
	eng, err := New(Options{Getenv: func(k string) string { return vars[k] }})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer eng.Close()
	p := Peer{SessionID: "race", Cwd: cwd}
	eng.Start(p, nil, StartParams{Model: "faux/faux-1"})
	in := bufio.NewScanner(os.Stdin)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		token := in.Text()
		args, _ := json.Marshal(map[string]string{"goal": "goal " + token, "next_step": "step " + token, "facts": "facts " + token, "launch_prompt": "prompt " + token})
		h := eng.Handoff(context.Background(), p, nil, HandoffParams{Args: args, ToolCallID: token})
		rep := handoffReply{IsError: h.IsError, Text: h.Text}
		if h.Details != nil {
			rep.Path = h.Details.Path
		}
		if err := out.Encode(rep); err != nil {
			return 1
		}
	}
	return 0
}

type childProc struct {
	in  io.WriteCloser
	out *json.Decoder
}

// startChild starts a child playing part with the variables env.
func startChild(t *testing.T, part string, env ...string) *childProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), "BUDGET_CHILD="+part), env...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		cmd.Wait()
	})
	return &childProc{in: in, out: json.NewDecoder(out)}
}

// raceRounds is how many times processes race: BUDGET_RACE_ROUNDS, else def.
func raceRounds(def int) int {
	if n, err := strconv.Atoi(os.Getenv("BUDGET_RACE_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return def
}

// TestTwoHandoffsAtOnce: two pi processes on one session (each with its
// engine host) call context_handoff at the same moment, many times. Each
// must get a handoff of its own: its document, sidecar and launch prompt,
// none replaced by the other's.
func TestTwoHandoffsAtOnce(t *testing.T) {
	e := bareEnv(t, `{"mode":"enforce"}`)
	cwd := filepath.Join(e.dir, "plain") // no repository: no git to wait for
	os.MkdirAll(cwd, 0o700)
	env := []string{"BUDGET_CHILD_AGENT=" + e.agent, "BUDGET_CHILD_CWD=" + cwd}
	a, b := startChild(t, "handoffs", env...), startChild(t, "handoffs", env...)
	rounds := raceRounds(200)
	var shared, foreign, refused int
	for i := 0; i < rounds; i++ {
		ta, tb := fmt.Sprintf("a%d", i), fmt.Sprintf("b%d", i)
		fmt.Fprintln(a.in, ta)
		fmt.Fprintln(b.in, tb)
		var ra, rb handoffReply
		if err := a.out.Decode(&ra); err != nil {
			t.Fatalf("round %d: child a: %v", i, err)
		}
		if err := b.out.Decode(&rb); err != nil {
			t.Fatalf("round %d: child b: %v", i, err)
		}
		for k, r := range []handoffReply{ra, rb} {
			token := []string{ta, tb}[k]
			if r.IsError {
				refused++
				t.Logf("round %d: %s refused: %s", i, token, r.Text)
				continue
			}
			if !ownHandoff(r.Path, token) {
				foreign++
			}
		}
		if !ra.IsError && !rb.IsError && ra.Path == rb.Path {
			shared++
		}
	}
	docs, _ := filepath.Glob(filepath.Join(cwd, ".ai-work", "handoffs", "race-*.md"))
	t.Logf("%d rounds of two handoffs at once: %d shared a number, %d handoffs hold another's document, sidecar or launch prompt, %d refused; %d files", rounds, shared, foreign, refused, len(docs))
	if shared > 0 || foreign > 0 || refused > 0 {
		t.Errorf("%d of %d rounds shared a handoff; %d of %d handoffs are not their own; %d refused", shared, rounds, foreign, 2*rounds, refused)
	}
	if want := 2 * 2 * rounds; len(docs) != want { // each: document and launch prompt
		t.Errorf("%d Markdown files, want %d", len(docs), want)
	}
}

// ownHandoff says whether the handoff at path, its sidecar and its launch
// prompt are all the one the call with token wrote.
func ownHandoff(path, token string) bool {
	doc, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(doc), "goal "+token+"\n") {
		return false
	}
	sc, err := ReadSidecar(path)
	if err != nil || sc.Args.Goal != "goal "+token || sc.Path != path || sc.ID != strings.TrimSuffix(filepath.Base(path), ".md") {
		return false
	}
	lp, err := os.ReadFile(sc.Launch)
	return err == nil && string(lp) == "prompt "+token
}

func TestNextN(t *testing.T) {
	tests := []struct {
		name  string
		files []string
		after int
		want  int
	}{
		{"empty", nil, 0, 1},
		{"after", nil, 4, 5},
		{"documents", []string{"s-1.md", "s-1.json", "s-3.md", "s-3.json"}, 0, 4},
		{"a sidecar alone takes its number", []string{"s-1.md", "s-1.json", "s-2.json"}, 0, 3},
		{"a document alone takes its number", []string{"s-5.md"}, 2, 6},
		{"launch prompts do not count", []string{"s-1.md", "s-7.launch-prompt.md"}, 0, 2},
		{"other sessions do not count", []string{"s-x-9.md", "t-8.md", "s-1.md", "s-+4.md", "s--4.json", "s-2.txt"}, 0, 2},
		{"temporary files do not count", []string{".s-6.md.tmp-123", "s-1.json"}, 0, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tt.files {
				os.WriteFile(filepath.Join(dir, f), nil, 0o600)
			}
			if got := NextN(dir, "s", tt.after); got != tt.want {
				t.Errorf("NextN(%v, after %d) = %d, want %d", tt.files, tt.after, got, tt.want)
			}
		})
	}
}

// TestWriteHandoffTakesItsNumber: a number taken by a sidecar or a
// document is refused with fs.ErrExist and nothing of the refused
// handoff is left; CreateHandoff then lays the handoff out again under
// the next number.
func TestWriteHandoffTakesItsNumber(t *testing.T) {
	dir := t.TempDir()
	mk := func(n int) (*Sidecar, string, error) {
		id := fmt.Sprintf("s-%d", n)
		return &Sidecar{Version: 1, ID: id, Path: filepath.Join(dir, id+".md"), Args: Args{Goal: "g", LaunchPrompt: "go on"}, Metadata: Metadata{N: n}}, fmt.Sprintf("# Handoff %s\n", id), nil
	}
	os.WriteFile(filepath.Join(dir, "s-1.json"), []byte("{}"), 0o600)    // another writer's, in progress
	os.WriteFile(filepath.Join(dir, "s-2.md"), []byte("# old\n"), 0o600) // an older writer's, no sidecar
	for n, why := range map[int]string{1: "sidecar", 2: "document"} {
		sc, doc, _ := mk(n)
		if err := WriteHandoff(dir, sc, doc); !errors.Is(err, fs.ErrExist) {
			t.Errorf("WriteHandoff over a taken %s = %v, want fs.ErrExist", why, err)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "s-1.json")); string(got) != "{}" {
		t.Errorf("the other writer's sidecar became %q", got)
	}
	for _, f := range []string{"s-2.json", "s-1.launch-prompt.md", "s-2.launch-prompt.md"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("a refused handoff left %s", f)
		}
	}
	tried := []int{}
	sc, doc, err := CreateHandoff(dir, "s", 0, func(n int) (*Sidecar, string, error) {
		tried = append(tried, n)
		if n == 3 { // another writer takes 3 while this one lays it out
			os.WriteFile(filepath.Join(dir, "s-3.json"), []byte("{}"), 0o600)
		}
		return mk(n)
	})
	if err != nil || sc.Metadata.N != 4 || doc != "# Handoff s-4\n" || !slices.Equal(tried, []int{3, 4}) {
		t.Fatalf("CreateHandoff = %+v, %q, %v after trying %v; want number 4 after 3", sc, doc, err, tried)
	}
	if !ownFiles(t, sc) {
		t.Errorf("handoff 4 is not whole")
	}
}

// ownFiles says whether sc's document, sidecar and launch prompt are there
// and its own.
func ownFiles(t *testing.T, sc *Sidecar) bool {
	t.Helper()
	got, err := ReadSidecar(sc.Path)
	lp, lerr := os.ReadFile(sc.Launch)
	_, derr := os.Stat(sc.Path)
	return err == nil && got.ID == sc.ID && lerr == nil && string(lp) == sc.Args.LaunchPrompt && derr == nil
}

// killedHostChild is an engine host killed during its one context_handoff
// (with toolCallId "kill"): it runs the handoff with the resume check of
// PI_RESUME_CHECK and then waits to be killed.
func killedHostChild(agent, cwd string) int {
	vars := map[string]string{"PI_CODING_AGENT_DIR": agent, "HOME": filepath.Dir(agent), "PI_RESUME_CHECK": os.Getenv("BUDGET_CHILD_CHECK")}
	eng, err := New(Options{Getenv: func(k string) string { return vars[k] }})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	p := Peer{SessionID: "kill", Cwd: cwd}
	eng.Start(p, nil, StartParams{Model: "faux/faux-1"})
	eng.Handoff(context.Background(), p, nil, HandoffParams{Args: []byte(`{"goal":"ship","next_step":"test","facts":"lexer done","launch_prompt":"go on"}`), ToolCallID: "kill"})
	fmt.Println("answered")
	select {}
}

// TestHostKilledDuringHandoff: an engine host is killed during its
// context_handoff, many times: half the tries in the middle of a long
// resume check, the others at points spread from the end of a short check
// over the writing of the files to after the answer. Another host then
// settles the call the way the extension asks it to (HandoffOutcome): a
// handoff whose document is on disk is taken over and waits for its
// commit; any other gets a tool error that says nothing was written and
// to call again. No process of the resume check outlives the killed host.
func TestHostKilledDuringHandoff(t *testing.T) {
	tries := raceRounds(40)
	const short = 30 * time.Millisecond
	var complete, torn, none, orphans, inCheck, wrong int
	for i := 0; i < tries; i++ {
		e := bareEnv(t, `{"mode":"enforce"}`)
		cwd := filepath.Join(e.dir, "plain")
		os.MkdirAll(cwd, 0o700)
		pids := filepath.Join(e.dir, "check-pids")
		long := i%2 == 0
		checkTime, delay := short, short-5*time.Millisecond+time.Duration(i)*short/time.Duration(tries)
		if long {
			// Killed in the middle: the check would run on for seconds.
			checkTime, delay = 5*time.Second, 10*time.Millisecond
			inCheck++
		}
		check := fmt.Sprintf(`sleep %.3f & echo "$$ $!" > %s.tmp; mv %s.tmp %s; wait; echo checked`, checkTime.Seconds(), pids, pids, pids)
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "BUDGET_CHILD=killed-host", "BUDGET_CHILD_AGENT="+e.agent, "BUDGET_CHILD_CWD="+cwd, "BUDGET_CHILD_CHECK="+check)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var checkPIDs []int
		for k := 0; len(checkPIDs) == 0; k++ {
			if b, err := os.ReadFile(pids); err == nil {
				for _, f := range strings.Fields(string(b)) {
					pid, _ := strconv.Atoi(f)
					checkPIDs = append(checkPIDs, pid)
				}
			}
			if k == 10000 {
				t.Fatal("the resume check never started")
			}
			time.Sleep(time.Millisecond)
		}
		time.Sleep(delay)
		cmd.Process.Kill()
		cmd.Wait()
		// The kernel signals them as the host dies; give them 200 ms.
		for _, pid := range checkPIDs {
			for k := 0; processRuns(pid); k++ {
				if k == 200 {
					if long {
						orphans++
					}
					syscall.Kill(pid, syscall.SIGKILL)
					break
				}
				time.Sleep(time.Millisecond)
			}
		}
		doc := filepath.Join(HandoffDir(cwd), "kill-1.md")
		_, derr := os.Stat(doc)
		_, serr := os.Stat(strings.TrimSuffix(doc, ".md") + ".json")
		// The host that takes over.
		eng := e.engine()
		a := eng.HandoffOutcome(Peer{SessionID: "kill", Cwd: cwd}, nil, "kill")
		switch {
		case derr == nil:
			complete++
			if a.IsError || a.View.Pending != doc || !strings.Contains(a.Text, "Handoff written to "+doc) {
				wrong++
				t.Errorf("try %d: a complete handoff was not taken over: %+v", i, a)
			}
		default:
			if serr == nil {
				torn++
			} else {
				none++
			}
			if !a.IsError || a.View.Pending != "" || !strings.Contains(a.Text, "Call context_handoff again") {
				wrong++
				t.Errorf("try %d: a handoff not written was not reported so: %+v", i, a)
			}
		}
	}
	t.Logf("%d hosts killed during context_handoff: %d handoffs complete, %d torn (a sidecar alone), %d not written; %d answers of the host taking over wrong; %d processes of the %d resume checks killed in their middle outlived their host",
		tries, complete, torn, none, wrong, orphans, inCheck)
	if orphans > 0 {
		t.Errorf("%d processes of resume checks outlived the host that started them", orphans)
	}
}

// bareEnv is newTestEnv without the repository.
func bareEnv(t *testing.T, config string) *testEnv {
	dir := t.TempDir()
	e := &testEnv{t: t, dir: dir, agent: filepath.Join(dir, "agent"), cwd: dir, now: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}
	os.MkdirAll(e.agent, 0o700)
	e.vars = map[string]string{"PI_CODING_AGENT_DIR": e.agent, "HOME": dir}
	if err := os.WriteFile(filepath.Join(e.agent, "context-budget.json"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return e
}

// processRuns reports whether pid runs (a zombie has exited).
func processRuns(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}
