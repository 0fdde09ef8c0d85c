package knee

import (
	"math"

	"github.com/kneewatch/kneewatch/workload"
)

// mixNoiseBand is the relative drift of an observed mean (prompt or output
// tokens per request) that moves the knee not at all; beyond it the knee
// moves with the drift less the band. A window's mean is noisy: at 0.4
// requests/s a 1-minute window holds ~24 requests, and the chat mix's
// lengths (lognormal σ 0.8–0.9, a coefficient of variation of ~1) give
// that mean a standard error of ~20%. Shrinking by the band, rather than
// switching at it, keeps the knee continuous in the observed mix. Over
// fewer than 100 requests the band is the mean's standard error instead
// (mixNoiseBandFor).
const mixNoiseBand = 0.1

// mixModelError is the mix model's typical relative error in the knee's
// concurrency at mixes it was not fitted to (a median of ~20%, see
// MixModel): a knee it raises by less is not read as raised by the speed
// dimension (see mixShift.speedKneeFactor). On the tune half, counting
// every rise (no margin) cost the families whose mix never moved
// 0.004–0.021 in the headroom error's p95; a 20% margin kept 0.001–0.003
// of that and all but 0.011 of mix-ramp's gain.
const mixModelError = 0.2

// tailNoiseBand is how much longer than the profile's 99.9th percentile
// the observed p99 prompt must be before it moves the knee (by the growth
// past the band): the engine's 1-2-5 buckets put the observed p99 at the
// lower edge of a bucket up to 2.5 times wide.
const tailNoiseBand = 0.5

// mixShift is how the profile's mix model moves the knee for an observed
// mix: the factors by which the knee's concurrency, request rate and mean
// prompt and output tokens move (all 1 when it does not), and whether it
// moved.
type mixShift struct {
	concurrency, rate, prompt, output float64
	moved                             bool
}

var noMixShift = mixShift{concurrency: 1, rate: 1, prompt: 1, output: 1}

// mixNoiseBandFor is the noise band of a mean taken over n requests whose
// lengths have coefficient of variation cv: at least mixNoiseBand, and at
// least the mean's standard error, cv/√n. An unknown n gets mixNoiseBand.
func mixNoiseBandFor(n, cv float64) float64 {
	if !(n > 0) {
		return mixNoiseBand
	}
	return max(mixNoiseBand, cv/math.Sqrt(n))
}

// assumedLengthCV is the coefficient of variation of a mix whose profile
// records neither its lengths' spread nor their distributions (one from
// before the spread was recorded, of a trace): about the chat mix's (1.1
// for its prompts, 0.9 for its outputs), the noisiest preset.
const assumedLengthCV = 1

// mixNoiseBands are the noise bands of the window's mean prompt and output
// tokens over n requests (mixNoiseBandFor), each at the spread of the
// profile's own mix: the band is the noise of a window's mean when the mix
// has not moved. One coefficient of variation of 1 for every mix held the
// RAG and summarize mixes (prompts 0.24 and 0.46, outputs 0.51 and 0.41)
// two to four times further from their moves than their noise asked:
// an 8B/L4 summarize replica at 0.05 requests/s, 30% of it turned code,
// read its mean prompt 23% shorter over ~30 requests and moved its knee
// as for 5% (tune 1175). On the test half (132 scenarios) the mix's own
// spread took the safe scenarios paged from 7 to 6 of 46 and the
// headroom error's p95 in mix-step from 0.140 to 0.121, mix-ramp 0.183
// to 0.176 (throttle-step 0.145 to 0.148, the half 0.077 to 0.076); on
// the tune half, chosen there, 10 to 9 of 95, mix-ramp 0.212 to 0.205,
// mix-step 0.226 to 0.223, the other families within 0.002.
func (p *Profile) mixNoiseBands(n float64) (prompt, output float64) {
	w := &p.Workload
	return mixNoiseBandFor(n, lengthCV(w.PromptTokensCV, w.Prompt)), mixNoiseBandFor(n, lengthCV(w.OutputTokensCV, w.Output))
}

