package relay

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Two pi processes on one session, each with its own engine host, run
// /relay at the same moment: the test starts two child processes (this
// test binary with RELAY_RACE_CHILD set), each an engine of its own on the
// same agent directory, and releases both at once, many times. Every relay
// must get a note of its own: two different files, each holding exactly
// the note its compaction carries.

// raceReply is what a child answers for one relay.
type raceReply struct {
	N       int    `json:"n"`
	Path    string `json:"path"`
	Summary string `json:"summary"`
	Error   string `json:"error"`
}

// raceChild serves relays: one line "<token> <leaf id>" on stdin, one JSON
// reply on stdout, until stdin ends.
func raceChild(agentDir, sessionFile string) int {
	e := New(Options{AgentDir: agentDir, Git: func(context.Context, string, string) ([]string, error) { return nil, nil }})
	in := bufio.NewScanner(os.Stdin)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		token, leaf, _ := strings.Cut(in.Text(), " ")
		r, err := e.Note(context.Background(), openReader, DefaultConfig(), NoteRequest{SessionID: "race", SessionFile: sessionFile, LeafID: leaf, Token: token})
		rep := raceReply{N: r.N, Path: r.Details.NotePath, Summary: r.Summary}
		if err != nil {
			rep.Error = err.Error()
		}
		if err := out.Encode(rep); err != nil {
			return 1
		}
	}
	return 0
}

type raceProc struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *json.Decoder
}

func startRaceChild(t *testing.T, agentDir, sessionFile string) *raceProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "RELAY_RACE_CHILD="+agentDir, "RELAY_RACE_FILE="+sessionFile)
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
	p := &raceProc{cmd: cmd, in: in, out: json.NewDecoder(out)}
	t.Cleanup(func() {
		in.Close()
		cmd.Wait()
	})
	return p
}

// relayRaceRounds is how many times two relays race; RELAY_RACE_ROUNDS
// overrides it.
func relayRaceRounds() int {
	if n, err := strconv.Atoi(os.Getenv("RELAY_RACE_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return 200
}

func TestTwoRelaysAtOnce(t *testing.T) {
	t.Run("counter", func(t *testing.T) { twoRelaysAtOnce(t, false) })
	// A counter that cannot be used (here a directory in its place): the
	// exclusive creation of each note alone keeps the relays apart.
	t.Run("no counter", func(t *testing.T) { twoRelaysAtOnce(t, true) })
}

func twoRelaysAtOnce(t *testing.T, noCounter bool) {
	agent := t.TempDir()
	s := buildRecallSession(t)
	if noCounter {
		if err := os.MkdirAll(filepath.Join(agent, "context-relay", "race", lastName), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	a, b := startRaceChild(t, agent, s.path), startRaceChild(t, agent, s.path)
	rounds := relayRaceRounds()
	var shared, foreign, refused int
	for i := 0; i < rounds; i++ {
		// Both children are blocked reading stdin: one write each
		// releases them together. They relay different branches, so
		// that each note is told apart by its text.
		fmt.Fprintf(a.in, "a%d %s\n", i, s.last)
		fmt.Fprintf(b.in, "b%d %s\n", i, s.banana)
		var ra, rb raceReply
		if err := a.out.Decode(&ra); err != nil {
			t.Fatalf("round %d: child a: %v", i, err)
		}
		if err := b.out.Decode(&rb); err != nil {
			t.Fatalf("round %d: child b: %v", i, err)
		}
		for _, r := range []raceReply{ra, rb} {
			if r.Error != "" {
				refused++
				if r.Path != "" || r.Summary != "" {
					t.Errorf("round %d: a refused relay still names a note: %+v", i, r)
				}
				continue
			}
			data, err := os.ReadFile(r.Path)
			if err != nil || string(data) != r.Summary {
				foreign++ // the compaction would point at a note that is not its own
			}
		}
		if ra.Error == "" && rb.Error == "" && ra.Path == rb.Path {
			shared++
		}
	}
	ents, _ := filepath.Glob(filepath.Join(agent, "context-relay", "race", "*.md"))
	t.Logf("%d rounds of two relays at once: %d shared a note number, %d compactions point at a note not their own, %d refused; %d notes", rounds, shared, foreign, refused, len(ents))
	if shared > 0 || foreign > 0 {
		t.Errorf("%d of %d rounds shared a note; %d of %d relays point at a note not their own", shared, rounds, foreign, 2*rounds)
	}
	if refused > 0 {
		t.Errorf("%d of %d relays were refused; each should write its own note", refused, 2*rounds)
	}
	if want := 2*rounds - refused; len(ents) != want {
		t.Errorf("%d notes in the note directory, want %d (one per relay)", len(ents), want)
	}
	if tmp, _ := filepath.Glob(filepath.Join(agent, "context-relay", "race", ".*.tmp-*")); len(tmp) > 0 {
		t.Errorf("temporary files left: %v", tmp)
	}
}

// TestRemovedNoteNumberStaysTaken: a relay's note removed (an aborted
// relay: the engine and the extension remove it) does not free its
// number: the next relay, of another host, takes the next one, so the
// first relay's Discard, coming late, cannot remove another relay's note.
func TestRemovedNoteNumberStaysTaken(t *testing.T) {
	agent := t.TempDir()
	s := buildRecallSession(t)
	git := func(context.Context, string, string) ([]string, error) { return nil, nil }
	first, second := New(Options{AgentDir: agent, Git: git}), New(Options{AgentDir: agent, Git: git})
	a, err := first.Note(context.Background(), openReader, DefaultConfig(), NoteRequest{SessionID: "s", SessionFile: s.path, Token: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(a.Details.NotePath); err != nil { // as the extension does
		t.Fatal(err)
	}
	b, err := second.Note(context.Background(), openReader, DefaultConfig(), NoteRequest{SessionID: "s", SessionFile: s.path, LeafID: s.banana, Token: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if b.N != a.N+1 {
		t.Errorf("after note %d was removed the next relay took note %d, want %d", a.N, b.N, a.N+1)
	}
	first.Discard("a")
	if got, err := os.ReadFile(b.Details.NotePath); err != nil || string(got) != b.Summary {
		t.Errorf("the second relay's note after the first's Discard: %v, %.80q", err, got)
	}
}

func TestPeekNumber(t *testing.T) {
	dir := t.TempDir()
	if n := PeekNumber(dir); n != 1 {
		t.Errorf("PeekNumber of an empty directory = %d, want 1", n)
	}
	for want := 1; want <= 3; want++ {
		n, err := takeNumber(dir)
		if err != nil || n != want {
			t.Fatalf("takeNumber = %d, %v; want %d", n, err, want)
		}
	}
	// No note was written: the counter alone says 3 are taken.
	if n := PeekNumber(dir); n != 4 {
		t.Errorf("PeekNumber after three numbers = %d, want 4", n)
	}
	os.WriteFile(filepath.Join(dir, "9.md"), []byte("x"), 0o600)
	if n := PeekNumber(dir); n != 10 {
		t.Errorf("PeekNumber with note 9 = %d, want 10", n)
	}
	if n, _ := takeNumber(dir); n != 10 {
		t.Errorf("takeNumber with note 9 = %d, want 10", n)
	}
	os.WriteFile(filepath.Join(dir, lastName), []byte("garbage"), 0o600)
	if n := PeekNumber(dir); n != 10 {
		t.Errorf("PeekNumber with a damaged counter = %d, want 10 (the notes decide)", n)
	}
}
