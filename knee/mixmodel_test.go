package knee

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/kneewatch/kneewatch/workload"
)

func loadMix(t testing.TB) *Profile {
	t.Helper()
	p, err := Load("testdata/valid-mix.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// gridPoints are the knees a LogQuadratic pair gives on a grid of scales
// of the means p0 and o0: exact measurements of a known model.
func gridPoints(c, r LogQuadratic, p0, o0 float64, pScales, oScales []float64) []MixPoint {
	var pts []MixPoint
	for _, ps := range pScales {
		for _, os := range oScales {
			x, z := math.Log(ps), math.Log(os)
			pts = append(pts, MixPoint{PromptScale: ps, OutputScale: os, MeanPromptTokens: p0 * ps, MeanOutputTokens: o0 * os,
				Concurrency: c.At(x, z), RequestsPerSecond: r.At(x, z)})
		}
	}
	return pts
}

func TestFitMixModelRecoversTheModelItsKneesCameFrom(t *testing.T) {
	c := LogQuadratic{AtProfileMix: 60, Prompt: -1.1, Output: 0.7, PromptSquared: -0.2, PromptOutput: 0.35, OutputSquared: -0.15}
	r := LogQuadratic{AtProfileMix: 25, Prompt: -1.4, Output: -0.3, PromptSquared: 0.05, PromptOutput: 0.25, OutputSquared: -0.1}
	approx := cmpopts.EquateApprox(0, 1e-9)

	m, err := FitMixModel(gridPoints(c, r, 200, 180, []float64{1, 2, 4}, []float64{0.5, 1, 2, 4}), 200, 180)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(c, m.Concurrency, approx); diff != "" {
		t.Errorf("concurrency model (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(r, m.RequestsPerSecond, approx); diff != "" {
		t.Errorf("rate model (-want +got):\n%s", diff)
	}

	// Two lengths of each mean cannot show a curvature: the squares are 0
	// and the rest is fitted exactly when the truth has none.
	c.PromptSquared, c.OutputSquared, r.PromptSquared, r.OutputSquared = 0, 0, 0, 0
	m, err = FitMixModel(gridPoints(c, r, 200, 180, []float64{1, 3}, []float64{1, 2}), 200, 180)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(c, m.Concurrency, approx); diff != "" {
		t.Errorf("2×2 concurrency model (-want +got):\n%s", diff)
	}
}

func TestFitMixModelReproducesTheProfilesKneeAndMakesDoWithFewerTerms(t *testing.T) {
	c := LogQuadratic{AtProfileMix: 60, Prompt: -1.1, Output: 0.7, PromptSquared: -0.2}
	r := LogQuadratic{AtProfileMix: 25, Prompt: -1.4, Output: -0.3, OutputSquared: -0.1}
	// Mixes on the axes only: no point tells the cross term, and measured
	// knees are noisy; the profile's own knee must still come out exact.
	var pts []MixPoint
	for i, s := range [][2]float64{{1, 1}, {2, 1}, {4, 1}, {1, 2}, {1, 4}} {
		x, z := math.Log(s[0]), math.Log(s[1])
		noise := 1 + 0.05*float64(i%2*2-1)*float64(min(i, 1))
		pts = append(pts, MixPoint{PromptScale: s[0], OutputScale: s[1], MeanPromptTokens: 200 * s[0], MeanOutputTokens: 180 * s[1],
			Concurrency: c.At(x, z) * noise, RequestsPerSecond: r.At(x, z) / noise})
	}
	m, err := FitMixModel(pts, 200, 180)
	if err != nil {
		t.Fatal(err)
	}
	if m.Concurrency.AtProfileMix != 60 || m.RequestsPerSecond.AtProfileMix != 25 {
		t.Errorf("model at the profile's mix: %g in flight at %g requests/s, want the measured 60 at 25",
			m.Concurrency.AtProfileMix, m.RequestsPerSecond.AtProfileMix)
	}
	if m.Concurrency.PromptOutput != 0 || !(m.Concurrency.Prompt < 0) || !(m.RequestsPerSecond.Prompt < 0) {
		t.Errorf("fitted %+v and %+v: want no cross term and knees falling with longer prompts", m.Concurrency, m.RequestsPerSecond)
	}
}

func TestFitMixModelRejectsPointsThatCannotDetermineIt(t *testing.T) {
	c := LogQuadratic{AtProfileMix: 60, Prompt: -1, Output: 0.5}
	r := LogQuadratic{AtProfileMix: 25, Prompt: -1, Output: -0.2}
	grid := gridPoints(c, r, 200, 180, []float64{1, 2}, []float64{1, 2})
	zeroRate := gridPoints(c, r, 200, 180, []float64{1, 2}, []float64{1, 2})
	zeroRate[2].RequestsPerSecond = 0
	tests := []struct {
		name   string
		points []MixPoint
		p0     float64
		want   string
	}{
		{"too few", grid[:3], 200, "needs knees at 4 or more mixes, got 3"},
		{"one prompt length", gridPoints(c, r, 200, 180, []float64{1}, []float64{1, 2, 4, 8}), 200, "two or more mean prompt lengths"},
		{"a zero rate", zeroRate, 200, "mix point 2: requestsPerSecond must be > 0, got 0"},
		{"no profile mean", grid, 0, "the profile's mean prompt and output tokens > 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := FitMixModel(tt.points, tt.p0, 180)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("FitMixModel error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// nearlyScaledPoints are the quick grid's knees (QuickMixScales) plus
// prompts and outputs ×2 together, whose means are clamped to ×1.85 and
// ×1.95: the proportions of the scales, almost, which makes the full
// fit's system nearly singular. r22 is that mix's knee rate.
func nearlyScaledPoints(r22 float64) []MixPoint {
	p0, o0 := 1000.0, 200.0
	at := func(ps, os, c, r float64) MixPoint {
		return MixPoint{PromptScale: ps, OutputScale: os, MeanPromptTokens: p0 * ps, MeanOutputTokens: o0 * os, Concurrency: c, RequestsPerSecond: r}
	}
	return []MixPoint{at(1, 1, 10, 1), at(1.9, 1, 8, 0.55), at(1, 2, 14, 0.95), at(0.5, 0.5, 8, 1.7), at(1.85, 1.95, 12, r22)}
}

func TestFitMixModelPassesOverAFitNoKneeHas(t *testing.T) {
	for _, r22 := range []float64{0.5, 0.9} {
		m, err := FitMixModel(nearlyScaledPoints(r22), 1000, 200)
		if err != nil {
			t.Fatalf("r22 %g: %v", r22, err)
		}
		for _, q := range []LogQuadratic{m.Concurrency, m.RequestsPerSecond} {
			for _, v := range []float64{q.Prompt, q.Output, q.PromptSquared, q.PromptOutput, q.OutputSquared} {
				if !(math.Abs(v) <= maxMixCoefficient) {
					t.Errorf("r22 %g: fitted %+v, a coefficient past ±%g", r22, q, float64(maxMixCoefficient))
				}
			}
		}
		if !(m.RequestsPerSecond.Prompt < 0) {
			t.Errorf("r22 %g: rate's prompt slope %g, want < 0", r22, m.RequestsPerSecond.Prompt)
		}
	}
	// A rate that rises with longer prompts whatever the terms: no model.
	rising := nearlyScaledPoints(0.9)[:4]
	rising[1].RequestsPerSecond = 1.3
	if _, err := FitMixModel(rising, 1000, 200); err == nil || !strings.Contains(err.Error(), "rising with longer prompts") {
		t.Errorf("FitMixModel of a rate rising with prompts: error %v, want one naming the slope", err)
	}
}

// poissonMix is the valid mix-model profile with its knee measured under
// Poisson arrivals, so its knee has a request rate to move.
func poissonMix(t testing.TB) *Profile {
	p := loadMix(t)
	p.Knee.Arrivals = ArrivalsPoisson
	p.Knee.RequestsPerSecond = p.MixModel.RequestsPerSecond.AtProfileMix
	p.Knee.ClosedLoopConcurrency = p.Knee.Concurrency
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestEvaluateMovesTheKneeWhenOutputsGrow(t *testing.T) {
	p := poissonMix(t)
	m := p.MixModel
	p0, o0 := p.Workload.MeanPromptTokens, p.Workload.MeanOutputTokens
	rate0, c0 := p.Knee.RequestsPerSecond, p.Knee.Concurrency

	// Outputs twice as long at the profile knee's request rate: by Little's
	// law the replica holds rate × the longer time in flight.
	grown := 2.0
	seen := 1 + (grown - 1 - mixNoiseBand) // the drift past the noise band
	z := math.Log(seen)
	cf := m.Concurrency.At(0, z) / m.Concurrency.AtProfileMix
	rf := m.RequestsPerSecond.At(0, z) / m.RequestsPerSecond.AtProfileMix
	inFlight := rate0 * (c0 / rate0) * cf / rf
	obs := observe(inFlight, func(o *Observation) {
		o.MeanPromptTokens, o.MeanOutputTokens = p0, grown*o0
		o.RequestsPerSecond = rate0
	})
	r := Evaluate(obs, p, Options{})
	if !r.OK {
		t.Fatalf("not OK: %s", r.Reason)
	}
	if !(r.Knee.RequestsPerSecond < rate0) {
		t.Errorf("knee rate with outputs ×2 = %g, want below the profile's %g", r.Knee.RequestsPerSecond, rate0)
	}
	approx := cmpopts.EquateApprox(1e-12, 0)
	if !cmp.Equal(r.Knee.Concurrency, c0*cf, approx) || !cmp.Equal(r.Knee.RequestsPerSecond, rate0*rf, approx) {
		t.Errorf("moved knee = %g in flight at %g requests/s, want %g at %g", r.Knee.Concurrency, r.Knee.RequestsPerSecond, c0*cf, rate0*rf)
	}
	if want := p.Knee.OutputTokensPerSecond * rf * seen; !cmp.Equal(r.Knee.OutputTokensPerSecond, want, approx) {
		t.Errorf("moved knee output = %g tokens/s, want %g (rate × longer outputs)", r.Knee.OutputTokensPerSecond, want)
	}
	// The profile knee's rate is past the moved knee by the rate it lost.
	if want := 1 - 1/rf; !cmp.Equal(r.Headroom, want, approx) || r.Dimension != DimensionLoad {
		t.Errorf("headroom = %g by %s, want %g by load (1 − profile rate ÷ moved knee rate)", r.Headroom, r.Dimension, want)
	}
	if !(r.Headroom < 0) {
		t.Errorf("headroom at the profile knee's rate with longer outputs = %g, want < 0", r.Headroom)
	}
}

func TestEvaluateWithAMixModelIsUnchangedWithinTheNoiseBand(t *testing.T) {
	p := loadMix(t)
	without := *p
	without.MixModel = nil
	nan := Unknown()
	for _, means := range [][2]float64{
		{p.Workload.MeanPromptTokens, p.Workload.MeanOutputTokens},
		{p.Workload.MeanPromptTokens * (1 + mixNoiseBand), p.Workload.MeanOutputTokens * (1 - mixNoiseBand)},
		{nan, nan},
		{nan, p.Workload.MeanOutputTokens * 1.05},
	} {
		obs := benchObservation()
		obs.MeanPromptTokens, obs.MeanOutputTokens = means[0], means[1]
		got, want := Evaluate(obs, p, Options{}), Evaluate(obs, &without, Options{})
		if diff := cmp.Diff(want, got, cmpopts.EquateNaNs()); diff != "" {
			t.Errorf("means %v: the mix model changed the result (-without +with):\n%s", means, diff)
		}
	}
}

// Past the heaviest measured mix the model only lowers the knee; lighter
// than the lightest, it raises the knee's rate by a bounded rise.
func TestMixModelOutsideTheMeasuredMixes(t *testing.T) {
	p := loadMix(t)
	m := p.MixModel
	_, pHi, _, oHi := m.ranges()
	p0, o0 := p.Workload.MeanPromptTokens, p.Workload.MeanOutputTokens
	band := 1 + mixNoiseBand
	edge := p.mixShiftAt(pHi*band, oHi*band, windowTail(Unknown()), mixNoiseBand, mixNoiseBand) // shrunk back exactly onto the heaviest mix
	for _, f := range []float64{1.5, 3, 10} {
		s := p.mixShiftAt(pHi*band*f, oHi*band*f, windowTail(Unknown()), mixNoiseBand, mixNoiseBand)
		if s.concurrency > edge.concurrency*(1+1e-12) || s.rate > edge.rate*(1+1e-12) {
			t.Errorf("%g× past the heaviest measured mix: knee ×%g at ×%g rate, above the edge's ×%g at ×%g",
				f, s.concurrency, s.rate, edge.concurrency, edge.rate)
		}
	}
	// Lighter than any measured: the knee's rate rises past the lightest
	// measured mix's, more for lighter requests, and never by more than
	// maxLighterRise; its concurrency stays the lightest mix's.
	pLo, _, oLo, _ := m.ranges()
	pEdge, oEdge := pLo-mixNoiseBand*p0, oLo-mixNoiseBand*o0 // shrunk back exactly onto the lightest mix
	lightest := p.mixShiftAt(pEdge, oEdge, windowTail(Unknown()), mixNoiseBand, mixNoiseBand)
	prev := lightest
	for _, f := range []float64{2, 10, 1000} {
		s := p.mixShiftAt(pEdge/f, oEdge/f, windowTail(Unknown()), mixNoiseBand, mixNoiseBand)
		if s.concurrency != lightest.concurrency {
			t.Errorf("%g× lighter than the lightest measured mix: knee ×%g in flight, want the lightest mix's ×%g", f, s.concurrency, lightest.concurrency)
		}
		if s.rate < prev.rate {
			t.Errorf("%g× lighter than the lightest measured mix: knee ×%g at ×%g rate, below ×%g at ×%g for a heavier mix",
				f, s.concurrency, s.rate, prev.concurrency, prev.rate)
		}
		if s.rate > lightest.rate*maxLighterRise*(1+1e-12) {
			t.Errorf("%g× lighter: knee ×%g at ×%g rate, more than %g× the lightest measured mix's (×%g at ×%g)",
				f, s.concurrency, s.rate, maxLighterRise, lightest.concurrency, lightest.rate)
		}
		prev = s
	}
	if !(prev.rate > lightest.rate) {
		t.Errorf("requests 1000× lighter than the lightest measured mix did not raise the knee's rate (×%g)", prev.rate)
	}
}

func TestLighterRiseFollowsARequestsCostAndSaturates(t *testing.T) {
	inf := math.Inf(1)
	for _, c := range []struct {
		name         string
		q            LogQuadratic
		lx, lz, want float64
	}{
		{"not lighter", LogQuadratic{Prompt: -0.5}, 0, 0, 0},
		{"prompts halved, half the cost in them", LogQuadratic{Prompt: -0.5}, math.Ln2, 0, -math.Log(0.75)},
		{"prompts to nothing: the fixed half is left", LogQuadratic{Prompt: -0.5}, inf, 0, math.Ln2},
		{"a slope read at the edge, not at the profile's mix", LogQuadratic{Prompt: -0.2, PromptSquared: 0.15}, inf, 0, -math.Log(0.5)},
		{"a knee that falls for lighter outputs is held", LogQuadratic{Output: 0.3}, 0, math.Ln2, 0},
		{"both to nothing with slopes summing past 1: capped", LogQuadratic{Prompt: -0.8, Output: -0.7}, inf, inf, math.Log(maxLighterRise)},
	} {
		xc := 0.0
		if c.q.PromptSquared != 0 {
			xc = -1 // gradient -0.2 + 2·0.15·(-1) = -0.5
		}
		if got := lighterRise(c.q, xc, 0, c.lx, c.lz); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: lighterRise = %g, want %g", c.name, got, c.want)
		}
	}
}

func TestEvaluateWithAMixModelDoesNotAllocate(t *testing.T) {
	p := loadMix(t)
	obs := benchObservation()
	obs.MeanOutputTokens *= 2
	if allocs := testing.AllocsPerRun(100, func() { Evaluate(obs, p, Options{}) }); allocs != 0 {
		t.Errorf("Evaluate allocates %v times per call, want 0", allocs)
	}
}

func BenchmarkEvaluateMixModel(b *testing.B) {
	p := loadMix(b)
	obs := benchObservation()
	obs.MeanOutputTokens *= 2
	b.ReportAllocs()
	var r Result
	for b.Loop() {
		r = Evaluate(obs, p, Options{})
	}
	if !r.OK || r.Knee.Concurrency == p.Knee.Concurrency {
		b.Fatalf("Evaluate not OK (%s) or the knee did not move", r.Reason)
	}
}

func TestParseMixScales(t *testing.T) {
	got, err := ParseMixScales("2:1, 1:0.5")
	if err != nil {
		t.Fatal(err)
	}
	if want := []MixScale{{2, 1}, {1, 0.5}}; !cmp.Equal(got, want) {
		t.Errorf("ParseMixScales = %v, want %v", got, want)
	}
	if got, _ := ParseMixScales("default"); !cmp.Equal(got, DefaultMixScales) {
		t.Errorf("default = %v, want %v", got, DefaultMixScales)
	}
	if got, _ := ParseMixScales(" quick "); !cmp.Equal(got, []MixScale{{2, 1}, {1, 2}, {0.5, 0.5}}) {
		t.Errorf("quick = %v, want prompts ×2, outputs ×2 and both halved", got)
	}
	for in, want := range map[string]string{
		"2":       `mix scale "2": want PROMPT:OUTPUT factors`,
		"2:0":     `mix scale "2:0": output factor: want a finite number > 0, got "0"`,
		"x:1":     `mix scale "x:1": prompt factor`,
		"2:1,2:1": `mix scale "2:1" is listed twice`,
	} {
		if _, err := ParseMixScales(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseMixScales(%q) error = %v, want %q", in, err, want)
		}
	}
}

func TestAProfileWithAMixModelSavesAndParsesBackEqual(t *testing.T) {
	p := loadMix(t)
	data, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(data, "saved")
	if err != nil {
		t.Fatalf("the saved profile does not parse: %v\n%s", err, data)
	}
	if diff := cmp.Diff(p, back); diff != "" {
		t.Errorf("round trip (-loaded +parsed back):\n%s", diff)
	}
}

func TestMeansOverTooFewRequestsMoveNoKneeAndCountNoPrompts(t *testing.T) {
	p := poissonMix(t)
	p0, o0 := p.Workload.MeanPromptTokens, p.Workload.MeanOutputTokens
	obs := func(requests float64) Observation {
		return observe(p.Knee.Concurrency/2, func(o *Observation) {
			o.MeanPromptTokens, o.MeanOutputTokens = 2*p0, 2*o0
			o.PromptTokensPerSecond = 10 * p.Knee.RequestsPerSecond * p0 // a lump of long prompts
			o.MixRequests = requests
		})
	}
	few := Evaluate(obs(MinMixRequests-1), p, Options{})
	if few.Knee.Concurrency != p.Knee.Concurrency || few.Dimension != DimensionLoad || few.Headroom != 0.5 {
		t.Errorf("over %d requests: knee %g (profile's %g), headroom %g by %s; want the profile's knee and 0.5 by load",
			MinMixRequests-1, few.Knee.Concurrency, p.Knee.Concurrency, few.Headroom, few.Dimension)
	}
	if !math.IsNaN(few.Ratios[DimensionThroughput]) {
		t.Errorf("over %d requests the prompt rate read as throughput ratio %g", MinMixRequests-1, few.Ratios[DimensionThroughput])
	}
	enough := Evaluate(obs(MinMixRequests), p, Options{})
	if !(enough.Knee.Concurrency < p.Knee.Concurrency) {
		t.Errorf("over %d requests with prompts and outputs twice the profile's the knee stayed at %g", MinMixRequests, enough.Knee.Concurrency)
	}
	// Over enough requests the prompt rate (10× the knee's) counts, beside
	// the moved knee.
	if !(enough.Ratios[DimensionThroughput] > 1) {
		t.Errorf("over %d requests the prompt rate, 10× the knee's, read as throughput ratio %g, want > 1", MinMixRequests, enough.Ratios[DimensionThroughput])
	}
}

// A mean over few requests is shrunk by its standard error, not only by
// mixNoiseBand, at the spread of the profile's own mix: outputs longer by
// one standard error of a 25-request mean move the knee not at all; over
// 400 requests outputs 20% longer move it as outputs 10% longer do
// (shrunk by the band). A mix whose lengths spread half as much is judged
// by half the band, so the same drift over 25 requests moves its knee; a
// profile that records no distributions (a trace's) is judged as if its
// lengths had a coefficient of variation of 1.
func TestAMeanOverFewRequestsIsShrunkByItsStandardError(t *testing.T) {
	p := poissonMix(t)
	o0 := p.Workload.MeanOutputTokens
	cv := p.Workload.Output.CV()
	if !(cv/5 > mixNoiseBand) { // the standard error of 25 requests must be past the floor
		t.Fatalf("the profile's outputs have a coefficient of variation of %g: too little for this test", cv)
	}
	obs := func(requests, drift float64) Observation {
		return observe(p.Knee.Concurrency/2, func(o *Observation) {
			o.MeanPromptTokens, o.MeanOutputTokens = p.Workload.MeanPromptTokens, (1+drift)*o0
			o.MixRequests = requests
		})
	}
	want := p.mixShiftAt(Unknown(), 1.1*o0, windowTail(Unknown()), 0, 0)
	if !want.moved || want.concurrency == 1 {
		t.Fatal("outputs 10% longer do not move this profile's knee: the test means nothing")
	}
	oneSE := cv / 5 // over 25 requests
	if few := Evaluate(obs(25, oneSE), p, Options{}); few.Knee.Concurrency != p.Knee.Concurrency {
		t.Errorf("outputs +%.0f%% (one standard error) over 25 requests moved the knee to %g, want the profile's %g",
			100*oneSE, few.Knee.Concurrency, p.Knee.Concurrency)
	}
	if many := Evaluate(obs(400, 0.2), p, Options{}); math.Abs(many.Knee.Concurrency-p.Knee.Concurrency*want.concurrency) > 1e-9 {
		t.Errorf("outputs +20%% over 400 requests put the knee at %g, want %g (outputs +10%%)", many.Knee.Concurrency, p.Knee.Concurrency*want.concurrency)
	}

	steady := poissonMix(t)
	steady.Workload.Output.Sigma /= 2
	if got := steady.Workload.Output.CV(); !(got < 0.6*cv) {
		t.Fatalf("halving sigma left a coefficient of variation of %g (was %g)", got, cv)
	}
	if few := Evaluate(obs(25, oneSE), steady, Options{}); !(few.Knee.Concurrency > steady.Knee.Concurrency) {
		t.Errorf("a steadier mix: outputs +%.0f%% over 25 requests left the knee at %g, want it raised past %g",
			100*oneSE, few.Knee.Concurrency, steady.Knee.Concurrency)
	}

	trace := poissonMix(t)
	trace.Workload.Mix = workload.Mix{Name: "trace"}
	if few := Evaluate(obs(25, 0.2), trace, Options{}); few.Knee.Concurrency != trace.Knee.Concurrency {
		t.Errorf("no distributions: outputs +20%% over 25 requests moved the knee to %g, want the profile's %g", few.Knee.Concurrency, trace.Knee.Concurrency)
	}
	// A recorded spread (a sweep measures it on the requests served)
	// counts before the distributions, and without them.
	recorded := poissonMix(t)
	recorded.Workload.Mix = workload.Mix{Name: "trace"}
	recorded.Workload.OutputTokensCV = steady.Workload.Output.CV()
	if few := Evaluate(obs(25, oneSE), recorded, Options{}); !(few.Knee.Concurrency > recorded.Knee.Concurrency) {
		t.Errorf("a recorded steadier spread: outputs +%.0f%% over 25 requests left the knee at %g, want it raised past %g",
			100*oneSE, few.Knee.Concurrency, recorded.Knee.Concurrency)
	}
	if got := mixNoiseBandFor(Unknown(), 1); got != mixNoiseBand {
		t.Errorf("an unknown request count gets band %g, want %g", got, mixNoiseBand)
	}
}

// A prompt tail that grew moves the knee as the model's mixes scaled to the
// tail's length would, though the mean did not move; a tail within
// tailNoiseBand, a shorter one, or a profile without the reference (one
// written before it) moves nothing.
func TestAPromptTailMovesTheKneeWhereTheMeanDoesNot(t *testing.T) {
	p := loadMix(t)
	mp, mo := p.Workload.MeanPromptTokens, p.Workload.MeanOutputTokens
	ref := 3 * mp
	p.Workload.P999PromptTokens = ref
	nan := Unknown()

	// Tail ×3: read at prompts ×(3 − tailNoiseBand) = ×2.5, as a mean of
	// ×2.6 is read (shrunk by mixNoiseBand).
	got, want := p.mixShiftAt(mp, mo, windowTail(3*ref), mixNoiseBand, mixNoiseBand), p.mixShiftAt(2.6*mp, mo, windowTail(nan), mixNoiseBand, mixNoiseBand)
	if !want.moved || !(want.concurrency < 1) {
		t.Fatalf("prompts ×2.5 do not lower this profile's knee (×%g): the test means nothing", want.concurrency)
	}
	if !cmp.Equal(got, want, cmp.AllowUnexported(mixShift{}), cmpopts.EquateApprox(1e-12, 0)) {
		t.Errorf("tail ×3 moves the knee ×%g at ×%g rate, want ×%g at ×%g (prompts ×2.5)", got.concurrency, got.rate, want.concurrency, want.rate)
	}
	// The longer of the two readings counts.
	if both := p.mixShiftAt(2.6*mp, mo, windowTail(1.2*ref), mixNoiseBand, mixNoiseBand); both != want {
		t.Errorf("a mean ×2.6 with a tail ×1.2 moved the knee ×%g, want the mean's ×%g", both.concurrency, want.concurrency)
	}
	// A tail within the band leaves a lighter mean's reading alone.
	lighter := p.mixShiftAt(0.5*mp, mo, windowTail(nan), mixNoiseBand, mixNoiseBand)
	if !lighter.moved {
		t.Fatal("prompts ×0.5 do not move this profile's knee: the check below means nothing")
	}
	if got := p.mixShiftAt(0.5*mp, mo, windowTail(ref), mixNoiseBand, mixNoiseBand); got != lighter {
		t.Errorf("a lighter mean with a tail at the reference moved the knee ×%g, want the mean's ×%g", got.concurrency, lighter.concurrency)
	}
	for _, c := range []struct {
		name string
		tail float64
		ref  float64
	}{
		{"a tail within the band", (1 + tailNoiseBand) * ref, ref},
		{"a shorter tail", ref / 3, ref},
		{"an unknown tail", nan, ref},
		{"a profile without the reference", 3 * ref, 0},
	} {
		p.Workload.P999PromptTokens = c.ref
		if s := p.mixShiftAt(mp, mo, windowTail(c.tail), mixNoiseBand, mixNoiseBand); s.moved {
			t.Errorf("%s moved the knee ×%g", c.name, s.concurrency)
		}
	}
}

// A KV-bound knee with a mix model, on a replica whose mix is measured,
// reads its cache against saturation: the load against the moved knee
// already counts requests × their context, and the knee's own usage read
// the same load again with each window's noise in context per request.
// Without the model, or without the means, the knee's usage stays the
// reference.
func TestAKVBoundKneeWithAMixModelReadsItsCacheAgainstSaturation(t *testing.T) {
	kvBound := func(withModel bool) *Profile {
		p := poissonMix(t)
		p.Knee.LimitingResource, p.Knee.KVCacheUsage = ResourceKVCache, 0.5
		if !withModel {
			p.MixModel = nil
		}
		return p
	}
	ownMix := func(p *Profile) func(*Observation) {
		return func(o *Observation) {
			o.MeanPromptTokens, o.MeanOutputTokens = p.Workload.MeanPromptTokens, p.Workload.MeanOutputTokens
			o.MixRequests = 400
		}
	}
	approx := cmpopts.EquateApprox(1e-12, 0)
	for _, tc := range []struct {
		name      string
		withModel bool
		means     bool
		kv        float64
		headroom  float64
		dim       Dimension
		reference float64
	}{
		{"model and means: a cache at 1.4× the knee's usage reads the load", true, true, 0.7, 0.2, DimensionLoad, KVSaturation},
		{"model and means: a cache past saturation still limits", true, true, 0.99, 1 - 0.99/KVSaturation, DimensionKVCache, KVSaturation},
		{"model without means: the knee's usage", true, false, 0.7, 1 - 0.7/0.5, DimensionKVCache, 0.5},
		{"means without a model: the knee's usage", false, true, 0.7, 1 - 0.7/0.5, DimensionKVCache, 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := kvBound(tc.withModel)
			set := []func(*Observation){kv(tc.kv)}
			if tc.means {
				set = append(set, ownMix(p))
			}
			r := Evaluate(observe(0.8*p.Knee.Concurrency, set...), p, Options{})
			if !r.OK {
				t.Fatalf("not OK: %s", r.Reason)
			}
			if !cmp.Equal(r.Headroom, tc.headroom, approx) || r.Dimension != tc.dim || r.KVCacheReference != tc.reference {
				t.Errorf("headroom %g by %s against KV %g, want %g by %s against %g",
					r.Headroom, r.Dimension, r.KVCacheReference, tc.headroom, tc.dim, tc.reference)
			}
			if r.LimitingResource != ResourceKVCache {
				t.Errorf("limiting resource %s, want the knee's kv_cache", r.LimitingResource)
			}
		})
	}
}

// The speed dimension reads the load against the knee a mix raised, not
// against the profile's: otherwise it holds the headroom at the profile's
// knee whatever the mix model says (tune 1039, an 8B/L4 RAG replica
// turning half code: an effective load of 1.06, the load ÷ the profile's
// knee, while the true headroom was 0.56). A rise counts past the model's
// own error. Where the prompts are no longer than the profile's, the knee's
// concurrency is the rise, also when its rate fell (longer outputs: the
// in-flight knee rises with requests that live longer). Where the prompts
// grew, the rise is the smaller of the concurrency's and the rate's, so a
// heavier mix whose concurrency rose at a lower rate, where the model is
// least sure of a blend, reads the profile's knee. A mix that lowered the
// knee leaves it alone (the load dimension reads the lower knee).
func TestTheSpeedDimensionReadsAgainstTheKneeAMixRaised(t *testing.T) {
	withModel := poissonMix(t)
	m := withModel.MixModel
	p0, o0 := withModel.Workload.MeanPromptTokens, withModel.Workload.MeanOutputTokens
	// A knee measured at prompts half as long, on the model, so the model
	// reads lighter prompts within its measured range.
	x := math.Log(0.5)
	m.Points = append(m.Points, MixPoint{PromptScale: 0.5, OutputScale: 1, MeanPromptTokens: p0 / 2, MeanOutputTokens: o0,
		Concurrency: m.Concurrency.At(x, 0), RequestsPerSecond: m.RequestsPerSecond.At(x, 0)})
	noModel := poissonMix(t)
	noModel.MixModel = nil
	approx := cmpopts.EquateApprox(1e-12, 0)
	const (
		byConcurrency = "concurrency"
		notRaised     = "not raised"
	)
	for _, tc := range []struct {
		name           string
		prompt, output float64
		// The case's premise on the model: whether the knee's
		// concurrency rose past the model's error, and its rate at all.
		concurrencyUp, rateUp bool
		by                    string
	}{
		{"prompts halved raise the knee's concurrency and rate", p0 / 2, o0, true, true, byConcurrency},
		{"outputs doubled raise its concurrency at a lower rate", p0, 2 * o0, true, false, byConcurrency},
		{"prompts halved and outputs doubled raise its concurrency", p0 / 2, 2 * o0, true, true, byConcurrency},
		{"longer prompts and outputs raise its concurrency at a lower rate", 1.5 * p0, 4 * o0, true, false, notRaised},
		{"prompts doubled lower it", 2 * p0, o0, false, false, notRaised},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shift := withModel.mixShiftAt(tc.prompt, tc.output, windowTail(Unknown()), mixNoiseBand, mixNoiseBand)
			if !shift.moved {
				t.Fatalf("the mix model did not move the knee")
			}
			if (shift.concurrency > 1+mixModelError) != tc.concurrencyUp || (shift.rate > 1) != tc.rateUp {
				t.Fatalf("the mix model moved the knee ×%g in flight, ×%g requests/s; not this case's premise",
					shift.concurrency, shift.rate)
			}
			// Over 400 requests each shift is clear of chance and its rise
			// counts whole; over a count unknown, only past the model's
			// error.
			for _, n := range []float64{400, Unknown()} {
				rise := 1.0
				if tc.by == byConcurrency {
					rise = shift.concurrency
					if !Known(n) {
						rise /= 1 + mixModelError
					}
				}
				for _, speed := range []float64{1, 0.6} {
					load := 0.9 * withModel.Knee.Concurrency * max(shift.concurrency, 1)
					expected, ok := withModel.CurveAt(load)
					if !ok {
						t.Fatalf("no curve point at %g in flight", load)
					}
					obs := observe(load, output(speed*expected.OutputTokensPerSecond), func(o *Observation) {
						o.MeanPromptTokens, o.MeanOutputTokens = tc.prompt, tc.output
						o.MixRequests = n
					})
					got := Evaluate(obs, withModel, Options{}).Ratios[DimensionEffectiveLoad]
					nominal := Evaluate(obs, noModel, Options{}).Ratios[DimensionEffectiveLoad]
					want := nominal / rise
					if !cmp.Equal(got, want, approx) {
						t.Errorf("over %g requests at speed %g: effective load %g, want %g (%g against the profile's knee)", n, speed, got, want, nominal)
					}
				}
			}
		})
	}
}

// A heavy minority in the prompts moves the knee by the tail it makes,
// once the window holds too many long prompts for the profile's own
// distribution to explain: 1% of 2400 requests past 2000 tokens, where
// this chat mix puts 0.13% of its prompts, is read as the mix's prompts
// scaled to 2000 ÷ its 99th percentile. One long prompt in 100 requests
// is chance, and moves nothing; so does a tail under the mix's own p99,
// a profile that does not record its prompt distribution, a window whose
// request count is unknown, and a tail that the server's own lengths (the
// profile's served mean against the distribution's) put there.
func TestAHeavyMinorityOfLongPromptsMovesTheKneeByItsTail(t *testing.T) {
	p := loadMix(t)
	mp, mo := p.Workload.MeanPromptTokens, p.Workload.MeanOutputTokens
	served, _ := p.servedPrompts()
	p99 := served.quantile99()
	const floor = 2000.0
	// The mean that, shrunk by the band, reads prompts ×floor/p99.
	want := p.mixShiftAt((floor/p99+mixNoiseBand)*mp, mo, windowTail(Unknown()), mixNoiseBand, mixNoiseBand)
	if !want.moved || !(want.concurrency < 1) {
		t.Fatalf("prompts ×%.2f do not lower this profile's knee: the test means nothing", floor/p99)
	}
	got := p.mixShiftAt(mp, mo, [2]promptTail{{floor, 2400}, {Unknown(), Unknown()}}, mixNoiseBand, mixNoiseBand)
	if !cmp.Equal(got, want, cmp.AllowUnexported(mixShift{}), cmpopts.EquateApprox(1e-12, 0)) {
		t.Errorf("1%% of 2400 prompts past %g moved the knee ×%g, want ×%g (prompts ×%.2f)", floor, got.concurrency, want.concurrency, floor/p99)
	}
	// A count no replica reaches (a broken upstream) is judged as
	// maxTailRequests, and returns: summed term by term, 1e15 would not.
	if got := p.mixShiftAt(mp, mo, [2]promptTail{{Unknown(), Unknown()}, {floor, 1e15}}, mixNoiseBand, mixNoiseBand); !cmp.Equal(got, want, cmp.AllowUnexported(mixShift{}), cmpopts.EquateApprox(1e-12, 0)) {
		t.Errorf("1%% of 1e15 prompts past %g moved the knee ×%g, want ×%g", floor, got.concurrency, want.concurrency)
	}
	noDist := loadMix(t)
	noDist.Workload.Mix = workload.Mix{Name: "trace"}
	// A server whose prompts run twice the lengths the sweep asked for (a
	// long system prompt in its template) served a p99 past 2000 tokens all
	// along.
	doubled := loadMix(t)
	doubled.Workload.MeanPromptTokens = 2 * doubled.Workload.Prompt.Mean()
	for _, c := range []struct {
		name    string
		p       *Profile
		tail, n float64
	}{
		{"one long prompt in 100 requests", p, floor, 100},
		{"a tail under the mix's own p99", p, 1000, 2400},
		{"a profile without its prompt distribution", noDist, floor, 2400},
		{"an unknown request count", p, floor, Unknown()},
		{"a profile served twice the prompt lengths it asked for", doubled, floor, 2400},
	} {
		if s := c.p.mixShiftAt(c.p.Workload.MeanPromptTokens, mo, [2]promptTail{{c.tail, c.n}, {Unknown(), Unknown()}}, mixNoiseBand, mixNoiseBand); s.moved {
			t.Errorf("%s moved the knee ×%g", c.name, s.concurrency)
		}
	}
}

// Evaluate reads the replica history's prompt tail beside the window's:
// a floor that one window's 100 requests cannot tell from chance moves the
// knee when the history saw it over 1000.
func TestEvaluateReadsTheHistorysPromptTailBesideTheWindows(t *testing.T) {
	p := loadMix(t)
	obs := NewObservation()
	obs.InFlight = p.Knee.Concurrency / 2
	obs.MeanPromptTokens, obs.MeanOutputTokens = p.Workload.MeanPromptTokens, p.Workload.MeanOutputTokens
	obs.MixRequests, obs.PromptTokensP99 = 100, 2000
	window := Evaluate(obs, p, Options{})
	if !window.OK || window.Knee != p.Knee {
		t.Fatalf("the window's tail over 100 requests moved the knee: %+v, profile's %+v", window.Knee, p.Knee)
	}
	obs.SpanPromptTokensP99, obs.SpanPromptRequests = 2000, 1000
	history := Evaluate(obs, p, Options{})
	if !history.OK || !(history.Knee.Concurrency < p.Knee.Concurrency) {
		t.Errorf("the history's tail over 1000 requests left the knee at %g in flight, want under the profile's %g",
			history.Knee.Concurrency, p.Knee.Concurrency)
	}
}

func TestPoissonAtLeast(t *testing.T) {
	for _, c := range []struct{ k, lambda, want float64 }{
		{0, 2, 1},
		{1, 2, 1 - math.Exp(-2)},
		{3, 0.3, 1 - math.Exp(-0.3)*(1+0.3+0.045)},
		{2, 0, 0},
	} {
		if got := poissonAtLeast(c.k, c.lambda); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("P(N ≥ %g | λ %g) = %g, want %g", c.k, c.lambda, got, c.want)
		}
	}
}

// windowTail is a window's prompt p99 read over an unknown count of
// requests, with no reading over the history.
func windowTail(p99 float64) [2]promptTail {
	return [2]promptTail{{p99, Unknown()}, {Unknown(), Unknown()}}
}

// MixKneeFactors reads the fitted model at exactly the means it is given:
// inside the measured range the quadratic itself, with no noise band
// between it and a small drift; 1 and 1 without a model.
func TestMixKneeFactorsReadTheModelAtExactMeans(t *testing.T) {
	p := poissonMix(t)
	m := p.MixModel
	p0, o0 := p.Workload.MeanPromptTokens, p.Workload.MeanOutputTokens
	approx := cmpopts.EquateApprox(1e-12, 0)
	for _, f := range []struct{ prompt, output float64 }{{1.05, 1}, {1.5, 1}, {1, 1.5}, {1.5, 1.5}} {
		x, z := math.Log(f.prompt), math.Log(f.output)
		wantC := m.Concurrency.At(x, z) / m.Concurrency.AtProfileMix
		wantR := m.RequestsPerSecond.At(x, z) / m.RequestsPerSecond.AtProfileMix
		c, r := p.MixKneeFactors(f.prompt*p0, f.output*o0)
		if !cmp.Equal(c, wantC, approx) || !cmp.Equal(r, wantR, approx) {
			t.Errorf("prompt ×%g, output ×%g: factors %g, %g, want the model's %g, %g", f.prompt, f.output, c, r, wantC, wantR)
		}
	}
	if c, r := p.MixKneeFactors(p0, o0); c != 1 || r != 1 {
		t.Errorf("at the profile's own means: %g, %g, want 1, 1", c, r)
	}
	p.MixModel = nil
	if c, r := p.MixKneeFactors(2*p0, 2*o0); c != 1 || r != 1 {
		t.Errorf("without a mix model: %g, %g, want 1, 1", c, r)
	}
}

// TestAMixModelLeavesOutAKneeThatRisesWithLongerPrompts: a scaled mix whose
// knee rate reads more than 5% above a lighter mix's with the same outputs
// is left out (the heavier of the pair), except the profile's own mix,
// first, which keeps its place and sends the lighter one out instead;
// what is left fits a model that validates, where all of them did not.
func TestAMixModelLeavesOutAKneeThatRisesWithLongerPrompts(t *testing.T) {
	pt := func(ps, os, rate float64) MixPoint {
		return MixPoint{PromptScale: ps, OutputScale: os, MeanPromptTokens: 200 * ps, MeanOutputTokens: 180 * os,
			Concurrency: 40 * rate / 10, RequestsPerSecond: rate}
	}
	points := []MixPoint{
		pt(1, 1, 10),
		pt(2, 1, 10.8),   // 8% above the own mix's: out
		pt(0.5, 1, 9.2),  // the own mix reads 9% above it: out
		pt(4, 1, 6),      // falls with the prompts: kept
		pt(1, 2, 8),      // another output: kept
		pt(2, 2, 8.2),    // 2.5% above (1, 2): within the tolerance, kept
		pt(4, 2, 5),      // kept
		pt(1, 0.5, 11),   // kept
		pt(2, 0.5, 10.5), // kept
	}
	kept, left := LeaveOutRisingMixPoints(points)
	var names []string
	for _, p := range left {
		names = append(names, MixScale{p.PromptScale, p.OutputScale}.String())
	}
	if got := strings.Join(names, " "); got != "2:1 0.5:1" {
		t.Errorf("left out %q, want 2:1 and 0.5:1", got)
	}
	if len(kept) != len(points)-2 || kept[0] != points[0] {
		t.Fatalf("kept %d points starting with %+v; want the other %d, the own mix first", len(kept), kept[0], len(points)-2)
	}
	fit := func(ps []MixPoint) error {
		m, err := FitMixModel(ps, 200, 180)
		if err != nil {
			return err
		}
		p := loadMix(t)
		p.Workload.MeanPromptTokens, p.Workload.MeanOutputTokens = 200, 180
		p.MixModel = &m
		return p.Validate()
	}
	if err := fit(points); err == nil || !strings.Contains(err.Error(), "the knee rises with more work") {
		t.Errorf("every point fitted: %v, want the rise rejected", err)
	}
	if err := fit(kept); err != nil && strings.Contains(err.Error(), "rises with more work") {
		t.Errorf("the points kept still rise: %v", err)
	}
}
