package detection

import (
	"os"
	"runtime/debug"
	"testing"
)

// TestMain collects garbage less often than Go's default, as
// cmd/kneewatch-bench does: the simulator and the PromQL engine allocate
// steadily and the collector's share of a scenario's CPU was a tenth. GOGC
// in the environment still wins.
func TestMain(m *testing.M) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	os.Exit(m.Run())
}
