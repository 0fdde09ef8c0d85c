package knee

import (
	"fmt"
	"math"
)

// Tolerances of a mix model's consistency checks.
const (
	// mixNominalTolerance is how far the model's knee at the profile's own
	// mix may be from the measured knee, relatively. The fit spreads its
	// error over every measured mix; a model that misses its own anchor by
	// more was fitted to another profile's knees, or edited by hand.
	mixNominalTolerance = 0.2
	// mixRiseTolerance is how much higher a measured knee's request rate
	// may be than that of a mix with the same outputs and shorter prompts,
	// relatively: Poisson knees are bisected to about 1% and vary a few
	// percent with the seed, but longer prompts never buy capacity.
	mixRiseTolerance = 0.05
)

// mixModel checks the optional mix model: enough measured mixes with
// positive scales, means, knees and rates, varied enough to determine the
// model; request rates that never rise with longer prompts; finite
// coefficients, a rate that falls with longer prompts at the profile's mix,
// and a model that reproduces the profile's own knee (see
// mixNominalTolerance).
func (v *validator) mixModel(p *Profile) {
	m := p.MixModel
	if m == nil {
		return
	}
	before := len(v.errs)
	if len(m.Points) < MinMixPoints {
		v.add("mixModel.points", "needs knees at %d or more mixes, got %d", MinMixPoints, len(m.Points))
	}
	for i, pt := range m.Points {
		at := fmt.Sprintf("mixModel.points[%d]", i)
		v.positive(at+".promptScale", pt.PromptScale)
		v.positive(at+".outputScale", pt.OutputScale)
		v.positive(at+".meanPromptTokens", pt.MeanPromptTokens)
		v.positive(at+".meanOutputTokens", pt.MeanOutputTokens)
		v.positive(at+".concurrency", pt.Concurrency)
		v.positive(at+".requestsPerSecond", pt.RequestsPerSecond)
	}
	if len(v.errs) > before {
		return // the checks below need sound points
	}
	if err := mixDesignError(m.Points); err != nil {
		v.add("mixModel.points", "%v", err)
	}
	v.mixNeverRises(m.Points)
	v.logQuadratic("mixModel.concurrency", m.Concurrency)
	v.logQuadratic("mixModel.requestsPerSecond", m.RequestsPerSecond)
	if len(v.errs) > before {
		return
	}
	if !(m.RequestsPerSecond.Prompt < 0) {
		v.add("mixModel.requestsPerSecond.prompt", "must be < 0: longer prompts cannot raise the request rate a knee sustains, got %g",
			m.RequestsPerSecond.Prompt)
	}
	v.mixReproducesKnee(p)
}

// risesAbove reports whether heavy, a mix with the same mean output as
// light and a longer mean prompt, reads a knee rate more than
// mixRiseTolerance above light's: longer prompts never buy capacity, so
// one of the two is a search's noise.
func (heavy MixPoint) risesAbove(light MixPoint) bool {
	sameOutput := math.Abs(heavy.MeanOutputTokens-light.MeanOutputTokens) <= 1e-6*light.MeanOutputTokens
	return sameOutput && heavy.MeanPromptTokens > light.MeanPromptTokens &&
		heavy.RequestsPerSecond > light.RequestsPerSecond*(1+mixRiseTolerance)
}

