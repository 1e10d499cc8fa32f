package status

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/pi-session/pi-session/golden"
)

func TestWindow(t *testing.T) {
	names := []string{"a", "b", "c", "d", "e"}
	for _, tc := range []struct {
		cursor string
		limit  int
		want   []string
	}{
		{"", 2, []string{"a", "b"}},
		{"", 10, names},
		{"b", 2, []string{"c", "d"}},
		{"d", 2, []string{"e"}},
		{"e", 2, []string{"a", "b"}},  // past the end: wrap
		{"zz", 2, []string{"a", "b"}}, // after every name: wrap
		{"bb", 2, []string{"c", "d"}}, // a removed name: continue after it
		{"0", 1, []string{"a"}},       // before every name
		{"c", 0, []string{}},          // a zero limit examines nothing
	} {
		got := Window(names, tc.cursor, tc.limit)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Window(%v, %q, %d) (-want +got):\n%s", names, tc.cursor, tc.limit, diff)
		}
	}
	if got := Window(nil, "x", 5); len(got) != 0 {
		t.Errorf("Window(nil) = %v, want empty", got)
	}
}

// pruneCase is a golden scenario in testdata/prune/*.json.
type pruneCase struct {
	Comment string    `json:"comment"`
	Now     time.Time `json:"now"`
	Current string    `json:"current"`
	Cursor  string    `json:"cursor"`
	Limit   int       `json:"limit"`
	Examine *int      `json:"examine"` // examine only this many of the window (the budget ran out)
	Records []struct {
		Name      string `json:"name"`
		SessionID string `json:"sessionId"`
		Age       string `json:"age"`
		Err       string `json:"err"`
		PID       int    `json:"pid"`
		Marker    string `json:"marker"`
	} `json:"records"`
	PIDs    map[string]string `json:"pids"`
	Markers map[string]string `json:"markers"`
}

func TestPlanPruneGolden(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "prune", "*.json"))
	if len(files) == 0 {
		t.Fatal("no scenarios in testdata/prune")
	}
	pidStates := map[string]PIDState{"alive": PIDAlive, "dead": PIDDead, "eperm": PIDDenied, "unknown": PIDUnknown}
	markerStates := map[string]MarkerState{"gone": MarkerGone, "retained": MarkerRetained, "unknown": MarkerUnknown}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var pc pruneCase
			if err := json.Unmarshal(b, &pc); err != nil {
				t.Fatal(err)
			}
			in := PruneInput{Now: pc.Now, MaxAge: DefaultMaxAge, Current: pc.Current, PIDs: map[int]PIDState{}, Markers: map[string]MarkerState{}}
			byName := map[string]Candidate{}
			var names []string
			for _, r := range pc.Records {
				age, err := time.ParseDuration(r.Age)
				if err != nil {
					t.Fatal(err)
				}
				byName[r.Name] = Candidate{Name: r.Name, ModTime: pc.Now.Add(-age), Err: r.Err, SessionID: r.SessionID, PID: r.PID, Marker: r.Marker}
				names = append(names, r.Name)
			}
			slices.Sort(names)
			if len(names) > 0 {
				in.Last = names[len(names)-1]
			}
			for k, v := range pc.PIDs {
				pid, _ := strconv.Atoi(k)
				in.PIDs[pid] = pidStates[v]
			}
			for k, v := range pc.Markers {
				in.Markers[k] = markerStates[v]
			}
			window := Window(names, pc.Cursor, pc.Limit)
			if pc.Examine != nil {
				window = window[:*pc.Examine]
			}
			for _, n := range window {
				in.Examined = append(in.Examined, byName[n])
			}
			plan := PlanPrune(in)

			var out strings.Builder
			fmt.Fprintf(&out, "# %s\ncursor %q, limit %d\nexamined: %s\n", pc.Comment, pc.Cursor, pc.Limit, strings.Join(window, " "))
			for _, d := range plan.Remove {
				fmt.Fprintf(&out, "remove %-28s %s\n", d.Name, d.Reason)
			}
			for _, d := range plan.Keep {
				fmt.Fprintf(&out, "keep   %-28s %s\n", d.Name, d.Reason)
			}
			fmt.Fprintf(&out, "next cursor: %q\n", plan.Next)
			golden.Check(t, filepath.Join("testdata", "prune", name+".golden"), out.String())
		})
	}
}

// TestPlanPruneRemovesOnlyConfirmedDead states the rule directly: over every
// combination of facts, a record is removed only when all conditions hold.
func TestPlanPruneRemovesOnlyConfirmedDead(t *testing.T) {
	now := t0
	for _, current := range []bool{false, true} {
		for _, corrupt := range []bool{false, true} {
			for _, age := range []time.Duration{time.Hour, DefaultMaxAge, DefaultMaxAge + time.Nanosecond} {
				for _, pid := range []int{0, 7} {
					for _, ps := range []PIDState{PIDUnknown, PIDAlive, PIDDead, PIDDenied} {
						for _, marker := range []string{"", "/m"} {
							for _, ms := range []MarkerState{MarkerUnknown, MarkerGone, MarkerRetained} {
								c := Candidate{Name: "s.json", ModTime: now.Add(-age), PID: pid, Marker: marker}
								if corrupt {
									c.Err = "corrupt"
								}
								cur := ""
								if current {
									cur = "s"
								}
								plan := PlanPrune(PruneInput{
									Now: now, MaxAge: DefaultMaxAge, Current: cur, Last: "s.json",
									Examined: []Candidate{c}, PIDs: map[int]PIDState{7: ps}, Markers: map[string]MarkerState{"/m": ms},
								})
								want := !current && !corrupt && age > DefaultMaxAge && pid > 0 && ps == PIDDead && (marker == "" || ms == MarkerGone)
								if got := len(plan.Remove) == 1; got != want || len(plan.Remove)+len(plan.Keep) != 1 {
									t.Errorf("PlanPrune(%+v, current=%v, pid %v, marker %v) = %+v, want remove=%v", c, current, ps, ms, plan, want)
								}
							}
						}
					}
				}
			}
		}
	}
}

// scanWindow, the pass's one-read version of Window, agrees with it.
func TestScanWindowIsWindow(t *testing.T) {
	s := NewStore(t.TempDir())
	rng := rand.New(rand.NewPCG(1, 2))
	var names []string
	for i := 0; i < 60; i++ {
		id := fmt.Sprintf("%c%03d", 'a'+rng.IntN(6), rng.IntN(1000))
		if !slices.Contains(names, id+".json") {
			names = append(names, id+".json")
			writeRaw(t, s, id+".json", "{}")
		}
	}
	writeRaw(t, s, ".last-prune", "{}")
	writeRaw(t, s, ".a000.json.tmp-1", "{}")
	slices.Sort(names)
	cursors := []string{"", "0", "zzz", names[0], names[len(names)-1], names[len(names)/2], "c", "c500.json"}
	for _, cursor := range cursors {
		for _, limit := range []int{0, 1, 7, 59, 60, 61, 5000} {
			got, last, err := s.scanWindow(cursor, limit)
			if err != nil {
				t.Fatal(err)
			}
			want := Window(names, cursor, limit)
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" || last != names[len(names)-1] {
				t.Errorf("scanWindow(%q, %d) = %v, last %q; Window (-want +got):\n%s", cursor, limit, got, last, diff)
			}
		}
	}
}
