package knee

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/kneewatch/kneewatch/strictyaml"
)

// Validate checks the profile against schema v1 and returns a
// *strictyaml.List naming every bad field, or nil. Rules:
//   - apiVersion and kind are the v1 values; match.model is set;
//   - SLO thresholds are > 0 and the quantile is in (0,1);
//   - the workload mix, when given, has valid distributions; means are ≥ 0;
//   - there is at least one point; points are sorted by concurrency with no
//     duplicates; every number is finite and ≥ 0, ratios are in [0,1],
//     p50 ≤ p99, goodput ≤ output throughput;
//   - the knee's concurrency is > 0 and equal to a point's or between two
//     (an interpolated knee), its output throughput is > 0 and its limiting
//     resource is a known one;
//   - the mix model, when given, is consistent (see validator.mixModel);
//   - so is the speed model (see validator.speedModel).
func (p *Profile) Validate() error {
	if p == nil {
		return &strictyaml.List{Errors: []*strictyaml.FieldError{strictyaml.Errorf("profile", "missing")}}
	}
	var v validator
	if p.APIVersion != APIVersion {
		v.add("apiVersion", "must be %q, got %q", APIVersion, p.APIVersion)
	}
	if p.Kind != Kind {
		v.add("kind", "must be %q, got %q", Kind, p.Kind)
	}
	if strings.TrimSpace(p.Match.Model) == "" {
		v.add("match.model", "required: the served model name this profile describes")
	}
	v.positiveDuration("slo.ttft", p.SLO.TTFT)
	v.positiveDuration("slo.tpot", p.SLO.TPOT)
	if !(p.SLO.Quantile > 0 && p.SLO.Quantile < 1) {
		v.add("slo.quantile", "must be in (0,1), got %g", p.SLO.Quantile)
	}
	v.workload(&p.Workload)
	for i, l := range p.Sweep.Levels {
		if l <= 0 {
			v.add(fmt.Sprintf("sweep.levels[%d]", i), "must be > 0, got %d", l)
		}
	}
	for i, r := range p.Sweep.RateLevels {
		v.positive(fmt.Sprintf("sweep.rateLevels[%d]", i), r)
	}
	v.points(p.Points)
	v.knee(&p.Knee, p.Points)
	v.mixModel(p)
	v.speedModel(p)
	if len(v.errs) == 0 {
		return nil
	}
	return &strictyaml.List{Errors: v.errs}
}

// validator collects FieldErrors.
type validator struct {
	errs []*strictyaml.FieldError
}

func (v *validator) add(field, format string, args ...any) {
	v.errs = append(v.errs, strictyaml.Errorf(field, format, args...))
}

func (v *validator) positiveDuration(field string, d Duration) {
	if d <= 0 {
		v.add(field, "must be > 0, got %s", d)
	}
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

func (v *validator) nonNegative(field string, x float64) {
	if !finite(x) || x < 0 {
		v.add(field, "must be a finite number ≥ 0, got %g", x)
	}
}

func (v *validator) positive(field string, x float64) {
	if !finite(x) || x <= 0 {
		v.add(field, "must be > 0, got %g", x)
	}
}

func (v *validator) ratio(field string, x float64) {
	if !finite(x) || x < 0 || x > 1 {
		v.add(field, "must be a ratio in [0,1], got %g", x)
	}
}

func (v *validator) quantiles(field string, q Quantiles) {
	v.nonNegative(field+".p50", q.P50)
	v.nonNegative(field+".p99", q.P99)
	if q.P50 > q.P99 {
		v.add(field, "p50 (%g) must not exceed p99 (%g)", q.P50, q.P99)
	}
}

func (v *validator) points(points []Point) {
	if len(points) == 0 {
		v.add("points", "at least one sweep point is required")
		return
	}
	for i, pt := range points {
		at := fmt.Sprintf("points[%d]", i)
		v.positive(at+".concurrency", pt.Concurrency)
		if i > 0 {
			prev := points[i-1].Concurrency
			switch {
			case pt.Concurrency == prev:
				v.add(at+".concurrency", "duplicate concurrency %g (also points[%d])", pt.Concurrency, i-1)
			case pt.Concurrency < prev:
				v.add(at+".concurrency", "points must be sorted by concurrency, got %g after %g", pt.Concurrency, prev)
			}
		}
		if pt.Requests < 0 {
			v.add(at+".requests", "must be ≥ 0, got %d", pt.Requests)
		}
		v.nonNegative(at+".requestsPerSecond", pt.RequestsPerSecond)
		v.nonNegative(at+".outputTokensPerSecond", pt.OutputTokensPerSecond)
		v.nonNegative(at+".goodputTokensPerSecond", pt.GoodputTokensPerSecond)
		// Goodput counts a subset of the output tokens over the same window.
		if pt.GoodputTokensPerSecond > pt.OutputTokensPerSecond*(1+1e-9) {
			v.add(at+".goodputTokensPerSecond", "must not exceed outputTokensPerSecond (%g), got %g",
				pt.OutputTokensPerSecond, pt.GoodputTokensPerSecond)
		}
		v.quantiles(at+".ttftSeconds", pt.TTFT)
		v.quantiles(at+".tpotSeconds", pt.TPOT)
		v.ratio(at+".kvCacheUsage", pt.KVCacheUsage)
		if pt.GPUUtilization != nil {
			v.ratio(at+".gpuUtilization", *pt.GPUUtilization)
		}
		v.nonNegative(at+".preemptionsPerSecond", pt.PreemptionsPerSecond)
		v.nonNegative(at+".running", pt.Running)
		v.nonNegative(at+".waiting", pt.Waiting)
		v.ratio(at+".errorRate", pt.ErrorRate)
	}
}

func (v *validator) knee(k *Knee, points []Point) {
	v.positive("knee.concurrency", k.Concurrency)
	if len(points) > 0 && finite(k.Concurrency) && k.Concurrency > 0 {
		lo, hi := points[0].Concurrency, points[0].Concurrency
		for _, pt := range points[1:] {
			lo, hi = min(lo, pt.Concurrency), max(hi, pt.Concurrency)
		}
		if k.Concurrency < lo || k.Concurrency > hi {
			v.add("knee.concurrency", "must equal a sweep point's concurrency or lie between two (%g..%g), got %g", lo, hi, k.Concurrency)
		}
	}
	v.positive("knee.outputTokensPerSecond", k.OutputTokensPerSecond)
	v.nonNegative("knee.goodputTokensPerSecond", k.GoodputTokensPerSecond)
	v.ratio("knee.kvCacheUsage", k.KVCacheUsage)
	if !slices.Contains(Resources(), k.LimitingResource) {
		v.add("knee.limitingResource", "must be one of %s, got %q", joinResources(), k.LimitingResource)
	}
	switch k.Arrivals {
	case "", ArrivalsClosedLoop:
	case ArrivalsPoisson:
		v.positive("knee.requestsPerSecond", k.RequestsPerSecond)
		v.positive("knee.closedLoopConcurrency", k.ClosedLoopConcurrency)
	default:
		v.add("knee.arrivals", "must be %q or %q, got %q", ArrivalsClosedLoop, ArrivalsPoisson, k.Arrivals)
	}
}

// Resources lists the known limiting resources.
func Resources() []Resource { return []Resource{ResourceCompute, ResourceKVCache} }

func joinResources() string {
	names := make([]string, 0, 2)
	for _, r := range Resources() {
		names = append(names, string(r))
	}
	return strings.Join(names, ", ")
}
