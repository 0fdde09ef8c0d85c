package sim

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestFleetServesEveryReplicaOnItsOwnListener(t *testing.T) {
	f := startFleet(t, FleetConfig{Replicas: 3, Speed: 50, Model: "m"})
	var names []string
	urls := map[string]bool{}
	for _, r := range f.Replicas() {
		names = append(names, r.Name)
		urls[r.URL] = true
		var body struct {
			Usage usage `json:"usage"`
		}
		if s := doJSON(t, http.MethodPost, r.OpenAIBaseURL+"/completions", map[string]any{"model": "m", "prompt": "hi", "max_tokens": 3}, &body); s != 200 || body.Usage.CompletionTokens != 3 {
			t.Errorf("%s: status %d, usage %+v", r.Name, s, body.Usage)
		}
		if r.MetricsURL != r.URL+"/metrics" || r.OpenAIBaseURL != r.URL+"/v1" {
			t.Errorf("%s: URLs %q and %q do not derive from %q", r.Name, r.OpenAIBaseURL, r.MetricsURL, r.URL)
		}
	}
	if diff := cmp.Diff([]string{"sim-0", "sim-1", "sim-2"}, names); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	if len(urls) != 3 {
		t.Errorf("replicas share listeners: %v", urls)
	}
	if f.DCGMURL() != "" {
		t.Errorf("DCGM endpoint %q started without DCGMListen", f.DCGMURL())
	}
}

func TestFleetListensOnConsecutivePorts(t *testing.T) {
	// Find three free consecutive ports; another process may take them
	// between the probe and the start, so try a few bases.
	for attempt := 0; attempt < 5; attempt++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		base := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if base > 65000 {
			continue
		}
		f, err := StartFleet(context.Background(), FleetConfig{Replicas: 3, Listen: net.JoinHostPort("127.0.0.1", strconv.Itoa(base)), Preset: h100(t)})
		if err != nil {
			continue
		}
		defer f.Close()
		for i, r := range f.Replicas() {
			if want := fmt.Sprintf("http://127.0.0.1:%d", base+i); r.URL != want {
				t.Errorf("replica %d at %s, want %s", i, r.URL, want)
			}
		}
		return
	}
	t.Skip("no three consecutive free ports found")
}

func TestStartFleetRejectsBadConfigWithClearErrors(t *testing.T) {
	p := h100(t)
	tests := []struct {
		name    string
		cfg     FleetConfig
		wantErr string
	}{
		{"a listen address without a port", FleetConfig{Listen: "localhost"}, `listen address "localhost": want host:port`},
		{"a port that is not a number", FleetConfig{Listen: "127.0.0.1:http"}, `port "http" is not a number`},
		{"replicas past the last port", FleetConfig{Listen: "127.0.0.1:65535", Replicas: 2}, "past 65535"},
		{"a negative replica count", FleetConfig{Listen: "127.0.0.1:0", Replicas: -1}, "replicas must be ≥ 1"},
		{"a fault for a replica that does not exist", FleetConfig{Listen: "127.0.0.1:0", Replicas: 2,
			Faults: []FaultFlag{{Replica: 2, Key: "slowdown", Value: "2"}}}, "only 2 replicas"},
		{"an unknown metrics flavor", FleetConfig{Listen: "127.0.0.1:0", MetricsFlavor: "triton"}, `unknown metrics flavor "triton"`},
		{"a bad DCGM address", FleetConfig{Listen: "127.0.0.1:0", DCGMListen: "9400"}, `DCGM listen address "9400"`},
		{"a bad speed", FleetConfig{Listen: "127.0.0.1:0", Speed: -2}, "speed must be"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Preset = p
			f, err := StartFleet(context.Background(), tt.cfg)
			if err == nil {
				f.Close()
				t.Fatalf("started; want an error containing %q", tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestFleetLetsShortRequestsFinishOnShutdown(t *testing.T) {
	f, err := StartFleet(context.Background(), FleetConfig{Listen: "127.0.0.1:0", Preset: h100(t), ShutdownGrace: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	url, rep := f.Replicas()[0].URL, f.Replicas()[0].Replica
	done := make(chan *sseResult, 1)
	go func() {
		res, _ := streamSSE(context.Background(), http.DefaultClient, url+"/v1/completions", completionBody(20, 20, true))
		done <- res
	}()
	eventually(t, time.Second, "the request never started", func() bool { return rep.State().Running == 1 })
	f.Close()
	res := <-done
	if res == nil || len(res.arrivals) != 20 || !res.done || res.errEvent != "" {
		t.Errorf("a 20-token request during a graceful shutdown got %d tokens, done %v, error %q", len(res.arrivals), res.done, res.errEvent)
	}
}

func TestFleetFailsRequestsThatOutliveTheShutdownGrace(t *testing.T) {
	f, err := StartFleet(context.Background(), FleetConfig{Listen: "127.0.0.1:0", Preset: h100(t), ShutdownGrace: 100 * time.Millisecond,
		Faults: []FaultFlag{{Replica: -1, Key: "stall", Value: "forever"}}})
	if err != nil {
		t.Fatal(err)
	}
	url, rep := f.Replicas()[0].URL, f.Replicas()[0].Replica
	done := make(chan *sseResult, 1)
	go func() {
		res, _ := streamSSE(context.Background(), http.DefaultClient, url+"/v1/completions", completionBody(20, 20, true))
		done <- res
	}()
	eventually(t, time.Second, "the request never queued", func() bool { return rep.State().Waiting == 1 })
	start := time.Now()
	f.Close()
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Close took %v with a 100 ms grace", d)
	}
	select {
	case res := <-done:
		if !strings.Contains(res.errEvent, "shutting down") {
			t.Errorf("the stalled request ended with error event %q, want one saying the replica is shutting down", res.errEvent)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the stalled request still hangs after Close")
	}
}

func TestFleetStopsWithItsContextAndLeaksNoGoroutines(t *testing.T) {
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	before := runtime.NumGoroutine()

	ctx, cancel := context.WithCancel(context.Background())
	f, err := StartFleet(ctx, FleetConfig{Replicas: 3, Listen: "127.0.0.1:0", DCGMListen: "127.0.0.1:0", Preset: h100(t),
		Speed: 20, ShutdownGrace: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range f.Replicas() {
		if _, err := streamSSE(context.Background(), client, r.URL+"/v1/completions", completionBody(10, 5, true)); err != nil {
			t.Fatal(err)
		}
	}
	// Leave one long request in flight: shutdown must end it too.
	go streamSSE(context.Background(), client, f.Replicas()[0].URL+"/v1/completions", completionBody(10, 100000, true))
	eventually(t, time.Second, "the long request never started", func() bool { return f.Replicas()[0].Replica.State().Running == 1 })
	resp, err := client.Get(f.DCGMURL())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	cancel()
	select {
	case <-f.Done():
	case <-time.After(3 * time.Second):
		t.Fatal("the fleet did not stop after its context was cancelled")
	}
	client.CloseIdleConnections()
	var after int
	deadline := time.Now().Add(3 * time.Second)
	for {
		after = runtime.NumGoroutine()
		if after <= before || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if after > before {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines before the fleet, %d after it stopped:\n%s", before, after, buf[:runtime.Stack(buf, true)])
	}
}
