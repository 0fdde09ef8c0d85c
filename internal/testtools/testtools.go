// Package testtools finds the pinned real tools (promtool, Prometheus,
// Alertmanager, helm, …) that `make tools` builds into .tools/bin, for tests
// that exercise kneewatch against the real thing.
//
// Under `make test` (KNEEWATCH_REQUIRE_TOOLS=1) a missing tool fails the test:
// CI must never pass by silently skipping the real component. In a plain
// `go test` run a missing tool skips the test with the command that builds it.
package testtools

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Dir is where `make tools` installs the pinned tools, relative to the module root.
const Dir = ".tools/bin"

// Path returns the absolute path of the named tool, or fails or skips t.
func Path(t testing.TB, name string) string {
	t.Helper()
	if p := lookup(name); p != "" {
		return p
	}
	msg := name + " not found in " + Dir + " (run `make tools`)"
	if os.Getenv("KNEEWATCH_REQUIRE_TOOLS") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// SystemPath is Path for a tool that comes from the system's packages
// (shellcheck is Debian's): .tools/bin first, as `make tools` links it
// there, then PATH. install says how to get it when it is missing.
func SystemPath(t testing.TB, name, install string) string {
	t.Helper()
	if p := lookup(name); p != "" {
		return p
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	msg := name + " not found in " + Dir + " or on PATH (" + install + ", or `make tools`)"
	if os.Getenv("KNEEWATCH_REQUIRE_TOOLS") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

func lookup(name string) string {
	if d := os.Getenv("KNEEWATCH_TOOLS"); d != "" {
		if p := filepath.Join(d, name); isExec(p) {
			return p
		}
	}
	if root := moduleRoot(); root != "" {
		if p := filepath.Join(root, Dir, name); isExec(p) {
			return p
		}
	}
	if p, err := exec.LookPath("kneewatch-" + name); err == nil {
		return p
	}
	return ""
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// moduleRoot is the directory holding go.mod, found from this source file.
func moduleRoot() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return ""
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// ModuleRoot returns the module's root directory (for testdata shared across packages).
func ModuleRoot() string { return moduleRoot() }
