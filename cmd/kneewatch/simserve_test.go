package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kneewatch/kneewatch/internal/testtools"
)

func TestSimServesReplicasUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr testtools.SyncBuffer
	errc := make(chan error, 1)
	go func() {
		errc <- run(ctx, []string{"sim", "--replicas", "2", "--web.listen-address", "127.0.0.1:0", "--dcgm.listen-address", "127.0.0.1:0",
			"--speed", "10", "--fault", "1:unhealthy=true", "--shutdown-grace", "200ms"}, &stdout, &stderr)
	}()
	urlRE := regexp.MustCompile(`http://127\.0\.0\.1:\d+\S*`)
	var urls []string
	deadline := time.Now().Add(5 * time.Second)
	for len(urls) < 5 {
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("the URLs were not printed; stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
		urls = urlRE.FindAllString(stdout.String(), -1)
	}
	// Per replica: OpenAI base URL and metrics URL; then the DCGM URL.
	status := func(url string) int {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	health0 := strings.TrimSuffix(urls[0], "/v1") + "/health"
	health1 := strings.TrimSuffix(urls[2], "/v1") + "/health"
	if s0, s1 := status(health0), status(health1); s0 != 200 || s1 != 503 {
		t.Errorf("health: sim-0 %d, sim-1 %d; want 200 and 503 (--fault 1:unhealthy=true)", s0, s1)
	}
	for _, u := range []string{urls[1], urls[3], urls[4]} {
		if s := status(u); s != 200 {
			t.Errorf("GET %s: %d", u, s)
		}
	}
	if !strings.Contains(urls[4], "/metrics") || !strings.Contains(stdout.String(), "dcgm") {
		t.Errorf("no DCGM URL printed:\n%s", stdout.String())
	}
	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Errorf("sim returned %v after SIGINT, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("sim did not stop after its context was cancelled")
	}
}

func TestSimRejectsBadFlagsWithClearErrors(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"no replicas", []string{"--replicas", "0"}, "--replicas must be ≥ 1"},
		{"an unknown preset", []string{"--preset", "gpt-5-b200"}, `unknown simulator preset "gpt-5-b200"`},
		{"a missing preset file", []string{"--preset-file", "/nonexistent/p.yaml"}, "--preset-file"},
		{"an unknown fault", []string{"--fault", "explode=1"}, `unknown fault "explode"`},
		{"an unknown metrics flavor", []string{"--metrics-flavor", "triton", "--web.listen-address", "127.0.0.1:0", "--dcgm.listen-address", ""}, `unknown metrics flavor "triton"`},
		{"a zero speed", []string{"--speed", "0"}, "--speed must be > 0"},
		{"an unknown log level", []string{"--log.level", "verbose"}, `--log.level: unknown log level "verbose"`},
		{"an unknown log level by its old name", []string{"--log-level", "verbose"}, `--log.level: unknown log level "verbose"`},
		{"a stray argument", []string{"extra"}, "sim takes no arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := run(context.Background(), append([]string{"sim"}, tt.args...), &out, &errOut)
			if err == nil || !strings.Contains(err.Error()+errOut.String(), tt.wantErr) {
				t.Errorf("error %v (stderr %q), want one containing %q", err, errOut.String(), tt.wantErr)
			}
		})
	}
}

// TestSimTakesItsOldFlagNamesWithAWarning runs sim with the names it had
// before every subcommand named its flags one way (--listen, --dcgm-listen,
// --log-level): they still work, and each use is logged as deprecated.
func TestSimTakesItsOldFlagNamesWithAWarning(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr testtools.SyncBuffer
	errc := make(chan error, 1)
	go func() {
		errc <- run(ctx, []string{"sim", "--listen", "127.0.0.1:0", "--dcgm-listen", "", "--log-level", "warn"}, &stdout, &stderr)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(stdout.String(), "Stop with Ctrl-C") {
		if time.Now().After(deadline) {
			t.Fatalf("sim did not start; stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("sim: %v", err)
	}
	if strings.Contains(stdout.String(), "dcgm") {
		t.Errorf("--dcgm-listen \"\" did not turn the DCGM endpoint off:\n%s", stdout.String())
	}
	for _, want := range []string{
		`level=WARN source=logflags.go`,
		`msg="--listen is deprecated: use --web.listen-address"`,
		`msg="--dcgm-listen is deprecated: use --dcgm.listen-address"`,
		`msg="--log-level is deprecated: use --log.level"`,
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %s:\n%s", want, stderr.String())
		}
	}
}
