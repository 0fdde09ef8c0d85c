package knee

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var approx = cmp.Options{cmpopts.EquateApprox(0, 1e-9), cmpopts.EquateNaNs()}

func curveProfile() *Profile {
	return &Profile{Points: []Point{
		pt(2, 200, 0.02, 0.05, 0.010, true),
		pt(10, 1000, 0.10, 0.10, 0.020, true),
		pt(20, 1500, 0.20, 0.30, 0.040, true),
	}}
}

func TestCurveAt(t *testing.T) {
	tests := []struct {
		name   string
		load   float64
		want   CurvePoint
		wantOK bool
	}{
		{"zero load makes no tokens at the first point's latency", 0,
			CurvePoint{Concurrency: 0, TTFTP99: 0.05, TPOTP99: 0.010}, true},
		{"below the first point throughput scales from zero", 1,
			CurvePoint{Concurrency: 1, OutputTokensPerSecond: 100, GoodputTokensPerSecond: 100, KVCacheUsage: 0.01, TTFTP99: 0.05, TPOTP99: 0.010}, true},
		{"on a point the curve is that point", 10,
			CurvePoint{Concurrency: 10, OutputTokensPerSecond: 1000, GoodputTokensPerSecond: 1000, KVCacheUsage: 0.10, TTFTP99: 0.10, TPOTP99: 0.020}, true},
		{"between points the curve is interpolated linearly", 15,
			CurvePoint{Concurrency: 15, OutputTokensPerSecond: 1250, GoodputTokensPerSecond: 1250, KVCacheUsage: 0.15, TTFTP99: 0.20, TPOTP99: 0.030}, true},
		{"on the last point the curve is not extrapolated", 20,
			CurvePoint{Concurrency: 20, OutputTokensPerSecond: 1500, GoodputTokensPerSecond: 1500, KVCacheUsage: 0.20, TTFTP99: 0.30, TPOTP99: 0.040}, true},
		{"past the last point the curve stays flat and says it extrapolated", 40,
			CurvePoint{Concurrency: 40, OutputTokensPerSecond: 1500, GoodputTokensPerSecond: 1500, KVCacheUsage: 0.20, TTFTP99: 0.30, TPOTP99: 0.040, Extrapolated: true}, true},
		{"an unknown load has no curve point", math.NaN(), CurvePoint{}, false},
		{"a negative load has no curve point", -1, CurvePoint{}, false},
	}
	p := curveProfile()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := p.CurveAt(tt.load)
			if ok != tt.wantOK {
				t.Fatalf("CurveAt(%g) ok = %v, want %v", tt.load, ok, tt.wantOK)
			}
			if diff := cmp.Diff(tt.want, got, approx); diff != "" {
				t.Errorf("CurveAt(%g) (-want +got):\n%s", tt.load, diff)
			}
		})
	}
}

func TestCurveAtWithoutPointsHasNoCurve(t *testing.T) {
	if _, ok := (&Profile{}).CurveAt(5); ok {
		t.Error("CurveAt on a profile without points: ok = true, want false")
	}
	var nilProfile *Profile
	if _, ok := nilProfile.CurveAt(5); ok {
		t.Error("CurveAt on a nil profile: ok = true, want false")
	}
}

// concaveProfile is the shape the simulator measured for Llama-3.1-8B on an
// H100 with the chat mix (SLO p99 TTFT 200 ms, TPOT 20 ms): throughput
// bends over well before the knee at 98.
func concaveProfile() *Profile {
	p := &Profile{SLO: SLO{TTFT: Duration(200e6), TPOT: Duration(20e6), Quantile: 0.99}}
	for _, c := range [][2]float64{{1, 119}, {8, 905}, {16, 1697}, {32, 2983}, {64, 4873}, {96, 5742}, {98, 5858}, {128, 6225}, {256, 6672}} {
		p.Points = append(p.Points, Point{Concurrency: c[0], OutputTokensPerSecond: c[1], MeetsSLO: c[0] <= 98})
	}
	p.Knee = Knee{Concurrency: 98, OutputTokensPerSecond: 5858, GoodputTokensPerSecond: 5817, KVCacheUsage: 0.078, LimitingResource: ResourceCompute}
	return p
}

