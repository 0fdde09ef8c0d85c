package collector

import (
	"math"
	"time"

	"github.com/kneewatch/kneewatch/knee"
)

// Observe turns a replica's window into the knee package's Observation at
// time at. Anything the window cannot compute stays unknown (NaN): a missing
// signal, too few samples for a rate, an empty histogram window. slo gives
// the thresholds attainment is measured against; it may be nil (no profile),
// and then attainment stays unknown.
func Observe(w *Window, at time.Time, slo *knee.SLO) knee.Observation {
	o := knee.NewObservation()
	// A window of finite samples can still read ±Inf (a mean of gauges
	// near overflow, a rate of counters that jump by 1e308): that is no
	// measurement, and the evaluation must not export it.
	value := func(v float64, err error) float64 {
		if err != nil || !knee.Known(v) {
			return knee.Unknown()
		}
		return v
	}
	o.Running = value(w.GaugeMean(at, SignalRunning))
	o.RunningSamples = w.gaugeValues(at, SignalRunning)
	o.Waiting = value(w.GaugeMean(at, SignalWaiting))
	o.InFlight = value(w.GaugeMean(at, SignalRunning, SignalWaiting))
	littleInFlight(&o, w, at)
	o.KVCacheUsage = value(w.GaugeMean(at, SignalKVUsage))
	o.GPUUtilization = value(w.GaugeMean(at, SignalGPUUtilization))
	o.QueueGrowthPerSecond = value(w.GaugeSlope(at, SignalWaiting))

	o.OutputTokensPerSecond = value(w.SampledRate(SignalGenerationTokens, at))
	o.PromptTokensPerSecond = value(w.SampledRate(SignalPromptTokens, at))
	o.PreemptionsPerSecond = value(w.SampledRate(SignalPreemptions, at))

	// Finished requests: the engine's own counter when it has one, else the
	// count of the per-request latency histograms.
	finished := SignalRequestsFinished
	if _, ok := latest(w).Counter(finished); !ok {
		finished = SignalUnknown
	}
	if finished != SignalUnknown {
		o.RequestsPerSecond = value(w.SampledRate(finished, at))
	}
	// The mix of the requests that finished in the window (see MixSignals).
	if mix, ok := MixSignals(latest(w)); ok {
		o.MeanPromptTokens = value(w.CounterRatio(mix[1], mix[0], at))
		o.MeanOutputTokens = value(w.CounterRatio(mix[2], mix[0], at))
		o.MixRequests = value(w.Increase(mix[0], at))
	}

	// Each histogram's bucket rates are computed once for its quantiles
	// and its attainment (attainment first: quantiles lift the rates to
	// their envelope in place).
	tpot := tpotSignal(w)
	var ttftSLO, tpotSLO *float64
	if slo != nil {
		t, p := slo.TTFT.Seconds(), slo.TPOT.Seconds()
		ttftSLO, tpotSLO = &t, &p
	}
	o.TTFT, o.TTFTAttainment = histogramView(w, SignalTTFT, at, ttftSLO)
	o.TPOT, o.TPOTAttainment = histogramView(w, tpot, at, tpotSLO)
	o.PromptTokensP99 = promptTailFloor(w, at)
	return o
}

// promptTailFloor is the lower edge of the prompt-length bucket holding the
// window's 99th percentile: a lower bound on it, never an interpolation.
// vLLM's buckets go 1-2-5 per decade, up to 2.5 times wide; where the p99
// falls inside one depends on the window's two or three longest prompts,
// and a tail that only looks longer must not move the knee. Unknown over
// fewer than 100 requests or without the histogram.
func promptTailFloor(w *Window, at time.Time) float64 {
	rates, err := w.bucketRates(SignalPromptLength, at)
	if err != nil {
		return knee.Unknown()
	}
	return p99BucketFloor(rates, observationsIn(w, rates))
}

