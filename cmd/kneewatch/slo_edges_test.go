package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kneewatch/kneewatch/internal/testtools"
)

// edgeConfig writes a config with one vLLM target whose profile's SLO is
// ttft/tpot, and returns its path.
func edgeConfig(t *testing.T, ttft, tpot string) string {
	t.Helper()
	dir := t.TempDir()
	prof, err := os.ReadFile(filepath.Join(testtools.ModuleRoot(), "knee", "testdata", "valid.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	prof = bytes.Replace(prof, []byte("  ttft: 500ms\n  tpot: 50ms\n"), []byte("  ttft: "+ttft+"\n  tpot: "+tpot+"\n"), 1)
	if err := os.WriteFile(filepath.Join(dir, "llama.yaml"), prof, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := "profiles:\n  - name: llama\n    file: llama.yaml\ntargets:\n  - replica: vllm-0\n    engine: vllm\n" +
		"    metrics_url: http://127.0.0.1:1/metrics\n    profile: llama\n"
	path := filepath.Join(dir, "kneewatch.yml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestConfigCheckAndRulesWarnOfThresholdsBetweenBucketEdges(t *testing.T) {
	inside := edgeConfig(t, "230ms", "23ms")
	onEdges := edgeConfig(t, "250ms", "25ms")
	for _, cmd := range [][]string{{"serve", "--config.check", "--config.file"}, {"rules", "--config.file"}} {
		t.Run(cmd[0], func(t *testing.T) {
			var out, errOut bytes.Buffer
			if err := run(context.Background(), append(cmd, inside), &out, &errOut); err != nil {
				t.Fatalf("%v\n%s", err, errOut.String())
			}
			for _, want := range []string{
				"tpot SLO 23ms is not a bucket edge of vllm:request_time_per_output_token_seconds (vllm default buckets): it falls between 10ms and 25ms",
				"ttft SLO 230ms is not a bucket edge of vllm:time_to_first_token_seconds (vllm default buckets): it falls between 100ms and 250ms",
				`slo_from="profile \"llama\""`,
			} {
				if !strings.Contains(errOut.String(), want) {
					t.Errorf("stderr lacks %q:\n%s", want, errOut.String())
				}
			}
			t.Logf("stderr:\n%s", errOut.String())
			errOut.Reset()
			if err := run(context.Background(), append(cmd, onEdges), &out, &errOut); err != nil {
				t.Fatalf("%v\n%s", err, errOut.String())
			}
			if strings.Contains(errOut.String(), "bucket edge") {
				t.Errorf("thresholds on edges warned:\n%s", errOut.String())
			}
		})
	}
}
