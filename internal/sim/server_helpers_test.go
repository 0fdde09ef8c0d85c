package sim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/kneewatch/kneewatch/workload"
)

const testModel = "meta-llama/Llama-3.1-8B-Instruct"

func h100(t testing.TB) Preset {
	t.Helper()
	p, err := LoadPreset("llama-3.1-8b-h100")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// startFleet starts a fleet on free loopback ports and stops it at the end
// of the test.
func startFleet(t testing.TB, cfg FleetConfig) *Fleet {
	t.Helper()
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.Preset.Name == "" {
		cfg.Preset = h100(t)
	}
	if cfg.ShutdownGrace == 0 {
		cfg.ShutdownGrace = 200 * time.Millisecond
	}
	f, err := StartFleet(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// startReplica starts a one-replica fleet and returns its base URL.
func startReplica(t testing.TB, cfg FleetConfig) (string, *Replica) {
	t.Helper()
	r := startFleet(t, cfg).Replicas()[0]
	return r.URL, r.Replica
}

// sseResult is what a raw SSE client saw.
type sseResult struct {
	status   int
	start    time.Time
	arrivals []time.Time // one per token chunk
	text     strings.Builder
	usage    *usage
	errEvent string
	done     bool
	finish   string
}

// streamSSE posts body to url and reads the event stream, timing each token.
func streamSSE(ctx context.Context, client *http.Client, url string, body any) (*sseResult, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	res := &sseResult{start: time.Now()}
	resp, err := client.Do(req)
	if err != nil {
		return res, err
	}
	defer resp.Body.Close()
	res.status = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, resp.Body)
		return res, nil
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if line == "[DONE]" {
			res.done = true
			continue
		}
		var chunk struct {
			Choices []struct {
				Text  string `json:"text"`
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *usage          `json:"usage"`
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &chunk); err != nil {
			return res, err
		}
		if chunk.Error != nil {
			res.errEvent = string(chunk.Error)
		}
		if chunk.Usage != nil {
			res.usage = chunk.Usage
		}
		for _, c := range chunk.Choices {
			tok := c.Text + c.Delta.Content
			if tok != "" {
				res.arrivals = append(res.arrivals, time.Now())
				res.text.WriteString(tok)
			}
			if c.FinishReason != nil {
				res.finish = *c.FinishReason
			}
		}
	}
	return res, sc.Err()
}

func (r *sseResult) ttft() time.Duration {
	if len(r.arrivals) == 0 {
		return 0
	}
	return r.arrivals[0].Sub(r.start)
}

// doJSON sends a JSON request and decodes a JSON answer into out (if not nil).
func doJSON(t testing.TB, method, url string, body, out any) int {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: answer %q is not JSON: %v", method, url, raw, err)
		}
	}
	return resp.StatusCode
}

// scrape GETs a /metrics URL and parses it with the Prometheus text parser.
func scrape(t testing.TB, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: status %d", url, resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: exposition does not parse: %v", url, err)
	}
	return mfs
}

// value returns the single sample of a counter or gauge family whose labels
// include want.
func value(t testing.TB, mfs map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	t.Helper()
	mf, ok := mfs[name]
	if !ok {
		t.Fatalf("metric %s missing", name)
	}
	for _, m := range mf.GetMetric() {
		if hasLabels(m, want) {
			switch {
			case m.Counter != nil:
				return m.GetCounter().GetValue()
			case m.Gauge != nil:
				return m.GetGauge().GetValue()
			case m.Untyped != nil:
				return m.GetUntyped().GetValue()
			}
		}
	}
	t.Fatalf("metric %s has no series with labels %v", name, want)
	return 0
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, lp := range m.GetLabel() {
		if v, ok := want[lp.GetName()]; ok && v == lp.GetValue() {
			n++
		}
	}
	return n == len(want)
}

// histogram returns the single histogram of a family.
func histogram(t testing.TB, mfs map[string]*dto.MetricFamily, name string) *dto.Histogram {
	t.Helper()
	mf, ok := mfs[name]
	if !ok {
		t.Fatalf("metric %s missing", name)
	}
	if mf.GetType() != dto.MetricType_HISTOGRAM || len(mf.GetMetric()) != 1 {
		t.Fatalf("metric %s: want one histogram series, got type %v with %d series", name, mf.GetType(), len(mf.GetMetric()))
	}
	return mf.GetMetric()[0].GetHistogram()
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", within, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func completionBody(prompt, maxTokens int, stream bool) map[string]any {
	return map[string]any{
		"model": testModel, "prompt": workload.PromptOfTokens(prompt), "max_tokens": maxTokens,
		"stream": stream, "stream_options": map[string]bool{"include_usage": true},
	}
}
