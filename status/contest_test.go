package status

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

// Where two processes meet over one record. The test binary doubles as
// the contending processes: with STATUS_CHILD set, TestMain runs one.

func TestMain(m *testing.M) {
	if mode := os.Getenv("STATUS_CHILD"); mode != "" {
		if err := contender(mode); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// tally is what one contending process did.
type tally struct {
	PID     int `json:"pid"`
	OK      int `json:"ok"`
	Refused int `json:"refused"`
	Busy    int `json:"busy"` // ErrBusy: the lock was not had in time (a loaded machine)
	Other   int `json:"other"`
	Removed int `json:"removed"`
}

// contender waits for STATUS_START to exist, then, as its mode says:
//
//	claim  calls Update on session STATUS_ID STATUS_N times as itself,
//	       once STATUS_WINDOW exists when that is set
//	prune  runs forced pruning passes until STATUS_DONE exists, creating
//	       STATUS_WINDOW and pausing between the last look at a record and
//	       its removal
//
// prints its tally, and stays alive (still owning what it claimed) until
// STATUS_DONE exists.
func contender(mode string) error {
	s := NewStore(os.Getenv("STATUS_STATE"))
	start, done, id := os.Getenv("STATUS_START"), os.Getenv("STATUS_DONE"), os.Getenv("STATUS_ID")
	window := os.Getenv("STATUS_WINDOW")
	n, _ := strconv.Atoi(os.Getenv("STATUS_N"))
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	for !exists(start) {
		time.Sleep(time.Millisecond)
	}
	self, err := Identify(os.Getpid())
	if err != nil {
		return err
	}
	out := tally{PID: os.Getpid()}
	switch mode {
	case "claim":
		for deadline := time.Now().Add(5 * time.Second); window != "" && !exists(window) && time.Now().Before(deadline); {
			time.Sleep(100 * time.Microsecond)
		}
		for i := 0; i < n; i++ {
			err := s.Update(id, self, func(r *Record) { r.Cwd = "/by/" + strconv.Itoa(os.Getpid()) })
			switch {
			case err == nil:
				out.OK++
			case errors.Is(err, ErrNotOwner):
				out.Refused++
			case errors.Is(err, ErrBusy):
				out.Busy++
			default:
				fmt.Fprintln(os.Stderr, err)
				out.Other++
			}
		}
	case "prune":
		// Hold the window between the last look at a record and its
		// removal open, and say so: the claimer writes right then, which
		// without the store's lock would replace the record just before
		// its removal.
		removeHook = func() {
			os.WriteFile(window, nil, 0o600)
			time.Sleep(20 * time.Millisecond)
		}
		for !exists(done) {
			rep, err := s.Prune(PruneOptions{Force: true, Current: "none", Events: discard{}})
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				out.Other++
			}
			out.Removed += len(rep.Removed)
			out.OK++
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		return err
	}
	for !exists(done) {
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

type discard struct{}

func (discard) AppendJSON(any) error { return nil }

// contest starts the given contenders, lets them go at once, reads their
// tallies, then lets them exit.
func contest(t *testing.T, state, id string, modes []string, n int, beforeDone func()) []tally {
	t.Helper()
	dir := t.TempDir()
	start, done, window := filepath.Join(dir, "start"), filepath.Join(dir, "done"), filepath.Join(dir, "window")
	type proc struct {
		cmd *exec.Cmd
		out *bufio.Reader
	}
	var procs []proc
	if !slices.Contains(modes, "prune") {
		window = "" // claimers wait for a pruner's window only when there is one
	}
	for _, mode := range modes {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "STATUS_CHILD="+mode, "STATUS_STATE="+state, "STATUS_ID="+id,
			"STATUS_N="+strconv.Itoa(n), "STATUS_START="+start, "STATUS_DONE="+done, "STATUS_WINDOW="+window)
		cmd.Stderr = os.Stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, proc{cmd, bufio.NewReader(stdout)})
	}
	t.Cleanup(func() { // a failed test must not leave contenders waiting
		os.WriteFile(done, nil, 0o600)
		for _, p := range procs {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	})
	os.WriteFile(start, nil, 0o600)
	var tallies []tally
	for i, p := range procs {
		if modes[i] == "prune" {
			continue
		}
		var tl tally
		line, err := p.out.ReadBytes('\n')
		if err != nil || json.Unmarshal(line, &tl) != nil {
			t.Fatalf("contender %d said %q: %v", i, line, err)
		}
		tallies = append(tallies, tl)
	}
	if beforeDone != nil {
		beforeDone()
	}
	os.WriteFile(done, nil, 0o600)
	for i, p := range procs {
		if modes[i] == "prune" {
			var tl tally
			line, _ := p.out.ReadBytes('\n')
			json.Unmarshal(line, &tl)
			tallies = append(tallies, tl)
		}
		if err := p.cmd.Wait(); err != nil {
			t.Fatalf("contender %d: %v", i, err)
		}
	}
	return tallies
}

// TestOneOwnerAmongRacingWriters: eight live processes write the same
// session's record at once, many times. The first to write owns it; while
// it lives every other write is refused, and the record on disk is always
// the owner's. Rounds of the contest are counted.
func TestOneOwnerAmongRacingWriters(t *testing.T) {
	rounds, writers, n := 12, 8, 40
	if testing.Short() {
		rounds = 3
	}
	var oks, refused, busy int
	for round := 0; round < rounds; round++ {
		state := t.TempDir()
		modes := make([]string, writers)
		for i := range modes {
			modes[i] = "claim"
		}
		id := "s" + strconv.Itoa(round)
		var final *Record
		tallies := contest(t, state, id, modes, n, func() {
			var err error
			if final, err = NewStore(state).Read(id); err != nil {
				t.Fatal(err)
			}
		})
		owners := 0
		for _, tl := range tallies {
			oks, refused, busy = oks+tl.OK, refused+tl.Refused, busy+tl.Busy
			if tl.Other > 0 {
				t.Errorf("round %d: pid %d got %d unexpected errors", round, tl.PID, tl.Other)
			}
			if tl.OK == 0 {
				continue
			}
			owners++
			if tl.OK+tl.Busy != n || final.PID != tl.PID || final.Cwd != "/by/"+strconv.Itoa(tl.PID) {
				t.Errorf("round %d: owner pid %d wrote %d of %d times; the record is pid %d's (%s)", round, tl.PID, tl.OK, n, final.PID, final.Cwd)
			}
		}
		if owners != 1 {
			t.Errorf("round %d: %d processes wrote the record, want exactly one owner: %+v", round, owners, tallies)
		}
	}
	t.Logf("%d rounds x %d live writers x %d writes: %d written by the owners, %d refused, %d gave up waiting for the lock", rounds, writers, n, oks, refused, busy)
}

// TestPruneNeverRemovesAResumedRecord: a record old enough to prune, of a
// dead process, is taken over by a live process (a resumed session) just
// as a pruning pass is about to remove it, while another pass runs beside
// it. Once the takeover succeeded, the record must survive every pass.
func TestPruneNeverRemovesAResumedRecord(t *testing.T) {
	rounds := 12
	if testing.Short() {
		rounds = 3
	}
	recreated := 0
	for round := 0; round < rounds; round++ {
		state := t.TempDir()
		s := NewStore(state)
		path := recordFile(t, s, &Record{SessionID: "old", PID: 2147483646}, time.Now(), 30*24*time.Hour)
		var final *Record
		var finalErr error
		tallies := contest(t, state, "old", []string{"prune", "prune", "claim"}, 3, func() {
			time.Sleep(50 * time.Millisecond) // more passes after the takeover
			final, _, finalErr = readRecord(path)
		})
		claim := tallies[0] // the claimer's tally comes first
		removed := 0
		for _, tl := range tallies {
			if tl.Other > 0 {
				t.Errorf("round %d: pid %d got %d unexpected errors", round, tl.PID, tl.Other)
			}
			removed += tl.Removed
		}
		if claim.OK+claim.Busy != 3 || claim.OK == 0 {
			t.Errorf("round %d: the resuming process wrote %d of 3 times", round, claim.OK)
		}
		if finalErr != nil || final.PID != claim.PID {
			t.Errorf("round %d: the record resumed by pid %d was pruned after all: %+v, %v", round, claim.PID, final, finalErr)
		}
		if removed > 0 {
			recreated++
		}
	}
	t.Logf("%d rounds, each resuming the record while a pass held it for removal: %d kept; %d in which the pass removed the old record first and the resuming process wrote a new one", rounds, rounds, recreated)
}
