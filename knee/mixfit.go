package knee

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// MinMixPoints is how many measured mixes a mix model needs: with two mean
// prompts and two mean outputs, each LogQuadratic has four coefficients
// (its squares need a third of each).
const MinMixPoints = 4

// FitMixModel fits a MixModel to knees measured at several mixes, relative
// to the profile's mean prompt p0 and output o0 tokens: each LogQuadratic
// by least squares on the log of the knee (so on relative error), anchored
// at the profile's own knee when the points hold it (see
// fitLogQuadratic). It fails
// when the points cannot determine the model: fewer than MinMixPoints, a
// non-positive mean, knee or rate, fewer than two distinct mean prompts or
// outputs, or a system singular even with its fewest terms. A square term
// is fitted only when its mean was measured at three or more lengths, else
// it is 0: a scaled mix whose SLO cannot be met at all (prompts so long that
// one request alone misses the TTFT) has no knee to fit, and a mix capped
// by max_model_len may not move its mean, so the model makes do with fewer
// terms.
func FitMixModel(points []MixPoint, p0, o0 float64) (MixModel, error) {
	if !(p0 > 0) || !(o0 > 0) || math.IsInf(p0, 0) || math.IsInf(o0, 0) {
		return MixModel{}, fmt.Errorf("a mix model needs the profile's mean prompt and output tokens > 0, got %g and %g", p0, o0)
	}
	if len(points) < MinMixPoints {
		return MixModel{}, fmt.Errorf("a mix model needs knees at %d or more mixes, got %d", MinMixPoints, len(points))
	}
	for i, pt := range points {
		for _, f := range []struct {
			name string
			v    float64
		}{{"meanPromptTokens", pt.MeanPromptTokens}, {"meanOutputTokens", pt.MeanOutputTokens},
			{"concurrency", pt.Concurrency}, {"requestsPerSecond", pt.RequestsPerSecond}} {
			if !finite(f.v) || f.v <= 0 {
				return MixModel{}, fmt.Errorf("mix point %d: %s must be > 0, got %g", i, f.name, f.v)
			}
		}
	}
	if err := mixDesignError(points); err != nil {
		return MixModel{}, err
	}
	conc, ok1 := fitLogQuadratic(points, p0, o0, func(pt MixPoint) float64 { return pt.Concurrency }, nil)
	// The rate's fit must read it falling with longer prompts, as Validate
	// holds the model to: a fit that does not is no knee's, but its
	// points' noise, and fewer terms are tried before the model fails.
	rate, ok2 := fitLogQuadratic(points, p0, o0, func(pt MixPoint) float64 { return pt.RequestsPerSecond },
		func(q LogQuadratic) bool { return q.Prompt < 0 })
	if !ok1 || !ok2 {
		return MixModel{}, errors.New("the measured mixes cannot determine the mix model: its least-squares system is singular, " +
			"or its only fits read slopes no knee has (the request rate rising with longer prompts, or a log-slope past ±10)")
	}
	return MixModel{Points: slices.Clone(points), Concurrency: conc, RequestsPerSecond: rate}, nil
}

// mixDesignError says why the points cannot determine a LogQuadratic, or nil.
func mixDesignError(points []MixPoint) error {
	if distinct(points, func(pt MixPoint) float64 { return pt.MeanPromptTokens }) < 2 ||
		distinct(points, func(pt MixPoint) float64 { return pt.MeanOutputTokens }) < 2 {
		return errors.New("a mix model needs knees at two or more mean prompt lengths and two or more mean output lengths")
	}
	return nil
}

func distinct(points []MixPoint, f func(MixPoint) float64) int {
	vs := make([]float64, len(points))
	for i, pt := range points {
		vs[i] = f(pt)
	}
	slices.Sort(vs)
	return len(slices.Compact(vs))
}

// mixFeatures are the terms of a LogQuadratic at a mix.
func mixFeatures(pt MixPoint, p0, o0 float64) [6]float64 {
	x, z := math.Log(pt.MeanPromptTokens/p0), math.Log(pt.MeanOutputTokens/o0)
	return [6]float64{1, x, z, x * x, x * z, z * z}
}

