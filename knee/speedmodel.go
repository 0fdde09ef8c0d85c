package knee

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// SpeedModel records where the knee lies on a GPU slower than the one
// swept: the knee measured again, at full speed, under the SLO's
// thresholds × each speed (see SLOAtSpeed).
//
// Why that measures a slower GPU: a GPU at speed e (a throttled clock, a
// power cap) stretches every engine step by 1/e, so the slower replica
// serving rate λ·e is the swept replica serving λ with every latency
// stretched by 1/e. It misses thresholds T where the swept one misses
// e·T, and holds the same requests in flight. Its knee is the swept
// replica's knee under thresholds e·T: the same in flight, at e × its
// request rate. On the simulator (every suite deployment, 1.4× and 2×
// slower: 56 knees), the knee measured that way was off the slower
// engine's own search by a median of 0.12 in |ln| of its requests in
// flight (p90 0.28), what two Poisson searches' noise gives; read from the
// default speeds' model, 0.12 (p90 0.31); read off the closed-loop curve
// without a model (speedKneeWithoutModel), 0.16 (p90 0.38)
// (TestSpeedKneeAgainstTheTruth, with KNEEWATCH_SPEED_BENCH_DILATION). The
// SLO windows, which a slower GPU does not stretch, are the one thing the
// equivalence leaves out, and it costs no bias that shows: over every
// suite deployment and three seeds (84 pairs of searches with one seed
// each), a point's ln ratio to the slowed GPU's own knee had a median of
// -0.010 at speed 0.8 and -0.045 at 0.6 (p10 and p90 about ±0.26), and
// stretching the windows, warm-up and steady part too moved it to +0.005
// and -0.016 (internal/detection's TestSpeedPointBias, 2026-12-06). A
// point is off by one search's noise, not by the method.
type SpeedModel struct {
	// Points are the knees at each speed measured, fastest first.
	Points []SpeedPoint `yaml:"points" json:"points"`
}

// SpeedPoint is the knee of a GPU at one speed.
type SpeedPoint struct {
	// Speed is the GPU's speed as a share of the one swept, in (0,1).
	Speed float64 `yaml:"speed" json:"speed"`
	// Concurrency is the knee's in-flight requests at that speed, and
	// RequestsPerSecond its request rate there (Speed × the rate of the
	// knee measured under the thresholds × Speed).
	Concurrency       float64 `yaml:"concurrency" json:"concurrency"`
	RequestsPerSecond float64 `yaml:"requestsPerSecond" json:"requestsPerSecond"`
}

// DefaultSpeeds are the speeds a speed model is measured at: a GPU 1.25×,
// 1.67× and 2.5× slower, the range a thermally or power-throttled GPU
// spans. Three extra searches, each as long as the profile's own or
// shorter (tighter thresholds break sooner).
var DefaultSpeeds = []float64{0.8, 0.6, 0.4}

// SLOAtSpeed is slo with its thresholds × speed: the SLO the swept replica
// must meet for a GPU at speed to meet slo (see SpeedModel).
func SLOAtSpeed(slo SLO, speed float64) SLO {
	slo.TTFT = Duration(float64(slo.TTFT) * speed)
	slo.TPOT = Duration(float64(slo.TPOT) * speed)
	return slo
}

// SpeedPointOf is the point of a speed model at speed measured by q, the
// profile searched under SLOAtSpeed(its SLO, speed): q's knee in flight, at
// speed × its request rate (a poisson knee's own, a closed-loop knee's
// from its curve point).
func SpeedPointOf(q *Profile, speed float64) (SpeedPoint, error) {
	pt, err := MixPointOf(q, MixScale{Prompt: 1, Output: 1})
	if err != nil {
		return SpeedPoint{}, err
	}
	return SpeedPoint{Speed: speed, Concurrency: pt.Concurrency, RequestsPerSecond: speed * pt.RequestsPerSecond}, nil
}

// ParseSpeeds reads a comma-separated list of speeds in (0,1), e.g.
// "0.8,0.5"; "default" is DefaultSpeeds. No speed may repeat.
func ParseSpeeds(s string) ([]float64, error) {
	if strings.TrimSpace(s) == "default" {
		return slices.Clone(DefaultSpeeds), nil
	}
	var out []float64
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		e, err := strconv.ParseFloat(item, 64)
		switch {
		case err != nil:
			return nil, fmt.Errorf("speed %q: want a share of the swept GPU's speed, e.g. 0.6", item)
		case !(e > 0 && e < 1):
			return nil, fmt.Errorf("speed %q: must be in (0,1), a share of the swept GPU's speed", item)
		case slices.Contains(out, e):
			return nil, fmt.Errorf("speed %q is listed twice", item)
		}
		out = append(out, e)
	}
	return out, nil
}

