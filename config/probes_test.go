package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestProbeAPIKeyComesFromAFileOrTheEnvironment(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key")
	if err := os.WriteFile(keyFile, []byte("sk-from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	emptyFile := filepath.Join(dir, "empty")
	if err := os.WriteFile(emptyFile, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KNEEWATCH_TEST_PROBE_KEY", "sk-from-env")
	t.Setenv("KNEEWATCH_TEST_EMPTY_KEY", "")
	unsetEnv(t, "KNEEWATCH_TEST_UNSET_KEY")

	tests := []struct {
		name    string
		probes  Probes
		want    string
		wantErr string
	}{
		{"a key file is read and trimmed", Probes{APIKeyFile: keyFile}, "sk-from-file", ""},
		{"a key variable is read", Probes{APIKeyEnv: "KNEEWATCH_TEST_PROBE_KEY"}, "sk-from-env", ""},
		{"no key source means no key", Probes{}, "", ""},
		{"a missing key file is an error naming it", Probes{APIKeyFile: filepath.Join(dir, "nope")}, "",
			"probes.api_key_file: open " + filepath.Join(dir, "nope") + ": no such file or directory"},
		{"an empty key file is an error", Probes{APIKeyFile: emptyFile}, "",
			"probes.api_key_file: " + emptyFile + " is empty"},
		{"an unset key variable is an error naming it", Probes{APIKeyEnv: "KNEEWATCH_TEST_UNSET_KEY"}, "",
			"probes.api_key_env: environment variable KNEEWATCH_TEST_UNSET_KEY is not set or empty"},
		{"an empty key variable is an error naming it", Probes{APIKeyEnv: "KNEEWATCH_TEST_EMPTY_KEY"}, "",
			"probes.api_key_env: environment variable KNEEWATCH_TEST_EMPTY_KEY is not set or empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.probes.APIKey()
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("APIKey() error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("APIKey() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestProbeAPIKeyIsMaskedInThePrintedConfig: the printed config names where
// the key comes from, never the key.
func TestProbeAPIKeyIsMaskedInThePrintedConfig(t *testing.T) {
	t.Setenv("KNEEWATCH_TEST_PROBE_KEY", "sk-never-printed")
	c, err := Parse([]byte("probes:\n  enabled: true\n  api_key_env: KNEEWATCH_TEST_PROBE_KEY\ntargets:\n  - replica: vllm-0\n    metrics_url: http://127.0.0.1:8000/metrics\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	key, err := c.Probes.APIKey()
	if err != nil || key != "sk-never-printed" {
		t.Fatalf("APIKey() = %q, %v", key, err)
	}
	if out := c.String(); strings.Contains(out, "sk-never-printed") || !strings.Contains(out, "api_key_env: KNEEWATCH_TEST_PROBE_KEY") {
		t.Errorf("printed config:\n%s", out)
	}
}
