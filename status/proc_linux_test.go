package status

import (
	"os/exec"
	"testing"
	"time"
)

// A process that exited but is not reaped yet (a zombie) is dead, so its
// record reads crashed, not running.
func TestZombieIsDead(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for System().Lookup(cmd.Process.Pid).State != PIDDead {
		if time.Now().After(deadline) {
			t.Fatalf("an exited, unreaped child still looks alive: %+v", System().Lookup(cmd.Process.Pid))
		}
		time.Sleep(time.Millisecond)
	}
	if !zombie([]byte("42 (a) b) Z 1 2")) || zombie([]byte("42 (Z) R 1")) {
		t.Error("zombie() misreads the state field")
	}
}
