package offload

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/pi-session/pi-session/rotate"
)

// Event is one telemetry record of .pi/context-store/context-events.jsonl.
// It holds sizes, strategies and fingerprints, never payload text, query
// text or paths.
type Event struct {
	V       int    `json:"v"`
	Time    string `json:"ts"`
	Session string `json:"session,omitempty"`
	// Type: "offload" (a result replaced), "keep" (a large result left
	// inline), "rerun" (an offloaded call run again), "read", "summarize",
	// "store" (ctx_offload), "read-error", "program-output" (the result of
	// a program that read handles).
	Type     string `json:"type"`
	Tool     string `json:"tool,omitempty"`
	Strategy string `json:"strategy,omitempty"` // offload, turn-budget, error, edit
	Reason   string `json:"reason,omitempty"`   // why a result stayed inline
	Shape    string `json:"shape,omitempty"`

	OriginalBytes int64 `json:"originalBytes,omitempty"`
	StoredBytes   int64 `json:"storedBytes,omitempty"`
	VisibleBytes  int64 `json:"visibleBytes,omitempty"`
	ReturnedBytes int64 `json:"returnedBytes,omitempty"`
	// FullBytes is what the tool produced in full when its result held only
	// part of it (the full-output file's size, or the size the tool
	// reported); 0 when the result was whole or the size is unknown.
	FullBytes int64 `json:"fullBytes,omitempty"`

	HandleFP string `json:"handleFp,omitempty"` // SHA-256 fingerprint of the handle
	InputFP  string `json:"inputFp,omitempty"`  // SHA-256 fingerprint of tool name and input
	Repeat   bool   `json:"repeat,omitempty"`
	Dedup    bool   `json:"dedup,omitempty"`
	Artifact string `json:"artifact,omitempty"` // "recovered" or "unrecovered"

	Mode      string `json:"mode,omitempty"`
	InProgram bool   `json:"inProgram,omitempty"`
	FromZero  bool   `json:"fromZero,omitempty"`
	Matches   *int   `json:"matches,omitempty"`
	Error     string `json:"error,omitempty"` // an error class: not-found, expired, argument, regex, jsonpath, internal
}

// HandleFP fingerprints a handle for telemetry.
func HandleFP(handle string) string {
	s := sha256.Sum256([]byte("ce-handle\x00" + handle))
	return hex.EncodeToString(s[:8])
}

// InputFP fingerprints a tool call by its name and input.
func InputFP(tool string, input json.RawMessage) string {
	h := sha256.New()
	h.Write([]byte(tool))
	h.Write([]byte{0})
	h.Write(input)
	return hex.EncodeToString(h.Sum(nil)[:8])
}

const eventsBase = "context-events"

// eventsPolicy rotates the events log at 10 MiB and keeps 3 archives.
var eventsPolicy = rotate.Policy{MaxBytes: 10 << 20, Keep: 3}

type telemetry struct {
	dir string
	log *rotate.Log
	now func() time.Time
}

func newTelemetry(dir string, now func() time.Time) (*telemetry, error) {
	l, err := rotate.New(filepath.Join(dir, eventsBase+".jsonl"), eventsPolicy)
	if err != nil {
		return nil, fmt.Errorf("offload: telemetry: %w", err)
	}
	return &telemetry{dir: dir, log: l, now: now}, nil
}

func (t *telemetry) record(ev Event) error {
	ev.V = 1
	ev.Time = t.now().UTC().Format(time.RFC3339Nano)
	if err := t.log.AppendJSON(ev); err != nil {
		return fmt.Errorf("offload: telemetry: %w", err)
	}
	return nil
}

// files lists the archives oldest first, then the live file.
func (t *telemetry) files() ([]string, error) {
	ents, err := os.ReadDir(t.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("offload: telemetry: %w", err)
	}
	var archives []rotate.Archive
	live := ""
	for _, e := range ents {
		if e.Name() == eventsBase+".jsonl" {
			live = e.Name()
			continue
		}
		if a, ok := rotate.ParseArchive(eventsBase, e.Name()); ok {
			archives = append(archives, a)
		}
	}
	sort.Slice(archives, func(i, j int) bool {
		if !archives[i].Stamp.Equal(archives[j].Stamp) {
			return archives[i].Stamp.Before(archives[j].Stamp)
		}
		return archives[i].Counter < archives[j].Counter
	})
	var out []string
	for _, a := range archives {
		out = append(out, filepath.Join(t.dir, a.Name))
	}
	if live != "" {
		out = append(out, filepath.Join(t.dir, live))
	}
	return out, nil
}

// badLines counts the telemetry lines events skipped and describes the
// first: a fragment of an append cut short, or a line that is no event.
type badLines struct {
	N     int
	First string
}

func (b *badLines) add(what string) {
	if b.N == 0 {
		b.First = what
	}
	b.N++
}

// events reads every recorded event in order; lines that are not events are
// skipped and counted (rotate.ReadLines reports fragments with their place).
func (t *telemetry) events() ([]Event, badLines, error) {
	var bad badLines
	files, err := t.files()
	if err != nil {
		return nil, bad, err
	}
	var out []Event
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // rotated away meanwhile
			}
			return nil, bad, fmt.Errorf("offload: telemetry: %w", err)
		}
		err = rotate.ReadLines(f, filepath.Base(name), 1<<20, func(line []byte) error {
			var ev Event
			if json.Unmarshal(line, &ev) != nil || ev.Type == "" {
				bad.add(fmt.Sprintf("%s: a JSON line that is not an event", filepath.Base(name)))
				return nil
			}
			out = append(out, ev)
			return nil
		}, func(fr rotate.Fragment) { bad.add(fr.String()) })
		f.Close()
		if err != nil {
			return nil, bad, fmt.Errorf("offload: telemetry: %w", err)
		}
	}
	return out, bad, nil
}

// clear removes the live log and its archives.
func (t *telemetry) clear() (int, error) {
	files, err := t.files()
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, f := range files {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("offload: telemetry: %w", err))
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

func (t *telemetry) close() error { return t.log.Close() }