func TestThroughputLoadRatio(t *testing.T) {
	tests := []struct {
		name    string
		profile *Profile
		rate    float64
		want    float64
	}{
		{"no tokens is no load", concaveProfile(), 0, 0},
		{"the rate of a point below the knee reads as that point's load", concaveProfile(), 4873, 64.0 / 98},
		{"between points the load is read through the time per token", concaveProfile(), 48 / ((32/2983.0 + 64/4873.0) / 2), 48.0 / 98},
		{"below the first point the load scales from zero", concaveProfile(), 59.5, 0.5 / 98},
		{"the knee's rate reads as the knee", concaveProfile(), 5858, 1},
		{"above the knee's rate the plain ratio keeps noise from swinging the load", concaveProfile(), 6225, 6225.0 / 5858},
		{"an interpolated knee between points closes the last stretch", func() *Profile {
			p := concaveProfile()
			p.Knee.Concurrency, p.Knee.OutputTokensPerSecond = 97, 5800
			return p
		}(), 96.5 / ((96/5742.0 + 97/5800.0) / 2), 96.5 / 97},
		{"a dip in the measured curve does not run the load backwards", &Profile{
			Points: []Point{{Concurrency: 10, OutputTokensPerSecond: 1000}, {Concurrency: 20, OutputTokensPerSecond: 900}, {Concurrency: 30, OutputTokensPerSecond: 1500}, {Concurrency: 40, OutputTokensPerSecond: 2000}},
			Knee:   Knee{Concurrency: 40, OutputTokensPerSecond: 2000},
		}, 1250, 25.0 / 40},
		{"a knee without throughput gives no ratio", &Profile{Knee: Knee{Concurrency: 10}}, 100, math.NaN()},
		{"an unknown rate gives no ratio", concaveProfile(), math.NaN(), math.NaN()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.profile.throughputLoadRatio(tt.rate), approx); diff != "" {
				t.Errorf("throughputLoadRatio(%g) (-want +got):\n%s", tt.rate, diff)
			}
		})
	}
}

func TestOutputRateCountsOnlyWhereTheCurveTellsLoadsApart(t *testing.T) {
	// A compute-bound curve that flattens well before its knee: from 96 to
	// 191 in flight, tokens/s grow by 13% (elasticity 0.18).
	flat := &Profile{
		SLO: SLO{TTFT: Duration(200e6), TPOT: Duration(20e6), Quantile: 0.99},
		Points: []Point{
			{Concurrency: 1, OutputTokensPerSecond: 100, MeetsSLO: true},
			{Concurrency: 48, OutputTokensPerSecond: 4000, MeetsSLO: true},
			{Concurrency: 96, OutputTokensPerSecond: 5200, MeetsSLO: true},
			{Concurrency: 191, OutputTokensPerSecond: 5900, MeetsSLO: true},
			{Concurrency: 300, OutputTokensPerSecond: 6000},
		},
		Knee: Knee{Concurrency: 191, OutputTokensPerSecond: 5900, LimitingResource: ResourceCompute},
	}
	expected, _ := flat.CurveAt(171)
	tests := []struct {
		name      string
		profile   *Profile
		obs       Observation
		want      float64
		wantDim   Dimension
		wantRatio bool // the throughput ratio is known
	}{
		{"4% more tokens than the profile near a flat knee is noise, not load",
			flat, observe(171, output(1.04*expected.OutputTokensPerSecond)), 1 - 171.0/191, DimensionLoad, false},
		{"tokens above the knee's rate on a flat curve do not read as past the knee",
			flat, observe(150, output(6100)), 1 - 150.0/191, DimensionLoad, false},
		{"on the steep part of a flat-topped curve tokens still read as load",
			flat, observe(20, output(3000)), 1 - 35.5/191, DimensionThroughput, true},
		{"a knee reached while tokens still climb keeps its throughput reading",
			computeProfile(), observe(90, output(12000)), -0.2, DimensionThroughput, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Evaluate(tt.obs, tt.profile, Options{EffectiveLoadMinRatio: math.Inf(1)})
			if math.Abs(r.Headroom-tt.want) > 0.01 || r.Dimension != tt.wantDim {
				t.Errorf("headroom %.3f from %s, want %.3f from %s", r.Headroom, r.Dimension, tt.want, tt.wantDim)
			}
			if got := Known(r.Ratios[DimensionThroughput]); got != tt.wantRatio {
				t.Errorf("throughput ratio %v, known %v, want known %v", r.Ratios[DimensionThroughput], got, tt.wantRatio)
			}
		})
	}
}

// TestSpeedIsJudgedOnEachSampledBatch: a replica at full speed whose batch
// swings between 1 and 15 makes the mean of the curve's output at 1 and at
// 15, below the curve's output at their mean of 8 (the curve is concave).
// Judged on the samples it reads full speed; judged on the mean alone it
// read slow, as Poisson traffic at a few in flight did.
func TestSpeedIsJudgedOnEachSampledBatch(t *testing.T) {
	p := concaveProfile()
	for i := range p.Points {
		p.Points[i].Running = p.Points[i].Concurrency
	}
	atOne, atFifteen := 119.0, 15/(8/905.0+(16/1697.0-8/905.0)*7/8)
	swinging := func(samples []float64) Observation {
		return observe(8, output((atOne+atFifteen)/2), func(o *Observation) {
			o.Running, o.RunningSamples = 8, samples
		})
	}
	tests := []struct {
		name    string
		samples []float64
		want    float64
	}{
		{"judged on the samples", []float64{1, 15, 1, 15}, 1},
		{"judged at the mean when the samples are not kept", nil, (atOne + atFifteen) / 2 / 905},
		{"a sample the curve cannot read falls back to the mean", []float64{1, 15, math.NaN(), 15}, (atOne + atFifteen) / 2 / 905},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Evaluate(swinging(tt.samples), p, Options{})
			if diff := cmp.Diff(tt.want, r.ThroughputEfficiency, approx); diff != "" {
				t.Errorf("throughput efficiency (-want +got):\n%s", diff)
			}
		})
	}
}

