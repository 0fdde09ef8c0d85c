package knee

import (
	"fmt"
	"math"
)

// MixModel records how the knee moves with the request mix: the knee
// measured at several mixes (the profile's own, and mixes whose prompts,
// outputs or both were scaled; see MixScale), and a model of the knee in
// the mean prompt P and mean output O tokens per request fitted to them.
// Each of the knee's concurrency and request rate is a quadratic in the
// logs of the means relative to the profile's (P₀, O₀):
//
//	ln y(P,O) = ln AtProfileMix + Prompt·x + Output·z + PromptSquared·x² + PromptOutput·x·z + OutputSquared·z²
//	x = ln(P/P₀), z = ln(O/O₀)
//
// Why this form: on the simulator (every preset and workload preset,
// knees under Poisson arrivals), the knee is far from linear in either
// mean. With a TPOT-bound knee, a request's p99 TPOT holds the prefills
// that ran during its decode spread over its output tokens: longer prompts
// cost far more than their own prefill time, and longer outputs dilute
// that cost, so the knee's request rate can even rise with longer outputs.
// A model linear in the means (1/λ = a + b·P + c·O, the concurrency by
// Little's law) missed knees at mixes it was not fitted to by 20–300%.
// Fitted to knee.DefaultMixScales, the log-quadratic was compared with a
// log-linear and a log-bilinear model, and with other grids, at held-out
// mixes (longer and shorter outputs, longer prompts, both, and blends
// toward other presets): it had the smallest error, a median of ~10% on
// the knee's request rate and ~20% on its concurrency (the in-flight
// requests at a knee are the noisier measure: the queue near it). Not
// moving the knee at all is off by a median of 70–120% at those mixes.
// The fit is anchored at the profile's own knee (see FitMixModel).
// Outside the measured range it is only used to lower the knee, and
// within it it is held between the lowest and highest knee measured (see
// Profile.mixShiftAt).
type MixModel struct {
	// Points are the knees measured at each mix, the profile's own included.
	Points []MixPoint `yaml:"points" json:"points"`
	// Concurrency and RequestsPerSecond are the fitted models of the knee's
	// in-flight requests and request rate.
	Concurrency       LogQuadratic `yaml:"concurrency,flow" json:"concurrency"`
	RequestsPerSecond LogQuadratic `yaml:"requestsPerSecond,flow" json:"requestsPerSecond"`
}

// MixPoint is the knee measured at one mix.
type MixPoint struct {
	// PromptScale and OutputScale are the factors the profile's mix was
	// scaled by (1 and 1 for the profile's own mix), for the reader.
	PromptScale      float64 `yaml:"promptScale" json:"promptScale"`
	OutputScale      float64 `yaml:"outputScale" json:"outputScale"`
	MeanPromptTokens float64 `yaml:"meanPromptTokens" json:"meanPromptTokens"`
	MeanOutputTokens float64 `yaml:"meanOutputTokens" json:"meanOutputTokens"`
	// Concurrency is the knee's in-flight requests and RequestsPerSecond
	// its request rate, measured the way the profile's knee was.
	Concurrency       float64 `yaml:"concurrency" json:"concurrency"`
	RequestsPerSecond float64 `yaml:"requestsPerSecond" json:"requestsPerSecond"`
}

// LogQuadratic is one fitted quantity of a MixModel: its value at the
// profile's mix and the coefficients of x = ln(P/P₀) and z = ln(O/O₀) in
// its log (see MixModel).
type LogQuadratic struct {
	AtProfileMix  float64 `yaml:"atProfileMix" json:"atProfileMix"`
	Prompt        float64 `yaml:"prompt" json:"prompt"`
	Output        float64 `yaml:"output" json:"output"`
	PromptSquared float64 `yaml:"promptSquared" json:"promptSquared"`
	PromptOutput  float64 `yaml:"promptOutput" json:"promptOutput"`
	OutputSquared float64 `yaml:"outputSquared" json:"outputSquared"`
}

// logRatio is ln(y(x,z) ÷ AtProfileMix).
func (q LogQuadratic) logRatio(x, z float64) float64 {
	return q.Prompt*x + q.Output*z + q.PromptSquared*x*x + q.PromptOutput*x*z + q.OutputSquared*z*z
}

// slopes are ∂ln y/∂x and ∂ln y/∂z at (x, z).
func (q LogQuadratic) slopes(x, z float64) (gx, gz float64) {
	return q.Prompt + 2*q.PromptSquared*x + q.PromptOutput*z, q.Output + q.PromptOutput*x + 2*q.OutputSquared*z
}

// At is the model's value at x = ln(P/P₀), z = ln(O/O₀).
func (q LogQuadratic) At(x, z float64) float64 {
	return q.AtProfileMix * math.Exp(q.logRatio(x, z))
}

// ranges are the smallest and largest means measured.
func (m *MixModel) ranges() (pLo, pHi, oLo, oHi float64) {
	pLo, oLo = m.Points[0].MeanPromptTokens, m.Points[0].MeanOutputTokens
	pHi, oHi = pLo, oLo
	for _, pt := range m.Points[1:] {
		pLo, pHi = min(pLo, pt.MeanPromptTokens), max(pHi, pt.MeanPromptTokens)
		oLo, oHi = min(oLo, pt.MeanOutputTokens), max(oHi, pt.MeanOutputTokens)
	}
	return pLo, pHi, oLo, oHi
}

// measuredLogRatios are the smallest and largest ln(knee ÷ the model's
// knee at the profile's mix) over the measured points, for the
// concurrency and the request rate. (Ratios first, four logs after: this
// runs on every evaluation.)
func (m *MixModel) measuredLogRatios() (cLo, cHi, rLo, rHi float64) {
	cLo, rLo = math.Inf(1), math.Inf(1)
	cHi, rHi = 0, 0
	for _, pt := range m.Points {
		c := pt.Concurrency / m.Concurrency.AtProfileMix
		r := pt.RequestsPerSecond / m.RequestsPerSecond.AtProfileMix
		cLo, cHi = min(cLo, c), max(cHi, c)
		rLo, rHi = min(rLo, r), max(rHi, r)
	}
	return math.Log(cLo), math.Log(cHi), math.Log(rLo), math.Log(rHi)
}

// MixPointOf is p's knee as a point of a mix model measured at scale s of
// the mix: the means of p's workload, its knee's concurrency and request
// rate (a poisson knee's own, a closed-loop knee's from its curve point).
func MixPointOf(p *Profile, s MixScale) (MixPoint, error) {
	rate := p.Knee.RequestsPerSecond
	if p.Knee.ArrivalsOrDefault() == ArrivalsClosedLoop {
		pt, ok := PointAt(p.Points, p.Knee.Concurrency)
		if !ok {
			return MixPoint{}, fmt.Errorf("the closed-loop knee at concurrency %g has no sweep point", p.Knee.Concurrency)
		}
		rate = pt.RequestsPerSecond
	}
	return MixPoint{
		PromptScale: s.Prompt, OutputScale: s.Output,
		MeanPromptTokens: p.Workload.MeanPromptTokens, MeanOutputTokens: p.Workload.MeanOutputTokens,
		Concurrency: p.Knee.Concurrency, RequestsPerSecond: rate,
	}, nil
}