// LeaveOutRisingMixPoints returns points without those whose knee rate
// rises above that of a mix with the same mean output and shorter prompts
// (the rule Validate holds a mix model to), and the points left out. A
// Poisson search's knee rate varies by its trials' draws: with
// `kneewatch sweep`'s trials of a few minutes, one sweep's rate is within
// ±10% of the truth's in about two thirds of searches, and on the
// detection bench's deployments swept that way with seed 3, an 8B/L4 chat
// deployment's mix at prompts ×2 read 1.38 requests/s where prompts ×1 read
// 1.18, and the whole mix model failed validation at the end of the
// sweep. The heavier mix of such a pair is left out: it claims capacity
// that longer prompts cannot give. The first point, the profile's own mix
// (its knee the profile's), is never left out: where it is the heavier,
// the lighter goes.
func LeaveOutRisingMixPoints(points []MixPoint) (kept, left []MixPoint) {
	out := make([]bool, len(points))
	for j, heavy := range points {
		for i, light := range points {
			switch {
			case out[i] || out[j] || !heavy.risesAbove(light):
			case j == 0:
				out[i] = true
			default:
				out[j] = true
			}
		}
	}
	for i, pt := range points {
		if out[i] {
			left = append(left, pt)
		} else {
			kept = append(kept, pt)
		}
	}
	return kept, left
}

// mixNeverRises flags a measured knee whose request rate is higher than
// that of a mix with the same mean output and a shorter mean prompt.
func (v *validator) mixNeverRises(points []MixPoint) {
	for j, heavy := range points {
		for i, light := range points {
			if heavy.risesAbove(light) {
				v.add(fmt.Sprintf("mixModel.points[%d].requestsPerSecond", j),
					"the knee rises with more work: %g requests/s at %g prompt / %g output tokens, above the %g of points[%d] at %g / %g",
					heavy.RequestsPerSecond, heavy.MeanPromptTokens, heavy.MeanOutputTokens,
					light.RequestsPerSecond, i, light.MeanPromptTokens, light.MeanOutputTokens)
				return
			}
		}
	}
}

// logQuadratic checks one fitted model: its value at the profile's mix
// > 0, every coefficient finite.
func (v *validator) logQuadratic(field string, q LogQuadratic) {
	v.positive(field+".atProfileMix", q.AtProfileMix)
	for _, c := range []struct {
		name string
		x    float64
	}{{"prompt", q.Prompt}, {"output", q.Output}, {"promptSquared", q.PromptSquared},
		{"promptOutput", q.PromptOutput}, {"outputSquared", q.OutputSquared}} {
		if !finite(c.x) {
			v.add(field+"."+c.name, "must be a finite number, got %g", c.x)
		}
	}
}

// mixReproducesKnee checks the model against the profile's own knee.
func (v *validator) mixReproducesKnee(p *Profile) {
	m := p.MixModel
	if mp, mo := p.Workload.MeanPromptTokens, p.Workload.MeanOutputTokens; !(mp > 0) || !(mo > 0) {
		v.add("mixModel", "needs workload.meanPromptTokens and workload.meanOutputTokens > 0, the mix it moves the knee from; got %g and %g", mp, mo)
		return
	}
	if off := relOff(m.Concurrency.AtProfileMix, p.Knee.Concurrency); !(off <= mixNominalTolerance) {
		v.add("mixModel.concurrency.atProfileMix", "does not reproduce the profile's knee: %g, knee.concurrency is %g (%.0f%% off, at most %.0f%% allowed)",
			m.Concurrency.AtProfileMix, p.Knee.Concurrency, 100*off, 100*mixNominalTolerance)
	}
	want := p.Knee.RequestsPerSecond
	if !(want > 0) {
		if pt, ok := PointAt(p.Points, p.Knee.Concurrency); ok {
			want = pt.RequestsPerSecond // a closed-loop knee's rate is its point's
		}
	}
	if want > 0 {
		if off := relOff(m.RequestsPerSecond.AtProfileMix, want); !(off <= mixNominalTolerance) {
			v.add("mixModel.requestsPerSecond.atProfileMix", "does not reproduce the profile's knee: %g requests/s, the knee's are %g (%.0f%% off, at most %.0f%% allowed)",
				m.RequestsPerSecond.AtProfileMix, want, 100*off, 100*mixNominalTolerance)
		}
	}
}

// relOff is |got − want| ÷ want.
func relOff(got, want float64) float64 { return math.Abs(got-want) / want }
