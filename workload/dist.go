package workload

import (
	"math"
	"math/rand/v2"

	"github.com/kneewatch/kneewatch/strictyaml"
)

// The distribution kinds.
const (
	KindFixed     = "fixed"
	KindUniform   = "uniform"
	KindLognormal = "lognormal"
)

// fieldErr is a validation error for one field of a mix, named by its YAML
// path (e.g. "prompt.median"), so callers can point at the line.
func fieldErr(field, format string, args ...any) *strictyaml.FieldError {
	return strictyaml.Errorf(field, format, args...)
}

// Validate reports the first field that makes d unusable. Fields that do not
// apply to d's kind must be left unset, so a typo such as `median` on a
// uniform distribution is caught rather than silently ignored.
func (d Dist) Validate() error {
	unused := func(names ...string) error {
		for _, n := range names {
			set := false
			switch n {
			case "value":
				set = d.Value != 0
			case "min":
				set = d.Min != 0
			case "max":
				set = d.Max != 0
			case "median":
				set = d.Median != 0
			case "sigma":
				set = d.Sigma != 0
			}
			if set {
				return fieldErr(n, "does not apply to kind %s", d.Kind)
			}
		}
		return nil
	}
	switch d.Kind {
	case KindFixed:
		if d.Value < 1 {
			return fieldErr("value", "must be at least 1 token, got %d", d.Value)
		}
		if d.Value > MaxRequestTokens {
			return fieldErr("value", "%d tokens is longer than any model's context (at most %d)", d.Value, MaxRequestTokens)
		}
		return unused("min", "max", "median", "sigma")
	case KindUniform:
		if d.Min < 1 {
			return fieldErr("min", "must be at least 1 token, got %d", d.Min)
		}
		if d.Max < d.Min {
			return fieldErr("max", "must be at least min (%d), got %d", d.Min, d.Max)
		}
		if d.Max > MaxRequestTokens {
			return fieldErr("max", "%d tokens is longer than any model's context (at most %d)", d.Max, MaxRequestTokens)
		}
		return unused("value", "median", "sigma")
	case KindLognormal:
		if !(d.Median >= 1) || math.IsInf(d.Median, 0) {
			return fieldErr("median", "must be a finite number of tokens ≥ 1, got %v", d.Median)
		}
		if !(d.Sigma >= 0) || d.Sigma > 5 {
			return fieldErr("sigma", "must be between 0 and 5 (it is the σ of log tokens), got %v", d.Sigma)
		}
		if d.Min < 0 {
			return fieldErr("min", "must not be negative, got %d", d.Min)
		}
		if d.Max < 0 || (d.Max > 0 && d.Max < max(d.Min, 1)) {
			return fieldErr("max", "must be unset (0) or at least min and 1, got %d", d.Max)
		}
		for _, f := range []struct {
			name  string
			value float64
		}{{"median", d.Median}, {"min", float64(d.Min)}, {"max", float64(d.Max)}} {
			if f.value > MaxRequestTokens {
				return fieldErr(f.name, "%v tokens is longer than any model's context (at most %d)", f.value, MaxRequestTokens)
			}
		}
		return unused("value")
	case "":
		return fieldErr("kind", "is required: one of fixed, uniform, lognormal")
	default:
		return fieldErr("kind", "unknown kind %q: want fixed, uniform or lognormal", d.Kind)
	}
}

// MaxRequestTokens is the longest prompt or output a mix or trace may ask
// for: ten million tokens, the longest context any served model takes
// today. The sweep builds each prompt's text, and a length past it is a
// typo or a broken trace: a trace record of 10^12 prompt tokens, read as
// given, would have had the sweep build a prompt of 5 TB.
const MaxRequestTokens = 10_000_000

// bounds are the inclusive clamp of a lognormal: at least 1 token, Max when
// set, else MaxRequestTokens (so a far tail draw stays a length a model
// could take).
func (d Dist) bounds() (lo, hi float64) {
	lo, hi = float64(max(d.Min, 1)), MaxRequestTokens
	if d.Max > 0 {
		hi = float64(d.Max)
	}
	return lo, hi
}

