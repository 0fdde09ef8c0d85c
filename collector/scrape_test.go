package collector

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/common/config"
)

// serve starts a loopback server for the test and stops it afterwards.
func serve(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func serveText(t *testing.T, body string) *httptest.Server {
	return serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = w.Write([]byte(body))
	})
}

func gzipped(t *testing.T, s string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestScrapeReturnsASnapshotStampedAtTheRequestStart(t *testing.T) {
	fixture := readFixture(t, "vllm-v1-full-synthetic.prom")
	var gotAccept string
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		gotAccept = r.Header.Get("Accept")
		_, _ = w.Write([]byte(fixture))
	})
	sc := NewScraper(srv.Client(), ScrapeLimits{})
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	sc.now = func() time.Time { return start }
	s, err := sc.Scrape(context.Background(), srv.URL+"/metrics", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Time.Equal(start) {
		t.Errorf("time = %v, want %v", s.Time, start)
	}
	if got, _ := s.Gauge(SignalRunning); got != 78 || s.Engine != "vllm" {
		t.Errorf("engine %q running %v, want vllm 78", s.Engine, got)
	}
	if !strings.HasPrefix(gotAccept, "application/openmetrics-text;version=1.0.0") || !strings.Contains(gotAccept, "text/plain;version=0.0.4") {
		t.Errorf("Accept = %q, want OpenMetrics first and the classic text format next, as Prometheus asks", gotAccept)
	}
}

func TestScrapeDecodesGzip(t *testing.T) {
	fixture := readFixture(t, "sglang-current-synthetic.prom")
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			t.Errorf("Accept-Encoding = %q, want gzip", r.Header.Get("Accept-Encoding"))
		}
		w.Header().Set("Content-Encoding", "gzip")
		_, _ = w.Write(gzipped(t, fixture))
	})
	// A Prometheus-config client disables transparent decompression, as
	// Prometheus's own does; the scraper must decode by itself.
	client, err := NewHTTPClient(config.DefaultHTTPClientConfig, "test")
	if err != nil {
		t.Fatal(err)
	}
	got, err := NewScraper(client, ScrapeLimits{}).Scrape(context.Background(), srv.URL, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := normalizeText(t, fixture, Options{})
	want.Time = got.Time
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-plain +gzip):\n%s", diff)
	}
}

func TestScrapeFailuresSayWhichURLAndWhat(t *testing.T) {
	big := strings.Repeat("# padding comment line to grow the body\n", 100) + "vllm:num_requests_running 1\n"
	manySeries := "# TYPE vllm:num_requests_running gauge\n" + strings.Repeat("vllm:num_requests_running{engine=\"x\"} 1\n", 11)
	tests := []struct {
		name    string
		handler http.HandlerFunc
		limits  ScrapeLimits
		wantIs  error
		want    string
	}{
		{
			name: "a garbage body is a parse error with its line",
			handler: func(w http.ResponseWriter, _ *http.Request) {
				_, _ = w.Write([]byte("vllm:num_requests_running 1\n<html>oops</html>\n"))
			},
			want: "parsing text exposition: text format parsing error in line 2",
		},
		{
			name: "a body announced over the size limit is refused unread",
			handler: func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Length", strconv.Itoa(len(big)))
				_, _ = w.Write([]byte(big))
			},
			limits: ScrapeLimits{MaxBodyBytes: 1024},
			wantIs: ErrBodyTooLarge,
			want:   "body exceeds size limit: Content-Length 4028, limit 1024",
		},
		{
			name: "a body of unannounced size over the size limit is refused",
			handler: func(w http.ResponseWriter, _ *http.Request) {
				_, _ = w.Write([]byte(big[:100]))
				w.(http.Flusher).Flush() // chunked: no Content-Length
				_, _ = w.Write([]byte(big[100:]))
			},
			limits: ScrapeLimits{MaxBodyBytes: 1024},
			wantIs: ErrBodyTooLarge,
			want:   "body exceeds size limit: more than 1024 bytes",
		},
		{
			name: "a small gzip body that expands past the limit is refused",
			handler: func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Encoding", "gzip")
				_, _ = w.Write(gzipped(t, big))
			},
			limits: ScrapeLimits{MaxBodyBytes: 1024},
			wantIs: ErrBodyTooLarge,
			want:   "body exceeds size limit",
		},
		{
			name:    "more series than the limit are refused",
			handler: func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(manySeries)) },
			limits:  ScrapeLimits{MaxSeries: 10},
			wantIs:  ErrTooManySeries,
			want:    "too many series: 11 sample lines, limit 10",
		},
		{
			name:    "a non-200 status is an error naming it",
			handler: func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "down", http.StatusServiceUnavailable) },
			want:    "HTTP status 503 Service Unavailable",
		},
		{
			name: "a protobuf body is refused",
			handler: func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited")
				_, _ = w.Write([]byte{0x01})
			},
			want: "unsupported content type",
		},
		{
			name:    "a scrape with no engine metrics is an error",
			handler: func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("# TYPE up gauge\nup 1\n")) },
			wantIs:  ErrNoEngine,
			want:    "no known engine metrics",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := serve(t, tt.handler)
			target := srv.URL + "/metrics"
			_, err := NewScraper(srv.Client(), tt.limits).Scrape(context.Background(), target, Options{})
			if err == nil {
				t.Fatal("no error")
			}
			var se *ScrapeError
			if !errors.As(err, &se) || se.URL != target {
				t.Errorf("error %v is not a ScrapeError for %s", err, target)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("error %v is not %v", err, tt.wantIs)
			}
			if !strings.Contains(err.Error(), "scrape "+target+": ") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want it to name %s and contain %q", err, target, tt.want)
			}
		})
	}
}

