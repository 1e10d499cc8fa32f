package rotate

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pi-session/pi-session/golden"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 6_789_000, time.UTC) // stamps as 20260102T030405006Z

func TestPlanGolden(t *testing.T) {
	cases := []struct {
		name  string
		live  string
		keep  int
		now   time.Time
		names []string
	}{
		{name: "empty", live: "events.jsonl", keep: 5, now: t0, names: []string{"events.jsonl"}},
		{name: "same_millisecond", live: "events.jsonl", keep: 5, now: t0, names: []string{
			"events.jsonl", "events-20260102T030405006Z.jsonl",
		}},
		{name: "same_millisecond_again", live: "events.jsonl", keep: 5, now: t0, names: []string{
			"events.jsonl", "events-20260102T030405006Z.jsonl", "events-20260102T030405006Z-001.jsonl",
		}},
		{name: "counter_past_999", live: "events.jsonl", keep: 3, now: t0, names: []string{
			"events-20260102T030405006Z-999.jsonl", "events-20260102T030405006Z-998.jsonl",
		}},
		{name: "keep_five_events", live: "events.jsonl", keep: 5, now: t0, names: []string{
			"events.jsonl",
			"events-20251230T000000000Z.jsonl",
			"events-20251231T000000000Z.jsonl",
			"events-20251229T000000000Z.jsonl",
			"events-20260101T000000000Z.jsonl",
			"events-20260101T000000000Z-001.jsonl",
			"events-20260101T120000000Z.jsonl",
		}},
		{name: "keep_two_turns", live: "turns.jsonl", keep: 2, now: t0, names: []string{
			"turns.jsonl",
			"turns-20251231T000000000Z.jsonl",
			"turns-20260101T000000000Z.jsonl",
			"turns-20260102T000000000Z.jsonl",
			"events-20250101T000000000Z.jsonl",
		}},
		{name: "counter_orders_within_millisecond", live: "events.jsonl", keep: 2, now: t0, names: []string{
			"events-20260101T000000000Z-010.jsonl",
			"events-20260101T000000000Z-009.jsonl",
			"events-20260101T000000000Z.jsonl",
		}},
		{name: "clock_went_back", live: "events.jsonl", keep: 2, now: t0, names: []string{
			"events-20300101T000000000Z.jsonl",
			"events-20260101T000000000Z.jsonl",
		}},
		{name: "foreign_names_left_alone", live: "events.jsonl", keep: 1, now: t0, names: []string{
			"events.jsonl",
			"events.jsonl.lock",
			"events-notes.jsonl",
			"events-20260230T000000000Z.jsonl",     // no such day
			"events-20260101T000000000Z-000.jsonl", // counter 0 is spelled without suffix
			"events-20260101T000000000Z-0001.jsonl",
			"events-20260101T000000000z.jsonl",
			"events-20260101T000000000Z.json",
			".events-20260101T000000000Z.jsonl.tmp-1",
			"events-extra-20260101T000000000Z.jsonl",
			"context-events.jsonl",
			"turns-20260101T000000000Z.jsonl",
			"events-20251231T000000000Z.jsonl",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := Plan(tc.live, tc.names, tc.now, Policy{Keep: tc.keep})
			var b strings.Builder
			fmt.Fprintf(&b, "live: %s\nkeep: %d\nnow: %s\nfiles:\n", tc.live, tc.keep, tc.now.Format(time.RFC3339Nano))
			for _, n := range tc.names {
				fmt.Fprintf(&b, "  %s\n", n)
			}
			fmt.Fprintf(&b, "rename to: %s\nremove:\n", r.Archive)
			for _, n := range r.Remove {
				fmt.Fprintf(&b, "  %s\n", n)
			}
			golden.Check(t, filepath.Join("testdata", "plan", tc.name+".golden"), b.String())
		})
	}
}

