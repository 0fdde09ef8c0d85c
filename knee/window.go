package knee

import (
	"slices"
	"sort"
	"time"
)

// LatencyEvent is one request's latency, stamped with the moment it became
// known: its first token for TTFT, its end for TPOT.
type LatencyEvent struct {
	At      time.Time
	Seconds float64
}

// A windowed percentile is taken over at least MinWindowRequests requests:
// when the window holds fewer (a low-rate deployment: long-context replicas
// finish a request every few seconds), it reaches further back, up to
// MaxWindowStretch. A p99 over a couple of dozen requests is their maximum,
// one unlucky request; over 100 it is a tail. With fewer than
// MinWindowRequests even then, the SLO is not judged (unknown).
const (
	MinWindowRequests = 100
	MaxWindowStretch  = 10 * time.Minute
	// DefaultSLOWindow is the window an SLO percentile is judged over when
	// asking whether a load kept the SLO: short enough that a burst of bad
	// requests shows, as it would on an on-call's dashboard.
	DefaultSLOWindow = 2 * time.Minute
)

// WindowedQuantile is the Q-quantile of the events in (at − Width, at], or
// of the last MinWindowRequests events when the window holds fewer and they
// all lie within MaxWindowStretch. Events must be in time order. Not safe
// for concurrent use (it reuses a buffer).
type WindowedQuantile struct {
	Events []LatencyEvent
	Width  time.Duration
	Q      float64
	// MaxStretch bounds how far back the window reaches for
	// MinWindowRequests events: 0 means MaxWindowStretch; a negative value
	// means no bound (a ground truth that must judge every moment).
	MaxStretch time.Duration
	buf        []float64
}

// At is the windowed quantile at the given moment, or unknown.
func (w *WindowedQuantile) At(at time.Time) float64 {
	from := at.Add(-w.Width)
	lo := sort.Search(len(w.Events), func(i int) bool { return w.Events[i].At.After(from) })
	hi := sort.Search(len(w.Events), func(i int) bool { return w.Events[i].At.After(at) })
	if hi-lo < MinWindowRequests {
		lo = hi - MinWindowRequests
		if lo < 0 || (w.MaxStretch >= 0 && !w.Events[lo].At.After(at.Add(-w.maxStretch()))) {
			return Unknown()
		}
	}
	w.buf = w.buf[:0]
	for _, e := range w.Events[lo:hi] {
		w.buf = append(w.buf, e.Seconds)
	}
	return QuantileOf(w.buf, w.Q)
}

func (w *WindowedQuantile) maxStretch() time.Duration {
	if w.MaxStretch == 0 {
		return MaxWindowStretch
	}
	return w.MaxStretch
}

// BreachedBy reports whether a TTFT or a TPOT at the SLO's quantile is over
// its threshold (an unknown one is no breach).
func (s SLO) BreachedBy(ttft, tpot float64) bool {
	return (Known(ttft) && ttft > s.TTFT.Seconds()) || (Known(tpot) && tpot > s.TPOT.Seconds())
}

// SLOBreachedAt reports whether either windowed percentile is over its
// threshold of slo at the given moment (see SLO.BreachedBy).
func SLOBreachedAt(ttft, tpot *WindowedQuantile, slo SLO, at time.Time) bool {
	return slo.BreachedBy(ttft.At(at), tpot.At(at))
}

// KeptSLO reports whether the SLO held at every tick from from to to (both
// included) every step, its percentiles taken over windows of width that
// reach back without bound for MinWindowRequests requests, and at least one
// tick could be judged: the test a steady load must pass to count as under
// the knee when traffic arrives open-loop. A trial none of whose ticks
// could be judged did not keep the SLO: with windows bounded at 10 minutes
// a replica finishing 0.15 requests a second never held 100 requests in
// one, and its trial passed while its queue thrashed the KV cache. Events
// must be in time order.
func KeptSLO(ttft, tpot []LatencyEvent, slo SLO, width time.Duration, from, to time.Time, step time.Duration) bool {
	w := WalkSLO(ttft, tpot, slo, width, -1, from, to, step)
	return !w.Breached && w.Judged > 0
}

// SLOWalk is the windowed SLO judged tick by tick: how many ticks there
// were and could be judged (both percentiles known), and the first breach.
type SLOWalk struct {
	Ticks, Judged int
	Breached      bool
	// At is the first breached tick; TTFT and TPOT the windowed
	// percentiles there, in seconds.
	At         time.Time
	TTFT, TPOT float64
}

// WalkSLO judges the SLO at every tick from from to to (both included),
// each step, over windows of width that reach back as far as maxStretch for
// MinWindowRequests events (0 means MaxWindowStretch, negative no bound).
// Open-loop trials walk with no bound, so a trial sized to hold enough
// requests is judged at every tick (see KeptSLO).
func WalkSLO(ttft, tpot []LatencyEvent, slo SLO, width, maxStretch time.Duration, from, to time.Time, step time.Duration) SLOWalk {
	tw := &WindowedQuantile{Events: ttft, Width: width, Q: slo.Quantile, MaxStretch: maxStretch}
	pw := &WindowedQuantile{Events: tpot, Width: width, Q: slo.Quantile, MaxStretch: maxStretch}
	var w SLOWalk
	for at := from; !at.After(to); at = at.Add(step) {
		w.Ticks++
		p, q := tw.At(at), pw.At(at)
		if Known(p) && Known(q) {
			w.Judged++
		}
		if !w.Breached && slo.BreachedBy(p, q) {
			w.Breached, w.At, w.TTFT, w.TPOT = true, at, p, q
		}
	}
	return w
}

// TTFTByDeadline stamps each TTFT event with the moment its verdict was
// known: a request over the threshold missed the SLO from its arrival +
// threshold, not from its late first token; and a request still waiting
// for its first token at end, longer than threshold after it arrived
// (waiting holds the arrivals of those that never got one), is a known
// miss from then too, with its TTFT taken as end − arrival (a lower bound).
// firsts are stamped at the first token, with Seconds the TTFT; the result
// is in time order.
//
// Judged by first tokens alone, a queue that grows through a trial hides
// its own violators: the longer a request waits, the later (or never) it
// is counted. A Poisson trial at the rate a long-context replica
// saturates at kept a 20 s TTFT SLO while its queue grew to hundreds of
// requests and its output fell to a fifth of the offered load, because
// the requests stuck in the queue at the trial's end never reached a
// window; its "knee" then put 64 requests in flight where the replica
// breaks at 27.
func TTFTByDeadline(firsts []LatencyEvent, waiting []time.Time, end time.Time, threshold time.Duration) []LatencyEvent {
	limit := threshold.Seconds()
	out := make([]LatencyEvent, 0, len(firsts)+len(waiting))
	for _, e := range firsts {
		if e.Seconds > limit {
			e.At = e.At.Add(-time.Duration((e.Seconds - limit) * float64(time.Second)))
		}
		out = append(out, e)
	}
	for _, arrived := range waiting {
		if waited := end.Sub(arrived); waited > threshold {
			out = append(out, LatencyEvent{At: arrived.Add(threshold), Seconds: waited.Seconds()})
		}
	}
	slices.SortStableFunc(out, func(a, b LatencyEvent) int { return a.At.Compare(b.At) })
	return out
}