// lengthCV is the coefficient of variation the profile recorded (measured
// on the requests its knee was found with), else its distribution d's,
// else assumedLengthCV (a profile that predates both, or a trace's from
// before the CVs were recorded).
func lengthCV(recorded float64, d workload.Dist) float64 {
	switch {
	case recorded > 0:
		return recorded
	case d.Kind != "":
		return d.CV()
	}
	return assumedLengthCV
}

// hasMixModel reports whether the profile has a mix model with knees to
// move by.
func (p *Profile) hasMixModel() bool { return p.MixModel != nil && len(p.MixModel.Points) > 0 }

// mixShiftAt reads the mix model (see MixModel) at the observed means. A
// mean that is unknown counts as the profile's own. Each mean is first
// shrunk toward the profile's by its band (promptBand, outputBand: see
// mixNoiseBands). Within the range of means
// measured, the model is read as fitted. Outside it, the mean is held at
// the nearest measured one, and past the heaviest measured, the model may
// only lower the knee further: its slope at the edge is followed when that
// lowers the knee, else the edge's knee is kept. Within the range, the
// model is held between the lowest and highest knee measured. A quadratic extrapolated
// can turn back up; a knee that rose with heavier requests than any measured
// would read headroom that is not there. Lighter requests than any measured
// keep the lightest mix's concurrency, and move its rate by a rise that
// saturates (see lighterRise), never by the quadratic.
//
// tails are the observed 99th percentiles of prompt tokens (lower bounds;
// unknown when not measured), the window's and the recent history's, each
// with the count of requests it was read over; the heavier reading counts.
// A mix's knee can fall with its tail while its mean barely moves: on the
// detection bench, a RAG replica whose traffic turned 2% long-context
// (8–16k-token prompts) lost a third of its knee while its mean prompt, by
// that mix, grew about 7%. The live p99 is
// read against the profile's 99.9th percentile (P999PromptTokens), not its
// 99th: with the window's two or three longest prompts deciding a p99, a
// chat replica's own longest prompts read past the profile's p99 by more
// than the band in some windows, and paged it.
// Past that reference by more than tailNoiseBand, the prompts are read at
// the tail's scale (the model's scaled mixes scale every prompt, their
// tails with their means), when that is heavier than the mean says. They
// are read at the tail's scale too when more of the window's requests (the
// count the tail was read over) lie past the profile's own p99 than chance
// explains (see heavyTailGrowth). Read as a scale on every prompt, a tail
// overstates what a minority of long prompts costs where they are cheap
// against the SLO: an 8B/H100 RAG (tight) replica whose traffic turned
// summarize read its knee at 5.2 in flight where the true one was 7.1,
// and paged (docs/simulator.md).
func (p *Profile) mixShiftAt(prompt, output float64, tails [2]promptTail, promptBand, outputBand float64) mixShift {
	m := p.MixModel
	mp, mo := p.Workload.MeanPromptTokens, p.Workload.MeanOutputTokens
	if !p.hasMixModel() || !(mp > 0) || !(mo > 0) {
		return noMixShift
	}
	op := mp * (1 + shrinkBy(prompt/mp-1, promptBand))
	// Only a tail past the band counts: one within it says nothing, and
	// must not hold a lighter mean up at the profile's.
	for _, t := range tails {
		if ref := p.Workload.P999PromptTokens; ref > 0 && Known(t.p99) {
			if grown := t.p99/ref - 1 - tailNoiseBand; grown > 0 {
				op = max(op, mp*(1+grown))
			}
		}
		if grown := p.heavyTailGrowth(t.p99, t.requests); grown > 0 {
			op = max(op, mp*(1+grown))
		}
	}
	oo := mo * (1 + shrinkBy(output/mo-1, outputBand))
	if op == mp && oo == mo {
		return noMixShift
	}
	pLo, pHi, oLo, oHi := m.ranges()
	x, z := math.Log(op/mp), math.Log(oo/mo)
	xc := min(max(x, math.Log(pLo/mp)), math.Log(pHi/mp))
	zc := min(max(z, math.Log(oLo/mo)), math.Log(oHi/mo))
	dx, dz := max(x-xc, 0), max(z-zc, 0) // beyond the heaviest measured
	lx, lz := max(xc-x, 0), max(zc-z, 0) // lighter than the lightest measured
	cLo, cHi, rLo, rHi := m.measuredLogRatios()
	// Only the rate moves past the lightest mix (see lighterRise); the
	// concurrency keeps the lightest mix's knee.
	c := edgeOrLower(m.Concurrency, xc, zc, dx, dz, cLo, cHi)
	r := edgeOrLower(m.RequestsPerSecond, xc, zc, dx, dz, rLo, rHi) + lighterRise(m.RequestsPerSecond, xc, zc, lx, lz)
	if !Known(c) || !Known(r) {
		return noMixShift
	}
	return mixShift{concurrency: math.Exp(c), rate: math.Exp(r), prompt: op / mp, output: oo / mo, moved: true}
}

