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
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/pi-session/pi-session/atomicfile"
	"github.com/pi-session/pi-session/jsonpos"
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
	// ErrUntrusted: the marker, or its directory, could have been written
	// by someone else: owned by another user, or writable by others.
	ErrUntrusted = errors.New("marker: not trusted")
)

// Error says what is wrong with a marker file and where: the file, the
// line and column (zero for a problem of the whole file), and the field.
type Error struct {
	Path  string // "" when the caller parsed bytes
	Pos   jsonpos.Pos
	Field string
	What  string
	Kind  error // ErrSyntax, ErrField, ErrTooLarge, ErrNotRegular or ErrUntrusted
}

func (e *Error) Error() string { return "marker: " + jsonpos.Message(e.Path, e.Pos, e.Field, e.What) }

// Is makes errors.Is(err, ErrField) (and the others) work.
func (e *Error) Is(target error) bool { return target == e.Kind }

// Parse decodes and checks a marker. Its errors (*Error) name the line and
// column and the offending field; of several problems, the first in the
// file.
func Parse(data []byte) (Marker, error) {
	if len(data) > MaxSize {
		return Marker{}, &Error{What: fmt.Sprintf("%d bytes, more than the 64 KiB a marker may hold", len(data)), Kind: ErrTooLarge}
	}
	members, isObject := jsonpos.Members(data)
	if !isObject {
		switch {
		case len(bytes.TrimSpace(data)) == 0:
			return Marker{}, &Error{Pos: jsonpos.Pos{Line: 1, Column: 1}, What: "empty file", Kind: ErrSyntax}
		case !json.Valid(data):
			pos, what := jsonpos.SyntaxError(data, json.Unmarshal(data, new(json.RawMessage)))
			return Marker{}, &Error{Pos: pos, What: what, Kind: ErrSyntax}
		}
		start := int64(len(data) - len(bytes.TrimLeft(data, " \t\r\n")))
		return Marker{}, &Error{Pos: jsonpos.At(data, start), What: "want a JSON object, got " + jsonpos.Kind(data), Kind: ErrSyntax}
	}
	var m Marker
	fields := map[string]**string{"cwd": new(*string), "handoff": new(*string), "launchPrompt": &m.LaunchPrompt, "sessionFile": &m.SessionFile, "launchId": new(*string)}
	at := map[string]jsonpos.Pos{}
	for _, mb := range members {
		dst, known := fields[mb.Key]
		if !known {
			continue // unknown fields are ignored
		}
		at[mb.Key] = jsonpos.At(data, mb.Offset)
		s, err := nullableString(mb.Value)
		if err != "" {
			return Marker{}, &Error{Pos: at[mb.Key], Field: mb.Key, What: err, Kind: ErrField}
		}
		*dst = s
	}
	for _, name := range []string{"cwd", "handoff"} {
		pos, present := at[name]
		switch s := *fields[name]; {
		case !present:
			start := jsonpos.At(data, int64(len(data)-len(bytes.TrimLeft(data, " \t\r\n"))))
			return Marker{}, &Error{Pos: start, Field: name, What: "missing, want a non-empty string", Kind: ErrField}
		case s == nil:
			return Marker{}, &Error{Pos: pos, Field: name, What: "want a non-empty string, got null", Kind: ErrField}
		case *s == "":
			return Marker{}, &Error{Pos: pos, Field: name, What: "empty, want a non-empty string", Kind: ErrField}
		}
	}
	m.Cwd, m.Handoff = **fields["cwd"], **fields["handoff"]
	if id := *fields["launchId"]; id != nil {
		m.LaunchID = *id
	}
	return m, nil
}

// nullableString reads a string or null; the message says what is wrong.
func nullableString(raw json.RawMessage) (*string, string) {
	if string(raw) == "null" {
		return nil, ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, "want a string or null, got " + jsonpos.Kind(raw)
	}
	if strings.IndexByte(s, 0) >= 0 {
		return nil, "contains a NUL byte"
	}
	return &s, ""
}

