package knee

import "math"

// CurvePoint is the profile's measured curve read at one concurrency: what
// the replica did at that load during the sweep.
type CurvePoint struct {
	Concurrency            float64
	OutputTokensPerSecond  float64
	GoodputTokensPerSecond float64
	KVCacheUsage           float64
	TTFTP99                float64 // seconds
	TPOTP99                float64 // seconds
	// Extrapolated is true past the last sweep point, where the values are
	// the last point's (the curve is flat once saturated, as far as the
	// sweep can tell).
	Extrapolated bool
}

// CurveAt reads the profile's curve at a concurrency (an in-flight load),
// interpolating linearly between the two sweep points around it, so a live
// replica can be compared with what its profile says it should do at the
// same load ("is the curve moving?").
//
// Below the first point, throughput, goodput and KV usage scale linearly
// from zero at zero load (closed-loop throughput is proportional to
// concurrency at light load) and latencies take the first point's values
// (an idle replica is no faster than one request alone). Past the last point
// every value is the last point's, marked Extrapolated. It returns false for
// a profile without points or an unknown or negative load. Points must be
// sorted by concurrency, as Validate requires.
func (p *Profile) CurveAt(load float64) (CurvePoint, bool) {
	if p == nil || len(p.Points) == 0 || !nonNegative(load) {
		return CurvePoint{}, false
	}
	pts := p.Points
	first, last := &pts[0], &pts[len(pts)-1]
	switch {
	case load <= first.Concurrency:
		f := 0.0
		if first.Concurrency > 0 {
			f = load / first.Concurrency
		}
		return CurvePoint{
			Concurrency:            load,
			OutputTokensPerSecond:  f * first.OutputTokensPerSecond,
			GoodputTokensPerSecond: f * first.GoodputTokensPerSecond,
			KVCacheUsage:           f * first.KVCacheUsage,
			TTFTP99:                first.TTFT.P99,
			TPOTP99:                first.TPOT.P99,
		}, true
	case load >= last.Concurrency:
		c := curvePoint(last)
		c.Concurrency = load
		c.Extrapolated = load > last.Concurrency
		return c, true
	}
	// Few points (a sweep has ~10–20): a linear scan beats a binary search.
	i := 1
	for pts[i].Concurrency < load {
		i++
	}
	lo, hi := &pts[i-1], &pts[i]
	f := (load - lo.Concurrency) / (hi.Concurrency - lo.Concurrency)
	return CurvePoint{
		Concurrency:            load,
		OutputTokensPerSecond:  lerp(lo.OutputTokensPerSecond, hi.OutputTokensPerSecond, f),
		GoodputTokensPerSecond: lerp(lo.GoodputTokensPerSecond, hi.GoodputTokensPerSecond, f),
		KVCacheUsage:           lerp(lo.KVCacheUsage, hi.KVCacheUsage, f),
		TTFTP99:                lerp(lo.TTFT.P99, hi.TTFT.P99, f),
		TPOTP99:                lerp(lo.TPOT.P99, hi.TPOT.P99, f),
	}, true
}

func curvePoint(pt *Point) CurvePoint {
	return CurvePoint{
		Concurrency:            pt.Concurrency,
		OutputTokensPerSecond:  pt.OutputTokensPerSecond,
		GoodputTokensPerSecond: pt.GoodputTokensPerSecond,
		KVCacheUsage:           pt.KVCacheUsage,
		TTFTP99:                pt.TTFT.P99,
		TPOTP99:                pt.TPOT.P99,
	}
}

func lerp(a, b, f float64) float64 { return a + (b-a)*f }

// throughputLoadRatio converts an output rate into a knee ratio on the load
// scale: below the knee's output rate, the concurrency at which the profile's
// curve first reaches that rate (read linearly between the origin, the points
// below the knee and the knee itself), ÷ the knee concurrency; from the
// knee's rate upward, the rate ÷ the knee's rate.
//
// Why not simply rate ÷ knee rate everywhere: throughput is concave in
// concurrency (on the simulator's 8B/H100 chat curve, half the knee
// concurrency already makes about two thirds of the knee's tokens), so the
// plain ratio would claim far less headroom than the load shows for a
// replica behaving exactly like its profile. Past the knee the curve is
// flat, and inverting it would turn a few percent of throughput noise into
// a large swing in concurrency, so there the plain ratio is used: it is 1 at
// the knee either way. Unknown when the knee's rate is not > 0.
func (p *Profile) throughputLoadRatio(rate float64) float64 {
	return p.rateLoadRatio(rate, outputRate)
}

// rateKind names a rate the profile's curve can be read by.
type rateKind int

const (
	outputRate rateKind = iota // output tokens/s
	promptRate                 // prompt tokens/s: requests/s × the profile's mean prompt
)

