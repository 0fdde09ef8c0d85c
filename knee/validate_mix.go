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

// mixNeverRises flags a measured knee whose request rate is higher than
// that of a mix with the same mean output and a shorter mean prompt.
func (v *validator) mixNeverRises(points []MixPoint) {
	for j, heavy := range points {
		for i, light := range points {
			sameOutput := math.Abs(heavy.MeanOutputTokens-light.MeanOutputTokens) <= 1e-6*light.MeanOutputTokens
			if sameOutput && heavy.MeanPromptTokens > light.MeanPromptTokens &&
				heavy.RequestsPerSecond > light.RequestsPerSecond*(1+mixRiseTolerance) {
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
