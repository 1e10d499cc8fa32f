// Package marker reads and writes relaunch markers, the files that authorize pi-session to start a fresh pi.
package marker

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/pi-session/pi-session/atomicfile"
)

// MaxSize is the largest marker file accepted. Markers hold four paths and an
// id; anything bigger is not a marker.
const MaxSize = 64 << 10

// Marker is the content of a relaunch marker file:
//
//	{"cwd": "/abs/dir", "launchPrompt": "/abs/prompt.md" | null,
//	 "handoff": "/abs/handoff.md", "sessionFile": "/abs/s.jsonl" | null,
//	 "launchId": "<PI_SESSION_LAUNCH_ID>"}
//
// launchId may be absent in markers written by other tools at the
// nonce-bearing path; unknown fields are ignored.
type Marker struct {
	Cwd          string  `json:"cwd"`
	LaunchPrompt *string `json:"launchPrompt"`
	Handoff      string  `json:"handoff"`
	SessionFile  *string `json:"sessionFile"`
	LaunchID     string  `json:"launchId,omitempty"`
}

// Errors returned by Parse and Read, for errors.Is.
var (
	ErrTooLarge   = errors.New("marker: larger than 64 KiB")
	ErrNotRegular = errors.New("marker: not a regular file")
	ErrSyntax     = errors.New("marker: not a JSON object")
	ErrField      = errors.New("marker: bad field")
)

// Parse decodes and checks a marker. Its errors name the offending field.
func Parse(data []byte) (Marker, error) {
	var m Marker
	if len(data) > MaxSize {
		return m, ErrTooLarge
	}
	var fields map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&fields); err != nil {
		return m, fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	if fields == nil {
		return m, fmt.Errorf("%w: got null", ErrSyntax)
	}
	if _, err := dec.Token(); err != io.EOF {
		return m, fmt.Errorf("%w: data after the object", ErrSyntax)
	}
	var err error
	if m.Cwd, err = requiredString(fields, "cwd"); err != nil {
		return Marker{}, err
	}
	if m.Handoff, err = requiredString(fields, "handoff"); err != nil {
		return Marker{}, err
	}
	if m.LaunchPrompt, err = nullableString(fields, "launchPrompt"); err != nil {
		return Marker{}, err
	}
	if m.SessionFile, err = nullableString(fields, "sessionFile"); err != nil {
		return Marker{}, err
	}
	if id, err := nullableString(fields, "launchId"); err != nil {
		return Marker{}, err
	} else if id != nil {
		m.LaunchID = *id
	}
	return m, nil
}

func requiredString(fields map[string]json.RawMessage, name string) (string, error) {
	s, err := nullableString(fields, name)
	if err != nil {
		return "", err
	}
	if s == nil || *s == "" {
		return "", fmt.Errorf("%w %q: missing, want a non-empty string", ErrField, name)
	}
	return *s, nil
}

func nullableString(fields map[string]json.RawMessage, name string) (*string, error) {
	raw, ok := fields[name]
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("%w %q: want a string or null, got %s", ErrField, name, describe(raw))
	}
	if strings.IndexByte(s, 0) >= 0 {
		return nil, fmt.Errorf("%w %q: contains a NUL byte", ErrField, name)
	}
	return &s, nil
}

func describe(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case '"':
		return "a malformed string"
	default:
		return "a number"
	}
}

// Marshal encodes a marker the way pi-session writes it.
func Marshal(m Marker) ([]byte, error) {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("marker: %w", err)
	}
	return append(b, '\n'), nil
}

// Write stores m at path atomically with mode 0600.
func Write(path string, m Marker) error {
	b, err := Marshal(m)
	if err != nil {
		return err
	}
	if len(b) > MaxSize {
		return ErrTooLarge
	}
	if err := atomicfile.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("marker: write %s: %w", path, err)
	}
	return nil
}