// MixKneeFactors is how far the profile's mix model moves its knee for
// traffic whose mean prompt and output are exactly these (tokens per
// request): the factors on the knee's concurrency and request rate, with
// no noise band and no prompt tail (1 and 1 without a mix model). It is
// the model as Evaluate reads it for a window of many requests, for
// diagnostics that price requests one by one (see docs/simulator.md).
func (p *Profile) MixKneeFactors(prompt, output float64) (concurrency, rate float64) {
	none := promptTail{p99: Unknown(), requests: Unknown()}
	s := p.mixShiftAt(prompt, output, [2]promptTail{none, none}, 0, 0)
	return s.concurrency, s.rate
}

// promptTail is a 99th percentile of prompt tokens and how many requests
// it was read over (Observation.PromptTokensP99 and MixRequests, or
// SpanPromptTokensP99 and SpanPromptRequests).
type promptTail struct{ p99, requests float64 }

// edgeOrLower is q's log ratio at (xc, zc), held within lo..hi (the
// measured knees' range), or, when (xc, zc) lies dx, dz short of the mix,
// the linear extrapolation along q's gradient there if it is lower. The
// hold matters inside the measured range too: when a scaled mix had no
// knee (its SLO broke at one request), the grid has a hole, and a
// quadratic over a hole can swing far from every knee around it.
func edgeOrLower(q LogQuadratic, xc, zc, dx, dz, lo, hi float64) float64 {
	v := min(max(q.logRatio(xc, zc), lo), hi)
	if dx == 0 && dz == 0 {
		return v
	}
	gx, gz := q.slopes(xc, zc)
	return min(v, v+gx*dx+gz*dz)
}

// maxLighterRise is the most lighterRise raises a knee's rate past the
// lightest measured mix's.
const maxLighterRise = 4.0

// lighterRise is how much further (a log ratio) the knee's request rate
// moves for requests lighter than the lightest measured mix: lx and lz
// short of it in ln prompt and ln output, at the edge (xc, zc) the mean
// was held at.
//
// Held at the lightest mix's rate, a replica whose traffic turned lighter
// than any measured read its output tokens against a knee rate it had long
// passed: an 8B/L4 summarize replica whose traffic turned to chat (prompts
// about a fifteenth of its own) read 0.2 of headroom too little, on the
// throughput dimension, for half an hour. The quadratic cannot say how far
// the rate rises (extrapolated, it turns anywhere), and its slope followed
// in the log would rise without bound, where a request's cost has a part
// that does not shrink with it (the decode steps, the batch's slots). So
// the rise follows a request's cost as a constant plus a part in
// proportion to each length: the rate ∝ 1 ÷ (c + a·P/P_edge + b·O/O_edge),
// c + a + b = 1, a and b the model's slopes at the edge (-∂ln y/∂x and
// -∂ln y/∂z). It saturates at 1 ÷ c as the requests shrink to nothing, and
// at maxLighterRise when the slopes sum to 1 or more. A slope that lowers
// the rate for lighter requests counts 0: following it down as well
// widened the p90 below from 44% to 51%.
//
// The concurrency keeps the lightest mix's knee. Against the simulator's
// knees at mixes lighter than any measured (prompts, or prompts and
// outputs, at a quarter; 80% of the traffic turned chat; 39 of them, see
// TestMixModelPredictsKneesAtMixesItWasNotFittedTo), this rise took the
// rate's median error from 51% to 20% (p90 63% to 44%). The same rise on
// the concurrency made it worse (median 25% to 42%) and read 21 of the 39
// knees over 1.3× the true one (3 held): with shorter outputs the knee's
// in-flight requests fall while its rate rises, and a mix that is 20% long
// prompts keeps its knee where those are, whatever its mean.
func lighterRise(q LogQuadratic, xc, zc, lx, lz float64) float64 {
	if lx == 0 && lz == 0 {
		return 0
	}
	gx, gz := q.slopes(xc, zc)
	a, b := max(-gx, 0), max(-gz, 0)
	cost := 1 - a*(1-math.Exp(-lx)) - b*(1-math.Exp(-lz))
	return -math.Log(max(cost, 1/maxLighterRise))
}

