package knee

import (
	"math"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// computeProfile has a compute-bound knee at 100 in flight, 10,000 output
// tokens/s, with the cache 30% full there.
func computeProfile() *Profile {
	return &Profile{
		APIVersion: APIVersion, Kind: Kind,
		Match:    Match{Model: "m"},
		SLO:      testSLO,
		Workload: WorkloadInfo{MeanPromptTokens: 200, MeanOutputTokens: 200},
		Points: []Point{
			pt(1, 100, 0.003, 0.05, 0.010, true),
			pt(10, 1000, 0.03, 0.06, 0.011, true),
			pt(50, 5000, 0.15, 0.15, 0.020, true),
			pt(100, 10000, 0.30, 0.45, 0.045, true),
			pt(200, 11000, 0.60, 1.50, 0.090, false),
		},
		Knee: Knee{Concurrency: 100, OutputTokensPerSecond: 10000, GoodputTokensPerSecond: 9800, KVCacheUsage: 0.30, LimitingResource: ResourceCompute},
	}
}

// kvProfile has the same curve but runs out of KV cache at its knee.
func kvProfile() *Profile {
	p := computeProfile()
	for i, kv := range []float64{0.01, 0.1, 0.5, 0.95, 1} {
		p.Points[i].KVCacheUsage = kv
	}
	p.Points[4].PreemptionsPerSecond = 3
	p.Knee.KVCacheUsage = 0.95
	p.Knee.LimitingResource = ResourceKVCache
	return p
}

// observe is an observation of in-flight load with everything else unknown,
// then adjusted by set.
func observe(load float64, set ...func(*Observation)) Observation {
	o := NewObservation()
	o.InFlight = load
	for _, f := range set {
		f(&o)
	}
	return o
}

func output(tps float64) func(*Observation) {
	return func(o *Observation) { o.OutputTokensPerSecond = tps }
}

func kv(usage float64) func(*Observation) {
	return func(o *Observation) { o.KVCacheUsage = usage }
}

// headroomView is what an on-call engineer reads off a Result first.
type headroomView struct {
	OK        bool
	Reason    string
	Headroom  float64
	Dimension Dimension
	Resource  Resource
}

func viewHeadroom(r Result) headroomView {
	return headroomView{r.OK, r.Reason, r.Headroom, r.Dimension, r.LimitingResource}
}

func TestEvaluateHeadroom(t *testing.T) {
	tests := []struct {
		name    string
		obs     Observation
		profile *Profile
		opts    Options
		want    headroomView
	}{
		{
			name:    "an idle replica has all its headroom",
			obs:     observe(0, output(0), kv(0)),
			profile: computeProfile(),
			want:    headroomView{true, "", 1, DimensionLoad, ResourceCompute},
		},
		{
			name:    "a replica at half its knee concurrency has half its headroom",
			obs:     observe(50, output(5000), kv(0.15)),
			profile: computeProfile(),
			want:    headroomView{true, "", 0.5, DimensionLoad, ResourceCompute},
		},
		{
			name:    "a replica exactly at its knee has no headroom",
			obs:     observe(100, output(10000), kv(0.3)),
			profile: computeProfile(),
			want:    headroomView{true, "", 0, DimensionLoad, ResourceCompute},
		},
		{
			name:    "a replica past its knee has negative headroom",
			obs:     observe(150, output(10500), kv(0.45)),
			profile: computeProfile(),
			want:    headroomView{true, "", -0.5, DimensionLoad, ResourceCompute},
		},
		{
			name:    "in-flight load is running plus waiting when no total is given",
			obs:     observe(math.NaN(), func(o *Observation) { o.Running, o.Waiting = 60, 15 }),
			profile: computeProfile(),
			want:    headroomView{true, "", 0.25, DimensionLoad, ResourceCompute},
		},
		{
			name:    "a replica at half its knee on a concave throughput curve has half its headroom",
			obs:     observe(49, output(lerp(2983, 4873, 17.0/32)), kv(0.04)),
			profile: concaveProfile(),
			want:    headroomView{true, "", 0.5, DimensionLoad, ResourceCompute},
		},
		{
			name:    "output tokens above the knee's set the headroom when they are the tightest",
			obs:     observe(90, output(12000)),
			profile: computeProfile(),
			want:    headroomView{true, "", -0.2, DimensionThroughput, ResourceCompute},
		},
		{
			name:    "a KV-bound profile with the cache fuller than at its knee is limited by KV",
			obs:     observe(30, output(3000), kv(0.988)),
			profile: kvProfile(),
			want:    headroomView{true, "", 1 - 0.988/0.95, DimensionKVCache, ResourceKVCache},
		},
		{
			name:    "a KV-bound replica with its cache filling faster than its load is limited by KV before its knee",
			obs:     observe(50, output(5000), kv(0.5)),
			profile: kvProfile(),
			want:    headroomView{true, "", 0.47368421052631576, DimensionKVCache, ResourceKVCache},
		},
		{
			name:    "a compute-bound knee ignores a cache above the knee's usage but far from full",
			obs:     observe(50, output(5000), kv(0.4)),
			profile: computeProfile(),
			want:    headroomView{true, "", 0.5, DimensionLoad, ResourceCompute},
		},
		{
			name:    "a compute-bound replica whose cache fills with long contexts is limited by KV",
			obs:     observe(50, output(5000), kv(0.99)),
			profile: computeProfile(),
			want:    headroomView{true, "", 1 - 0.99/0.9, DimensionKVCache, ResourceKVCache},
		},
		{
			name:    "a lower KV saturation option brings the KV limit closer",
			obs:     observe(50, output(5000), kv(0.8)),
			profile: computeProfile(),
			opts:    Options{KVSaturation: 0.8},
			want:    headroomView{true, "", 0, DimensionKVCache, ResourceKVCache},
		},
		{
			name:    "preemptions make the KV cache the limiting resource without moving headroom",
			obs:     observe(50, output(5000), kv(0.3), func(o *Observation) { o.PreemptionsPerSecond = 2 }),
			profile: computeProfile(),
			want:    headroomView{true, "", 0.5, DimensionLoad, ResourceKVCache},
		},
		{
			name:    "a throttled GPU making half its profiled tokens at 60% load is past its moved knee",
			obs:     observe(60, output(3000)),
			profile: computeProfile(),
			want:    headroomView{true, "", -0.2, DimensionEffectiveLoad, ResourceCompute},
		},
		{
			name:    "a slow replica at light load is not corrected for speed",
			obs:     observe(10, output(500)),
			profile: computeProfile(),
			want:    headroomView{true, "", 0.9, DimensionLoad, ResourceCompute},
		},
		{
			name:    "the speed correction can be turned off",
			obs:     observe(60, output(3000)),
			profile: computeProfile(),
			opts:    Options{EffectiveLoadMinRatio: math.Inf(1)},
			want:    headroomView{true, "", 0.4, DimensionLoad, ResourceCompute},
		},
		{
			name:    "a replica faster than its profile is judged on its throughput, with no load bonus",
			obs:     observe(60, output(9000)),
			profile: computeProfile(),
			want:    headroomView{true, "", 0.1, DimensionThroughput, ResourceCompute},
		},
		{
			name:    "a stalled replica with requests in flight reads far past its knee, not infinitely",
			obs:     observe(50, output(0)),
			profile: computeProfile(),
			want:    headroomView{true, "", -4, DimensionEffectiveLoad, ResourceCompute},
		},
		{
			name:    "a negative output rate is treated as unknown, not as a ratio",
			obs:     observe(50, output(-3)),
			profile: computeProfile(),
			want:    headroomView{true, "", 0.5, DimensionLoad, ResourceCompute},
		},
		{
			name:    "a replica without a profile is not evaluated",
			obs:     observe(50),
			profile: nil,
			want:    headroomView{false, ReasonNoProfile, math.NaN(), DimensionNone, ""},
		},
		{
			name:    "a profile without a knee concurrency is not evaluated",
			obs:     observe(50),
			profile: &Profile{Knee: Knee{OutputTokensPerSecond: 10}},
			want:    headroomView{false, ReasonInvalidProfile, math.NaN(), DimensionNone, ""},
		},
		{
			name:    "a replica whose load is unknown is not evaluated",
			obs:     observe(math.NaN(), output(5000), func(o *Observation) { o.Running = 40 }),
			profile: computeProfile(),
			want:    headroomView{false, ReasonNoEngineMetrics, math.NaN(), DimensionNone, ""},
		},
		{
			name:    "an infinite load counts as unknown",
			obs:     observe(math.Inf(1)),
			profile: computeProfile(),
			want:    headroomView{false, ReasonNoEngineMetrics, math.NaN(), DimensionNone, ""},
		},
		{
			name:    "a negative load is a bad observation",
			obs:     observe(-2),
			profile: computeProfile(),
			want:    headroomView{false, ReasonInvalidObservation, math.NaN(), DimensionNone, ""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := viewHeadroom(Evaluate(tt.obs, tt.profile, tt.opts))
			if diff := cmp.Diff(tt.want, got, approx); diff != "" {
				t.Errorf("Evaluate (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEvaluateRatiosPerDimension(t *testing.T) {
	// At 60 in flight the profile expects 6,000 tokens/s; 3,000 is half speed.
	r := Evaluate(observe(60, output(3000), kv(0.45)), computeProfile(), Options{})
	want := Ratios{
		DimensionLoad:          0.6,
		DimensionThroughput:    0.3,
		DimensionKVCache:       0.5,
		DimensionEffectiveLoad: 1.2,
	}
	if diff := cmp.Diff(want, r.Ratios, approx); diff != "" {
		t.Errorf("ratios (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(6000.0, r.Expected.OutputTokensPerSecond, approx); diff != "" {
		t.Errorf("expected output tokens/s (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(0.5, r.ThroughputEfficiency, approx); diff != "" {
		t.Errorf("throughput efficiency (-want +got):\n%s", diff)
	}

	fast := Evaluate(observe(60, output(9000)), computeProfile(), Options{})
	if diff := cmp.Diff(0.6, fast.Ratios[DimensionEffectiveLoad], approx); diff != "" {
		t.Errorf("a faster replica's effective load ratio (-want the load ratio +got):\n%s", diff)
	}

	noCurve := Evaluate(observe(60, output(3000)), &Profile{Knee: computeProfile().Knee}, Options{})
	if known := knownFloats(reflect.ValueOf(noCurve.Expected), "Expected"); len(known) > 0 || Known(noCurve.ThroughputEfficiency) {
		t.Errorf("a profile without points gave a known expected curve %v or efficiency %g, want unknown", known, noCurve.ThroughputEfficiency)
	}

	idle := Evaluate(observe(0), computeProfile(), Options{})
	for d := DimensionThroughput; d < NumDimensions; d++ {
		if Known(idle.Ratios[d]) {
			t.Errorf("with only the load known, the %s ratio = %g, want unknown", d, idle.Ratios[d])
		}
	}
}

func TestEvaluateGoodput(t *testing.T) {
	attain := func(ttft, tpot float64) func(*Observation) {
		return func(o *Observation) { o.TTFTAttainment, o.TPOTAttainment = ttft, tpot }
	}
	tests := []struct {
		name           string
		obs            Observation
		wantAttainment float64
		wantGoodput    float64
	}{
		{"goodput is output tokens times the smaller attainment", observe(50, output(5000), attain(0.98, 0.9)), 0.9, 4500},
		{"full attainment makes every token good", observe(50, output(5000), attain(1, 1)), 1, 5000},
		{"unknown TTFT attainment leaves goodput absent", observe(50, output(5000), attain(math.NaN(), 0.99)), math.NaN(), math.NaN()},
		{"unknown TPOT attainment leaves goodput absent", observe(50, output(5000), attain(0.99, math.NaN())), math.NaN(), math.NaN()},
		{"an attainment above 1 is not a ratio and leaves goodput absent", observe(50, output(5000), attain(1.2, 0.99)), math.NaN(), math.NaN()},
		{"unknown output tokens leave goodput absent but attainment known", observe(50, attain(0.95, 0.99)), 0.95, math.NaN()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Evaluate(tt.obs, computeProfile(), Options{})
			got := [2]float64{r.SLOAttainment, r.GoodputTokensPerSecond}
			if diff := cmp.Diff([2]float64{tt.wantAttainment, tt.wantGoodput}, got, approx); diff != "" {
				t.Errorf("[attainment, goodput] (-want +got):\n%s", diff)
			}
		})
	}
}

// indicatorView holds the leading indicators.
type indicatorView struct {
	KVPressure, Preemptions, QueueGrowth, PrefillShare, MixDrift, TTFTSLO, TPOTSLO float64
}

func viewIndicators(r Result) indicatorView {
	return indicatorView{r.KVPressure, r.PreemptionsPerSecond, r.QueueGrowthPerSecond, r.PrefillShare, r.MixDrift, r.TTFTSLORatio, r.TPOTSLORatio}
}

func TestEvaluateLeadingIndicators(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name    string
		obs     Observation
		profile *Profile
		want    indicatorView
	}{
		{
			name:    "nothing measured but load leaves every indicator absent",
			obs:     observe(50),
			profile: computeProfile(),
			want:    indicatorView{nan, nan, nan, nan, nan, nan, nan},
		},
		{
			name: "a prefill-heavy wave shows in prefill share, queue growth and the TTFT SLO ratio while KV stays low",
			obs: observe(80, output(2000), kv(0.2), func(o *Observation) {
				o.PromptTokensPerSecond = 38000
				o.QueueGrowthPerSecond = 1.5
				o.PreemptionsPerSecond = 0
				o.TTFT = LatencyQuantiles{P50: 0.2, P90: 0.35, P99: 0.45}
				o.TPOT = LatencyQuantiles{P50: 0.02, P90: 0.025, P99: 0.03}
				o.MeanPromptTokens, o.MeanOutputTokens = 3000, 100
			}),
			profile: computeProfile(),
			want:    indicatorView{KVPressure: -0.1, Preemptions: 0, QueueGrowth: 1.5, PrefillShare: 0.95, MixDrift: 14, TTFTSLO: 0.9, TPOTSLO: 0.6},
		},
		{
			name: "a long-context ramp shows in KV pressure and preemptions",
			obs: observe(40, output(3000), kv(0.99), func(o *Observation) {
				o.PreemptionsPerSecond = 0.5
				o.QueueGrowthPerSecond = -0.2
			}),
			profile: kvProfile(),
			want:    indicatorView{KVPressure: 0.04, Preemptions: 0.5, QueueGrowth: -0.2, PrefillShare: nan, MixDrift: nan, TTFTSLO: nan, TPOTSLO: nan},
		},
		{
			name:    "mix drift uses the side that is known",
			obs:     observe(40, func(o *Observation) { o.MeanOutputTokens = 150 }),
			profile: computeProfile(),
			want:    indicatorView{KVPressure: nan, Preemptions: nan, QueueGrowth: nan, PrefillShare: nan, MixDrift: 0.25, TTFTSLO: nan, TPOTSLO: nan},
		},
		{
			name:    "mix drift is absent when the profile records no means",
			obs:     observe(40, func(o *Observation) { o.MeanPromptTokens, o.MeanOutputTokens = 900, 150 }),
			profile: func() *Profile { p := computeProfile(); p.Workload = WorkloadInfo{}; return p }(),
			want:    indicatorView{KVPressure: nan, Preemptions: nan, QueueGrowth: nan, PrefillShare: nan, MixDrift: nan, TTFTSLO: nan, TPOTSLO: nan},
		},
		{
			name: "an SLO at a quantile the observation does not hold has no SLO ratio",
			obs: observe(40, func(o *Observation) {
				o.TTFT = LatencyQuantiles{P50: 0.1, P90: 0.2, P99: 0.4}
			}),
			profile: func() *Profile { p := computeProfile(); p.SLO.Quantile = 0.95; return p }(),
			want:    indicatorView{KVPressure: nan, Preemptions: nan, QueueGrowth: nan, PrefillShare: nan, MixDrift: nan, TTFTSLO: nan, TPOTSLO: nan},
		},
		{
			name: "an SLO at p90 reads the observed p90",
			obs: observe(40, func(o *Observation) {
				o.TTFT = LatencyQuantiles{P50: 0.1, P90: 0.2, P99: 0.4}
			}),
			profile: func() *Profile { p := computeProfile(); p.SLO.Quantile = 0.9; return p }(),
			want:    indicatorView{KVPressure: nan, Preemptions: nan, QueueGrowth: nan, PrefillShare: nan, MixDrift: nan, TTFTSLO: 0.4, TPOTSLO: nan},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := viewIndicators(Evaluate(tt.obs, tt.profile, Options{}))
			if diff := cmp.Diff(tt.want, got, approx); diff != "" {
				t.Errorf("indicators (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEvaluateNotOKMakesUpNoNumber(t *testing.T) {
	full := observe(50, output(5000), kv(0.2), func(o *Observation) {
		o.TTFTAttainment, o.TPOTAttainment = 1, 1
		o.PromptTokensPerSecond, o.PreemptionsPerSecond, o.QueueGrowthPerSecond = 100, 0, 0
		o.MeanPromptTokens, o.MeanOutputTokens = 200, 200
	})
	for _, tc := range []struct {
		name    string
		obs     Observation
		profile *Profile
	}{
		{"no profile", full, nil},
		{"no load", func() Observation { o := full; o.InFlight = math.NaN(); return o }(), computeProfile()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Evaluate(tc.obs, tc.profile, Options{})
			if r.OK || r.Reason == "" {
				t.Fatalf("OK = %v, Reason = %q; want not OK with a reason", r.OK, r.Reason)
			}
			for _, f := range knownFloats(reflect.ValueOf(r), "Result") {
				t.Errorf("%s is known while the result is not OK; want unknown", f)
			}
		})
	}
}

// knownFloats lists the float64 fields, at any depth, that hold a known value.
func knownFloats(v reflect.Value, path string) []string { return floatsWhere(v, path, Known) }

// floatsWhere lists the float64 fields of v, at any depth (structs, and
// arrays indexed by Dimension), whose value satisfies keep, each named by
// its path from path.
func floatsWhere(v reflect.Value, path string, keep func(float64) bool) []string {
	var out []string
	switch v.Kind() {
	case reflect.Float64:
		if keep(v.Float()) {
			out = append(out, path)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			out = append(out, floatsWhere(v.Field(i), path+"."+v.Type().Field(i).Name, keep)...)
		}
	case reflect.Array:
		for i := range v.Len() {
			out = append(out, floatsWhere(v.Index(i), path+"["+Dimension(i).String()+"]", keep)...)
		}
	}
	return out
}

func TestNewObservationKnowsNothing(t *testing.T) {
	if known := knownFloats(reflect.ValueOf(NewObservation()), "Observation"); len(known) > 0 {
		t.Errorf("NewObservation has known fields %v, want none", known)
	}
}

func TestDimensionLabels(t *testing.T) {
	var got []string
	for d := range NumDimensions {
		got = append(got, d.String())
	}
	want := []string{"load", "throughput", "kv_cache", "effective_load"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("dimension labels (-want +got):\n%s", diff)
	}
	if s := DimensionNone.String(); s != "" {
		t.Errorf("DimensionNone.String() = %q, want empty", s)
	}
}

func TestEvaluateDoesNotAllocate(t *testing.T) {
	p, err := Load("testdata/valid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	obs := benchObservation()
	if allocs := testing.AllocsPerRun(100, func() { Evaluate(obs, p, Options{}) }); allocs != 0 {
		t.Errorf("Evaluate allocates %v times per call, want 0", allocs)
	}
}

func benchObservation() Observation {
	return Observation{
		InFlight: 80, Running: 78, Waiting: 2,
		OutputTokensPerSecond: 10100, PromptTokensPerSecond: 12300, RequestsPerSecond: 49,
		KVCacheUsage: 0.08, PreemptionsPerSecond: 0,
		TTFT:           LatencyQuantiles{P50: 0.07, P90: 0.16, P99: 0.24},
		TPOT:           LatencyQuantiles{P50: 0.008, P90: 0.012, P99: 0.016},
		TTFTAttainment: 0.999, TPOTAttainment: 1,
		QueueGrowthPerSecond: 0.01,
		MeanPromptTokens:     251, MeanOutputTokens: 206, MixRequests: 300,
		GPUUtilization: 0.99,
	}
}

func BenchmarkEvaluate(b *testing.B) {
	p, err := Load("testdata/valid.yaml")
	if err != nil {
		b.Fatal(err)
	}
	obs := benchObservation()
	b.ReportAllocs()
	var r Result
	for b.Loop() {
		r = Evaluate(obs, p, Options{})
	}
	if !r.OK {
		b.Fatalf("Evaluate not OK: %s", r.Reason)
	}
}

func TestPromptRateCountsOnlyWhenPromptsGrewPastTheProfilesMix(t *testing.T) {
	p := computeProfile()
	for i := range p.Points {
		p.Points[i].RequestsPerSecond = p.Points[i].OutputTokensPerSecond / p.Workload.MeanOutputTokens
	}
	// At 50 in flight the curve makes 25 requests/s, 5,000 prompt tokens/s at
	// the profile's 200-token prompts; 7,500 prompt tokens/s read on it is
	// 37.5 requests/s, about 75 in flight.
	prompts := func(rate, mean float64) func(*Observation) {
		return func(o *Observation) { o.PromptTokensPerSecond, o.MeanPromptTokens = rate, mean }
	}
	tests := []struct {
		name string
		obs  Observation
		want float64 // throughput ratio
	}{
		{"a burst of prompts of the profile's length is the load, not more", observe(50, output(5000), prompts(7500, 230)), 0.5},
		{"prompts 50% longer than the profile's count on the prompt side", observe(50, output(5000), prompts(7500, 300)), 0.75},
		{"with the mean prompt unknown the prompt side counts", observe(50, output(5000), prompts(7500, math.NaN())), 0.75},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Evaluate(tt.obs, p, Options{})
			if diff := cmp.Diff(tt.want, r.Ratios[DimensionThroughput], cmpopts.EquateApprox(0, 0.02)); diff != "" {
				t.Errorf("throughput ratio (-want +got):\n%s", diff)
			}
		})
	}
}
