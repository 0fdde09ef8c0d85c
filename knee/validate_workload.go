package knee

import (
	"github.com/kneewatch/kneewatch/workload"
)

// workload checks the recorded mix. A profile measured with a trace replay
// has no distributions, only the trace's means, so an empty mix is valid.
func (v *validator) workload(w *WorkloadInfo) {
	v.nonNegative("workload.meanPromptTokens", w.MeanPromptTokens)
	v.nonNegative("workload.meanOutputTokens", w.MeanOutputTokens)
	if w.Mix.Prompt == (workload.Dist{}) && w.Mix.Output == (workload.Dist{}) {
		return
	}
	v.dist("workload.prompt", w.Mix.Prompt)
	v.dist("workload.output", w.Mix.Output)
}

// dist checks one token-length distribution against the kinds documented on
// workload.Dist. Token counts are at least 1: an empty prompt or an empty
// output is not a request.
func (v *validator) dist(at string, d workload.Dist) {
	switch d.Kind {
	case "fixed":
		if d.Value < 1 {
			v.add(at+".value", "must be ≥ 1 token, got %d", d.Value)
		}
	case "uniform":
		if d.Min < 1 {
			v.add(at+".min", "must be ≥ 1 token, got %d", d.Min)
		}
		if d.Max < d.Min {
			v.add(at+".max", "must be ≥ min (%d), got %d", d.Min, d.Max)
		}
	case "lognormal":
		if !finite(d.Median) || d.Median <= 0 {
			v.add(at+".median", "must be > 0, got %g", d.Median)
		}
		if !finite(d.Sigma) || d.Sigma < 0 {
			v.add(at+".sigma", "must be a finite number ≥ 0, got %g", d.Sigma)
		}
		if d.Min < 0 {
			v.add(at+".min", "must be ≥ 0, got %d", d.Min)
		}
		if d.Max != 0 && d.Max < d.Min {
			v.add(at+".max", "must be ≥ min (%d) when set, got %d", d.Min, d.Max)
		}
	default:
		v.add(at+".kind", "must be one of fixed, uniform, lognormal, got %q", d.Kind)
	}
}
