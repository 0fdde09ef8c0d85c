package probe

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kneewatch/kneewatch/internal/testtools"
)

// TestTheAPIKeyNeverAppearsInLogsOrMetrics probes a server that rejects
// every other probe with a 401 whose body echoes the Authorization header
// (as some gateways do), with debug logging on, while the key file is
// removed mid-run; then it reads /metrics. The key must reach the server
// and appear nowhere else.
func TestTheAPIKeyNeverAppearsInLogsOrMetrics(t *testing.T) {
	t.Parallel()
	const key = "sk-kneewatch-canary-7Q4f9aZ"
	keyFile := filepath.Join(t.TempDir(), "api-key")
	if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var withKey, requests atomic.Int64
	srv := httptest.NewServer(drained(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		if auth == "Bearer "+key {
			withKey.Add(1)
		}
		if requests.Add(1)%2 == 1 {
			http.Error(w, `{"error":{"message":"invalid credentials: `+auth+`"}}`, http.StatusUnauthorized)
			return
		}
		tokens(2, 0)(w, r)
	}))
	defer srv.Close()

	var logs testtools.SyncBuffer
	p := fastProbes()
	p.APIKeyFile = keyFile
	r, err := New(Options{Probes: p, Seed: 9, Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SetTargets([]Target{{Replica: "r0", Model: "m", BaseURL: srv.URL + "/v1", KneeOutputTokensPerSecond: 1e6}}); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(400*time.Millisecond, func() { os.Remove(keyFile) })
	runFor(t, r, nil, 800*time.Millisecond)

	reg := prometheus.NewRegistry()
	reg.MustRegister(r)
	metricsSrv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer metricsSrv.Close()
	resp, err := http.Get(metricsSrv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	metrics, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}

	if withKey.Load() < 4 || withKey.Load() != requests.Load() {
		t.Fatalf("%d of %d probes carried the key; want every one (≥ 4), also after the key file was removed", withKey.Load(), requests.Load())
	}
	out := logs.String()
	for _, want := range []string{`"class":"http_4xx"`, "invalid credentials: Bearer <secret>", "cannot read the probe API key", keyFile} {
		if !strings.Contains(out, want) {
			t.Errorf("the logs lack %q, so the test did not exercise what it should:\n%s", want, out)
		}
	}
	if !strings.Contains(string(metrics), `kneewatch_probe_failures_total{class="http_4xx",model="m",namespace="",pod="",replica="r0"}`) {
		t.Errorf("/metrics lacks the 401s:\n%s", metrics)
	}
	// Any part of the key long enough to identify it.
	for _, where := range []struct{ name, text string }{{"the logs", out}, {"/metrics", string(metrics)}} {
		if strings.Contains(where.text, key[3:]) {
			t.Errorf("the API key appears in %s:\n%s", where.name, where.text)
		}
	}
}
