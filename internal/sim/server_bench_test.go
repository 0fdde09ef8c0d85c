package sim

import (
	"context"
	"net/http"
	"testing"
)

// BenchmarkStreamedRequest is one streamed 16-token completion end to end
// over loopback: HTTP, JSON, the driver and SSE. The GPU is made so fast
// (speed 1e6) that the simulator's own overhead is what is measured. Run
// with -cpu 1 for requests/s per core.
func BenchmarkStreamedRequest(b *testing.B) {
	url, _ := startReplica(b, FleetConfig{Speed: 1e6})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	defer client.CloseIdleConnections()
	body := completionBody(64, 16, true)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := streamSSE(ctx, client, url+"/v1/completions", body)
		if err != nil || len(res.arrivals) != 16 {
			b.Fatalf("err %v, %d tokens", err, len(res.arrivals))
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}