// rateAt is the profile's rate of kind at a sweep point.
func (p *Profile) rateAt(pt *Point, kind rateKind) float64 {
	if kind == promptRate {
		return pt.RequestsPerSecond * p.Workload.MeanPromptTokens
	}
	return pt.OutputTokensPerSecond
}

// kneeRate is the profile's rate of kind at its knee: the knee's own output
// rate, or the prompt rate read off the curve at the knee concurrency (the
// knee may lie between two points).
func (p *Profile) kneeRate(kind rateKind) float64 {
	if kind == outputRate {
		return p.Knee.OutputTokensPerSecond
	}
	c := p.Knee.Concurrency
	for i := range p.Points {
		hi := &p.Points[i]
		if hi.Concurrency < c {
			continue
		}
		if hi.Concurrency == c || i == 0 {
			return p.rateAt(hi, kind)
		}
		lo := &p.Points[i-1]
		return lerp(p.rateAt(lo, kind), p.rateAt(hi, kind), (c-lo.Concurrency)/(hi.Concurrency-lo.Concurrency))
	}
	return Unknown()
}

// rateLoadRatio is throughputLoadRatio for a rate of any kind.
func (p *Profile) rateLoadRatio(rate float64, kind rateKind) float64 {
	k := &p.Knee
	kneeRate := p.kneeRate(kind)
	if !(kneeRate > 0) || !(k.Concurrency > 0) || !nonNegative(rate) {
		return Unknown()
	}
	if rate >= kneeRate {
		return rate / kneeRate
	}
	loC, loT := 0.0, 0.0
	for i := range p.Points {
		hiC, hiT := p.Points[i].Concurrency, p.rateAt(&p.Points[i], kind)
		if hiC >= k.Concurrency {
			break
		}
		if hiT >= rate && hiT > loT {
			return concurrencyAtRate(loC, loT, hiC, hiT, rate) / k.Concurrency
		}
		if hiC > loC {
			loC, loT = hiC, max(loT, hiT)
		}
	}
	// The last stretch ends at the knee, whose rate is above rate.
	return concurrencyAtRate(loC, loT, k.Concurrency, kneeRate, rate) / k.Concurrency
}

// Between two sweep points a rate is read through its time per unit: by
// Little's law, c ÷ rate(c) is the time a request (or an output token)
// spends in flight, and a decode step's time grows about linearly with the
// batch, so that time, not the rate, is read linearly between the points.
// The rate itself is concave in c, and the chord between two points of a
// doubling sweep (8 and 16, 16 and 32) lies below it: tokens/s =
// c ÷ (a + b·c) with a = 1 and b = 1/32 (a batch of 32 doubles a step),
// read at 24 between 16 and 32, is 13.71 on the curve and 13.33 on the
// chord, 2.8% low. That gap read every replica as faster than
// its profile: over the detection bench's 15 throttle scenarios (test
// half) the throughput efficiency before the throttle had a median of
// 1.034 (1.007-1.054, and 1.135 on an 8B/L4 RAG replica), so a slowed GPU
// read faster than it was and its knee, which a TPOT-bound replica loses
// faster than its speed, read high; and the throughput dimension read the
// same tokens/s as more in flight than they were, by the chord's gap. Read through
// the time per unit, full speed read 1.016 (0.989-1.048; 1.129), and on
// the tune half the headroom error p95 went in throttle-ramp from 0.117 to
// 0.109, in throttle-step 0.103 to 0.094 and in plateau-safe 0.067 to
// 0.060, no page changing (2026-12-07). Below the first point, where the fixed part of a
// step is unknown, the rate stays in proportion to c.

// rateAtConcurrency reads the rate at c between (loC, loT) and (hiC,
// hiT), loC ≤ c ≤ hiC, linearly in its time per unit (see above); linearly
// in the rate itself where either end has none to read.
func rateAtConcurrency(loC, loT, hiC, hiT, c float64) float64 {
	f := (c - loC) / (hiC - loC)
	if !(loC > 0) || !(loT > 0) || !(hiT > 0) {
		return lerp(loT, hiT, f)
	}
	return c / lerp(loC/loT, hiC/hiT, f)
}

// concurrencyAtRate inverts rateAtConcurrency: the c between loC and hiC
// at which the rate reads rate, loT ≤ rate ≤ hiT.
func concurrencyAtRate(loC, loT, hiC, hiT, rate float64) float64 {
	if !(loC > 0) || !(loT > 0) || !(hiT > loT) || !(hiC > loC) {
		return lerp(loC, hiC, (rate-loT)/(hiT-loT))
	}
	// time(c) = loW + m·(c − loC) and rate = c ÷ time(c). A rate that
	// rises from loT to hiT has time(0) > 0, so 1 − rate·m > 0 for every
	// rate up to hiT.
	loW := loC / loT
	m := (hiC/hiT - loW) / (hiC - loC)
	c := rate * (loW - loC*m) / (1 - rate*m)
	return min(max(c, loC), hiC)
}

