package relay

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// lastName is the file of a session's note directory that holds the last
// note number handed out; it is flocked while a number is taken.
const lastName = ".last"

// numberLockWait bounds the wait for another process's lock on the
// counter: it is held for a read and a write, so only a stopped holder
// (Ctrl+Z, a hung disk) makes anyone wait that long.
const numberLockWait = 2 * time.Second

// takeNumber hands out a note number of dir that no relay, in this
// process or another, got before: one more than the highest note there
// and than the last number handed out (<dir>/.last, read and written
// under an flock of it). So a number whose note was removed (an aborted
// relay) is never handed out again, and removing a note never removes
// another relay's. When the counter cannot be used (not lockable within
// numberLockWait, not a regular file), the highest note decides, and the
// exclusive creation of the note alone keeps two relays apart.
func takeNumber(dir string) (int, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, fmt.Errorf("relay: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, lastName), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return NextNote(dir), nil
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() || !lockWithin(int(f.Fd()), numberLockWait) {
		return NextNote(dir), nil
	}
	defer unix.Flock(int(f.Fd()), unix.LOCK_UN)
	n := max(NextNote(dir), readLast(f)+1)
	// Numbers only grow, so the new one covers the old; one small write.
	b := []byte(strconv.Itoa(n) + "\n")
	if _, err := f.WriteAt(b, 0); err == nil {
		f.Truncate(int64(len(b)))
	}
	return n, nil
}

// readLast reads the counter; 0 when it holds no number.
func readLast(f *os.File) int {
	buf := make([]byte, 24)
	k, _ := f.ReadAt(buf, 0)
	last, err := strconv.Atoi(strings.TrimSpace(string(buf[:k])))
	if err != nil || last < 0 {
		return 0
	}
	return last
}

// PeekNumber is the number takeNumber would hand out now, taking none
// (what the command line's preview of a note names).
func PeekNumber(dir string) int {
	n := NextNote(dir)
	f, err := os.OpenFile(filepath.Join(dir, lastName), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return n
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return n
	}
	return max(n, readLast(f)+1)
}

// lockWithin takes an exclusive flock of fd, trying until wait has passed.
func lockWithin(fd int, wait time.Duration) bool {
	deadline := time.Now().Add(wait)
	for delay := time.Millisecond; ; delay = min(2*delay, 20*time.Millisecond) {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return true
		}
		if err != unix.EWOULDBLOCK && err != unix.EINTR || time.Now().After(deadline) {
			return false
		}
		time.Sleep(delay)
	}
}