// speedModel checks the optional speed model: speeds in (0,1), none twice,
// knees and rates > 0, and no knee above that of a faster GPU (the
// profile's own at speed 1) by more than knee measurement noise.
func (v *validator) speedModel(p *Profile) {
	m := p.SpeedModel
	if m == nil {
		return
	}
	if len(m.Points) == 0 {
		v.add("speedModel.points", "needs the knee at 1 or more speeds, got none")
		return
	}
	seen := map[float64]bool{}
	for i, pt := range m.Points {
		at := fmt.Sprintf("speedModel.points[%d]", i)
		if !(pt.Speed > 0 && pt.Speed < 1) {
			v.add(at+".speed", "must be in (0,1), a share of the swept GPU's speed, got %g", pt.Speed)
		} else if seen[pt.Speed] {
			v.add(at+".speed", "%g is listed twice", pt.Speed)
		}
		seen[pt.Speed] = true
		v.positive(at+".concurrency", pt.Concurrency)
		v.positive(at+".requestsPerSecond", pt.RequestsPerSecond)
		if pt.RisesAbove(p.Knee) {
			v.add(at+".requestsPerSecond", "%g is above the knee's own %g: a slower GPU cannot sustain more requests", pt.RequestsPerSecond, p.Knee.RequestsPerSecond)
		}
	}
}

// speedRiseTolerance is how much faster than the profile's own knee a
// slower GPU's knee may read, relatively, before a profile that carries it
// is taken for another profile's or edited by hand. A closed-loop search's
// noise in request rate is a few percent; a Poisson search's is larger:
// the same 70B/H200 RAG deployment's knee at 0.8 speed read 30% above its
// own full-speed knee on one seed when each trial held 10 windows
// (2026-12-07). So the tools that measure a speed model leave such a point
// out (SpeedPoint.RisesAbove) rather than fail the whole sweep on it.
const speedRiseTolerance = 0.1

// RisesAbove reports whether pt, the knee measured for a slower GPU, reads
// more than speedRiseTolerance above k's request rate, the knee at full
// speed: no slower GPU sustains more requests, so such a point is a
// search's noise, or belongs to another profile.
func (pt SpeedPoint) RisesAbove(k Knee) bool {
	return k.RequestsPerSecond > 0 && pt.RequestsPerSecond > k.RequestsPerSecond*(1+speedRiseTolerance)
}

// speedModelKnee is the knee's concurrency at speed e (0 < e < 1) read on
// the speed model: its points and the profile's own knee at speed 1,
// each knee no higher than any faster GPU's (a measured knee above one
// measured faster is the search's noise: a slower GPU never holds more in
// flight at its knee), interpolated linearly in the logs of speed and
// concurrency. Below the slowest speed measured, the knee falls on from
// there as the fallback reading (fallback, speedKnee without a model)
// falls between that speed and e. ok is false without a model.
//
// One power law through every point instead (the knee × e^b, b fitted by
// least squares in the logs, anchored at the knee), to average out one
// search's noise at each point, read worse against the simulator's knees
// at 1.4× and 2× slower (KNEEWATCH_SPEED_BENCH=1 go test -run
// TestSpeedKneeAgainstTheTruth ./internal/detection, about 5 min,
// 2026-12-06): |ln error| median and p90 0.143 and 0.285 → 0.169 and 0.388
// on half A, 0.097 and 0.309 → 0.118 and 0.393 on half B, and its median
// signed error −0.04 → −0.08. The knee does not fall as a power of the
// speed: the part of each step that does not grow with the batch bends it.
func (p *Profile) speedModelKnee(e float64, fallback func(float64) (float64, bool)) (float64, bool) {
	if p.SpeedModel == nil || len(p.SpeedModel.Points) == 0 {
		return 0, false
	}
	pts := slices.Clone(p.SpeedModel.Points)
	slices.SortFunc(pts, func(a, b SpeedPoint) int { return cmp.Compare(b.Speed, a.Speed) })
	prevE, prevC := 1.0, p.Knee.Concurrency
	for _, pt := range pts {
		c := min(pt.Concurrency, prevC)
		if e >= pt.Speed {
			f := math.Log(e/prevE) / math.Log(pt.Speed/prevE)
			return math.Exp(math.Log(prevC) + f*math.Log(c/prevC)), true
		}
		prevE, prevC = pt.Speed, c
	}
	// Slower than any speed measured.
	at, ok1 := fallback(prevE)
	below, ok2 := fallback(e)
	if !ok1 || !ok2 || !(at > 0) {
		return prevC * e / prevE, true
	}
	return prevC * min(below/at, 1), true
}