// Marshal encodes a marker the way pi-session writes it.
func Marshal(m Marker) ([]byte, error) {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("marker: %w", err)
	}
	return append(b, '\n'), nil
}

// Write stores m at path atomically with mode 0600, in a directory that
// only this user can write to (ErrUntrusted otherwise).
func Write(path string, m Marker) error {
	b, err := Marshal(m)
	if err != nil {
		return err
	}
	if len(b) > MaxSize {
		return ErrTooLarge
	}
	if err := CheckDir(filepath.Dir(path)); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("marker: write %s: %w", path, err)
	}
	return nil
}

// Read reads and parses the marker at path. A missing file gives an error
// that satisfies errors.Is(err, fs.ErrNotExist). Symbolic links, devices,
// files over MaxSize, and markers anyone but this user could have written
// (see Trusted) are refused; the file is left as it is, as evidence.
func Read(path string) (Marker, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return Marker{}, &Error{Path: path, What: "a symbolic link, not a regular file", Kind: ErrNotRegular}
		}
		return Marker{}, fmt.Errorf("marker: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Marker{}, fmt.Errorf("marker: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return Marker{}, &Error{Path: path, What: "not a regular file (" + fi.Mode().Type().String() + ")", Kind: ErrNotRegular}
	}
	if err := trusted(path, fi, false); err != nil {
		return Marker{}, err
	}
	if err := CheckDir(filepath.Dir(path)); err != nil {
		return Marker{}, err
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return Marker{}, fmt.Errorf("marker: read %s: %w", path, err)
	}
	m, err := Parse(data)
	if err != nil {
		var me *Error
		if errors.As(err, &me) {
			c := *me
			c.Path = path
			return Marker{}, &c
		}
		return Marker{}, err
	}
	return m, nil
}

// CheckDir checks that dir, a marker directory, can be trusted: a
// directory owned by this user that no one else can write to. A marker in
// a directory others can write to could have been put there by them.
func CheckDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("marker: directory: %w", err)
	}
	if !fi.IsDir() {
		return &Error{Path: dir, What: "the marker directory is not a directory", Kind: ErrNotRegular}
	}
	return trusted(dir, fi, true)
}

// trusted refuses a file or directory owned by another user, or writable
// by its group or by others: either could have been written by someone
// else. The refusal says why and how to fix it.
func trusted(path string, fi fs.FileInfo, dir bool) error {
	what, could := "marker", "written it"
	if dir {
		what, could = "marker directory", "put a marker there"
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		fix := "remove it if you do not know who wrote it"
		if dir {
			fix = "point PI_SESSION_MARKER_DIR at a directory of your own"
		}
		return &Error{Path: path, What: fmt.Sprintf("the %s is owned by uid %d, not by you (uid %d): refused; fix: %s", what, st.Uid, os.Geteuid(), fix), Kind: ErrUntrusted}
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		who := "others"
		if perm&0o002 == 0 {
			who = "its group"
		}
		return &Error{Path: path, What: fmt.Sprintf("the %s is writable by %s (mode %04o), so they could have %s: refused; fix: chmod go-w %s", what, who, perm, could, path), Kind: ErrUntrusted}
	}
	return nil
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
// pid is ppid, after context-budget's ownership rule: the wrapper variables must be
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
	if namePID, nameID, ok := ParseName(filepath.Base(path)); !ok || nameID != id || namePID != pid {
		return Assignment{}, fmt.Errorf("%w: %s=%q is not <dir>/%s-%s.json (%s-%s)", ErrNotOwner, EnvMarker, path, strconv.Itoa(pid), id, EnvWrapperPID, EnvLaunchID)
	}
	return Assignment{Path: path, LaunchID: id, WrapperPID: pid}, nil
}

// WriteAssigned writes m for the launch a, stamping it with a's launch id.
func WriteAssigned(a Assignment, m Marker) error {
	m.LaunchID = a.LaunchID
	return Write(a.Path, m)
}
