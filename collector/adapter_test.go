package collector

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	dto "github.com/prometheus/client_model/go"
)

var update = flag.Bool("update", false, "rewrite golden files")

// fixtureTime stands in for the scrape time in golden files.
var fixtureTime = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func parseString(t testing.TB, text string) map[string]*dto.MetricFamily {
	t.Helper()
	families, err := ParseText(strings.NewReader(text))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return families
}

func readFixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// normalizeText reads a classic text exposition through the reference
// path (expfmt, then Normalize), and checks that the scrape path's stream
// parser reads the same: every adapter test is also one of the stream
// parser.
func normalizeText(t testing.TB, text string, opts Options) Snapshot {
	t.Helper()
	s, err := Normalize(parseString(t, text), opts)
	if err != nil {
		t.Fatalf("Normalize: %v", err)
	}
	got, err := streamSnapshot([]byte(text), textFormat, opts)
	if err != nil {
		t.Fatalf("stream path: %v", err)
	}
	if diff := cmp.Diff(s, got, snapshotCmp); diff != "" {
		t.Errorf("the stream path reads otherwise (-reference +stream):\n%s", diff)
	}
	return s
}

// checkGolden compares got, as indented JSON, with testdata/golden/name,
// or rewrites the file under -update.
func checkGolden(t *testing.T, name string, got any) {
	t.Helper()
	b, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	b = append(b, '\n')
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(b)); diff != "" {
		t.Errorf("%s differs from golden (-want +got):\n%s", path, diff)
	}
}

func TestFixturesNormalize(t *testing.T) {
	tests := []struct {
		file       string
		wantEngine string
	}{
		{"vllm-design-metrics-doc-example.prom", "vllm"},
		{"vllm-v1-full-synthetic.prom", "vllm"},
		{"vllm-v0-synthetic.prom", "vllm"},
		{"sglang-production-metrics-doc.prom", "sglang"},
		{"sglang-current-synthetic.prom", "sglang"},
		{"tgi-synthetic.prom", "tgi"},
		{"trtllm-tensorrtllm_backend-readme.prom", "trtllm"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			families := parseString(t, readFixture(t, tt.file))
			engine, err := Detect(families)
			if err != nil || engine != tt.wantEngine {
				t.Fatalf("Detect = %q, %v; want %q", engine, err, tt.wantEngine)
			}
			s, err := Normalize(families, Options{})
			if err != nil {
				t.Fatalf("Normalize: %v", err)
			}
			s.Time = fixtureTime
			checkGolden(t, strings.TrimSuffix(tt.file, ".prom")+".json", s)
		})
	}
	t.Run("dcgm-lke-ai-conformance-gpu-operator-k8s.prom", func(t *testing.T) {
		d, err := NormalizeDCGM(parseString(t, readFixture(t, "dcgm-lke-ai-conformance-gpu-operator-k8s.prom")))
		if err != nil {
			t.Fatal(err)
		}
		d.Time = fixtureTime
		checkGolden(t, "dcgm-lke-ai-conformance-gpu-operator-k8s.json", d)
	})
}