// p99BucketFloor is the lower edge of the bucket holding the 99th
// percentile of buckets (cumulative, counts or rates) that stand for
// observed observations; unknown under 100 of them. It lifts buckets'
// counts to their running maximum in place (makeMonotonic).
func p99BucketFloor(buckets []Bucket, observed float64) float64 {
	v, ok := knownQuantile(SignalPromptLength, 0.99, buckets, observed)
	if !ok {
		return knee.Unknown()
	}
	floor := knee.Unknown()
	for _, b := range buckets {
		if b.UpperBound < v.Value || (v.AboveHighestBound && b.UpperBound <= v.Value) {
			floor = b.UpperBound
		}
	}
	return floor
}

// littleMaxLatencyShare is the longest mean request latency, as a share of
// the window, at which in-flight load is read by Little's law rather than
// from the queue gauges (see littleInFlight).
const littleMaxLatencyShare = 0.1

// littleQueueSigmas is how many standard errors of the gauges' mean
// in-flight count it must stand above Little's law's before the gauges are
// kept (see littleInFlight).
const littleQueueSigmas = 3

// littleInFlight replaces the gauges' mean in-flight (and running and
// waiting) requests with Little's law's, when the requests are short
// against the window: the rate of the end-to-end latency histogram's _sum
// is the mean number of the window's finished requests that were in flight
// (and its queue-time histogram's, the mean waiting), counted exactly by
// the engine rather than sampled at each scrape.
//
// Sampled every 5 s, the gauges of a replica holding a few requests of a
// second or two each are a dozen independent draws a minute: an 8B/H100
// RAG replica's mean in-flight read 4.7 where it held 3.0, and reading its
// speed against that inflated load took a third off its headroom. Little's
// law counts each request once its latency is known, so it lags by about
// one request's latency: with requests longer than a tenth of the window
// (long contexts), the gauges are kept.
//
// It sees only the requests that finished. While a queue builds, the
// requests stuck in it have not, and the few that did were the quick ones:
// a 70B chat replica whose traffic turned 30% long-context held 119
// requests a minute after the step while Little's law, over the requests
// that got out, read 6, and the headroom rose as the replica drowned. So
// the gauges are kept too when their mean stands above Little's by more
// than its sampling noise (littleQueueSigmas standard errors of a mean of
// Poisson counts, the variance the gauges' own mean): at a steady load
// the two agree within it.
func littleInFlight(o *knee.Observation, w *Window, at time.Time) {
	mean, err := w.HistogramMean(SignalE2E, at)
	if err != nil || !(mean > 0) || mean > littleMaxLatencyShare*w.Width().Seconds() {
		return
	}
	busy, err := w.HistogramSumRate(SignalE2E, at)
	if err != nil || busy < 0 {
		return
	}
	if gauged := o.InFlight; knee.Known(gauged) {
		if pts, err := w.gaugePoints(at, []Signal{SignalRunning, SignalWaiting}); err == nil {
			if se := math.Sqrt(max(gauged, 1) / float64(len(pts))); gauged > busy+littleQueueSigmas*se {
				return
			}
		}
	}
	o.InFlight = busy
	if queued, err := w.HistogramSumRate(SignalQueueTime, at); err == nil && queued >= 0 && queued <= busy {
		o.Running, o.Waiting = busy-queued, queued
	}
}

// histogramView is a histogram signal's windowed p50, p90 and p99, and the
// share within threshold when one is given (else unknown), from one
// computation of its bucket rates. A quantile is unknown while the window
// holds too few observations to have one (see observationsNeededFor).
func histogramView(w *Window, sig Signal, at time.Time, threshold *float64) (knee.LatencyQuantiles, float64) {
	unknown := knee.LatencyQuantiles{P50: knee.Unknown(), P90: knee.Unknown(), P99: knee.Unknown()}
	rates, err := w.bucketRates(sig, at)
	if err != nil {
		return unknown, knee.Unknown()
	}
	share := knee.Unknown()
	if threshold != nil {
		share = attainmentOf(sig, *threshold, rates)
	}
	observed := observationsIn(w, rates)
	q := func(phi float64) float64 {
		if v, ok := knownQuantile(sig, phi, rates, observed); ok {
			return v.Value
		}
		return knee.Unknown()
	}
	return knee.LatencyQuantiles{P50: q(0.5), P90: q(0.9), P99: q(0.99)}, share
}