func TestScrapeOfASlowTargetTimesOut(t *testing.T) {
	release := make(chan struct{})
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) }) // runs before srv.Close
	sc := NewScraper(srv.Client(), ScrapeLimits{Timeout: 100 * time.Millisecond})
	start := time.Now()
	_, err := sc.Scrape(context.Background(), srv.URL, Options{})
	elapsed := time.Since(start)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "timed out after 100ms") {
		t.Fatalf("err = %v, want a timeout after 100ms", err)
	}
	if elapsed > 2*time.Second {
		t.Errorf("scrape took %s, want about 100ms", elapsed)
	}
}

func TestScrapeErrorsHidePasswords(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "no", http.StatusUnauthorized) })
	target := strings.Replace(srv.URL, "http://", "http://user:s3cret@", 1)
	_, err := NewScraper(srv.Client(), ScrapeLimits{}).Scrape(context.Background(), target, Options{})
	if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "user:xxxxx@") {
		t.Errorf("err = %v, want the password redacted", err)
	}
}

func TestHTTPClientFromPrometheusConfig(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "kw" || p != "pw" {
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(readFixture(t, "tgi-synthetic.prom")))
	})
	t.Run("basic auth from the config is sent", func(t *testing.T) {
		cfg := config.DefaultHTTPClientConfig
		cfg.BasicAuth = &config.BasicAuth{Username: "kw", Password: "pw"}
		client, err := NewHTTPClient(cfg, "tgi-0")
		if err != nil {
			t.Fatal(err)
		}
		s, err := NewScraper(client, ScrapeLimits{}).Scrape(context.Background(), srv.URL, Options{Model: "bigscience/bloom"})
		if err != nil {
			t.Fatal(err)
		}
		if s.Engine != "tgi" || s.Model != "bigscience/bloom" {
			t.Errorf("engine %q model %q, want tgi with the configured model", s.Engine, s.Model)
		}
	})
	t.Run("an invalid config is an error naming the client", func(t *testing.T) {
		cfg := config.DefaultHTTPClientConfig
		cfg.BasicAuth = &config.BasicAuth{Username: "kw", Password: "pw"}
		cfg.BearerToken = "tok"
		_, err := NewHTTPClient(cfg, "tgi-0")
		if err == nil || !strings.Contains(err.Error(), "http client config for tgi-0") {
			t.Errorf("err = %v, want a config error naming tgi-0", err)
		}
	})
}

func TestScrapeDCGMReadsTheSelectedGPUs(t *testing.T) {
	srv := serveText(t, readFixture(t, "dcgm-lke-ai-conformance-gpu-operator-k8s.prom"))
	d, err := NewScraper(srv.Client(), ScrapeLimits{}).ScrapeDCGM(context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if d.Time.IsZero() {
		t.Error("DCGM snapshot has no time")
	}
	if got := d.Select(GPUSelector{Pod: "cuda-75454ffb9f-8ljq7", Namespace: "default"}); len(got) != 1 {
		t.Errorf("pod selector matched %d GPUs, want 1", len(got))
	}
	if got := d.Select(GPUSelector{Pod: "other"}); len(got) != 0 {
		t.Errorf("other pod matched %d GPUs, want 0", len(got))
	}
	_, err = NewScraper(srv.Client(), ScrapeLimits{}).ScrapeDCGM(context.Background(), serveText(t, "# TYPE up gauge\nup 1\n").URL)
	if !errors.Is(err, ErrNoDCGM) {
		t.Errorf("err = %v, want ErrNoDCGM", err)
	}
}

func TestSampleLineCount(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "vllm-v1-full-synthetic.prom"))
	if err != nil {
		t.Fatal(err)
	}
	var want int
	for _, line := range strings.Split(string(b), "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			want++
		}
	}
	if got := countSampleLines(b); got != want || want == 0 {
		t.Errorf("countSampleLines = %d, want %d", got, want)
	}
}