func TestGoldenSnapshotsRoundTripThroughJSON(t *testing.T) {
	s := normalizeText(t, readFixture(t, "vllm-v1-full-synthetic.prom"), Options{})
	s.Time = fixtureTime
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back Snapshot
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s, back, cmp.Comparer(func(a, b float64) bool { return a == b || (a != a && b != b) })); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestAdapterSemantics(t *testing.T) {
	v1 := normalizeText(t, readFixture(t, "vllm-v1-full-synthetic.prom"), Options{})
	sgl := normalizeText(t, readFixture(t, "sglang-current-synthetic.prom"), Options{})
	tgi := normalizeText(t, readFixture(t, "tgi-synthetic.prom"), Options{})
	trt := normalizeText(t, readFixture(t, "trtllm-tensorrtllm_backend-readme.prom"), Options{})
	doc := normalizeText(t, readFixture(t, "vllm-design-metrics-doc-example.prom"), Options{})

	type check struct {
		name string
		got  func() (float64, bool)
		want float64
	}
	gauge := func(s Snapshot, sig Signal) func() (float64, bool) {
		return func() (float64, bool) { return s.Gauge(sig) }
	}
	counter := func(s Snapshot, sig Signal) func() (float64, bool) {
		return func() (float64, bool) { return s.Counter(sig) }
	}
	checks := []check{
		{"vLLM data-parallel engines' running requests are summed", gauge(v1, SignalRunning), 37 + 41},
		{"vLLM data-parallel engines' KV usage is averaged", gauge(v1, SignalKVUsage), (0.6125 + 0.5875) / 2},
		{"vLLM KV capacity sums each engine's blocks from cache_config_info", gauge(v1, SignalKVCapacityBlocks), 2 * 27306},
		{"vLLM block size comes from cache_config_info", gauge(v1, SignalKVBlockSize), 16},
		{"vLLM finished requests count every finished_reason including abort", counter(v1, SignalRequestsFinished), 1650 + 177 + 13 + 1602 + 186 + 7},
		{"vLLM aborted requests are counted separately", counter(v1, SignalRequestsAborted), 13 + 7},
		{"vLLM doc example's abort series reads as zero aborts", counter(doc, SignalRequestsAborted), 0},
		{"SGLang tensor-parallel ranks reporting one batch are not double counted", gauge(sgl, SignalRunning), 58},
		{"SGLang num_retracted_reqs is read as a gauge", gauge(sgl, SignalRetracted), 2},
		{"SGLang aborted requests come from num_aborted_requests_total", counter(sgl, SignalRequestsAborted), 21},
		{"TGI prompt tokens come from the input-length histogram's _sum", counter(tgi, SignalPromptTokens), mustHistogramSum(t, readFixture(t, "tgi-synthetic.prom"), "tgi_request_input_length")},
		{"TGI finished requests are successes plus failures of every err", counter(tgi, SignalRequestsFinished), 1281 + 4 + 3},
		{"TRT-LLM running requests are request_type=scheduled", gauge(trt, SignalRunning), 1},
		{"TRT-LLM KV usage is the fraction block metric", gauge(trt, SignalKVUsage), 0.4875},
		{"TRT-LLM KV capacity in tokens is max blocks times tokens per block", gauge(trt, SignalKVCapacityTokens), 6239 * 64},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			got, ok := c.got()
			if !ok {
				t.Fatalf("signal absent, want %v", c.want)
			}
			if !cmp.Equal(got, c.want, cmpopts.EquateApprox(1e-12, 0)) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}

	absent := []struct {
		name string
		s    Snapshot
		sig  Signal
	}{
		{"SGLang retractions never become a preemption counter", sgl, SignalPreemptions},
		{"TGI has no TTFT histogram", tgi, SignalTTFT},
		{"TGI has no KV usage ratio and none is made up", tgi, SignalKVUsage},
		{"TRT-LLM iteration gauges are not read as token counters", trt, SignalGenerationTokens},
		{"vLLM doc example's truncated TTFT histogram is rejected", doc, SignalTTFT},
		{"vLLM doc example has no waiting gauge and none is made up", doc, SignalWaiting},
	}
	for _, a := range absent {
		t.Run(a.name, func(t *testing.T) {
			_, g := a.s.Gauges[a.sig]
			_, c := a.s.Counters[a.sig]
			_, h := a.s.Histograms[a.sig]
			if g || c || h {
				t.Errorf("%s is present", a.sig)
			}
		})
	}

	t.Run("vLLM doc example records why its TTFT is missing", func(t *testing.T) {
		want := Problem{Metric: "vllm:time_to_first_token_seconds", Reason: errPartialHistogram.Error() + "; ttft_seconds is unknown",
			Kind: ProblemPartialHisto, Signal: SignalTTFT}
		if !containsProblem(doc.Problems, want) {
			t.Errorf("problems %v do not contain %v", doc.Problems, want)
		}
	})
	t.Run("Triton's other models (ensemble, pre/post-processing) are not summed into the LLM's counters", func(t *testing.T) {
		text := strings.Replace(readFixture(t, "trtllm-tensorrtllm_backend-readme.prom"),
			`nv_inference_request_success{model="tensorrt_llm",version="1"} 0`,
			`nv_inference_request_success{model="ensemble",version="1"} 90
nv_inference_request_success{model="preprocessing",version="1"} 90
nv_inference_request_success{model="tensorrt_llm",version="1"} 30`, 1)
		s := normalizeText(t, text, Options{})
		if got, _ := s.Counter(SignalRequestsSucceeded); got != 30 || s.Model != "tensorrt_llm" {
			t.Errorf("succeeded = %v for model %q, want 30 for tensorrt_llm", got, s.Model)
		}
	})
	t.Run("TRT-LLM microsecond counters are converted to seconds", func(t *testing.T) {
		s := normalizeText(t, strings.ReplaceAll(readFixture(t, "trtllm-tensorrtllm_backend-readme.prom"),
			`nv_inference_request_duration_us{model="tensorrt_llm",version="1"} 0`,
			`nv_inference_request_duration_us{model="tensorrt_llm",version="1"} 2500000`), Options{})
		if got, _ := s.Counter(SignalE2ESecondsTotal); got != 2.5 {
			t.Errorf("e2e seconds = %v, want 2.5", got)
		}
	})
}

