package knee

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// poissonWithSpeedModel is chatLikeProfile's curve with a Poisson knee of
// 80 in flight at 28 requests/s, and the knees measured for a GPU at 0.8,
// 0.6 and 0.4 of its speed.
func poissonWithSpeedModel() *Profile {
	p := chatLikeProfile()
	p.Knee.Arrivals = ArrivalsPoisson
	p.Knee.Concurrency, p.Knee.RequestsPerSecond, p.Knee.ClosedLoopConcurrency = 80, 28, 132
	p.SpeedModel = &SpeedModel{Points: []SpeedPoint{
		{Speed: 0.8, Concurrency: 64, RequestsPerSecond: 20},
		{Speed: 0.6, Concurrency: 40, RequestsPerSecond: 11},
		{Speed: 0.4, Concurrency: 20, RequestsPerSecond: 4},
	}}
	return p
}

func TestASpeedModelPlacesTheKneeOfASlowerGPU(t *testing.T) {
	// Linear in the logs of speed and concurrency between the measured
	// knees, the profile's own at speed 1.
	logLerp := func(e, e0, c0, e1, c1 float64) float64 {
		return c0 * math.Pow(c1/c0, math.Log(e/e0)/math.Log(e1/e0))
	}
	tests := []struct {
		name    string
		profile func() *Profile
		speed   float64
		want    float64
	}{
		{"at a measured speed, its knee", poissonWithSpeedModel, 0.6, 40},
		{"at the edge of the blend span, the model alone", poissonWithSpeedModel, 1 - speedModelBlendSpan, logLerp(1-speedModelBlendSpan, 1, 80, 0.8, 64)},
		{"nearer full speed, blended with the curve's reading", poissonWithSpeedModel, 0.9, func() float64 {
			w := 0.1 / speedModelBlendSpan
			onCurve, _ := poissonWithSpeedModel().speedKneeWithoutModel(0.9)
			return math.Exp((1-w)*math.Log(onCurve) + w*math.Log(logLerp(0.9, 1, 80, 0.8, 64)))
		}()},
		{"between two measured speeds", poissonWithSpeedModel, 0.7, logLerp(0.7, 0.8, 64, 0.6, 40)},
		{"a knee measured above a faster GPU's is held to it", func() *Profile {
			p := poissonWithSpeedModel()
			p.SpeedModel.Points[1].Concurrency = 70 // above 0.8's 64: the search's noise
			return p
		}, 0.6, 64},
		{"the points in any order", func() *Profile {
			p := poissonWithSpeedModel()
			pts := p.SpeedModel.Points
			pts[0], pts[2] = pts[2], pts[0]
			return p
		}, 0.7, logLerp(0.7, 0.8, 64, 0.6, 40)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.profile().speedKnee(tt.speed)
			if !ok {
				t.Fatalf("speedKnee(%g) not ok", tt.speed)
			}
			if diff := cmp.Diff(tt.want, got, approx); diff != "" {
				t.Errorf("speedKnee(%g) (-want +got):\n%s", tt.speed, diff)
			}
		})
	}
}

func TestBelowTheSlowestSpeedMeasuredTheKneeFallsAsTheCurveReads(t *testing.T) {
	p := poissonWithSpeedModel()
	without := poissonWithSpeedModel()
	without.SpeedModel = nil
	at, _ := without.speedKnee(0.4)
	below, _ := without.speedKnee(0.3)
	got, ok := p.speedKnee(0.3)
	if !ok {
		t.Fatal("speedKnee(0.3) not ok")
	}
	if want := 20 * below / at; math.Abs(got-want) > 1e-9 || !(got < 20) {
		t.Errorf("speedKnee(0.3) = %g, want %g: the slowest measured knee (20) moved as the curve's reading moves from 0.4 to 0.3", got, want)
	}
}

// A speed model moves the effective-load dimension: a replica making 70% of
// its profile's tokens at its load is read against the knee the model puts
// at speed 0.7, here lower than the one the curve reads.
func TestEvaluateReadsASlowReplicaAgainstItsSpeedModel(t *testing.T) {
	p := poissonWithSpeedModel()
	p.SpeedModel.Points[0].Concurrency, p.SpeedModel.Points[1].Concurrency = 56, 30
	without := poissonWithSpeedModel()
	without.SpeedModel = nil
	load := 30.0
	exp, ok := p.CurveAt(load)
	if !ok {
		t.Fatal("no curve point")
	}
	obs := NewObservation()
	obs.InFlight = load
	obs.OutputTokensPerSecond = 0.7 * exp.OutputTokensPerSecond
	k, _ := p.speedKnee(0.7)
	got := Evaluate(obs, p, Options{})
	if r := got.Ratios[DimensionEffectiveLoad]; math.Abs(r-load/k) > 1e-9 {
		t.Errorf("effective-load ratio %g, want %g (load %g ÷ the model's knee %g at speed 0.7)", r, load/k, load, k)
	}
	if old := Evaluate(obs, without, Options{}); !(old.Ratios[DimensionEffectiveLoad] < got.Ratios[DimensionEffectiveLoad]) {
		t.Errorf("the model's knee should read less headroom than the curve's here: %g vs %g", got.Ratios[DimensionEffectiveLoad], old.Ratios[DimensionEffectiveLoad])
	}
}

