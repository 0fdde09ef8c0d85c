package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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
	h, err := Handler(Options{Registry: reg, Ready: func() error {
		if !ready.Load() {
			return errors.New("no evaluation has completed yet")
		}
		return nil
	}, Version: "test", Logger: logger})
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
	if code, body := get(t, base+"/-/ready", "", ""); code != 503 || body != "kneewatch is not ready: no evaluation has completed yet\n" {
		t.Errorf("/-/ready before the first evaluation = %d %q, want 503 with the reason", code, body)
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

func TestThreeHundredIdleKeepAliveConnectionsDoNotStarveMetrics(t *testing.T) {
	var ready atomic.Bool
	ready.Store(true)
	base := startServer(t, &ready, "")
	addr := strings.TrimPrefix(base, "http://")
	// Each client sends one request on a keep-alive connection, reads the
	// answer and then sits on the connection.
	var conns []net.Conn
	t.Cleanup(func() {
		for _, c := range conns {
			_ = c.Close()
		}
	})
	for range 300 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		conns = append(conns, c)
		if _, err := io.WriteString(c, "GET /-/healthy HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 4096)
		if _, err := c.Read(buf); err != nil {
			t.Fatalf("reading the answer: %v", err)
		}
	}
	// The server closed all but MaxIdleConns of them.
	open := 0
	for _, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
			open++
		}
	}
	if open > MaxIdleConns {
		t.Errorf("%d idle connections still open, want at most %d", open, MaxIdleConns)
	}
	client := &http.Client{Timeout: 2 * time.Second}
	resp, err := client.Get(base + "/metrics")
	if err != nil {
		t.Fatalf("/metrics with 300 idle connections open: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/metrics status %d", resp.StatusCode)
	}
}

func TestTheServerHasConnectionTimeouts(t *testing.T) {
	for name, d := range map[string]time.Duration{"read": ReadTimeout, "write": WriteTimeout, "idle": IdleTimeout} {
		if d <= 0 || d > 2*time.Minute {
			t.Errorf("%s timeout %s, want between 0 and 2m", name, d)
		}
	}
}

func TestTheLandingPageLinksNoPageThatIsNotServed(t *testing.T) {
	var ready atomic.Bool
	base := startServer(t, &ready, "")
	resp, err := http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, m := range regexp.MustCompile(`href="([^"#:]+)"`).FindAllStringSubmatch(string(body), -1) {
		link := m[1]
		if strings.HasPrefix(link, "http") {
			continue
		}
		r, err := http.Get(base + "/" + strings.TrimPrefix(link, "/"))
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode == http.StatusNotFound {
			t.Errorf("the landing page links %s, which is 404", link)
		}
	}
	if strings.Contains(string(body), "debug/pprof") {
		t.Error("the landing page links /debug/pprof, which is not served")
	}
}

func TestReloadIsPOSTOnlyAndReportsTheError(t *testing.T) {
	reg := prometheus.NewRegistry()
	logger := slog.New(slog.DiscardHandler)
	fail := errors.New("targets[0].engine: unknown engine")
	var calls atomic.Int32
	var failing atomic.Bool
	h, err := Handler(Options{Registry: reg, Logger: logger, Reload: func() error {
		calls.Add(1)
		if failing.Load() {
			return fail
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	do := func(method string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, "/-/reload", nil))
		return rec.Code, rec.Body.String()
	}
	if code, _ := do(http.MethodGet); code != http.StatusMethodNotAllowed {
		t.Errorf("GET /-/reload: %d, want 405", code)
	}
	if code, _ := do(http.MethodPost); code != http.StatusOK || calls.Load() != 1 {
		t.Errorf("POST /-/reload: %d after %d calls, want 200 after 1", code, calls.Load())
	}
	failing.Store(true)
	if code, body := do(http.MethodPost); code != http.StatusInternalServerError || !strings.Contains(body, fail.Error()) {
		t.Errorf("failing POST /-/reload: %d %q, want 500 naming the error", code, body)
	}
}
