package server

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/crypto/bcrypt"
)

func startServer(t *testing.T, ready *atomic.Bool, webConfig string) string {
	t.Helper()
	reg := prometheus.NewRegistry()
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "kneewatch_test_value", Help: "test"})
	g.Set(42)
	reg.MustRegister(g)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	h, err := Handler(Options{Registry: reg, Ready: ready.Load, Version: "test", Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, l, h, webConfig, logger) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve returned %v after shutdown", err)
		}
	})
	return "http://" + l.Addr().String()
}

func get(t *testing.T, url, user, pass string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestReadinessWaitsForTheFirstEvaluation(t *testing.T) {
	var ready atomic.Bool
	base := startServer(t, &ready, "")
	if code, _ := get(t, base+"/-/healthy", "", ""); code != 200 {
		t.Errorf("/-/healthy = %d, want 200 from the start", code)
	}
	if code, _ := get(t, base+"/-/ready", "", ""); code != 503 {
		t.Errorf("/-/ready before the first evaluation = %d, want 503", code)
	}
	ready.Store(true)
	if code, _ := get(t, base+"/-/ready", "", ""); code != 200 {
		t.Errorf("/-/ready after the first evaluation = %d, want 200", code)
	}
}

func TestMetricsAndLandingPageAreServed(t *testing.T) {
	var ready atomic.Bool
	base := startServer(t, &ready, "")
	code, body := get(t, base+"/metrics", "", "")
	if code != 200 || !strings.Contains(body, "kneewatch_test_value 42") {
		t.Errorf("/metrics = %d %q, want the registry's metric", code, body)
	}
	code, body = get(t, base+"/", "", "")
	if code != 200 || !strings.Contains(body, "kneewatch") || !strings.Contains(body, "metrics") {
		t.Errorf("landing page = %d, missing name or links: %q", code, body)
	}
	if code, _ := get(t, base+"/nope", "", ""); code != 404 {
		t.Errorf("/nope = %d, want 404", code)
	}
}

func TestWebConfigBasicAuthProtectsEveryRoute(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(cfg, []byte("basic_auth_users:\n  oncall: "+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var ready atomic.Bool
	ready.Store(true)
	base := startServer(t, &ready, cfg)
	if code, _ := get(t, base+"/metrics", "", ""); code != 401 {
		t.Errorf("/metrics without credentials = %d, want 401", code)
	}
	if code, _ := get(t, base+"/metrics", "oncall", "wrong"); code != 401 {
		t.Errorf("/metrics with a wrong password = %d, want 401", code)
	}
	if code, body := get(t, base+"/metrics", "oncall", "s3cret"); code != 200 || !strings.Contains(body, "kneewatch_test_value") {
		t.Errorf("/metrics with credentials = %d, want 200 with metrics", code)
	}
}