// fitLogQuadratic is the least-squares LogQuadratic of ln y over the
// points. When one of them is the profile's own mix (means p0 and o0), the
// model is anchored there: AtProfileMix is its knee and only the slopes are
// fitted, so the model reproduces the knee it moves. The terms fitted are
// the first set the points determine: x, z, x·z and the squares of the
// means measured at three or more lengths; then without x·z; then without
// the squares. A set whose fit has a coefficient past maxMixCoefficient,
// or that accept (when not nil) refuses, is passed over for the next.
//
// Why the bound: points whose means are almost, but not exactly, in the
// proportions of the scales (a distribution clamped at its maximum, so
// prompts ×2 read ×1.9) make a system that is nearly singular, and its
// exact fit swings by thousands: prompts ×2, outputs ×2, both, and both
// halved, with the ×2 pair clamped to ×1.85 and ×1.95, fitted the rate
// with a prompt slope of +1364 and an output slope of −1420. The
// simulator's knees fit slopes of 0.1 to about 2.
func fitLogQuadratic(points []MixPoint, p0, o0 float64, y func(MixPoint) float64, accept func(LogQuadratic) bool) (LogQuadratic, bool) {
	anchor, anchored, own := 0.0, false, 0.0
	for _, pt := range points {
		if pt.MeanPromptTokens == p0 && pt.MeanOutputTokens == o0 {
			own, anchored = y(pt), true
			anchor = math.Log(own)
			break
		}
	}
	var squares []int
	if distinct(points, func(pt MixPoint) float64 { return pt.MeanPromptTokens }) >= 3 {
		squares = append(squares, 3)
	}
	if distinct(points, func(pt MixPoint) float64 { return pt.MeanOutputTokens }) >= 3 {
		squares = append(squares, 5)
	}
	base := []int{1, 2} // x, z
	if !anchored {
		base = []int{0, 1, 2}
	}
	for _, active := range [][]int{
		append(append(slices.Clone(base), 4), squares...),
		append(slices.Clone(base), squares...),
		base,
	} {
		c, ok := fitTerms(points, p0, o0, y, active, anchor)
		if !ok || slices.ContainsFunc(c[1:], func(v float64) bool { return !(math.Abs(v) <= maxMixCoefficient) }) {
			continue
		}
		at := math.Exp(c[0])
		if anchored {
			at = own
		}
		q := LogQuadratic{AtProfileMix: at, Prompt: c[1], Output: c[2], PromptSquared: c[3], PromptOutput: c[4], OutputSquared: c[5]}
		if accept == nil || accept(q) {
			return q, true
		}
	}
	return LogQuadratic{}, false
}

// maxMixCoefficient is the largest magnitude a fitted LogQuadratic's
// slope or curvature may have (see fitLogQuadratic): at 10, doubling a
// mean would move the knee e^6.9, about a thousandfold.
const maxMixCoefficient = 10

// fitTerms solves the least squares of ln y − offset on the active terms
// (indices into mixFeatures); the others are 0.
func fitTerms(points []MixPoint, p0, o0 float64, y func(MixPoint) float64, active []int, offset float64) ([6]float64, bool) {
	n := len(active)
	if len(points) < n {
		return [6]float64{}, false
	}
	var a [6][7]float64 // normal equations over the active terms, augmented
	for _, pt := range points {
		f := mixFeatures(pt, p0, o0)
		ly := math.Log(y(pt)) - offset
		for r, fr := range active {
			for c, fc := range active {
				a[r][c] += f[fr] * f[fc]
			}
			a[r][n] += f[fr] * ly
		}
	}
	sol, ok := solve(&a, n)
	if !ok {
		return [6]float64{}, false
	}
	var c [6]float64
	for r, j := range active {
		c[j] = sol[r]
	}
	return c, true
}

// solve solves the first n rows of the augmented system (right-hand side
// in column n) by Gaussian elimination with partial pivoting; false when
// it is singular.
func solve(a *[6][7]float64, n int) ([6]float64, bool) {
	scale := 0.0
	for r := range n {
		scale = max(scale, math.Abs(a[r][r]))
	}
	for col := range n {
		piv := col
		for r := col + 1; r < n; r++ {
			if math.Abs(a[r][col]) > math.Abs(a[piv][col]) {
				piv = r
			}
		}
		if !(math.Abs(a[piv][col]) > 1e-10*scale) {
			return [6]float64{}, false
		}
		a[col], a[piv] = a[piv], a[col]
		for r := range n {
			if r == col {
				continue
			}
			f := a[r][col] / a[col][col]
			for c := col; c <= n; c++ {
				a[r][c] -= f * a[col][c]
			}
		}
	}
	var x [6]float64
	for r := range n {
		x[r] = a[r][n] / a[r][r]
	}
	return x, true
}