func TestParseSpeeds(t *testing.T) {
	got, err := ParseSpeeds(" 0.8, 0.5 ")
	if err != nil || !cmp.Equal(got, []float64{0.8, 0.5}) {
		t.Errorf("ParseSpeeds = %v, %v; want [0.8 0.5]", got, err)
	}
	if got, err := ParseSpeeds("default"); err != nil || !cmp.Equal(got, DefaultSpeeds) {
		t.Errorf("ParseSpeeds(default) = %v, %v; want %v", got, err, DefaultSpeeds)
	}
	for in, want := range map[string]string{
		"1":       `speed "1": must be in (0,1)`,
		"0":       `speed "0": must be in (0,1)`,
		"fast":    `speed "fast": want a share`,
		"0.5,0.5": `speed "0.5" is listed twice`,
		"0.5,":    `speed "": want a share`,
		"NaN":     `speed "NaN": must be in (0,1)`,
	} {
		if _, err := ParseSpeeds(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseSpeeds(%q) = %v, want an error containing %q", in, err, want)
		}
	}
}

func TestAnInconsistentSpeedModelIsNamed(t *testing.T) {
	for _, tt := range []struct {
		name  string
		edit  func(m *SpeedModel)
		field string
		want  string
	}{
		{"no points", func(m *SpeedModel) { m.Points = nil }, "speedModel.points", "needs the knee at 1 or more speeds"},
		{"a speed of 1 or more", func(m *SpeedModel) { m.Points[0].Speed = 1.25 }, "speedModel.points[0].speed", "must be in (0,1)"},
		{"a speed twice", func(m *SpeedModel) { m.Points[1].Speed = 0.8 }, "speedModel.points[1].speed", "0.8 is listed twice"},
		{"no knee", func(m *SpeedModel) { m.Points[2].Concurrency = 0 }, "speedModel.points[2].concurrency", "must be > 0"},
		{"a rate that is not a number", func(m *SpeedModel) { m.Points[2].RequestsPerSecond = math.NaN() }, "speedModel.points[2].requestsPerSecond", "must be > 0"},
		{"a slower GPU sustaining more requests", func(m *SpeedModel) { m.Points[0].RequestsPerSecond *= 2 }, "speedModel.points[0].requestsPerSecond", "above the knee's own"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := poissonMix(t)
			c0, r0 := p.Knee.Concurrency, p.Knee.RequestsPerSecond
			p.SpeedModel = &SpeedModel{Points: []SpeedPoint{
				{Speed: 0.8, Concurrency: 0.8 * c0, RequestsPerSecond: r0},
				{Speed: 0.6, Concurrency: 0.5 * c0, RequestsPerSecond: 0.4 * r0},
				{Speed: 0.4, Concurrency: 0.25 * c0, RequestsPerSecond: 0.15 * r0},
			}}
			if err := p.Validate(); err != nil {
				t.Fatalf("the unedited speed model does not validate: %v", err)
			}
			tt.edit(p.SpeedModel)
			err := p.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.field) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate() = %v, want an error at %s containing %q", err, tt.field, tt.want)
			}
		})
	}
}

func TestASpeedPointRisesAboveTheKneeOnlyBeyondTheTolerance(t *testing.T) {
	k := Knee{Concurrency: 12, RequestsPerSecond: 0.5}
	for _, tt := range []struct {
		rate float64
		want bool
	}{
		{0.4, false},  // slower, as it should be
		{0.5, false},  // as fast: a flat speed model
		{0.55, false}, // 10% above: within a search's noise
		{0.56, true},  // beyond it
		{0.62, true},  // the 70B/H200 RAG point that failed a sweep at its end
	} {
		pt := SpeedPoint{Speed: 0.8, Concurrency: 10, RequestsPerSecond: tt.rate}
		if got := pt.RisesAbove(k); got != tt.want {
			t.Errorf("a point at %g requests/s against a knee at %g: RisesAbove = %v, want %v", tt.rate, k.RequestsPerSecond, got, tt.want)
		}
	}
	if (SpeedPoint{Speed: 0.8, Concurrency: 10, RequestsPerSecond: 3}).RisesAbove(Knee{Concurrency: 12}) {
		t.Error("a knee without a request rate (a closed-loop v1 profile) has nothing to rise above")
	}
}