// Sample draws one token count from d, which must be valid.
func (d Dist) Sample(rng *rand.Rand) int {
	switch d.Kind {
	case KindFixed:
		return d.Value
	case KindUniform:
		return d.Min + rng.IntN(d.Max-d.Min+1)
	case KindLognormal:
		x := math.Round(d.Median * math.Exp(d.Sigma*rng.NormFloat64()))
		lo, hi := d.bounds()
		return int(min(max(x, lo), hi))
	}
	return 1
}

// Mean is the expected token count, computed analytically: Value for fixed,
// (Min+Max)/2 for uniform, and for lognormal the mean of the clamped
// distribution, E[clamp(X, lo, hi)] with X = Median·exp(Sigma·Z). The
// lognormal mean ignores Sample's rounding to whole tokens (off by well
// under half a token).
func (d Dist) Mean() float64 {
	switch d.Kind {
	case KindFixed:
		return float64(d.Value)
	case KindUniform:
		return float64(d.Min+d.Max) / 2
	case KindLognormal:
		lo, hi := d.bounds()
		if d.Sigma == 0 {
			return min(max(d.Median, lo), hi)
		}
		mu, s := math.Log(d.Median), d.Sigma
		a := (math.Log(lo) - mu) / s
		b := (math.Log(hi) - mu) / s
		// E[X; a<Z<b] = exp(μ+σ²/2)·(Φ(b−σ) − Φ(a−σ)).
		body := math.Exp(mu+s*s/2) * (phi(b-s) - phi(a-s))
		return lo*phi(a) + body + hi*(1-phi(b))
	}
	return 0
}

// CV is the coefficient of variation (standard deviation ÷ mean) of d's
// token counts, analytically like Mean: 0 for fixed, the discrete
// uniform's for uniform, and for lognormal the clamped distribution's,
// from E[clamp(X, lo, hi)²] beside Mean. It is how noisy a mean of n
// requests drawn from d is: a standard error of CV/√n relative to the mean.
func (d Dist) CV() float64 {
	mean := d.Mean()
	if !(mean > 0) {
		return 0
	}
	switch d.Kind {
	case KindUniform:
		// The discrete uniform on Min..Max: variance (n² − 1) / 12.
		n := float64(d.Max - d.Min + 1)
		return math.Sqrt((n*n-1)/12) / mean
	case KindLognormal:
		if d.Sigma == 0 {
			return 0
		}
		lo, hi := d.bounds()
		mu, s := math.Log(d.Median), d.Sigma
		a := (math.Log(lo) - mu) / s
		b := (math.Log(hi) - mu) / s
		// E[X²; a<Z<b] = exp(2μ+2σ²)·(Φ(b−2σ) − Φ(a−2σ)).
		body := math.Exp(2*mu+2*s*s) * (phi(b-2*s) - phi(a-2*s))
		second := lo*lo*phi(a) + body + hi*hi*(1-phi(b)) // E[clamp(X, lo, hi)²]
		return math.Sqrt(max(second-mean*mean, 0)) / mean
	}
	return 0 // fixed
}

// Quantile is the token count below which a share q (0 < q < 1) of d's
// draws fall, analytically like Mean: the lognormal's is Median·exp(Sigma·z_q)
// clamped as Sample clamps.
func (d Dist) Quantile(q float64) float64 {
	switch d.Kind {
	case KindFixed:
		return float64(d.Value)
	case KindUniform:
		return float64(d.Min) + q*float64(d.Max-d.Min)
	case KindLognormal:
		lo, hi := d.bounds()
		z := -math.Sqrt2 * math.Erfcinv(2*q)
		return min(max(d.Median*math.Exp(d.Sigma*z), lo), hi)
	}
	return 0
}

// Above is the share of d's draws longer than x tokens, analytically like
// Mean (the lognormal's clamp puts its tail beyond Max at Max).
func (d Dist) Above(x float64) float64 {
	switch d.Kind {
	case KindFixed:
		if float64(d.Value) > x {
			return 1
		}
		return 0
	case KindUniform:
		n := float64(d.Max - d.Min + 1)
		return min(max((float64(d.Max)-math.Floor(x))/n, 0), 1)
	case KindLognormal:
		lo, hi := d.bounds()
		switch {
		case x >= hi:
			return 0
		case x < lo:
			return 1
		case d.Sigma == 0:
			if d.Median > x {
				return 1
			}
			return 0
		}
		return 1 - phi((math.Log(x)-math.Log(d.Median))/d.Sigma)
	}
	return 0
}

// phi is the standard normal CDF.
func phi(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
