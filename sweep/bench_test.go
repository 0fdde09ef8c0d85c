package sweep

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kneewatch/kneewatch/workload"
)

// benchTokens is the streamed response of the benchmarks: 64 token chunks,
// the usage chunk and [DONE], written at once, so the server costs next to
// nothing and the benchmark measures the client.
const benchTokens = 64

func instantStream(b *testing.B) *httptest.Server {
	b.Helper()
	var body bytes.Buffer
	for range benchTokens {
		body.WriteString("data: " + textChunk + "\n\n")
	}
	body.WriteString(`data: {"choices":[],"usage":{"prompt_tokens":256,"completion_tokens":64}}` + "\n\ndata: [DONE]\n\n")
	payload := body.Bytes()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(payload)
	}))
	b.Cleanup(srv.Close)
	return srv
}

// BenchmarkClientRequest is the sweep client's whole per-request cost: a
// 256-token prompt built and marshalled, the POST, the 64-chunk stream read
// with TTFT stamped and usage parsed. Compare with BenchmarkBareRequest, a
// plain POST of the same body with the response read and thrown away: the
// difference is what the client adds. Run with -cpu 1 for requests/s per core.
func BenchmarkClientRequest(b *testing.B) {
	srv := instantStream(b)
	c := &Client{BaseURL: srv.URL, Model: "m", Stream: true, Prompt: workload.UniquePrompts(), HTTP: NewHTTPClient(4)}
	ctx := context.Background()
	req := Request{PromptTokens: 256, MaxTokens: benchTokens}
	b.ReportAllocs()
	for b.Loop() {
		if res := c.Do(ctx, req); res.Err != nil || res.OutputTokens != benchTokens {
			b.Fatalf("err %v, %d tokens", res.Err, res.OutputTokens)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

// BenchmarkBareRequest is the peer of BenchmarkClientRequest: the same POST
// body (prepared once) with a bare http.Client and io.ReadAll.
func BenchmarkBareRequest(b *testing.B) {
	srv := instantStream(b)
	hc := NewHTTPClient(4)
	body := `{"model":"m","prompt":"` + strings.TrimSpace(workload.UniquePrompts()(256)) + `","max_tokens":64,"stream":true,"stream_options":{"include_usage":true},"ignore_eos":true}`
	b.ReportAllocs()
	for b.Loop() {
		resp, err := hc.Post(srv.URL+"/completions", "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadAll(resp.Body); err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}
