package collector

import (
	"math"
	"time"

	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/probe"
)

// Observe turns a replica's window into the knee package's Observation at
// time at. Anything the window cannot compute stays unknown (NaN): a missing
// signal, too few samples for a rate, an empty histogram window. slo gives
// the thresholds attainment is measured against; it may be nil (no profile),
// and then attainment stays unknown.
func Observe(w *Window, at time.Time, slo *knee.SLO) knee.Observation {
	o := knee.NewObservation()
	value := func(v float64, err error) float64 {
		if err != nil {
			return knee.Unknown()
		}
		return v
	}
	o.Running = value(w.GaugeMean(at, SignalRunning))
	o.Waiting = value(w.GaugeMean(at, SignalWaiting))
	o.InFlight = value(w.GaugeMean(at, SignalRunning, SignalWaiting))
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
		o.MeanPromptTokens = value(w.CounterRatio(SignalPromptTokens, finished, at))
		o.MeanOutputTokens = value(w.CounterRatio(SignalGenerationTokens, finished, at))
		o.MixRequests = value(w.Increase(finished, at))
	}

	o.TTFT = quantiles(w, SignalTTFT, at)
	tpot := tpotSignal(w)
	o.TPOT = quantiles(w, tpot, at)
	if slo != nil {
		o.TTFTAttainment = attainment(w, SignalTTFT, slo.TTFT.Seconds(), at)
		o.TPOTAttainment = attainment(w, tpot, slo.TPOT.Seconds(), at)
	}
	return o
}

// excludeProbeTraffic takes the replica's own probes out of the request mix
// the drift is measured on: the window's finished requests and tokens less
// what the probes that finished in the window sent and received. The
// engine counts a probe like any request, so without this an idle replica
// whose window held one 16-token probe read a mean output of 16 tokens, a
// drift of 0.92 from a 200-token profile. With no requests but the probes
// left, the means are unknown (and MixRequests 0: no drift).
func excludeProbeTraffic(o *knee.Observation, w *Window, at time.Time, t probe.Traffic) {
	if t.Requests == 0 || !knee.Known(o.MixRequests) {
		return
	}
	requests, errR := w.Increase(SignalRequestsFinished, at)
	prompt, errP := w.Increase(SignalPromptTokens, at)
	output, errO := w.Increase(SignalGenerationTokens, at)
	if errR != nil {
		return
	}
	n := requests - float64(t.Requests)
	o.MixRequests = max(n, 0)
	mean := func(total float64, err error, probes float64) float64 {
		if err != nil || n < 1 {
			return knee.Unknown()
		}
		return max(total-probes, 0) / n
	}
	o.MeanPromptTokens = mean(prompt, errP, t.PromptTokens)
	o.MeanOutputTokens = mean(output, errO, t.OutputTokens)
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

func quantiles(w *Window, sig Signal, at time.Time) knee.LatencyQuantiles {
	q := func(phi float64) float64 {
		v, err := w.HistogramQuantile(sig, phi, at)
		if err != nil || math.IsNaN(v.Value) {
			return knee.Unknown()
		}
		return v.Value
	}
	return knee.LatencyQuantiles{P50: q(0.5), P90: q(0.9), P99: q(0.99)}
}

// attainment is the share of the window's requests within threshold as the
// buckets support it: exact when the threshold is a bucket edge, else the
// share up to the edge above it (Attainment.Upper), never an interpolation
// inside the bucket. Interpolating assumes requests spread evenly over the
// bucket; at light load they bunch at its low end, and a vLLM replica whose
// every TPOT was 10.5 ms read 0.867 against a 23 ms SLO (bucket (0.01,
// 0.025]) and paged at 20% of its knee. The bound errs the other way only
// for requests inside that one bucket, which startup warnings name.
func attainment(w *Window, sig Signal, threshold float64, at time.Time) float64 {
	a, err := w.SLOAttainment(sig, threshold, at)
	if err != nil || math.IsNaN(a.Upper) {
		return knee.Unknown()
	}
	return a.Upper
}

// sloCounters accumulates, across scrapes, how many requests a replica
// finished and how many met each SLO (as the buckets support it: up to the
// bucket edge at or above the threshold, see attainment), so burn-rate rules can take rate()
// over hours without kneewatch keeping hours of snapshots. Each scrape adds
// the histogram's increase since the previous scrape (a decrease is a
// counter reset: the new value is the increase).
//
// A delta that is not finite (a NaN or +Inf _sum for one scrape) is
// skipped, not added: once added, the exported sum would stay NaN for good
// after the upstream recovered.
type sloCounters struct {
	prev map[Signal]Histogram
	// seen is set once a TTFT histogram has been read: before, the counts
	// are unknown, not zero.
	seen     bool
	total    float64 // requests, from the TTFT histogram's count
	goodTTFT float64
	goodTPOT float64
	// Observation counts and sums of the TTFT and TPOT histograms, for the
	// exported summaries' _count and _sum.
	sumTTFT, countTPOT, sumTPOT float64
}

func (c *sloCounters) add(s Snapshot, slo *knee.SLO) {
	if slo == nil {
		return
	}
	if c.prev == nil {
		c.prev = map[Signal]Histogram{}
	}
	if _, ok := s.Histogram(SignalTTFT); ok {
		c.seen = true
	}
	ttft, ttftOK := c.delta(s, SignalTTFT)
	if ttftOK {
		c.total += ttft.Count
		c.sumTTFT = addFinite(c.sumTTFT, ttft.Sum)
		if _, frac := bucketShareBounds(slo.TTFT.Seconds(), ttft.Buckets); !math.IsNaN(frac) {
			c.goodTTFT += frac * ttft.Count
		}
	}
	tpotSig := SignalTPOT
	if _, ok := s.Histogram(tpotSig); !ok {
		tpotSig = SignalITL
	}
	tpot, ok := c.delta(s, tpotSig)
	if !ok {
		return
	}
	c.countTPOT += tpot.Count
	c.sumTPOT = addFinite(c.sumTPOT, tpot.Sum)
	_, frac := bucketShareBounds(slo.TPOT.Seconds(), tpot.Buckets)
	if math.IsNaN(frac) {
		return
	}
	// A per-token ITL histogram counts tokens, not requests: its share of
	// good intervals stands in for the share of good requests.
	n := tpot.Count
	if tpotSig == SignalITL {
		if !ttftOK {
			return
		}
		n = ttft.Count
	}
	c.goodTPOT += frac * n
}

// delta returns the histogram's increase since the previous call and
// remembers the current value. The first call only remembers.
func (c *sloCounters) delta(s Snapshot, sig Signal) (Histogram, bool) {
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

// addFinite adds d to sum unless d is NaN or infinite.
func addFinite(sum, d float64) float64 {
	if math.IsNaN(d) || math.IsInf(d, 0) {
		return sum
	}
	return sum + d
}
