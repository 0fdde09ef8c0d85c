package tests

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kneewatch/kneewatch/internal/testtools"
)

// kubeSchemas is the directory `make tools` generates the kubeconform
// schemas and prometheus-operator CRDs into, beside the tool binaries. Like
// a missing tool, missing schemas fail the test under `make test` and skip
// it otherwise.
func kubeSchemas(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(filepath.Dir(testtools.Path(t, "kubeconform")), "..", "schemas")
	if _, err := os.Stat(filepath.Join(dir, "generated")); err != nil {
		msg := "kubeconform schemas not generated in " + dir + " (run `make tools`)"
		if os.Getenv("KNEEWATCH_REQUIRE_TOOLS") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return dir
}

// command runs a tool with a deadline and returns its standard output; it
// fails the test with the tool's standard error when the tool fails.
func command(t testing.TB, env []string, stdin []byte, name string, args ...string) []byte {
	t.Helper()
	out, err := tryCommand(env, stdin, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v", filepath.Base(name), strings.Join(args, " "), err)
	}
	return out
}

type commandError struct {
	err    error
	stderr string
	stdout string
}

func (e *commandError) Error() string {
	return e.err.Error() + "\nstderr:\n" + e.stderr + "\nstdout:\n" + e.stdout
}

func tryCommand(env []string, stdin []byte, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), &commandError{err: err, stderr: stderr.String(), stdout: stdout.String()}
	}
	return stdout.Bytes(), nil
}

// helmEnv keeps helm's cache, config and data out of the user's home.
func helmEnv(t testing.TB, kubeconfig string) []string {
	t.Helper()
	home := t.TempDir()
	env := []string{
		"HELM_CACHE_HOME=" + filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME=" + filepath.Join(home, "config"),
		"HELM_DATA_HOME=" + filepath.Join(home, "data"),
	}
	if kubeconfig != "" {
		env = append(env, "KUBECONFIG="+kubeconfig)
	}
	return env
}