// shrinkBy moves a relative drift toward 0 by band; an unknown drift
// (an unknown or negative mean) is 0.
//
// This reads a real shift short by the whole band however large it is.
// Tried and not kept (2026-12-08): d − band²/d past the band (0 at its
// edge, nearing d as the drift outgrows it), for a 70B/H200 code replica
// whose traffic turned 30% RAG (suite seed 2, test 115: mean prompt +57%
// and output −21% over ~60 requests, read at +47% and −11%, its knee high,
// the page 5 s after the breach where the oracle's came 145 s before). On
// the tune half (make bench-detection-draws' command with --suite tune
// --suite-seeds 1) it took the mix families' headroom error p95 from
// 0.253 to 0.234 (mix-ramp) and 0.195 to 0.169 (mix-step) with no page
// changed, the safe families' 0.002–0.007 higher. On the test half's five
// draws it moved less than one draw differs from the next: over the four
// fresh ones mix-ramp 0.223 → 0.214, mix-step 0.204 → 0.199, the half
// 0.079 → 0.081, one early-possible breach fewer paged ahead (71 → 70 of
// 83) and one abrupt onset more on time (191 → 192 of 203); test 115's
// page came 25 s before the breach (the oracle's 145 s).
func shrinkBy(d, band float64) float64 {
	if !Known(d) || d < -1 {
		return 0
	}
	return math.Copysign(max(math.Abs(d)-band, 0), d)
}

// speedKneeFactor is how far the mix raised the knee the speed dimension
// reads the load against (1: the profile's own). Against the profile's
// knee alone it pinned the headroom there whatever the mix: tune 1039, an
// 8B/L4 RAG replica turning half code, read an effective load of 1.06
// (load ÷ the profile's knee) while its true headroom was 0.56. A rise
// counts only past the model's own error (mixModelError): windows of
// lighter requests by chance raised it on replicas whose mix never moved.
// A knee the model lowers is the load dimension's already.
//
// Which rise counts depends on the prompts. The speed dimension reads
// in-flight requests, so the knee's concurrency is its unit; where the
// prompts are no longer than the profile's, a knee whose concurrency rises
// while its rate falls is the model's longer outputs (requests that live
// longer in the batch, each prefill weighing on more tokens), and the
// concurrency counts. Against the smaller of the two factors, as before,
// the RAG and summarize replicas of the bench turning toward code read the
// profile's knee: on the test half (132 scenarios) the mix-step family's
// headroom error p95 was 0.292, with the concurrency where prompts did not
// grow 0.140 (mix-ramp 0.204 to 0.183; on the tune half 0.240 to 0.226
// and 0.223 to 0.212; pages unchanged on both). Where the prompts grew,
// a rise needs the rate's too: a summarize replica turning 30%
// long-context read its moved knee anywhere from 12 to 30 in flight,
// window to window, against a true 12.7, and the profile's knee held it;
// counting the concurrency there too put the tune half's mix-step at 0.276.
//
// A shift clear of chance at the requests it was read over (clear, see
// Profile.MixShiftClear) is no window of lighter requests by chance, and
// its rise counts whole.
//
// Tried and not kept (2026-12-07): the concurrency's rise whatever the
// prompts wherever the replica made at least the tokens its curve expects
// (throughput efficiency ≥ 1: no slowdown for this dimension to read).
// It was aimed at an 8B/H100 RAG (loose) replica turning summarize
// (seed 3 of the suite, test 214), whose true knee rose from 15 to 31 in
// flight while this dimension read 1.5–2.6 against the profile's 15 at an
// efficiency of 1.05–1.35 and paged falsely at 25:45. There it only moved
// the page to 29:00 (the load dimension's moved knee, 22–24, was too low
// as well), and on the tune half's mix families headroom error p95 went
// 0.253 → 0.256 (mix-ramp) and 0.195 → 0.195 (mix-step), pages unchanged.
func (s mixShift) speedKneeFactor(clear bool) float64 {
	rise := min(s.concurrency, s.rate)
	if s.prompt <= 1 {
		rise = s.concurrency
	}
	if clear {
		return max(rise, 1)
	}
	return max(rise/(1+mixModelError), 1)
}

