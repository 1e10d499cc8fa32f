package hooks

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pi-session/pi-session/paths"
	"golang.org/x/sys/unix"
)

// EnvSocket tells pi's extension where the engine host listens.
const EnvSocket = "PI_SESSION_SOCKET"

// maxSocketPath is the longest path a unix socket address holds
// (sun_path is 108 bytes with its terminating NUL).
const maxSocketPath = 107

// ErrLive means another engine host answers on the socket path.
var ErrLive = errors.New("hooks: another engine host is listening")

// SocketPath returns where the engine host of process pid listens:
// $XDG_RUNTIME_DIR/pi-session/<pid>.sock, else <agentDir>/pi-session/run/<pid>.sock,
// else, when those are unusable or too long for a socket address,
// $TMPDIR/pi-session-<uid>/<pid>.sock, else a fresh private directory in
// $TMPDIR. Each directory is created 0700 and must be a real directory
// owned by the user and closed to others.
func SocketPath(getenv paths.Getenv, pid int) (string, error) {
	name := strconv.Itoa(pid) + ".sock"
	tmp := tmpDir(getenv)
	var errs []error
	for _, dir := range SocketDirs(getenv) {
		p := filepath.Join(dir, name)
		if len(p) > maxSocketPath {
			errs = append(errs, fmt.Errorf("%s: %d bytes, longer than a socket address holds", p, len(p)))
			continue
		}
		if err := privateDir(dir); err != nil {
			errs = append(errs, err)
			continue
		}
		return p, nil
	}
	for _, base := range []string{tmp, "/tmp"} {
		dir, err := os.MkdirTemp(base, "pi-session-")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if p := filepath.Join(dir, name); len(p) <= maxSocketPath {
			return p, nil
		}
		os.Remove(dir)
	}
	return "", fmt.Errorf("hooks: no usable socket directory: %w", errors.Join(errs...))
}

// SocketDirs are the shared directories SocketPath tries, in order.
func SocketDirs(getenv paths.Getenv) []string {
	var dirs []string
	if d := getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		dirs = append(dirs, filepath.Join(d, "pi-session"))
	}
	dirs = append(dirs, filepath.Join(paths.AgentDir(getenv), "pi-session", "run"))
	return append(dirs, filepath.Join(tmpDir(getenv), "pi-session-"+strconv.Itoa(os.Getuid())))
}

func tmpDir(getenv paths.Getenv) string {
	if tmp := getenv("TMPDIR"); filepath.IsAbs(tmp) {
		return tmp
	}
	return "/tmp"
}

// privateDir creates dir (0700) if needed and checks that it is a real
// directory owned by this user that nobody else can enter.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("hooks: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("hooks: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("hooks: %s is not a directory", dir)
	case !ok || int(st.Uid) != os.Getuid():
		return fmt.Errorf("hooks: %s is not owned by uid %d", dir, os.Getuid())
	case fi.Mode().Perm()&0o077 != 0:
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("hooks: %s is open to others: %w", dir, err)
		}
	}
	return nil
}

// listen listens on path after making sure no live host owns it: it dials
// the path first; an answer is ErrLive, a refusal means a dead host left
// its socket file behind, which is removed. The socket file is 0600.
func listen(path string) (*net.UnixListener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("hooks: %s exists and is not a socket", path)
		}
		c, err := net.DialTimeout("unix", path, time.Second)
		if err == nil {
			c.Close()
			return nil, fmt.Errorf("%w on %s", ErrLive, path)
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("hooks: probe %s: %w", path, err)
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("hooks: remove stale socket: %w", err)
		}
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("hooks: listen: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("hooks: %w", err)
	}
	return ln, nil
}

// sweep removes the socket files of dead hosts beside path: names
// <pid>.sock whose process is gone and whose socket refuses connections.
// A host killed before it could remove its own file leaves one behind.
func sweep(path string) {
	dir := filepath.Dir(path)
	names, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range names {
		pid, err := strconv.Atoi(strings.TrimSuffix(e.Name(), ".sock"))
		p := filepath.Join(dir, e.Name())
		if err != nil || pid <= 0 || p == path || e.Type() != fs.ModeSocket || unix.Kill(pid, 0) != unix.ESRCH {
			continue
		}
		if c, err := net.DialTimeout("unix", p, time.Second); err == nil {
			c.Close()
		} else if errors.Is(err, syscall.ECONNREFUSED) {
			os.Remove(p)
		}
	}
}

// peerCred returns the credentials of the process at the other end of c,
// as the kernel recorded them when it connected (SO_PEERCRED).
func peerCred(c *net.UnixConn) (*unix.Ucred, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	var cerr error
	err = raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	})
	if err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("hooks: peer credentials: %w", err)
	}
	return cred, nil
}
