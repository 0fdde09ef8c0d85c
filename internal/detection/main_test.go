package detection

import (
	"os"
	"testing"
)

// TestMain collects garbage as cmd/kneewatch-bench does
// (CollectGarbageLessOften).
func TestMain(m *testing.M) {
	CollectGarbageLessOften()
	os.Exit(m.Run())
}
