package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	commonconfig "github.com/prometheus/common/config"
)

// cmpConfig compares configs; prometheus/common's types keep unexported caches.
var cmpConfig = cmp.Options{
	cmpopts.IgnoreUnexported(commonconfig.ProxyConfig{}, commonconfig.TLSConfig{}),
	cmpopts.EquateEmpty(),
}

func mustURL(t *testing.T, s string) URL {
	t.Helper()
	u, err := ParseURL(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestExampleConfigLoads proves example.yml, which documents every field,
// is valid, and pins the effective config it prints (--config.check output)
// in a golden file. The example is parsed as if it sat in
// testdata/example-root, where its profile files exist.
func TestExampleConfigLoads(t *testing.T) {
	data, err := os.ReadFile("example.yml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse(data, "testdata/example-root/kneewatch.yml")
	if err != nil {
		t.Fatalf("example.yml is invalid: %v", err)
	}
	got := c.String()
	golden := "testdata/example.effective.yml"
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./config -run TestExampleConfigLoads -update)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("effective example config differs from %s (-want +got):\n%s", golden, diff)
	}

	// The printed config must itself be a valid config file that decodes to
	// the same values (profiles_dir dropped: its files are already listed).
	again := *c
	again.Global.ProfilesDir = ""
	reparsed, err := Parse([]byte(again.String()), "")
	if err != nil {
		t.Fatalf("the printed config does not parse back: %v", err)
	}
	if diff := cmp.Diff(&again, reparsed, cmpConfig); diff != "" {
		t.Errorf("printed config parses to different values (-want +got):\n%s", diff)
	}
}

// TestMinimalConfigGetsEveryDefault: one target is enough, and everything
// else comes from the defaults.
func TestMinimalConfigGetsEveryDefault(t *testing.T) {
	c, err := Parse([]byte("targets:\n  - replica: vllm-0\n    metrics_url: http://127.0.0.1:8000/metrics\n"), "kneewatch.yml")
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		Global: Global{
			ScrapeTimeout:     Duration(3 * time.Second),
			BodySizeLimit:     16 * 1024 * 1024,
			SeriesLimit:       20000,
			ScrapeMemoryLimit: 256 << 20,
			SLO:               SLO{TTFT: Duration(time.Second), TPOT: Duration(100 * time.Millisecond), Quantile: 0.99},
			TargetHeadroom:    0.2,
		},
		Targets: []Target{{
			Replica:    "vllm-0",
			MetricsURL: mustURL(t, "http://127.0.0.1:8000/metrics"),
			HTTPClient: HTTPClient{commonconfig.HTTPClientConfig{FollowRedirects: true, EnableHTTP2: true}},
		}},
		Probes: Probes{
			Enabled: false, Interval: Duration(30 * time.Second), Timeout: Duration(10 * time.Second),
			PromptTokens: 16, MaxTokens: 16, IgnoreEOS: true, API: ProbeAPICompletions,
			SkipPastKnee: true, SkipQueueGrowing: true, LoadRatioCap: 0.001,
		},
		Alerts: Alerts{
			HeadroomLow:       HeadroomLow{Below: 0.2, For: Duration(10 * time.Minute)},
			HeadroomExhausted: HeadroomExhausted{Below: 0, Hold: Duration(30 * time.Second), SustainRequests: 100, QuickRequests: 50, QuickBelow: -0.25, RecoveredAbove: 0.2, PredictGuard: 0.6, KeepFiringFor: Duration(5 * time.Minute), WatchedFor: Duration(2 * time.Minute)},
			PastKnee:          PastKnee{Below: 0, For: 0, KeepFiringFor: Duration(5 * time.Minute)},
			SLOObjective:      0.99,
			KVPressure:        KVPressure{Margin: 0.05, PreemptionsPerSecond: 0.1, For: Duration(10 * time.Minute)},
			ProbesFailing:     ProbesFailing{SuccessWarning: 0.9, For: Duration(10 * time.Minute), AllFailingFor: Duration(5 * time.Minute)},
			FleetCapacity:     FleetCapacity{For: Duration(15 * time.Minute)},
			RunbookBaseURL:    "https://github.com/kneewatch/kneewatch/blob/main/docs/runbooks/",
		},
	}
	if diff := cmp.Diff(want, c, cmpConfig); diff != "" {
		t.Errorf("minimal config (-want +got):\n%s", diff)
	}
}

