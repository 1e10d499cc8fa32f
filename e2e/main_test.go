package e2e

import (
	"os"
	"testing"

	"github.com/pi-session/pi-session/pitest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pitest.Cleanup()
	os.Exit(code)
}