func TestPlanKeepsNewArchiveNewest(t *testing.T) {
	// Whatever exists, the archive being created is never among the removed.
	names := []string{
		"events-20990101T000000000Z-999.jsonl",
		"events-20990101T000000000Z.jsonl",
		"events-20000101T000000000Z.jsonl",
	}
	for keep := 1; keep <= 4; keep++ {
		r := Plan("events.jsonl", names, t0, Policy{Keep: keep})
		for _, n := range r.Remove {
			if n == r.Archive {
				t.Errorf("Plan(keep=%d) removes its own archive %s", keep, n)
			}
		}
		if got, want := len(r.Remove), max(0, len(names)+1-keep); got != want {
			t.Errorf("Plan(keep=%d) removes %d archives, want %d", keep, got, want)
		}
	}
}

func TestParseArchive(t *testing.T) {
	stamp := time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.UTC)
	for _, tc := range []struct {
		name string
		ok   bool
		want Archive
	}{
		{"events-20260102T030405006Z.jsonl", true, Archive{Stamp: stamp}},
		{"events-20260102T030405006Z-001.jsonl", true, Archive{Stamp: stamp, Counter: 1}},
		{"events-20260102T030405006Z-1234.jsonl", true, Archive{Stamp: stamp, Counter: 1234}},
		{"events-20260102T030405006Z-000.jsonl", false, Archive{}},
		{"events-20260102T030405006Z-01.jsonl", false, Archive{}},
		{"events-20260102T030405006Z-0001.jsonl", false, Archive{}},
		{"events-20260102T030405006Z-.jsonl", false, Archive{}},
		{"events-20260102T030405006.jsonl", false, Archive{}},
		{"events-20260102T030405006Z", false, Archive{}},
		{"events-2026-01-02T030405006Z.jsonl", false, Archive{}},
		{"events-20261302T030405006Z.jsonl", false, Archive{}},
		{"events-20260102T250405006Z.jsonl", false, Archive{}},
		{"events-20260102T030405+06Z.jsonl", false, Archive{}},
		{"events-20260102T030405006Z-99999999999999999999.jsonl", false, Archive{}},
		{"turns-20260102T030405006Z.jsonl", false, Archive{}},
		{"events.jsonl", false, Archive{}},
	} {
		got, ok := ParseArchive("events", tc.name)
		if ok != tc.ok {
			t.Errorf("ParseArchive(%q) ok = %v, want %v", tc.name, ok, tc.ok)
			continue
		}
		if ok {
			tc.want.Name = tc.name
			if !got.Stamp.Equal(tc.want.Stamp) || got.Counter != tc.want.Counter || got.Name != tc.want.Name {
				t.Errorf("ParseArchive(%q) = %+v, want %+v", tc.name, got, tc.want)
			}
		}
	}
}

// FuzzParseArchive checks that every name ParseArchive accepts is the
// canonical spelling of what it parsed, and that formatting round-trips.
func FuzzParseArchive(f *testing.F) {
	f.Add("events", "events-20260102T030405006Z.jsonl", int64(0), 0)
	f.Add("events", "events-20260102T030405006Z-001.jsonl", int64(1767323045006), 1)
	f.Add("turns", "turns-00010101T000000000Z-999.jsonl", int64(-1), 999)
	f.Add("a-b", "a-b-20991231T235959999Z.jsonl", int64(4102444799999), 12345)
	f.Fuzz(func(t *testing.T, base, name string, ms int64, counter int) {
		if a, ok := ParseArchive(base, name); ok {
			if again := ArchiveName(base, a.Stamp, a.Counter); again != name {
				t.Fatalf("ParseArchive(%q, %q) = %+v, which formats as %q", base, name, a, again)
			}
			if a.Counter < 0 || a.Stamp.Location() != time.UTC {
				t.Fatalf("ParseArchive(%q, %q) = %+v: negative counter or not UTC", base, name, a)
			}
		}
		// Years 0..9999 in UTC and counters 0..999999999 format canonically.
		if counter < 0 || counter > 999_999_999 || strings.ContainsAny(base, "/\x00") {
			return
		}
		ts := time.UnixMilli(ms % 253402300799999).UTC()
		if ts.Year() < 0 || ts.Year() > 9999 {
			return
		}
		n := ArchiveName(base, ts, counter)
		a, ok := ParseArchive(base, n)
		if !ok || !a.Stamp.Equal(ts) || a.Counter != counter {
			t.Fatalf("ParseArchive(ArchiveName(%q, %v, %d) = %q) = %+v, %v", base, ts, counter, n, a, ok)
		}
	})
}