func mustHistogramSum(t *testing.T, text, family string) float64 {
	t.Helper()
	mf := parseString(t, text)[family]
	if mf == nil {
		t.Fatalf("no family %s", family)
	}
	return mf.GetMetric()[0].GetHistogram().GetSampleSum()
}

func containsProblem(ps []Problem, want Problem) bool {
	for _, p := range ps {
		if p == want {
			return true
		}
	}
	return false
}

func TestNameSpellingsNormalizeAlike(t *testing.T) {
	tests := []struct {
		name    string
		fixture string
		rewrite func(string) string
	}{
		{
			name:    "vLLM names with colons replaced by underscores (remote-write pipelines)",
			fixture: "vllm-v1-full-synthetic.prom",
			rewrite: func(s string) string { return strings.ReplaceAll(s, "vllm:", "vllm_") },
		},
		{
			name:    "SGLang names with colons replaced by underscores",
			fixture: "sglang-current-synthetic.prom",
			rewrite: func(s string) string { return strings.ReplaceAll(s, "sglang:", "sglang_") },
		},
		{
			name:    "TGI counters exposed with a _total suffix",
			fixture: "tgi-synthetic.prom",
			rewrite: func(s string) string {
				for _, c := range []string{"tgi_request_count", "tgi_request_success", "tgi_request_failure", "tgi_batch_inference_count"} {
					s = strings.ReplaceAll(s, c+" ", c+"_total ")
					s = strings.ReplaceAll(s, c+"{", c+"_total{")
				}
				return s
			},
		},
		{
			name:    "vLLM counters declared without _total and _created series removed",
			fixture: "vllm-v1-full-synthetic.prom",
			rewrite: func(s string) string {
				var keep []string
				for _, line := range strings.Split(s, "\n") {
					if strings.Contains(line, "_created") {
						continue
					}
					keep = append(keep, strings.ReplaceAll(line, "_total", ""))
				}
				return strings.Join(keep, "\n")
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := readFixture(t, tt.fixture)
			want := normalizeText(t, text, Options{})
			rewritten := tt.rewrite(text)
			if rewritten == text {
				t.Fatal("rewrite changed nothing")
			}
			got := normalizeText(t, rewritten, Options{})
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-original +rewritten):\n%s", diff)
			}
		})
	}
}

