package knee

import "math"

// sloMargin is how close a sweep point's latency is to the SLO: the larger
// of its TTFT and TPOT at the SLO quantile ÷ the thresholds, 1 where the SLO
// breaks. ok is false when the profile's points do not hold the SLO's
// quantile (they keep p50 and p99) or the thresholds are not > 0.
func (p *Profile) sloMargin(pt *Point) (float64, bool) {
	const eps = 1e-9
	var ttft, tpot float64
	switch q := p.SLO.Quantile; {
	case math.Abs(q-0.99) < eps:
		ttft, tpot = pt.TTFT.P99, pt.TPOT.P99
	case math.Abs(q-0.5) < eps:
		ttft, tpot = pt.TTFT.P50, pt.TPOT.P50
	default:
		return 0, false
	}
	if p.SLO.TTFT <= 0 || p.SLO.TPOT <= 0 || !nonNegative(ttft) || !nonNegative(tpot) {
		return 0, false
	}
	return max(ttft/p.SLO.TTFT.Seconds(), tpot/p.SLO.TPOT.Seconds()), true
}

// speedKnee is where the knee moves for a replica running at speed e of its
// profile (0 < e ≤ 1). A profile with a speed model reads it there (see
// SpeedModel and speedModelKnee; near full speed blended with the curve's
// reading, see speedModelBlendSpan). Without one it is the concurrency at which the profile's latencies,
// each stretched by 1/e, reach the SLO, read linearly between the sweep
// points up to the knee, and never above the knee. A slower GPU stretches
// every engine step, so TTFT and TPOT at a given concurrency grow by about
// 1/e, and the knee of a TPOT-bound replica falls to where TPOT × 1/e meets
// the threshold. That is lower than e × the knee whenever the per-step cost
// that does not grow with the batch (weights read, scheduling) is a large
// part of the threshold: on the simulator's 8B/H100 chat profile
// (TPOT p99 8 ms alone, 24 ms at the knee of 132, SLO 25 ms) a 1.36× slower
// GPU moves the knee to ~85, not to 132/1.36 ≈ 97. A knee that the SLO did
// not bind (KV-bound) stays until the stretched latencies reach the SLO
// below it. ok is false when the profile's latencies cannot be read (see
// sloMargin).
//
// A knee measured under Poisson arrivals sits below the closed-loop knee of
// the same sweep, whose points are the curve; the closed-loop latencies
// there are still under the SLO, so the crossing is read up to the
// closed-loop knee (moved of closed). Two readings of how the Poisson knee,
// a count of requests in flight, follows: in proportion to the closed-loop
// one (moved ÷ closed), or held where only the thresholds force it (a
// slower replica's requests take 1/e as long, so at the same utilization
// open traffic holds as many in flight: moved ÷ (e × closed), at most 1).
// Neither fits every deployment: a TPOT-tight knee falls in proportion, a
// queue-bound one barely moves. The knee is their geometric blend, 3/4 in
// proportion (poissonSpeedWeight), the weight chosen on one half of the
// bench's 28 deployments and checked on the other: against the
// simulator's true Poisson knees at 1.4× and 2× slower, the held-out half's
// median error was 22% (|ln| 0.198) where in proportion alone it was 36%
// (0.308) and held alone 34% (0.296); p90 0.572 against 0.683 and 0.623.
// Measured again on today's presets (2026-12-04): held-out median |ln|
// 0.127, p90 0.356 (the tuning half 0.205 and 0.419). Against true knees
// that are the median of 3 seeds' searches, at 1.4×, 1.6× and 2× slower,
// 0.115 and 0.235 (0.095 and 0.385): a weight that grows with the
// stretched latency margin at the knee did better on the half it was
// fitted to and worse on the other, either way round.
func (p *Profile) speedKnee(e float64) (float64, bool) {
	kneeC := p.Knee.Concurrency
	if !(e > 0) || len(p.Points) == 0 || !(kneeC > 0) {
		return 0, false
	}
	if e >= 1 {
		return kneeC, true
	}
	modelled, ok := p.speedModelKnee(e, p.speedKneeWithoutModel)
	if !ok {
		return p.speedKneeWithoutModel(e)
	}
	if w := (1 - e) / speedModelBlendSpan; w < 1 {
		if onCurve, curveOK := p.speedKneeWithoutModel(e); curveOK && onCurve > 0 {
			return math.Exp((1-w)*math.Log(onCurve) + w*math.Log(modelled)), true
		}
	}
	return modelled, true
}

// speedModelBlendSpan is how far below full speed the knee is read from
// the speed model alone; nearer full speed it is the geometric blend of the
// curve's reading and the model's, weighted by how far e is into the span.
// A healthy GPU's measured speed scatters around 1 with the window's noise,
// and the model, steeper there than the curve's reading, turned that noise
// into lost headroom: on the tune half (264 scenarios), read from the
// model alone, the plateau-safe family's headroom error p95 went 0.064 ->
// 0.077 (a 70B/H200 RAG plateau paged once more, on effective load);
// blended over 0.2, 0.070, while throttle-ramp went 0.165 -> 0.141 (0.138
// from the model alone) and throttle-step 0.114 -> 0.082. A dead band
// instead (e read 0.05 nearer 1) kept plateau-safe at 0.066 but
// throttle-ramp at 0.161.
const speedModelBlendSpan = 0.2

// speedKneeWithoutModel is speedKnee read off the profile's curve, for a
// profile without a speed model (or past its slowest speed).
func (p *Profile) speedKneeWithoutModel(e float64) (float64, bool) {
	kneeC := p.Knee.Concurrency
	if e >= 1 {
		return kneeC, true
	}
	if closed := p.Knee.ClosedLoopConcurrency; p.openLoopKnee() {
		moved, ok := p.curveSpeedKnee(e, closed)
		if !ok || !(moved > 0) {
			return 0, false
		}
		inProportion := moved / closed
		held := min(1, moved/(e*closed))
		return kneeC * math.Pow(inProportion, poissonSpeedWeight) * math.Pow(held, 1-poissonSpeedWeight), true
	}
	return p.curveSpeedKnee(e, kneeC)
}

// poissonSpeedWeight is the in-proportion reading's weight in the Poisson
// knee's move with speed (see speedKnee).
const poissonSpeedWeight = 0.75

// openLoopKnee reports whether the knee was measured under Poisson
// arrivals beside a closed-loop one (see speedKnee).
func (p *Profile) openLoopKnee() bool {
	return p.Knee.Arrivals == ArrivalsPoisson && p.Knee.ClosedLoopConcurrency > 0
}

// curveSpeedKnee is speedKnee read on the curve for a knee at kneeC whose
// latencies the curve's points measured.
func (p *Profile) curveSpeedKnee(e, kneeC float64) (float64, bool) {
	prevC, prevM := 0.0, 0.0
	for i := range p.Points {
		pt := &p.Points[i]
		m, ok := p.sloMargin(pt)
		if !ok {
			return 0, false
		}
		if m >= e {
			if i == 0 {
				// Even the lightest measured load misses the stretched SLO:
				// scale down from the first point, latencies there being no
				// lower than one request alone.
				return min(pt.Concurrency*e/m, kneeC), true
			}
			if m == prevM {
				return min(prevC, kneeC), true
			}
			return min(lerp(prevC, pt.Concurrency, (e-prevM)/(m-prevM)), kneeC), true
		}
		if pt.Concurrency >= kneeC {
			break
		}
		prevC, prevM = pt.Concurrency, m
	}
	return kneeC, true
}