// knownQuantile is the phi-quantile of a histogram signal's bucket rates,
// when the observations they stand for (observationsIn) are enough to have
// one (see observationsNeededFor).
func knownQuantile(sig Signal, phi float64, rates []Bucket, observed float64) (Quantile, bool) {
	if !(observed >= observationsNeededFor(phi)) {
		return Quantile{}, false
	}
	v, err := quantileOfRates(sig, phi, rates)
	if err != nil || math.IsNaN(v.Value) {
		return Quantile{}, false
	}
	return v, true
}

// observationsNeededFor is how many observations a window must hold for
// its phi-quantile to be a number: at least one above it, 1 ÷ (1 − phi).
// A p99 over 40 requests is their slowest, not a p99: at a low request
// rate it swung with each long request and, read against the SLO, paged
// (KneewatchPastKnee) a replica at 0.84× its knee whose SLO held. 100 is
// also what the sweep and the bench's ground truth judge a p99 over
// (knee.MinWindowRequests).
func observationsNeededFor(phi float64) float64 {
	return math.Round(1 / (1 - phi))
}

// observationsIn is how many observations the window's bucket rates
// stand for: the +Inf bucket's rate over the window's width, as
// increase() would count them (NaN without a +Inf bucket).
func observationsIn(w *Window, rates []Bucket) float64 {
	last := rates[len(rates)-1]
	if !math.IsInf(last.UpperBound, +1) {
		return math.NaN()
	}
	return last.Count * w.width.Seconds()
}

// tpotSignal picks the per-request TPOT histogram when the engine has one
// (vLLM V1, TGI), else the per-token inter-token latency (close for TPOT's
// mean, coarser for its tail).
func tpotSignal(w *Window) Signal {
	if _, ok := latest(w).Histogram(SignalTPOT); ok {
		return SignalTPOT
	}
	return SignalITL
}

func latest(w *Window) Snapshot {
	s, _ := w.Latest()
	return s
}

// attainmentOf is the share of the window's requests within threshold as the
// buckets support it: exact when the threshold is a bucket edge, else the
// share up to the edge above it (Attainment.Upper), never an interpolation
// inside the bucket. Interpolating assumes requests spread evenly over the
// bucket; at light load they bunch at its low end, and a vLLM replica whose
// every TPOT was 10.5 ms read 0.867 against a 23 ms SLO (bucket (0.01,
// 0.025]) and paged at 20% of its knee. The bound errs the other way only
// for requests inside that one bucket, which startup warnings name.
func attainmentOf(sig Signal, threshold float64, rates []Bucket) float64 {
	if math.IsNaN(threshold) || math.IsInf(threshold, 0) {
		return knee.Unknown()
	}
	a, err := attainmentOfRates(sig, threshold, rates)
	if err != nil || math.IsNaN(a.Upper) {
		return knee.Unknown()
	}
	return a.Upper
}

// SLOCounters accumulates, across scrapes, how many requests a replica
// finished and how many met each SLO (as the buckets support it: up to the
// bucket edge at or above the threshold, see attainment), so burn-rate rules can take rate()
// over hours without kneewatch keeping hours of snapshots. Each scrape adds
// the histogram's increase since the previous scrape (a decrease is a
// counter reset: the new value is the increase).
//
// A delta that is not finite (a NaN or +Inf _sum for one scrape) is
// skipped, not added: once added, the exported sum would stay NaN for good
// after the upstream recovered.
type SLOCounters struct {
	prev map[Signal]Histogram
	// Seen is set once a TTFT histogram has been read: before, the counts
	// are unknown, not zero.
	Seen     bool
	Total    float64 // requests, from the TTFT histogram's count
	GoodTTFT float64
	GoodTPOT float64
	// Observation counts and sums of the TTFT and TPOT histograms, for the
	// exported summaries' _count and _sum.
	SumTTFT, CountTPOT, SumTPOT float64
	// tpotShare is the share of TPOT observations within the threshold in
	// the last interval that had any (see Add).
	tpotShare      float64
	tpotShareKnown bool
}

