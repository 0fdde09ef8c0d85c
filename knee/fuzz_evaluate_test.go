package knee

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
)

// fuzzProfiles are the profiles FuzzEvaluate judges observations against:
// one with every model Evaluate reads (a mix model, a speed model, a
// Poisson knee beside its closed-loop one, the workload's prompt
// distribution), written by
//
//	kneewatch sim knee --preset llama-3.1-8b-h100 --workload rag \
//	  --slo-ttft 750ms --slo-tpot 50ms --mix-scales default --speed-model default \
//	  --open-loop-warmup 2m --open-loop-steady 5m
//
// and a plain closed-loop one.
var fuzzProfiles = []string{"testdata/evaluate-models.yaml", "testdata/valid.yaml"}

// FuzzEvaluate feeds Evaluate whatever a broken or hostile upstream could
// put in an observation: NaN, ±Inf, negative rates, counts no replica
// reaches. Whatever it is given, Evaluate returns (the fuzzer reports an
// input that hangs), and every number it makes is right or absent:
//   - not OK: no number at all;
//   - OK: headroom known and at most 1, the dimension that set it known,
//     every ratio unknown or ≥ 0, the knee it compared with > 0, the
//     attainment in [0, 1], goodput and throughput efficiency unknown
//     or ≥ 0, and no value anywhere infinite (an exported +Inf is a wrong
//     number, not an unknown one).
func FuzzEvaluate(f *testing.F) {
	profiles := loadFuzzProfiles(f)
	nan, inf := math.NaN(), math.Inf(1)
	// A replica at half its knee, one past it on a long-prompt mix, a
	// throttled one, the window that stalled the heavy-tail test (8bd8198),
	// and garbage.
	f.Add(uint8(0), 3.0, 2.5, 0.5, 900.0, 4000.0, 3.0, 0.04, 0.0, 0.3, 0.02, 1.0, 1.0, 0.0, 1100.0, 300.0, 200.0, 1900.0, 0.7, 0.25)
	f.Add(uint8(0), 12.0, 8.0, 4.0, 600.0, 20000.0, 4.0, 0.3, 0.5, 1.5, 0.06, 0.8, 0.9, 0.2, 3000.0, 280.0, 240.0, 9000.0, 0.99, 0.0)
	f.Add(uint8(0), 5.0, 5.0, 0.0, 300.0, 3000.0, 2.0, 0.05, 0.0, 0.5, 0.03, 1.0, 1.0, 0.0, 1100.0, 300.0, 120.0, 2000.0, 0.95, 0.0)
	f.Add(uint8(0), 5.0, 5.0, 0.0, 900.0, 3000.0, 2.0, 0.05, 0.0, 0.5, 0.03, 1.0, 1.0, 0.0, 1100.0, 300.0, 1e15, 5000.0, 0.95, 0.0)
	f.Add(uint8(1), nan, 2.0, nan, inf, -1.0, 0.0, 2.0, -inf, nan, 1e308, -0.5, 7.0, inf, -1100.0, 0.0, -3.0, nan, -1.0, inf)
	f.Fuzz(func(t *testing.T, which uint8, inFlight, running, waiting, outTPS, promptTPS, reqPS, kvUsage, preempt,
		ttftP99, tpotP99, ttftAtt, tpotAtt, queueGrowth, meanPrompt, meanOutput, mixRequests, promptP99, gpuUtil, effMin float64) {
		p := profiles[int(which)%len(profiles)]
		o := NewObservation()
		o.InFlight, o.Running, o.Waiting = inFlight, running, waiting
		o.OutputTokensPerSecond, o.PromptTokensPerSecond, o.RequestsPerSecond = outTPS, promptTPS, reqPS
		o.KVCacheUsage, o.PreemptionsPerSecond = kvUsage, preempt
		o.TTFT.P99, o.TPOT.P99 = ttftP99, tpotP99
		o.TTFT.P50, o.TPOT.P50 = ttftP99/3, tpotP99/2
		o.TTFTAttainment, o.TPOTAttainment = ttftAtt, tpotAtt
		o.QueueGrowthPerSecond = queueGrowth
		o.MeanPromptTokens, o.MeanOutputTokens, o.MixRequests, o.PromptTokensP99 = meanPrompt, meanOutput, mixRequests, promptP99
		o.GPUUtilization = gpuUtil
		if msg := wrongNumber(Evaluate(o, p, Options{EffectiveLoadMinRatio: effMin})); msg != "" {
			t.Fatalf("%s\nobservation %+v", msg, o)
		}
	})
}