// Read reads and parses the marker at path. A missing file gives an error
// that satisfies errors.Is(err, fs.ErrNotExist). Symbolic links, devices and
// files over MaxSize are refused.
func Read(path string) (Marker, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return Marker{}, fmt.Errorf("marker: %s: %w (a symbolic link)", path, ErrNotRegular)
		}
		return Marker{}, fmt.Errorf("marker: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Marker{}, fmt.Errorf("marker: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return Marker{}, fmt.Errorf("marker: %s: %w", path, ErrNotRegular)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return Marker{}, fmt.Errorf("marker: read %s: %w", path, err)
	}
	m, err := Parse(data)
	if err != nil {
		return Marker{}, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// NewLaunchID returns a fresh random launch id (32 hex digits). It doubles as
// the nonce in the marker's file name.
func NewLaunchID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("marker: random launch id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// Path is where the wrapper with pid wrapperPID expects the marker for the
// launch with the given id: <dir>/<wrapperPID>-<launchID>.json.
func Path(dir string, wrapperPID int, launchID string) string {
	return filepath.Join(dir, strconv.Itoa(wrapperPID)+"-"+launchID+".json")
}

// ParseName splits a marker file name "<pid>-<launchID>.json". ok is false
// for any other name.
func ParseName(name string) (pid int, launchID string, ok bool) {
	rest, found := strings.CutSuffix(name, ".json")
	if !found {
		return 0, "", false
	}
	p, id, found := strings.Cut(rest, "-")
	if !found || id == "" || !isHex(id) {
		return 0, "", false
	}
	n, err := strconv.Atoi(p)
	if err != nil || n <= 0 || strconv.Itoa(n) != p {
		return 0, "", false
	}
	return n, id, true
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Environment variables the wrapper sets for its child, and only for it.
const (
	EnvWrapper    = "PI_SESSION_WRAPPER"     // "1"
	EnvWrapperPID = "PI_SESSION_WRAPPER_PID" // pid of pi's parent inside pi-session
	EnvLaunchID   = "PI_SESSION_LAUNCH_ID"   // this launch's id
	EnvMarker     = "PI_RELAUNCH_MARKER"     // the marker path for this launch
)

// Assignment is the marker a wrapper assigned to one launch.
type Assignment struct {
	Path       string
	LaunchID   string
	WrapperPID int
}

// ErrNotOwner says the calling process may not write a relaunch marker.
var ErrNotOwner = errors.New("marker: not the wrapper's own child")

// AssignmentFromEnv returns the marker assignment of a process whose parent
// pid is ppid, after the seed's ownership rule: the wrapper variables must be
// set, consistent, and PI_SESSION_WRAPPER_PID must be ppid. A descendant (a pi
// started from pi's bash tool) inherits the variables but fails the parent
// check, so it cannot trigger its ancestor's relaunch.
func AssignmentFromEnv(getenv func(string) string, ppid int) (Assignment, error) {
	if getenv(EnvWrapper) != "1" {
		return Assignment{}, fmt.Errorf("%w: %s is not 1", ErrNotOwner, EnvWrapper)
	}
	pid, err := strconv.Atoi(getenv(EnvWrapperPID))
	if err != nil || pid <= 0 {
		return Assignment{}, fmt.Errorf("%w: %s=%q is not a pid", ErrNotOwner, EnvWrapperPID, getenv(EnvWrapperPID))
	}
	if pid != ppid {
		return Assignment{}, fmt.Errorf("%w: parent pid %d is not %s=%d", ErrNotOwner, ppid, EnvWrapperPID, pid)
	}
	id := getenv(EnvLaunchID)
	path := getenv(EnvMarker)
	if !filepath.IsAbs(path) {
		return Assignment{}, fmt.Errorf("%w: %s=%q is not an absolute path", ErrNotOwner, EnvMarker, path)
	}
	if _, nameID, ok := ParseName(filepath.Base(path)); !ok || nameID != id {
		return Assignment{}, fmt.Errorf("%w: %s=%q does not name launch %s=%q", ErrNotOwner, EnvMarker, path, EnvLaunchID, id)
	}
	return Assignment{Path: path, LaunchID: id, WrapperPID: pid}, nil
}

// WriteAssigned writes m for the launch a, stamping it with a's launch id.
func WriteAssigned(a Assignment, m Marker) error {
	m.LaunchID = a.LaunchID
	return Write(a.Path, m)
}