// When the mean batch is read otherwise than from the samples (by Little's
// law), the curve is read at that mean and the samples give only the bend.
func TestSpeedTakesTheBendFromTheSamplesAndTheMeanFromRunning(t *testing.T) {
	p := concaveProfile()
	for i := range p.Points {
		p.Points[i].Running = p.Points[i].Concurrency
	}
	atOne, atFifteen, atEight := 119.0, 15/(8/905.0+(16/1697.0-8/905.0)*7/8), 905.0
	bend := (atOne + atFifteen) / 2 / atEight
	atSixteen := 1697.0
	o := observe(16, output(atSixteen*bend), func(o *Observation) { o.Running, o.RunningSamples = 16, []float64{1, 15} })
	if diff := cmp.Diff(1.0, Evaluate(o, p, Options{}).ThroughputEfficiency, approx); diff != "" {
		t.Errorf("throughput efficiency (-want +got):\n%s", diff)
	}
}

// littleReading is the concurrency between loC and hiC at which a rate
// whose time per unit (c ÷ rate) runs linearly between the two points
// reads rate, found by bisection: the tests' own reading of it.
func littleReading(loC, loT, hiC, hiT, rate float64) float64 {
	at := func(c float64) float64 {
		return c / (loC/loT + (hiC/hiT-loC/loT)*(c-loC)/(hiC-loC))
	}
	lo, hi := loC, hiC
	for range 200 {
		mid := (lo + hi) / 2
		if at(mid) < rate {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// A replica whose decode step grows linearly with its batch makes
// tokens/s = c ÷ (a + b·c): concave, so the chord between two points of a
// doubling sweep lies below it. Read through the time per token, the
// curve between its points is that replica's exactly: its own output reads
// full speed and its own load, where the chord read it up to 3% faster
// and more loaded.
func TestTheCurveBetweenPointsIsReadThroughTheTimePerToken(t *testing.T) {
	const a, b = 0.01, 0.01 / 32 // the batch's share of a step equals the fixed part's at 32
	tokens := func(c float64) float64 { return c / (a + b*c) }
	p := &Profile{SLO: SLO{TTFT: Duration(200e6), TPOT: Duration(50e6), Quantile: 0.99}}
	for _, c := range []float64{1, 2, 4, 8, 16, 32, 64} {
		p.Points = append(p.Points, Point{Concurrency: c, Running: c, OutputTokensPerSecond: tokens(c), MeetsSLO: true})
	}
	p.Knee = Knee{Concurrency: 64, OutputTokensPerSecond: tokens(64), LimitingResource: ResourceCompute}
	for _, c := range []float64{3, 6, 12, 24, 40, 56} {
		r := Evaluate(observe(c, output(tokens(c)), func(o *Observation) { o.Running = c }), p, Options{})
		if diff := cmp.Diff(1.0, r.ThroughputEfficiency, approx); diff != "" {
			t.Errorf("at %g running, throughput efficiency of the profile's own replica (-want +got):\n%s", c, diff)
		}
		if c > 40 {
			continue // the curve flattens toward the knee, where tokens/s do not read as load
		}
		if diff := cmp.Diff(c/64, r.Ratios[DimensionThroughput], approx); diff != "" {
			t.Errorf("at %g in flight, throughput ratio of the profile's own tokens/s (-want +got):\n%s", c, diff)
		}
	}
}

func TestConcurrencyAtRateInvertsTheReading(t *testing.T) {
	for _, tt := range []struct{ loC, loT, hiC, hiT, c float64 }{
		{16, 1697, 32, 2983, 24},
		{1, 119, 8, 905, 1},
		{1, 119, 8, 905, 8},
		{64, 4300, 128, 6200, 100},
	} {
		rate := rateAtConcurrency(tt.loC, tt.loT, tt.hiC, tt.hiT, tt.c)
		if diff := cmp.Diff(tt.c, concurrencyAtRate(tt.loC, tt.loT, tt.hiC, tt.hiT, rate), approx); diff != "" {
			t.Errorf("concurrencyAtRate(rateAtConcurrency(%g)) (-want +got):\n%s", tt.c, diff)
		}
		if diff := cmp.Diff(littleReading(tt.loC, tt.loT, tt.hiC, tt.hiT, rate), concurrencyAtRate(tt.loC, tt.loT, tt.hiC, tt.hiT, rate), cmpopts.EquateApprox(0, 1e-7)); diff != "" {
			t.Errorf("concurrencyAtRate against the bisection at %g (-want +got):\n%s", tt.c, diff)
		}
	}
	// From zero, or over a flat stretch, the reading stays linear.
	if got := concurrencyAtRate(0, 0, 2, 200, 50); got != 0.5 {
		t.Errorf("concurrencyAtRate from zero = %g, want 0.5", got)
	}
	if got := rateAtConcurrency(0, 0, 2, 200, 0.5); got != 50 {
		t.Errorf("rateAtConcurrency from zero = %g, want 50", got)
	}
}
