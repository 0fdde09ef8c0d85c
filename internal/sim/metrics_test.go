package sim

import (
	"context"
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
)

// runRequests streams n requests concurrently and returns what each client saw.
func runRequests(t *testing.T, url string, n, prompt, output int) []*sseResult {
	t.Helper()
	results := make([]*sseResult, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			res, err := streamSSE(context.Background(), http.DefaultClient, url+"/v1/completions", completionBody(prompt, output, true))
			if err != nil {
				t.Error(err)
				return
			}
			results[i] = res
		})
	}
	wg.Wait()
	for i, r := range results {
		if r == nil || len(r.arrivals) != output {
			t.Fatalf("request %d did not get its %d tokens", i, output)
		}
	}
	return results
}

func TestEveryFlavorParsesAndHasItsEngineNames(t *testing.T) {
	tests := []struct {
		flavor string
		want   []string // families that must be present
		labels map[string]string
	}{
		{"vllm", []string{
			"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
			"vllm:num_preemptions_total", "vllm:prompt_tokens_total", "vllm:generation_tokens_total",
			"vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds",
			"vllm:request_time_per_output_token_seconds", "vllm:e2e_request_latency_seconds",
			"vllm:request_queue_time_seconds", "vllm:request_success_total", "vllm:prefix_cache_queries_total",
			"vllm:prefix_cache_hits_total", "vllm:cache_config_info",
		}, map[string]string{"model_name": testModel, "engine": "0"}},
		{"vllm-v0", []string{
			"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:gpu_cache_usage_perc",
			"vllm:num_preemptions_total", "vllm:prompt_tokens_total", "vllm:generation_tokens_total",
			"vllm:time_to_first_token_seconds", "vllm:time_per_output_token_seconds",
			"vllm:e2e_request_latency_seconds", "vllm:request_queue_time_seconds", "vllm:request_success_total",
			"vllm:gpu_prefix_cache_hit_rate", "vllm:cache_config_info",
		}, map[string]string{"model_name": testModel}},
		{"sglang", []string{
			"sglang:num_running_reqs", "sglang:num_queue_reqs", "sglang:token_usage", "sglang:num_retracted_reqs",
			"sglang:prompt_tokens_total", "sglang:generation_tokens_total", "sglang:num_requests_total",
			"sglang:time_to_first_token_seconds", "sglang:inter_token_latency_seconds",
			"sglang:e2e_request_latency_seconds", "sglang:queue_time_seconds", "sglang:cache_hit_rate",
		}, map[string]string{"model_name": testModel}},
		{"tgi", []string{
			"tgi_queue_size", "tgi_batch_current_size", "tgi_request_success", "tgi_request_duration",
			"tgi_request_queue_duration", "tgi_request_mean_time_per_token_duration", "tgi_request_input_length",
			"tgi_request_generated_tokens", "tgi_batch_current_max_tokens", "tgi_batch_max_total_tokens",
		}, map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.flavor, func(t *testing.T) {
			url, _ := startReplica(t, FleetConfig{MetricsFlavor: tt.flavor, Speed: 20})
			runRequests(t, url, 2, 30, 4)
			mfs := scrape(t, url+"/metrics")
			for _, name := range tt.want {
				mf, ok := mfs[name]
				if !ok {
					t.Errorf("%s missing", name)
					continue
				}
				if mf.GetHelp() == "" {
					t.Errorf("%s has no HELP", name)
				}
				if name == "vllm:cache_config_info" {
					continue // its labels are the cache config
				}
				for _, m := range mf.GetMetric() {
					if !hasLabels(m, tt.labels) {
						t.Errorf("%s series %v lacks labels %v", name, m.GetLabel(), tt.labels)
					}
				}
			}
			// Other flavors' names must not leak in.
			for name := range mfs {
				prefix := map[string]string{"vllm": "vllm:", "vllm-v0": "vllm:", "sglang": "sglang:", "tgi": "tgi_"}[tt.flavor]
				if len(name) < len(prefix) || name[:len(prefix)] != prefix {
					t.Errorf("%s does not belong to flavor %s", name, tt.flavor)
				}
			}
		})
	}
}

func TestVLLMFlavorDropsV0NamesAndV0FlavorDropsV1Names(t *testing.T) {
	for flavor, absent := range map[string][]string{
		"vllm":    {"vllm:gpu_cache_usage_perc", "vllm:time_per_output_token_seconds", "vllm:num_requests_swapped"},
		"vllm-v0": {"vllm:kv_cache_usage_perc", "vllm:inter_token_latency_seconds", "vllm:prefix_cache_queries_total"},
	} {
		url, _ := startReplica(t, FleetConfig{MetricsFlavor: flavor})
		mfs := scrape(t, url+"/metrics")
		for _, name := range absent {
			if _, ok := mfs[name]; ok {
				t.Errorf("flavor %s exposes %s", flavor, name)
			}
		}
	}
}