// TestSectionsKeepDefaultsForKeysNotGiven: setting one key of a section, or
// writing an empty section, leaves the others at their defaults.
func TestSectionsKeepDefaultsForKeysNotGiven(t *testing.T) {
	const target = "targets:\n  - replica: vllm-0\n    metrics_url: http://127.0.0.1:8000/metrics\n"
	tests := []struct {
		name  string
		yaml  string
		check func(*Config) string
	}{
		{"one probe key leaves the other probe defaults", "probes:\n  enabled: true\n" + target, func(c *Config) string {
			if !c.Probes.Enabled || c.Probes.Interval != Duration(30*time.Second) || c.Probes.MaxTokens != 16 {
				return "probes lost defaults"
			}
			return ""
		}},
		{"an empty section keeps all its defaults", "alerts:\nprobes:\nglobal:\n" + target, func(c *Config) string {
			if c.Alerts.SLOObjective != 0.99 || c.Probes.Timeout != Duration(10*time.Second) || c.Global.SeriesLimit != 20000 {
				return "an empty section reset defaults"
			}
			return ""
		}},
		{"one nested alert key leaves its sibling default", "alerts:\n  headroom_exhausted:\n    below: 0.1\n" + target, func(c *Config) string {
			if e := c.Alerts.HeadroomExhausted; e.Below != 0.1 || e.Hold != Duration(30*time.Second) || e.SustainRequests != 100 {
				return "headroom_exhausted lost defaults"
			}
			return ""
		}},
		{"kubernetes with only a selector gets discovery defaults", "kubernetes:\n  label_selector: app=vllm\n", func(c *Config) string {
			want := DefaultKubernetes()
			want.LabelSelector = "app=vllm"
			return cmp.Diff(&want, c.Kubernetes, cmpConfig)
		}},
		{"kubernetes dcgm discovery with one key gets the GPU operator defaults", "kubernetes:\n  label_selector: app=vllm\n  dcgm:\n    port: 9500\n", func(c *Config) string {
			want := DefaultKubernetesDCGM()
			want.Port = 9500
			return cmp.Diff(&want, c.Kubernetes.DCGM)
		}},
		{"a target's dcgm block gets its own default HTTP client", "targets:\n  - replica: vllm-0\n    metrics_url: http://127.0.0.1:8000/metrics\n    http_client:\n      bearer_token_file: token\n    dcgm:\n      url: http://127.0.0.1:9400/metrics\n      gpu_uuids: [GPU-1]\n", func(c *Config) string {
			return cmp.Diff(DefaultHTTPClient(), c.Targets[0].DCGM.HTTPClient, cmpConfig)
		}},
		{"a duration in days is accepted", "alerts:\n  fleet_capacity:\n    for: 1d\n" + target, func(c *Config) string {
			if c.Alerts.FleetCapacity.For != Duration(24*time.Hour) {
				return "1d is not 24h: " + c.Alerts.FleetCapacity.For.String()
			}
			return ""
		}},
		{"a body size in KiB is accepted", "global:\n  body_size_limit: 512KiB\n" + target, func(c *Config) string {
			if c.Global.BodySizeLimit != 512*1024 {
				return "512KiB is not 524288 bytes: " + c.Global.BodySizeLimit.String()
			}
			return ""
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.yaml), "kneewatch.yml")
			if err != nil {
				t.Fatal(err)
			}
			if problem := tt.check(c); problem != "" {
				t.Error(problem)
			}
		})
	}
}

