package config

import (
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

func readFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	return string(b), err
}

// unsetEnv removes an environment variable for the rest of the test and
// restores it afterwards (t.Setenv alone can only set a value).
func unsetEnv(t *testing.T, key string) {
	t.Helper()
	t.Setenv(key, "") // registers the restore and forbids t.Parallel
	if err := os.Unsetenv(key); err != nil {
		t.Fatal(err)
	}
}