// PointAt is the sweep point measured at concurrency c exactly, if any (a
// knee found by a sweep is one of its points).
func PointAt(points []Point, c float64) (Point, bool) {
	for _, pt := range points {
		if pt.Concurrency == c {
			return pt, true
		}
	}
	return Point{}, false
}

// minOutputElasticity is how steep the profile's curve must be where an
// output rate is read on it for that reading to count as a load: the
// elasticity d ln(tokens/s) ÷ d ln(concurrency), so a throughput error of ε
// reads as a load error of at most ε ÷ minOutputElasticity = 2ε.
//
// The output side of the throughput dimension reads above the load ratio
// only when the replica makes more tokens at its load than its profile
// did, and near a compute-bound knee the curve is nearly flat: there the
// window's few percent of throughput noise was read as load. The demo's
// replica held at 0.9 of its knee (true headroom +0.10) made 4% more tokens
// than its profile in some 30 s windows and read headroom −0.03 from
// throughput. Where the curve still climbs (light load, or a KV-bound knee
// reached while throughput grows) the reading is as good as the load's and
// still counts.
const minOutputElasticity = 0.5

// outputRateResolvesLoad reports whether an output rate that reads as
// ratio on the load scale (throughputLoadRatio) lands where the profile's
// curve is steep enough to tell loads apart: its elasticity over the
// octave below the concurrency read (the knee's, from the knee's rate up)
// is at least minOutputElasticity.
func (p *Profile) outputRateResolvesLoad(ratio float64) bool {
	if !Known(ratio) {
		return false
	}
	c := min(ratio, 1) * p.Knee.Concurrency
	hi, okHi := p.CurveAt(c)
	lo, okLo := p.CurveAt(c / 2)
	if !okHi || !okLo || !(lo.OutputTokensPerSecond > 0) || !(hi.OutputTokensPerSecond > 0) {
		// No curve to judge by (a knee without points): the reading is
		// the plain rate ÷ the knee's, as before.
		return true
	}
	return math.Log2(hi.OutputTokensPerSecond/lo.OutputTokensPerSecond) >= minOutputElasticity
}

// expectedOutput is the output tokens/s the curve expects of obs's running
// batch: its reading at the mean batch, times the bend the sampled batches
// fluctuated across (the mean of the curve's reading at each sample over
// its reading at their mean) when the samples are kept and readable.
//
// The output curve is concave (a larger batch adds less per request), so
// by Jensen's inequality the mean reading of a fluctuating batch is below
// the reading at its mean, by more the more it fluctuates against the
// curve's bend. Poisson traffic at a few requests in flight fluctuates
// most where the curve bends most: an 8B/H100 RAG replica held at 3.8 in
// flight on a curve of 157, 282, 459 and 672 tokens/s at 1, 2, 4 and 8
// read a speed of 0.92 at full speed, which is the 0.93 this gap
// predicts for a Poisson batch of that mean. The mean itself stays
// obs.Running, which the collector may have read by Little's law rather
// than from the samples (see collector.Observe).
func (p *Profile) expectedOutput(obs *Observation) (float64, bool) {
	atMean, ok := p.outputAtRunning(obs.Running)
	if !ok || len(obs.RunningSamples) == 0 {
		return atMean, ok
	}
	var sum, sumRunning float64
	for _, r := range obs.RunningSamples {
		v, ok := p.outputAtRunning(r)
		if !ok {
			return atMean, true
		}
		sum, sumRunning = sum+v, sumRunning+r
	}
	n := float64(len(obs.RunningSamples))
	atSampleMean, ok := p.outputAtRunning(sumRunning / n)
	if !ok || !(atSampleMean > 0) {
		return atMean, true
	}
	return atMean * (sum / n) / atSampleMean, true
}

// outputAtRunning is the profile's output tokens/s with running requests
// in the batch, read between the sweep points' mean running counts
// through the time per token (rateAtConcurrency; in proportion below the
// first). Points whose running count did not
// rise past an earlier point's (the batch full at max_num_seqs, the rest
// queued) are passed over, and past the fullest batch the output is that
// point's. ok is false when running is unknown or negative, or when the
// points did not record their running batch (a sweep without engine
// metrics).
func (p *Profile) outputAtRunning(running float64) (float64, bool) {
	if !nonNegative(running) || len(p.Points) == 0 || !(p.Points[0].Running > 0) {
		return 0, false
	}
	prevR, prevT := 0.0, 0.0
	for i := range p.Points {
		pt := &p.Points[i]
		if pt.Running <= prevR {
			continue
		}
		if running <= pt.Running {
			return rateAtConcurrency(prevR, prevT, pt.Running, pt.OutputTokensPerSecond, running), true
		}
		prevR, prevT = pt.Running, pt.OutputTokensPerSecond
	}
	return prevT, true
}
