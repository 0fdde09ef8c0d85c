package tests

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files and the chart's generated rules and dashboards")

// TestMain stops the shared cluster (started by the first test that needs
// it) after every test has run.
func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if err := stopSharedCluster(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the test cluster:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// chartDir is the chart's directory, the parent of this package.
func chartDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

// moduleRoot is the kneewatch module's root.
func moduleRoot() string {
	return filepath.Clean(filepath.Join(chartDir(), "..", "..", ".."))
}