// movedKnee is k moved by s: its concurrency and request rate by the
// model, its output (and goodput) tokens/s by the rate times the longer or
// shorter outputs.
func (s mixShift) movedKnee(k Knee) Knee {
	if !s.moved {
		return k
	}
	k.Concurrency *= s.concurrency
	k.RequestsPerSecond *= s.rate
	k.OutputTokensPerSecond *= s.rate * s.output
	k.GoodputTokensPerSecond *= s.rate * s.output
	return k
}

// heavyTailChance is how unlikely, under the profile's own prompt lengths,
// the window's share of prompts past the p99's bucket must be before
// heavyTailGrowth reads it as a heavier tail.
const heavyTailChance = 1e-4

// minTailShare is the least share of prompts past a length that
// heavyTailGrowth grants the profile's distribution. A sweep sees fewer
// than a thousand requests, so nothing says its mix's tail ends where a
// fitted or clamped distribution ends it: read as none past a RAG mix's
// 4,500-token clamp, every window with a few longer prompts was evidence.
const minTailShare = 0.001

// maxTailRequests is the most requests heavyTailGrowth's test counts: past
// it, a window's share is judged as if over this many. poissonAtLeast sums
// one term per request in 100, and a count no replica reaches (an
// upstream's broken histogram) must not stall the evaluation; the test
// only grows more cautious for it.
const maxTailRequests = 1e5

// heavyTailGrowth is how much longer than the profile's 99th percentile
// prompt the window's is (its bucket's floor, promptP99, ÷ the profile's
// p99, less 1), when the window's requests could not have put 1% of their
// prompts past that floor by chance at the profile's own prompt lengths;
// 0 otherwise, and when the profile does not record its prompt
// distribution or the window's request count is unknown. The profile's
// lengths are read as served (see servedPromptDist).
//
// A p99 latency SLO is set by the slowest 1% of requests, so a heavy
// minority moves the knee far more than the mean it adds: on the
// simulator, 8B/H100 chat (tight) with 2% of its traffic turned RAG keeps
// a true knee of 35 in flight where the chat knee is 120, while its mean
// prompt grows 28% and the mix model, read at the means, says 96. The
// window's p99 prompt, then a RAG prompt, sits in the (2000, 5000] bucket:
// at 2000 ÷ the chat p99 of 1081 (×1.85) the model says 37. The
// 99.9th-percentile test (tailNoiseBand) never sees it: 2000 is under the
// chat mix's own 99.9th percentile of 2140. Here the question is put to
// the profile's distribution instead: 1% of n prompts past the floor
// against n × the profile's share past it, at least minTailShare
// (Poisson), so a low-rate window whose p99 is one long prompt of the
// profile's own does not count.
func (p *Profile) heavyTailGrowth(promptP99, requests float64) float64 {
	if !Known(promptP99) || !(promptP99 > 0) || !Known(requests) || !(requests > 0) {
		return 0
	}
	served, ok := p.servedPrompts()
	if !ok {
		return 0
	}
	p99 := served.quantile99()
	if !(p99 > 0) || promptP99 <= p99 {
		return 0
	}
	n := min(requests, maxTailRequests)
	k := math.Ceil(0.01 * n)
	if poissonAtLeast(k, n*max(served.above(promptP99), minTailShare)) >= heavyTailChance {
		return 0
	}
	return promptP99/p99 - 1
}