// TestRelativePathsResolveAgainstTheConfigFile: files named in the config
// are found next to it, not in the working directory.
func TestRelativePathsResolveAgainstTheConfigFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "profiles"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "profiles", "llama.yaml"), []byte("# profile\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "kneewatch.yml")
	body := `global:
  profiles_dir: profiles
targets:
  - replica: vllm-0
    metrics_url: https://127.0.0.1:8000/metrics
    profile: llama
    http_client:
      tls_config:
        ca_file: certs/ca.pem
      basic_auth:
        username: kw
        password_file: /abs/password
kubernetes:
  label_selector: app=vllm
  kubeconfig: kube/config
probes:
  api_key_file: secrets/key
`
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{
		"profiles_dir":  c.Global.ProfilesDir,
		"profile file":  c.Profiles[0].File,
		"ca_file":       c.Targets[0].HTTPClient.TLSConfig.CAFile,
		"password_file": c.Targets[0].HTTPClient.BasicAuth.PasswordFile,
		"kubeconfig":    c.Kubernetes.Kubeconfig,
		"api_key_file":  c.Probes.APIKeyFile,
	}
	want := map[string]string{
		"profiles_dir":  filepath.Join(dir, "profiles"),
		"profile file":  filepath.Join(dir, "profiles", "llama.yaml"),
		"ca_file":       filepath.Join(dir, "certs", "ca.pem"),
		"password_file": "/abs/password", // absolute paths stay as they are
		"kubeconfig":    filepath.Join(dir, "kube", "config"),
		"api_key_file":  filepath.Join(dir, "secrets", "key"),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("resolved paths (-want +got):\n%s", diff)
	}
	if c.Profiles[0].Name != "llama" {
		t.Errorf("profile from profiles_dir is named %q, want llama (its file name)", c.Profiles[0].Name)
	}
}

func TestLoadNamesAMissingFile(t *testing.T) {
	_, err := Load("testdata/no-such-config.yml")
	want := "reading config: open testdata/no-such-config.yml: no such file or directory"
	if err == nil || err.Error() != want {
		t.Errorf("Load error = %v, want %q", err, want)
	}
}

// TestValidateChecksConfigsBuiltInCode: Validate works without a file, for
// code (demo, tests) that builds a Config directly.
func TestValidateChecksConfigsBuiltInCode(t *testing.T) {
	c := DefaultConfig()
	c.Targets = []Target{{Replica: "sim-0", MetricsURL: mustURL(t, "http://127.0.0.1:9000/metrics"), HTTPClient: DefaultHTTPClient()}}
	if err := c.Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	c.Targets[0].HTTPClient.BearerToken = "abc"
	c.Targets[0].HTTPClient.BearerTokenFile = "token"
	c.Targets[0].Engine = "vLLM"
	want := "targets[0].engine: unknown engine \"vLLM\" (want vllm, sglang, tgi, trtllm or empty for auto-detect)\n" +
		"targets[0].http_client: at most one of bearer_token & bearer_token_file must be configured"
	if err := c.Validate(); err == nil || err.Error() != want {
		t.Errorf("Validate() = %v\nwant %s", err, want)
	}
}

func TestURLPrintsWithoutItsPassword(t *testing.T) {
	u := mustURL(t, "http://kw:hunter2@127.0.0.1:8000/metrics")
	for _, s := range []string{u.String(), mustMarshal(t, u)} {
		if strings.Contains(s, "hunter2") {
			t.Errorf("printed URL %q reveals the password", s)
		}
	}
	if u.URL.String() != "http://kw:hunter2@127.0.0.1:8000/metrics" {
		t.Errorf("the request URL lost its credentials: %s", u.URL.String())
	}
	var zero URL
	if !zero.IsZero() || zero.String() != "" {
		t.Errorf("zero URL: IsZero %v, String %q", zero.IsZero(), zero.String())
	}
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	m, ok := v.(interface{ MarshalYAML() (any, error) })
	if !ok {
		t.Fatalf("%T has no MarshalYAML", v)
	}
	out, err := m.MarshalYAML()
	if err != nil {
		t.Fatal(err)
	}
	s, _ := out.(string)
	return s
}