// wrongNumber says what in r is a wrong number (see FuzzEvaluate), or "".
func wrongNumber(r Result) string {
	if infinite := infiniteFloats(reflect.ValueOf(r), "Result"); len(infinite) > 0 {
		return fmt.Sprintf("infinite values %v in %+v", infinite, r)
	}
	if !r.OK {
		if r.Reason == "" {
			return "not OK with no reason"
		}
		if known := knownFloats(reflect.ValueOf(r), "Result"); len(known) > 0 {
			return fmt.Sprintf("not OK (%s) but %v known", r.Reason, known)
		}
		return ""
	}
	if !Known(r.Headroom) || r.Headroom > 1 {
		return fmt.Sprintf("headroom %v, want known and ≤ 1", r.Headroom)
	}
	if !Known(r.Ratios[r.Dimension]) {
		return fmt.Sprintf("headroom set by %s, whose ratio is %v", r.Dimension, r.Ratios[r.Dimension])
	}
	for d, ratio := range r.Ratios {
		if Known(ratio) && ratio < 0 {
			return fmt.Sprintf("%s ratio %v < 0", Dimension(d), ratio)
		}
	}
	if !Known(r.Knee.Concurrency) || !(r.Knee.Concurrency > 0) {
		return fmt.Sprintf("compared with a knee of %v in flight", r.Knee.Concurrency)
	}
	if Known(r.SLOAttainment) && (r.SLOAttainment < 0 || r.SLOAttainment > 1) {
		return fmt.Sprintf("SLO attainment %v outside [0, 1]", r.SLOAttainment)
	}
	for _, v := range []struct {
		name  string
		value float64
	}{{"goodput", r.GoodputTokensPerSecond}, {"throughput efficiency", r.ThroughputEfficiency},
		{"output tokens/s", r.OutputTokensPerSecond}, {"KV reference", r.KVCacheReference}} {
		if Known(v.value) && v.value < 0 {
			return fmt.Sprintf("%s %v < 0", v.name, v.value)
		}
	}
	return ""
}

// infiniteFloats lists the float64 fields, at any depth, that hold ±Inf.
func infiniteFloats(v reflect.Value, path string) []string {
	return floatsWhere(v, path, func(f float64) bool { return math.IsInf(f, 0) })
}

// loadFuzzProfiles loads fuzzProfiles.
func loadFuzzProfiles(tb testing.TB) []*Profile {
	tb.Helper()
	profiles := make([]*Profile, len(fuzzProfiles))
	for i, path := range fuzzProfiles {
		p, err := Load(path)
		if err != nil {
			tb.Fatal(err)
		}
		profiles[i] = p
	}
	return profiles
}

// TestEvaluateReadsNoWrongNumberFromAnyObservation checks FuzzEvaluate's
// promises on observations drawn around each profile's operating point,
// where random bits rarely land: most fields within a factor of a few of
// the knee's, some many orders of magnitude off, some NaN, ±Inf, 0, -1,
// denormal or near overflow. It found what the fuzzer had not in 3.9
// million inputs: a running batch of 5e-324 read a throughput efficiency
// of +Inf, and a mean prompt of 1e300 moved the knee to 0 in flight and
// the headroom to -Inf.
func TestEvaluateReadsNoWrongNumberFromAnyObservation(t *testing.T) {
	profiles := loadFuzzProfiles(t)
	rng := rand.New(rand.NewPCG(1, 2))
	specials := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, -1, 1e-300, 1e300, 5e-324, math.MaxFloat64}
	// around draws a value about typical: within a factor of ~2 mostly,
	// sometimes orders of magnitude away, sometimes a special value.
	around := func(typical float64) float64 {
		switch x := rng.Float64(); {
		case x < 0.08:
			return specials[rng.IntN(len(specials))]
		case x < 0.15:
			return typical * math.Exp(rng.NormFloat64()*6)
		default:
			return typical * math.Exp(rng.NormFloat64()*0.7)
		}
	}
	n := 200_000
	if testing.Short() {
		n = 20_000
	}
	for range n {
		p := profiles[rng.IntN(len(profiles))]
		k, w := p.Knee.Concurrency, p.Workload
		o := NewObservation()
		o.InFlight, o.Running, o.Waiting = around(k), around(0.8*k), around(0.1*k)
		o.OutputTokensPerSecond, o.PromptTokensPerSecond, o.RequestsPerSecond = around(100*k), around(500*k), around(k/3)
		o.KVCacheUsage, o.PreemptionsPerSecond = around(0.3), around(0.01)
		o.TTFT.P99, o.TPOT.P99 = around(p.SLO.TTFT.Seconds()), around(p.SLO.TPOT.Seconds())
		o.TTFTAttainment, o.TPOTAttainment = around(0.99), around(0.99)
		o.QueueGrowthPerSecond = around(0.1)
		o.MeanPromptTokens, o.MeanOutputTokens = around(w.MeanPromptTokens), around(w.MeanOutputTokens)
		o.MixRequests, o.PromptTokensP99 = around(300), around(3*w.MeanPromptTokens)
		o.GPUUtilization = around(0.5)
		if msg := wrongNumber(Evaluate(o, p, Options{})); msg != "" {
			t.Fatalf("%s\nobservation %+v", msg, o)
		}
	}
}