// servedPromptDist is the prompt distribution a profile was swept with,
// read on the scale of the lengths the server reported. The sweep asks for
// lengths (the distribution) but records the served ones (its means, the
// server's tokenizer and chat template), and live windows are served
// lengths too: a template's few dozen tokens on every prompt would
// otherwise put far more prompts past a length than the distribution
// says. Whether the difference is a constant per prompt (a template) or a
// ratio (another tokenizer), the mean alone cannot tell, so both are read
// and the reading that explains more of a tail counts: the longer p99,
// the larger share past a length.
type servedPromptDist struct {
	asked        workload.Dist
	scale, shift float64 // served ≈ asked × scale, or asked + shift
}

// servedPrompts is p's servedPromptDist; ok is false when p does not
// record the distribution it was swept with (a trace, a v1 profile).
func (p *Profile) servedPrompts() (servedPromptDist, bool) {
	d := p.Workload.Prompt
	if d.Kind == "" {
		return servedPromptDist{}, false
	}
	s := servedPromptDist{asked: d, scale: 1}
	if asked, served := d.Mean(), p.Workload.MeanPromptTokens; asked > 0 && served > 0 {
		s.scale, s.shift = served/asked, served-asked
	}
	return s, true
}

func (s servedPromptDist) quantile99() float64 {
	q := s.asked.Quantile(0.99)
	return max(q*s.scale, q+s.shift)
}

// above is the share of served prompts longer than x tokens.
func (s servedPromptDist) above(x float64) float64 {
	return max(s.asked.Above(x/s.scale), s.asked.Above(x-s.shift))
}

// poissonAtLeast is P(N ≥ k) for N Poisson with mean lambda.
func poissonAtLeast(k, lambda float64) float64 {
	if k <= 0 {
		return 1
	}
	if !(lambda > 0) {
		return 0
	}
	// 1 − P(N < k), the terms summed in log space.
	below, term := 0.0, -lambda // ln P(N = 0)
	for i := 0.0; i < k; i++ {
		if i > 0 {
			term += math.Log(lambda) - math.Log(i)
		}
		below += math.Exp(term)
	}
	return max(1-below, 0)
}

// clearShiftErrors is how many standard errors of a mean over a few
// requests (mixNoiseBandFor's band) its drift from the profile's must pass
// to count as a shift, not chance, on its own (Profile.MixShiftClear).
const clearShiftErrors = 3

// MixShiftClear reports whether the mean prompt or output tokens per
// request over n finished requests are further from the profile's than
// clearShiftErrors noise bands at n (mixNoiseBands): a shift in the mix
// that so few requests already show. False when the profile records no
// means, or n or both means are unknown.
func (p *Profile) MixShiftClear(meanPrompt, meanOutput, n float64) bool {
	if p == nil {
		return false
	}
	promptBand, outputBand := p.mixNoiseBands(n)
	return p.mixShiftClear(meanPrompt, meanOutput, n, promptBand, outputBand)
}

// mixShiftClear is MixShiftClear with the noise bands at n already read.
func (p *Profile) mixShiftClear(meanPrompt, meanOutput, n, promptBand, outputBand float64) bool {
	if !(n > 0) {
		return false
	}
	clear := func(mean, profile, band float64) bool {
		return Known(mean) && profile > 0 && math.Abs(mean/profile-1) > clearShiftErrors*band
	}
	return clear(meanPrompt, p.Workload.MeanPromptTokens, promptBand) || clear(meanOutput, p.Workload.MeanOutputTokens, outputBand)
}
