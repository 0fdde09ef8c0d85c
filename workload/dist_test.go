package workload

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestDistValidateNamesTheBadField(t *testing.T) {
	tests := []struct {
		name string
		d    Dist
		want string
	}{
		{"a fixed dist needs a positive value", Dist{Kind: KindFixed}, "value: must be at least 1 token, got 0"},
		{"a fixed dist rejects fields of other kinds", Dist{Kind: KindFixed, Value: 5, Sigma: 1}, "sigma: does not apply to kind fixed"},
		{"a uniform dist needs min of at least 1", Dist{Kind: KindUniform, Max: 5}, "min: must be at least 1 token, got 0"},
		{"a uniform dist needs max at least min", Dist{Kind: KindUniform, Min: 9, Max: 5}, "max: must be at least min (9), got 5"},
		{"a lognormal needs a median", Dist{Kind: KindLognormal, Sigma: 1}, "median: must be a finite number of tokens ≥ 1, got 0"},
		{"a lognormal rejects a NaN median", Dist{Kind: KindLognormal, Median: math.NaN()}, "median: must be a finite number of tokens ≥ 1, got NaN"},
		{"a lognormal rejects a negative sigma", Dist{Kind: KindLognormal, Median: 10, Sigma: -1}, "sigma: must be between 0 and 5 (it is the σ of log tokens), got -1"},
		{"a lognormal needs max above min", Dist{Kind: KindLognormal, Median: 10, Min: 20, Max: 10}, "max: must be unset (0) or at least min and 1, got 10"},
		{"a lognormal rejects a value", Dist{Kind: KindLognormal, Median: 10, Value: 3}, "value: does not apply to kind lognormal"},
		{"a fixed length past any context", Dist{Kind: KindFixed, Value: 2e7}, "value: 20000000 tokens is longer than any model's context (at most 10000000)"},
		{"a uniform range past any context", Dist{Kind: KindUniform, Min: 1, Max: 2e7}, "max: 20000000 tokens is longer than any model's context (at most 10000000)"},
		{"a lognormal median past any context", Dist{Kind: KindLognormal, Median: 1e9, Sigma: 1},
			"median: 1e+09 tokens is longer than any model's context (at most 10000000)"},
		{"a lognormal clamp past any context", Dist{Kind: KindLognormal, Median: 100, Sigma: 1, Max: 2e7},
			"max: 2e+07 tokens is longer than any model's context (at most 10000000)"},
		{"the kind is required", Dist{Value: 3}, "kind: is required: one of fixed, uniform, lognormal"},
		{"an unknown kind is named", Dist{Kind: "normal"}, `kind: unknown kind "normal": want fixed, uniform or lognormal`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.d.Validate()
			if err == nil || err.Error() != tt.want {
				t.Errorf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestValidDistsPassValidation(t *testing.T) {
	for _, d := range []Dist{
		{Kind: KindFixed, Value: 1},
		{Kind: KindUniform, Min: 1, Max: 1},
		{Kind: KindLognormal, Median: 100},
		{Kind: KindLognormal, Median: 100, Sigma: 1, Max: 50},
	} {
		if err := d.Validate(); err != nil {
			t.Errorf("%+v: unexpected error %v", d, err)
		}
	}
}

// sampled is n draws from d, from a fixed seed.
func sampled(d Dist, n int) []int {
	rng := rand.New(rand.NewPCG(7, 11))
	draws := make([]int, n)
	for i := range draws {
		draws[i] = d.Sample(rng)
	}
	return draws
}

// momentCases are the distributions the analytic moments (Mean, CV) are
// checked against sampling on: every kind, clamped and not, and every
// preset's prompts and outputs.
func momentCases() map[string]Dist {
	dists := map[string]Dist{
		"fixed":               {Kind: KindFixed, Value: 42},
		"uniform":             {Kind: KindUniform, Min: 10, Max: 31},
		"unbounded lognormal": {Kind: KindLognormal, Median: 200, Sigma: 0.8},
		"clamped lognormal":   {Kind: KindLognormal, Median: 200, Sigma: 1.2, Min: 100, Max: 400},
		"degenerate sigma":    {Kind: KindLognormal, Median: 200, Max: 150},
	}
	for _, name := range PresetNames() {
		m, _ := Preset(name)
		dists[name+" prompt"] = m.Prompt
		dists[name+" output"] = m.Output
	}
	return dists
}

func TestMeanAgreesWithSampling(t *testing.T) {
	for name, d := range momentCases() {
		t.Run(name, func(t *testing.T) {
			const n = 100000
			sum := 0.0
			for _, v := range sampled(d, n) {
				sum += float64(v)
			}
			got, want := sum/n, d.Mean()
			if math.Abs(got-want) > 0.01*want+0.5 {
				t.Errorf("sampled mean %.2f, analytic Mean() %.2f: differ by more than 1%%", got, want)
			}
		})
	}
}

// CV says how noisy a window's mean of a mix is (knee's mix noise band):
// it must agree with the spread of the lengths Sample draws.
func TestCVAgreesWithSampling(t *testing.T) {
	for name, d := range momentCases() {
		t.Run(name, func(t *testing.T) {
			const n = 200000
			var sum, sq float64
			for _, v := range sampled(d, n) {
				sum, sq = sum+float64(v), sq+float64(v)*float64(v)
			}
			mean := sum / n
			got, want := math.Sqrt(max(sq/n-mean*mean, 0))/mean, d.CV()
			if math.Abs(got-want) > 0.02*want+0.005 {
				t.Errorf("sampled CV %.4f, analytic CV() %.4f: differ by more than 2%%", got, want)
			}
		})
	}
}

func TestQuantileAgreesWithSampling(t *testing.T) {
	dists := map[string]Dist{
		"fixed":               {Kind: KindFixed, Value: 42},
		"uniform":             {Kind: KindUniform, Min: 8000, Max: 16000},
		"unbounded lognormal": {Kind: KindLognormal, Median: 133, Sigma: 0.9},
		"clamped lognormal":   {Kind: KindLognormal, Median: 2800, Sigma: 0.25, Min: 1500, Max: 4500},
	}
	for name, d := range dists {
		t.Run(name, func(t *testing.T) {
			const n = 100000
			draws := sampled(d, n)
			slices.Sort(draws)
			for _, q := range []float64{0.5, 0.99} {
				got, want := float64(draws[int(q*n)]), d.Quantile(q)
				if math.Abs(got-want) > 0.02*want+1 {
					t.Errorf("sampled p%g %.0f, analytic Quantile() %.1f: differ by more than 2%%", 100*q, got, want)
				}
			}
		})
	}
}

func TestSamplesStayInsideTheirBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, d := range []Dist{
		{Kind: KindUniform, Min: 3, Max: 5},
		{Kind: KindLognormal, Median: 100, Sigma: 3, Min: 10, Max: 1000},
		{Kind: KindLognormal, Median: 1, Sigma: 3},
		{Kind: KindLognormal, Median: 1e8, Sigma: 5}, // reaches the int-safe cap
	} {
		lo, hi := d.bounds()
		if d.Kind == KindUniform {
			lo, hi = float64(d.Min), float64(d.Max)
		}
		seenLo, seenHi := false, false
		for range 20000 {
			x := float64(d.Sample(rng))
			if x < lo || x > hi {
				t.Fatalf("%+v: sample %v outside [%v, %v]", d, x, lo, hi)
			}
			seenLo = seenLo || x == lo
			seenHi = seenHi || x == hi
		}
		if !seenLo && !seenHi {
			t.Errorf("%+v: never reached a bound (low %v, high %v)", d, seenLo, seenHi)
		}
	}
}

func TestPresetsHaveTheAdvertisedShapes(t *testing.T) {
	tests := []struct {
		name               string
		promptLo, promptHi float64
		outputLo, outputHi float64
	}{
		{"chat", 180, 220, 160, 200},        // ShareGPT: ~202 in / ~179 out
		{"rag", 2000, 4000, 50, 300},        // long prompts, short outputs
		{"summarize", 2000, 6000, 200, 600}, // long prompts, medium outputs
		{"code", 400, 1500, 300, 1000},      // medium prompts, longer outputs
		{"long-context", 8000, 16000, 800, 2048},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, ok := Preset(tt.name)
			if !ok {
				t.Fatalf("preset %q missing", tt.name)
			}
			if err := m.Validate(); err != nil {
				t.Fatal(err)
			}
			if p := m.MeanPromptTokens(); p < tt.promptLo || p > tt.promptHi {
				t.Errorf("mean prompt %.0f, want %v..%v", p, tt.promptLo, tt.promptHi)
			}
			if o := m.MeanOutputTokens(); o < tt.outputLo || o > tt.outputHi {
				t.Errorf("mean output %.0f, want %v..%v", o, tt.outputLo, tt.outputHi)
			}
		})
	}
	if got := len(PresetNames()); got != len(tests) {
		t.Errorf("%d presets, but %d are tested", got, len(tests))
	}
}

// Above is the complement of Quantile: the share of draws past a
// distribution's q-quantile is 1 − q, inside a lognormal's clamp and over
// a uniform's range; past a lognormal's Max there are none.
func TestDistAboveIsTheShareOfDrawsPastALength(t *testing.T) {
	ln := Dist{Kind: KindLognormal, Median: 133, Sigma: 0.9, Min: 4, Max: 4096}
	un := Dist{Kind: KindUniform, Min: 8000, Max: 16000}
	for _, q := range []float64{0.5, 0.9, 0.99} {
		if got := ln.Above(ln.Quantile(q)); math.Abs(got-(1-q)) > 1e-9 {
			t.Errorf("lognormal: share past its %g quantile = %g, want %g", q, got, 1-q)
		}
		if got := un.Above(un.Quantile(q)); math.Abs(got-(1-q)) > 1e-3 {
			t.Errorf("uniform: share past its %g quantile = %g, want %g", q, got, 1-q)
		}
	}
	fixed := Dist{Kind: KindFixed, Value: 200}
	for _, c := range []struct {
		name string
		got  float64
		want float64
	}{
		{"lognormal past its Max", ln.Above(4096), 0},
		{"lognormal under its Min", ln.Above(2), 1},
		{"uniform past its Max", un.Above(20000), 0},
		{"uniform under its Min", un.Above(100), 1},
		{"fixed under its value", fixed.Above(199), 1},
		{"fixed at its value", fixed.Above(200), 0},
	} {
		if c.got != c.want {
			t.Errorf("%s: %g, want %g", c.name, c.got, c.want)
		}
	}
}