// Add counts the requests of s since the previous Add against slo (a nil
// slo counts nothing). The zero SLOCounters is ready to use.
func (c *SLOCounters) Add(s Snapshot, slo *knee.SLO) {
	if slo == nil {
		return
	}
	if c.prev == nil {
		c.prev = map[Signal]Histogram{}
	}
	if _, ok := s.Histogram(SignalTTFT); ok {
		c.Seen = true
	}
	ttft, ttftOK := c.delta(s, SignalTTFT)
	// An interval that would take the total past the largest float (a
	// count of 1e308 from a broken upstream) is not counted: exported, the
	// counter would read +Inf.
	ttftOK = ttftOK && knee.Known(c.Total+ttft.Count)
	if ttftOK {
		c.Total += ttft.Count
		c.SumTTFT = addIncrease(c.SumTTFT, ttft.Sum)
		if _, frac := bucketShareBounds(slo.TTFT.Seconds(), ttft.Buckets); !math.IsNaN(frac) {
			c.GoodTTFT += frac * ttft.Count
		}
	}
	tpotSig := SignalTPOT
	if _, ok := s.Histogram(tpotSig); !ok {
		tpotSig = SignalITL
	}
	tpot, ok := c.delta(s, tpotSig)
	if !ok || !knee.Known(c.CountTPOT+tpot.Count) {
		return
	}
	c.CountTPOT += tpot.Count
	c.SumTPOT = addIncrease(c.SumTPOT, tpot.Sum)
	_, frac := bucketShareBounds(slo.TPOT.Seconds(), tpot.Buckets)
	switch {
	case !math.IsNaN(frac):
		c.tpotShare, c.tpotShareKnown = frac, true
	case c.tpotShareKnown:
		// No request finished this interval (long outputs at a low rate):
		// the last interval's share stands for the requests that started.
		frac = c.tpotShare
	default:
		// None has finished yet: nothing shows a miss.
		frac = 1
	}
	// Good TPOT requests are the interval's share of TPOT observations
	// within the threshold times the requests Total counted (those of the
	// TTFT histogram), so good ≤ total holds per interval and total − good
	// counts only requests that missed. Counting the TPOT histogram's own
	// observations would not: it counts a request when it finishes, the
	// TTFT histogram when its first token comes, and while load rises (or
	// outputs are long) the two can differ by more than the error budget
	// over a short window: a replica keeping its SLO read as missing it
	// (KneewatchPastKnee counts the missing requests over one minute). A
	// per-token ITL histogram counts tokens,
	// not requests: its share of good intervals stands in alike.
	if !ttftOK {
		return
	}
	c.GoodTPOT += frac * ttft.Count
}

// delta returns the histogram's increase since the previous call and
// remembers the current value. The first call only remembers.
func (c *SLOCounters) delta(s Snapshot, sig Signal) (Histogram, bool) {
	cur, ok := s.Histogram(sig)
	if !ok {
		return Histogram{}, false
	}
	prev, had := c.prev[sig]
	c.prev[sig] = cur
	if !had {
		return Histogram{}, false
	}
	d := Histogram{Count: cur.Count - prev.Count, Sum: cur.Sum - prev.Sum}
	if d.Count < 0 || len(cur.Buckets) != len(prev.Buckets) {
		d = cur // reset or new bucket layout: everything since is new
	} else {
		d.Buckets = make([]Bucket, len(cur.Buckets))
		for i, b := range cur.Buckets {
			if b.UpperBound != prev.Buckets[i].UpperBound || b.Count < prev.Buckets[i].Count {
				d = cur
				break
			}
			d.Buckets[i] = Bucket{UpperBound: b.UpperBound, Count: b.Count - prev.Buckets[i].Count}
		}
	}
	return d, true
}

// addIncrease adds d to sum unless d is NaN, infinite or negative, or the
// sum would overflow. The sums are exported as the _sum of summaries,
// which Prometheus reads as counters: a sum that falls (an upstream _sum
// that went down while its count went up) reads as a restart, and a rate
// over it as everything summed so far.
func addIncrease(sum, d float64) float64 {
	if !(d >= 0) || !knee.Known(sum+d) {
		return sum
	}
	return sum + d
}
