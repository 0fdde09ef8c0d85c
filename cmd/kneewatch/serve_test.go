package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kneewatch/kneewatch/internal/testtools"
)

// serveConfig writes a config with one vLLM target served by srv and the
// knee package's valid profile, and returns its path.
func serveConfig(t *testing.T, metricsURL string) string {
	t.Helper()
	dir := t.TempDir()
	prof, err := os.ReadFile(filepath.Join(testtools.ModuleRoot(), "knee", "testdata", "valid.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "llama.yaml"), prof, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := `global:
  scrape_timeout: 150ms
profiles:
  - name: llama
    file: llama.yaml
targets:
  - replica: vllm-0
    metrics_url: ` + metricsURL + `
    profile: llama
`
	path := filepath.Join(dir, "kneewatch.yml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func vllmFixtureServer(t *testing.T) *httptest.Server {
	t.Helper()
	body, err := os.ReadFile(filepath.Join(testtools.ModuleRoot(), "collector", "testdata", "vllm-v1-full-synthetic.prom"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestServeConfigCheckValidatesAndPrintsTheEffectiveConfig(t *testing.T) {
	path := serveConfig(t, "http://127.0.0.1:1/metrics")
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"serve", "--config.file", path, "--config.check"}, &out, &errOut); err != nil {
		t.Fatalf("serve --config.check: %v\n%s", err, errOut.String())
	}
	for _, want := range []string{"is valid: 1 targets, 1 profiles", "replica: vllm-0", "scrape_timeout"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestServeConfigCheckRejectsAnUnknownKeyNamingItsLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kneewatch.yml")
	if err := os.WriteFile(path, []byte("targets:\n  - replica: a\n    metrics_url: http://a/metrics\n    replcia: b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := run(context.Background(), []string{"serve", "--config.file", path, "--config.check"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "line 4") || !strings.Contains(err.Error(), "replcia") {
		t.Fatalf("error = %v, want one naming line 4 and the key replcia", err)
	}
}

// An alerts section `kneewatch rules` refuses fails --config.check too, so
// a file that passes the check always renders rules.
func TestServeConfigCheckRejectsAlertsTheRulesRefuse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kneewatch.yml")
	body := "targets:\n  - replica: a\n    metrics_url: http://a/metrics\n" +
		"alerts:\n  headroom_exhausted:\n    predict_window: 10m\n    predict_confirm: 6m\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	err := run(context.Background(), []string{"serve", "--config.file", path, "--config.check"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "alerts.headroom_exhausted.predict_confirm: 6m must be shorter") {
		t.Fatalf("error = %v, want one naming the file and the predict_confirm that is not shorter than the lookback", err)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// serveUntil runs `kneewatch serve` on the config until /metrics contains
// want (or 15 s pass), stops it, and returns the last /metrics body.
func serveUntil(t *testing.T, path, want string) string {
	t.Helper()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--config.file", path, "--web.listen-address", addr,
			"--evaluation.interval", "200ms", "--evaluation.window", "2s", "--log.level", "error"}, io.Discard, io.Discard)
	}()
	var body string
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if body = string(b); strings.Contains(body, want) {
			break
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
	return body
}

func TestServeExportsHeadroomAndStopsCleanly(t *testing.T) {
	srv := vllmFixtureServer(t)
	path := serveConfig(t, srv.URL+"/metrics")
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--config.file", path, "--web.listen-address", addr,
			"--evaluation.interval", "200ms", "--evaluation.window", "2s", "--log.level", "error"}, io.Discard, io.Discard)
	}()
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	deadline := time.Now().Add(15 * time.Second)
	var body string
	for time.Now().Before(deadline) {
		code, b := get("/metrics")
		body = b
		if code == 200 && strings.Contains(b, "kneewatch_replica_headroom_ratio{") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, want := range []string{
		`kneewatch_target_up{namespace="",pod="",replica="vllm-0",source="engine"} 1`,
		`kneewatch_replica_headroom_ratio{model="meta-llama/Llama-3.1-8B-Instruct",namespace="",pod="",profile="llama",replica="vllm-0"}`,
		`kneewatch_knee_concurrency{model="meta-llama/Llama-3.1-8B-Instruct",namespace="",pod="",profile="llama",replica="vllm-0"} 112`,
		`kneewatch_build_info{`,
		"\ngo_goroutines ",
		"\ngo_memstats_heap_alloc_bytes ",
		"\nprocess_cpu_seconds_total ",
		"\nprocess_resident_memory_bytes ",
		"\nprocess_open_fds ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", strings.TrimSpace(want))
		}
	}
	// The whole exposition, kneewatch's series with the Go and process
	// collectors', through the real promtool's linter.
	promtool := testtools.Path(t, "promtool")
	check := exec.Command(promtool, "check", "metrics")
	check.Stdin = strings.NewReader(body)
	out, err := check.CombinedOutput()
	if err != nil {
		t.Errorf("promtool check metrics over serve's /metrics: %v\n%s", err, out)
	}
	t.Logf("promtool check metrics over %d lines of serve's /metrics: exit 0, output %q", strings.Count(body, "\n"), out)
	if code, _ := get("/-/ready"); code != 200 {
		t.Errorf("/-/ready = %d after evaluations, want 200", code)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve returned %v on shutdown, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop within 10 s of cancellation")
	}
}

// TestServeLabelsTheServedReplicaFromTheStaticConfig: a static target's
// namespace, pod and labels, and global.external_labels, reach /metrics, so
// the rules can keep them and Alertmanager can route by namespace.
func TestServeLabelsTheServedReplicaFromTheStaticConfig(t *testing.T) {
	srv := vllmFixtureServer(t)
	path := serveConfig(t, srv.URL+"/metrics")
	cfg, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(cfg), "global:\n", "global:\n  external_labels:\n    cluster: eu-1\n", 1)
	text = strings.Replace(text, "    profile: llama\n", "    profile: llama\n    namespace: team-a\n    pod: vllm-0-abc\n    labels:\n      team: search\n", 1)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	const headroom = `kneewatch_replica_headroom_ratio{cluster="eu-1",model="meta-llama/Llama-3.1-8B-Instruct",namespace="team-a",pod="vllm-0-abc",profile="llama",replica="vllm-0",team="search"}`
	body := serveUntil(t, path, headroom)
	for _, want := range []string{
		headroom,
		`kneewatch_target_up{cluster="eu-1",namespace="team-a",pod="vllm-0-abc",replica="vllm-0",source="engine",team="search"} 1`,
		`kneewatch_fleet_replicas{cluster="eu-1",model="meta-llama/Llama-3.1-8B-Instruct"} 1`,
		`kneewatch_build_info{branch=`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if !regexp.MustCompile(`kneewatch_build_info\{[^}]*cluster="eu-1"`).MatchString(body) {
		t.Error("kneewatch_build_info lacks the external label cluster=\"eu-1\"")
	}
}