// les returns a histogram's bucket upper bounds, without +Inf.
func les(h *dto.Histogram) []float64 {
	var out []float64
	for _, b := range h.GetBucket() {
		if !math.IsInf(b.GetUpperBound(), 1) {
			out = append(out, b.GetUpperBound())
		}
	}
	return out
}

func TestVLLMHistogramsHaveTheDocumentedBuckets(t *testing.T) {
	url, _ := startReplica(t, FleetConfig{Speed: 20})
	runRequests(t, url, 1, 10, 3)
	mfs := scrape(t, url+"/metrics")
	ttft := []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
		20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	itl := []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	latency := []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0,
		480.0, 960.0, 1920.0, 7680.0}
	// build_1_2_5_buckets(131072), the preset's max_model_len.
	tokens := []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000}
	tests := []struct {
		name string
		want []float64
	}{
		{"vllm:time_to_first_token_seconds", ttft},
		{"vllm:inter_token_latency_seconds", itl},
		{"vllm:request_time_per_output_token_seconds", itl},
		{"vllm:e2e_request_latency_seconds", latency},
		{"vllm:request_queue_time_seconds", latency},
		{"vllm:request_inference_time_seconds", latency},
		{"vllm:request_prefill_time_seconds", latency},
		{"vllm:request_decode_time_seconds", latency},
		{"vllm:request_prompt_tokens", tokens},
		{"vllm:request_generation_tokens", tokens},
		{"vllm:iteration_tokens_total", []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, les(histogram(t, mfs, tt.name))); diff != "" {
			t.Errorf("%s le set (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestBuckets125FollowVLLMsRule(t *testing.T) {
	tests := []struct {
		name string
		max  int
		want []float64
	}{
		{"stops at the last value not above max", 16384, []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000}},
		{"includes max itself", 500, []float64{1, 2, 5, 10, 20, 50, 100, 200, 500}},
		{"a max of 1 has one bucket", 1, []float64{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, buckets125(tt.max)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestOtherFlavorsHaveTheirEnginesBuckets(t *testing.T) {
	url, _ := startReplica(t, FleetConfig{MetricsFlavor: "sglang"})
	mfs := scrape(t, url+"/metrics")
	if diff := cmp.Diff(sglangTTFTBuckets, les(histogram(t, mfs, "sglang:time_to_first_token_seconds"))); diff != "" {
		t.Errorf("sglang TTFT buckets (-want +got):\n%s", diff)
	}
	if got := les(histogram(t, mfs, "sglang:inter_token_latency_seconds")); len(got) != 23 || got[0] != 0.002 || got[22] != 8 {
		t.Errorf("sglang ITL buckets %v, want 23 edges from 0.002 to 8", got)
	}

	url, _ = startReplica(t, FleetConfig{MetricsFlavor: "tgi"})
	mfs = scrape(t, url+"/metrics")
	got := les(histogram(t, mfs, "tgi_request_duration"))
	if len(got) != 35 || math.Abs(got[0]-0.00015) > 1e-12 || math.Abs(got[34]-145.61) > 0.01 {
		t.Errorf("tgi duration buckets: %d edges from %v to %v, want 35 from 0.00015 to ≈145.6", len(got), got[0], got[len(got)-1])
	}
	for i := 1; i < len(got); i++ {
		if r := got[i] / got[i-1]; math.Abs(r-1.5) > 1e-9 {
			t.Fatalf("tgi duration bucket %d is ×%v the previous, want ×1.5", i, r)
		}
	}
	if n := len(les(histogram(t, mfs, "tgi_request_input_length"))); n != 100 {
		t.Errorf("tgi_request_input_length has %d buckets, want 100 linear ones", n)
	}
}

func TestCacheConfigInfoCarriesTheKVConfiguration(t *testing.T) {
	url, _ := startReplica(t, FleetConfig{})
	mfs := scrape(t, url+"/metrics")
	p := h100(t)
	want := map[string]string{
		"block_size": "16", "num_gpu_blocks": strconv.Itoa(p.KVBlocks()), "gpu_memory_utilization": "0.9",
		"cache_dtype": "auto", "enable_prefix_caching": "True", "engine": "0",
	}
	if got := value(t, mfs, "vllm:cache_config_info", want); got != 1 {
		t.Errorf("vllm:cache_config_info = %v, want 1", got)
	}
}

func TestColonNamesAreValidEvenForLegacyScrapers(t *testing.T) {
	for _, flavor := range MetricsFlavors() {
		url, _ := startReplica(t, FleetConfig{MetricsFlavor: flavor})
		for name := range scrape(t, url+"/metrics") {
			if !model.LegacyValidation.IsValidMetricName(name) {
				t.Errorf("flavor %s: %q is not a legacy-valid metric name", flavor, name)
			}
		}
	}
}

func TestGaugesFollowTheEngineQueues(t *testing.T) {
	// max_num_seqs 2: of 5 long requests 2 run and 3 wait.
	p := h100(t)
	p.MaxNumSeqs = 2
	url, rep := startReplica(t, FleetConfig{Preset: p})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() { streamSSE(ctx, http.DefaultClient, url+"/v1/completions", completionBody(1000, 5000, true)) })
	}
	labels := map[string]string{"model_name": testModel}
	var mfs map[string]*dto.MetricFamily
	// The gauges are set when a step's tokens are delivered, so they trail
	// the engine by up to one step.
	eventually(t, 2*time.Second, "the gauges never showed 2 running and 3 waiting", func() bool {
		mfs = scrape(t, url+"/metrics")
		return value(t, mfs, "vllm:num_requests_running", labels) == 2 && value(t, mfs, "vllm:num_requests_waiting", labels) == 3
	})
	if s := rep.State(); s.Running != 2 || s.Waiting != 3 {
		t.Errorf("engine: running %d waiting %d, want 2 and 3", s.Running, s.Waiting)
	}
	if kv := value(t, mfs, "vllm:kv_cache_usage_perc", labels); !(kv > 0 && kv < 1) {
		t.Errorf("kv_cache_usage_perc = %v, want a ratio in (0, 1)", kv)
	}
	cancel()
	wg.Wait()
	eventually(t, 2*time.Second, "gauges did not return to 0", func() bool {
		mfs := scrape(t, url+"/metrics")
		return value(t, mfs, "vllm:num_requests_running", labels) == 0 &&
			value(t, mfs, "vllm:num_requests_waiting", labels) == 0 &&
			value(t, mfs, "vllm:kv_cache_usage_perc", labels) == 0
	})
}

func TestMetricsAgreeWithClientObservedTimings(t *testing.T) {
	const n, prompt, output = 6, 300, 20
	url, _ := startReplica(t, FleetConfig{})
	results := runRequests(t, url, n, prompt, output)
	mfs := scrape(t, url+"/metrics")
	labels := map[string]string{"model_name": testModel}

	var clientTTFT, clientE2E float64
	for _, r := range results {
		clientTTFT += r.ttft().Seconds()
		clientE2E += r.arrivals[len(r.arrivals)-1].Sub(r.start).Seconds()
	}
	ttft := histogram(t, mfs, "vllm:time_to_first_token_seconds")
	e2e := histogram(t, mfs, "vllm:e2e_request_latency_seconds")
	itl := histogram(t, mfs, "vllm:inter_token_latency_seconds")
	counts := map[string]uint64{
		"ttft": ttft.GetSampleCount(), "e2e": e2e.GetSampleCount(), "itl": itl.GetSampleCount(),
	}
	if diff := cmp.Diff(map[string]uint64{"ttft": n, "e2e": n, "itl": n * (output - 1)}, counts); diff != "" {
		t.Errorf("histogram counts (-want +got):\n%s", diff)
	}
	// The client sees each token a little after the engine produced it
	// (HTTP, scheduling) and never before it (the driver releases a token at
	// most aheadTolerance early).
	const perRequestSlack = 25 * time.Millisecond
	for _, c := range []struct {
		name           string
		server, client float64
	}{{"TTFT", ttft.GetSampleSum(), clientTTFT}, {"e2e", e2e.GetSampleSum(), clientE2E}} {
		lag := (c.client - c.server) / n
		if lag < -aheadTolerance.Seconds() || lag > perRequestSlack.Seconds() {
			t.Errorf("%s: server sum %.4fs, client sum %.4fs: mean client lag %.2f ms, want 0–%v",
				c.name, c.server, c.client, lag*1000, perRequestSlack)
		}
	}
	if got := itl.GetSampleSum() + ttft.GetSampleSum(); math.Abs(got-e2e.GetSampleSum()) > 1e-6 {
		t.Errorf("TTFT sum + ITL sum = %v, want the e2e sum %v", got, e2e.GetSampleSum())
	}
	for name, want := range map[string]float64{
		"vllm:generation_tokens_total":    n * output,
		"vllm:prompt_tokens_total":        n * prompt,
		"vllm:prefix_cache_queries_total": n * prompt,
	} {
		if got := value(t, mfs, name, labels); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if got := value(t, mfs, "vllm:request_success_total", map[string]string{"finished_reason": "length"}); got != n {
		t.Errorf("request_success_total{length} = %v, want %d", got, n)
	}
	if got := histogram(t, mfs, "vllm:request_prompt_tokens").GetSampleSum(); got != n*prompt {
		t.Errorf("request_prompt_tokens sum = %v, want %d", got, n*prompt)
	}
}

func TestSpeedScalesEveryTiming(t *testing.T) {
	if raceEnabled {
		t.Skip("wall-clock precision test; the race detector slows the driver too much")
	}
	// Speeds 0.5 and 2.5 keep steps (≈18 ms and ≈3.6 ms) long against timer
	// and scheduling jitter on a loaded machine.
	const slow, speed = 0.5, 5
	measure := func(speed float64) (serverE2E, serverTTFT, clientE2E float64) {
		url, _ := startReplica(t, FleetConfig{Speed: speed})
		r := runRequests(t, url, 1, 512, 40)[0]
		mfs := scrape(t, url+"/metrics")
		return histogram(t, mfs, "vllm:e2e_request_latency_seconds").GetSampleSum(),
			histogram(t, mfs, "vllm:time_to_first_token_seconds").GetSampleSum(),
			r.arrivals[len(r.arrivals)-1].Sub(r.start).Seconds()
	}
	e2e1, ttft1, client1 := measure(slow)
	e2eK, ttftK, clientK := measure(slow * speed)
	for _, c := range []struct {
		name       string
		slow, fast float64
		tolerance  float64
	}{
		{"server e2e", e2e1, e2eK, 0.15},
		{"server TTFT", ttft1, ttftK, 0.35},
		{"client e2e", client1, clientK, 0.35},
	} {
		ratio := c.slow / c.fast
		if math.Abs(ratio-speed)/speed > c.tolerance {
			t.Errorf("%s: %.4fs at speed %v, %.4fs at speed %v: ratio %.2f, want %d ± %.0f%%",
				c.name, c.slow, slow, c.fast, slow*speed, ratio, speed, c.tolerance*100)
		}
	}
}

func TestSGLangCountsTokensWhenRequestsFinish(t *testing.T) {
	url, _ := startReplica(t, FleetConfig{MetricsFlavor: "sglang", Speed: 20})
	runRequests(t, url, 3, 40, 5)
	mfs := scrape(t, url+"/metrics")
	labels := map[string]string{"model_name": testModel}
	got := []float64{
		value(t, mfs, "sglang:prompt_tokens_total", labels),
		value(t, mfs, "sglang:generation_tokens_total", labels),
		value(t, mfs, "sglang:num_requests_total", labels),
		float64(histogram(t, mfs, "sglang:time_to_first_token_seconds").GetSampleCount()),
		float64(histogram(t, mfs, "sglang:inter_token_latency_seconds").GetSampleCount()),
	}
	if diff := cmp.Diff([]float64{120, 15, 3, 3, 12}, got); diff != "" {
		t.Errorf("prompt, generation, requests, TTFT count, ITL count (-want +got):\n%s", diff)
	}
}

func TestTGICountsRequestsAndTokenLengths(t *testing.T) {
	url, _ := startReplica(t, FleetConfig{MetricsFlavor: "tgi", Speed: 20})
	runRequests(t, url, 2, 40, 6)
	mfs := scrape(t, url+"/metrics")
	got := []float64{
		value(t, mfs, "tgi_request_count", nil),
		value(t, mfs, "tgi_request_success", nil),
		histogram(t, mfs, "tgi_request_input_length").GetSampleSum(),
		histogram(t, mfs, "tgi_request_generated_tokens").GetSampleSum(),
		float64(histogram(t, mfs, "tgi_request_mean_time_per_token_duration").GetSampleCount()),
	}
	if diff := cmp.Diff([]float64{2, 2, 80, 12, 2}, got); diff != "" {
		t.Errorf("count, success, input sum, generated sum, TPOT count (-want +got):\n%s", diff)
	}
	if !slices.ContainsFunc(mfs["tgi_request_success"].GetMetric(), func(m *dto.Metric) bool { return len(m.GetLabel()) == 0 }) {
		t.Error("tgi_request_success should carry no labels")
	}
}
