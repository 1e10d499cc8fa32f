package rotate

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// stampLayout is the archive stamp without its milliseconds and zone letter:
// "20260102T030405" followed by "006Z" gives events-20260102T030405006Z.jsonl.
const stampLayout = "20060102T150405"

// Archive is the parsed name of one rotated file: <base>-<stamp>[-<counter>].jsonl.
type Archive struct {
	Name    string
	Stamp   time.Time // UTC, millisecond precision
	Counter int       // 0 for the first archive of a millisecond, then 1, 2, ...
}

// ArchiveName formats the name of an archive of base (the live file name
// without ".jsonl") stamped t (truncated to the millisecond, in UTC) with the
// given same-millisecond counter.
func ArchiveName(base string, t time.Time, counter int) string {
	t = t.UTC()
	name := fmt.Sprintf("%s-%s%03dZ", base, t.Format(stampLayout), t.Nanosecond()/int(time.Millisecond))
	if counter > 0 {
		name += fmt.Sprintf("-%03d", counter)
	}
	return name + ".jsonl"
}

// ParseArchive reports whether name is an archive of base in the canonical
// form ArchiveName writes, and returns its stamp and counter.
func ParseArchive(base, name string) (Archive, bool) {
	rest, ok := strings.CutPrefix(name, base+"-")
	if !ok {
		return Archive{}, false
	}
	rest, ok = strings.CutSuffix(rest, ".jsonl")
	// 15 characters of date and time, 3 of milliseconds, "Z".
	if !ok || len(rest) < 19 || rest[18] != 'Z' || !allDigits(rest[15:18]) {
		return Archive{}, false
	}
	t, err := time.Parse(stampLayout, rest[:15])
	if err != nil {
		return Archive{}, false
	}
	ms, _ := strconv.Atoi(rest[15:18])
	t = t.Add(time.Duration(ms) * time.Millisecond)
	counter := 0
	if suffix := rest[19:]; suffix != "" {
		if len(suffix) < 4 || suffix[0] != '-' || !allDigits(suffix[1:]) || len(suffix) > 10 {
			return Archive{}, false
		}
		counter, _ = strconv.Atoi(suffix[1:])
		if counter == 0 {
			return Archive{}, false
		}
	}
	// Only the canonical spelling counts, so that one archive has one name
	// (no "-0001", no "20260230" normalised to March).
	if ArchiveName(base, t, counter) != name {
		return Archive{}, false
	}
	return Archive{Name: name, Stamp: t, Counter: counter}, true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// before orders archives by stamp, then counter, then name.
func (a Archive) before(b Archive) bool {
	if !a.Stamp.Equal(b.Stamp) {
		return a.Stamp.Before(b.Stamp)
	}
	if a.Counter != b.Counter {
		return a.Counter < b.Counter
	}
	return a.Name < b.Name
}

// Rotation is what one rotation does: rename the live file to Archive, then
// delete Remove (the oldest archives beyond the policy's Keep).
type Rotation struct {
	Archive string
	Remove  []string
}

// Plan decides one rotation of the live file (for example "events.jsonl")
// given the names in its directory. The new archive is stamped now, or after
// the newest existing archive when the clock went backwards, so that it is
// always the newest and retention never deletes what was just rotated. Names
// that are not archives of this log are left alone.
func Plan(live string, names []string, now time.Time, p Policy) Rotation {
	p = p.withDefaults()
	base := strings.TrimSuffix(live, ".jsonl")
	var archives []Archive
	for _, n := range names {
		if a, ok := ParseArchive(base, n); ok {
			archives = append(archives, a)
		}
	}
	sort.Slice(archives, func(i, j int) bool { return archives[i].before(archives[j]) })

	stamp := now.UTC().Truncate(time.Millisecond)
	counter := 0
	if n := len(archives); n > 0 {
		newest := archives[n-1]
		if !stamp.After(newest.Stamp) {
			stamp, counter = newest.Stamp, newest.Counter+1
		}
	}
	r := Rotation{Archive: ArchiveName(base, stamp, counter)}
	if excess := len(archives) + 1 - p.Keep; excess > 0 {
		for _, a := range archives[:excess] {
			r.Remove = append(r.Remove, a.Name)
		}
	}
	return r
}