func TestModelSelection(t *testing.T) {
	const twoModels = `# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="a"} 3
vllm:num_requests_running{model_name="b"} 5
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name="a"} 1
vllm:num_requests_waiting{model_name="b"} 2
`
	t.Run("the configured model's series are read", func(t *testing.T) {
		s := normalizeText(t, twoModels, Options{Model: "b"})
		if got, _ := s.Gauge(SignalRunning); got != 5 || s.Model != "b" {
			t.Errorf("running = %v, model %q; want 5, b", got, s.Model)
		}
	})
	errTests := []struct {
		name, text string
		opts       Options
		wantErr    string
	}{
		{"several models without a configured one is an error naming them", twoModels, Options{}, `scrape carries several models (model_name values: a, b); set the target's model`},
		{"a configured model not in the scrape is an error naming those present", twoModels, Options{Model: "c"}, `model "c" is not in the scrape (model_name values: a, b)`},
		{"an unknown engine name is an error listing the known ones", twoModels, Options{Engine: "llamacpp"}, `unknown engine "llamacpp" (known: sglang, tgi, trtllm, vllm)`},
		{"a scrape with no engine metrics is an error", "# TYPE up gauge\nup 1\n", Options{}, ErrNoEngine.Error()},
		{"a scrape with two engines' metrics asks for the engine", twoModels + "# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs 1\n", Options{}, "scrape carries metrics of several engines (sglang, vllm); set the target's engine"},
	}
	for _, tt := range errTests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Normalize(parseString(t, tt.text), tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
	t.Run("a forced engine reads a mixed scrape", func(t *testing.T) {
		s := normalizeText(t, twoModels+"# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs 1\n", Options{Engine: "sglang"})
		if got, _ := s.Gauge(SignalRunning); s.Engine != "sglang" || got != 1 {
			t.Errorf("engine %q running %v; want sglang 1", s.Engine, got)
		}
	})
}

func TestBadSeriesAreDroppedWithAProblem(t *testing.T) {
	tests := []struct {
		name        string
		text        string
		sig         Signal
		wantProblem Problem
	}{
		{
			name:        "a missing running gauge is absent and recorded",
			text:        "# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting 1\n",
			sig:         SignalRunning,
			wantProblem: Problem{Metric: "vllm:num_requests_running", Reason: "not in scrape; running_requests is unknown", Kind: ProblemMissing, Signal: SignalRunning},
		},
		{
			name:        "a NaN gauge is absent, not zero",
			text:        "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running NaN\n",
			sig:         SignalRunning,
			wantProblem: Problem{Metric: "vllm:num_requests_running", Reason: "has value NaN; running_requests is unknown", Kind: ProblemNonFinite, Signal: SignalRunning},
		},
		{
			name:        "a negative counter is absent",
			text:        "# TYPE vllm:prompt_tokens_total untyped\nvllm:prompt_tokens_total -4\n",
			sig:         SignalPromptTokens,
			wantProblem: Problem{Metric: "vllm:prompt_tokens_total", Reason: "counter has negative value -4; prompt_tokens_total is unknown", Kind: ProblemNegativeCounter, Signal: SignalPromptTokens},
		},
		{
			name:        "a histogram exposed as a gauge is rejected",
			text:        "# TYPE vllm:time_to_first_token_seconds gauge\nvllm:time_to_first_token_seconds 0.2\n",
			sig:         SignalTTFT,
			wantProblem: Problem{Metric: "vllm:time_to_first_token_seconds", Reason: "is a gauge, expected a histogram", Kind: ProblemWrongType, Signal: SignalTTFT},
		},
		{
			name: "a histogram whose cumulative counts fall is rejected",
			text: `# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{le="0.1"} 5
vllm:time_to_first_token_seconds_bucket{le="0.5"} 3
vllm:time_to_first_token_seconds_bucket{le="+Inf"} 6
vllm:time_to_first_token_seconds_count 6
vllm:time_to_first_token_seconds_sum 1
`,
			sig:         SignalTTFT,
			wantProblem: Problem{Metric: "vllm:time_to_first_token_seconds", Reason: `cumulative count falls from 5 at le="0.1" to 3 at le="0.5"; ttft_seconds is unknown`, Kind: ProblemNonMonotonic, Signal: SignalTTFT},
		},
		{
			name: "engines with different bucket layouts are not merged",
			text: `# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.1"} 1
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf"} 2
vllm:time_to_first_token_seconds_bucket{engine="1",le="0.2"} 1
vllm:time_to_first_token_seconds_bucket{engine="1",le="+Inf"} 2
`,
			sig:         SignalTTFT,
			wantProblem: Problem{Metric: "vllm:time_to_first_token_seconds", Reason: `series have different bucket bounds (le="0.1" vs le="0.2"); ttft_seconds is unknown`, Kind: ProblemInvalidHisto, Signal: SignalTTFT},
		},
		{
			name: "duplicate series are rejected, not summed as data-parallel engines",
			text: "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} 26\nvllm:num_requests_running{model_name=\"m\"} 26\n",
			sig:  SignalRunning,
			wantProblem: Problem{Metric: "vllm:num_requests_running", Reason: `series {model_name="m"} appears more than once; running_requests is unknown`,
				Kind: ProblemDuplicateSeries, Signal: SignalRunning},
		},
		{
			name:        "a +Inf counter is absent",
			text:        "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total +Inf\n",
			sig:         SignalGenerationTokens,
			wantProblem: Problem{Metric: "vllm:generation_tokens_total", Reason: "has value +Inf; generation_tokens_total is unknown", Kind: ProblemNonFinite, Signal: SignalGenerationTokens},
		},
		{
			name: "engines whose counters sum past the largest float are absent",
			text: "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{engine=\"0\"} 1.5e308\nvllm:generation_tokens_total{engine=\"1\"} 1.5e308\n",
			sig:  SignalGenerationTokens,
			wantProblem: Problem{Metric: "vllm:generation_tokens_total", Reason: "sums to +Inf over its 2 series; generation_tokens_total is unknown",
				Kind: ProblemNonFinite, Signal: SignalGenerationTokens},
		},
		{
			name: "engines whose bucket counts sum past the largest float are absent",
			text: `# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.1"} 1
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf"} 1.5e308
vllm:time_to_first_token_seconds_count{engine="0"} 1.5e308
vllm:time_to_first_token_seconds_bucket{engine="1",le="0.1"} 1
vllm:time_to_first_token_seconds_bucket{engine="1",le="+Inf"} 1.5e308
vllm:time_to_first_token_seconds_count{engine="1"} 1.5e308
`,
			sig: SignalTTFT,
			wantProblem: Problem{Metric: "vllm:time_to_first_token_seconds", Reason: `bucket le="+Inf" sums to +Inf over its 2 series; ttft_seconds is unknown`,
				Kind: ProblemNonFinite, Signal: SignalTTFT},
		},
		{
			name: "a histogram without its +Inf bucket is rejected with a problem",
			text: `# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{le="0.1"} 1
vllm:time_to_first_token_seconds_bucket{le="0.5"} 3
vllm:time_to_first_token_seconds_count 3
vllm:time_to_first_token_seconds_sum 1
`,
			sig: SignalTTFT,
			wantProblem: Problem{Metric: "vllm:time_to_first_token_seconds", Reason: `partial histogram: no le="+Inf" bucket; ttft_seconds is unknown`,
				Kind: ProblemPartialHisto, Signal: SignalTTFT},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := normalizeText(t, tt.text, Options{Engine: "vllm"})
			_, g := s.Gauges[tt.sig]
			_, c := s.Counters[tt.sig]
			_, h := s.Histograms[tt.sig]
			if g || c || h {
				t.Errorf("%s present, want absent", tt.sig)
			}
			if !containsProblem(s.Problems, tt.wantProblem) {
				t.Errorf("problems %v do not contain %v", s.Problems, tt.wantProblem)
			}
		})
	}
}

