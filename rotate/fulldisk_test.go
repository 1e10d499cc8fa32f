package rotate

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/pi-session/pi-session/diskfull"
)

// TestAppendOnFullDisk: on a real file system out of space, an append
// fails with ENOSPC in its error (also when the kernel cut it short), costs
// only its own line, and the next append once there is room again is a
// line of its own.
func TestAppendOnFullDisk(t *testing.T) {
	dir := diskfull.Mount(t, 64<<10)
	path := filepath.Join(dir, "log.jsonl")
	l := newLog(t, path, Policy{MaxBytes: 1 << 20, Keep: 2})
	if err := l.AppendJSON(map[string]any{"n": "first"}); err != nil {
		t.Fatal(err)
	}
	// The live file's block has room for some lines more: the one that
	// crosses into the next block is cut short.
	fill := diskfull.Fill(t, dir)
	ok := 1
	var lost error
	for i := 0; i < 1000 && lost == nil; i++ {
		if lost = l.AppendJSON(map[string]any{"n": i, "pad": fmt.Sprintf("%0100d", i)}); lost == nil {
			ok++
		}
	}
	if !errors.Is(lost, syscall.ENOSPC) {
		t.Fatalf("an append to a full disk: %v, want ENOSPC", lost)
	}
	if err := os.Remove(fill); err != nil {
		t.Fatal(err)
	}
	if err := l.AppendJSON(map[string]any{"n": "after"}); err != nil {
		t.Fatalf("an append once there is room: %v", err)
	}
	data, _ := os.ReadFile(path)
	var lines, fragments int
	err := ReadLines(bytes.NewReader(data), path, 1<<20, func([]byte) error { lines++; return nil }, func(Fragment) { fragments++ })
	if err != nil || lines != ok+1 || fragments > 1 {
		t.Errorf("the log reads as %d lines and %d fragments (%v); want the %d appended and at most the lost one", lines, fragments, err, ok+1)
	}
}