func TestKVUsagePrefersTheCurrentName(t *testing.T) {
	s := normalizeText(t, `# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc 0.25
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc 0.5
`, Options{})
	if got, _ := s.Gauge(SignalKVUsage); got != 0.5 {
		t.Errorf("kv usage = %v, want 0.5 from kv_cache_usage_perc", got)
	}
	v0 := normalizeText(t, readFixture(t, "vllm-v0-synthetic.prom"), Options{})
	if got, _ := v0.Gauge(SignalKVUsage); got != 0.4171 {
		t.Errorf("V0 kv usage = %v, want 0.4171 from gpu_cache_usage_perc", got)
	}
	if _, ok := v0.Histogram(SignalITL); !ok {
		t.Error("V0 time_per_output_token_seconds not read as inter-token latency")
	}
}

func TestCreatedSeriesAreNotData(t *testing.T) {
	fi := indexFamilies(parseString(t, readFixture(t, "vllm-v1-full-synthetic.prom")))
	for name := range fi.byName {
		if strings.HasSuffix(name, "_created") {
			t.Errorf("index kept %s", name)
		}
	}
	if fi.find(true, "vllm:prompt_tokens") == nil {
		t.Error("vllm:prompt_tokens_total not found")
	}
}

func TestDetectIgnoresDCGM(t *testing.T) {
	_, err := Detect(parseString(t, readFixture(t, "dcgm-lke-ai-conformance-gpu-operator-k8s.prom")))
	if !errors.Is(err, ErrNoEngine) {
		t.Errorf("err = %v, want ErrNoEngine", err)
	}
	both := readFixture(t, "vllm-design-metrics-doc-example.prom") + readFixture(t, "dcgm-lke-ai-conformance-gpu-operator-k8s.prom")
	if engine, err := Detect(parseString(t, both)); engine != "vllm" || err != nil {
		t.Errorf("Detect(vllm+dcgm) = %q, %v; want vllm", engine, err)
	}
}

func TestSignalNamesAreUniqueAndTyped(t *testing.T) {
	seen := map[string]Signal{}
	for s := SignalUnknown + 1; s < signalCount; s++ {
		if s.Kind() == 0 || s.String() == "" {
			t.Errorf("signal %d has no name or kind", int(s))
		}
		if prev, dup := seen[s.String()]; dup {
			t.Errorf("signals %d and %d share the name %q", prev, s, s.String())
		}
		seen[s.String()] = s
		var back Signal
		if err := back.UnmarshalText([]byte(s.String())); err != nil || back != s {
			t.Errorf("UnmarshalText(%q) = %v, %v", s, back, err)
		}
	}
	if !bytes.Contains([]byte(Signal(999).String()), []byte("999")) {
		t.Error("invalid signal's String does not show its number")
	}
}
