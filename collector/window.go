package collector

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Errors the window's estimates wrap, for errors.Is. An estimate that
// cannot be computed returns one of these instead of a number.
var (
	ErrMissingSignal  = errors.New("signal not present in the window")
	ErrTooFewSamples  = errors.New("too few samples in the window")
	ErrNoObservations = errors.New("no observations in the window")
)

// Window keeps one replica's recent snapshots and computes windowed values
// from them with PromQL's semantics. Every method taking at looks at the
// snapshots with at−width < Time ≤ at, the range a PromQL selector [width]
// evaluated at at selects (left-open since Prometheus 3.0), with times
// truncated to milliseconds as Prometheus stores them.
//
// Rate and Increase are Prometheus 3.x rate() and increase() on float
// samples, extrapolation included (not the unextrapolated "delta of the
// samples" some tools compute), without start timestamps (Prometheus's
// default: created-timestamp handling off). HistogramQuantile and
// SLOAttainment are histogram_quantile and histogram_fraction over those
// per-bucket rates. window_promql_test.go checks all of them against
// Prometheus's own engine.
//
// A Window is not safe for concurrent use; one evaluation loop owns it.
type Window struct {
	width    time.Duration
	capacity int
	ring     []Snapshot
	head     int // index of the oldest snapshot
	n        int
	// scratch holds buffers an evaluation's many reads reuse, each valid
	// until the next call that fills it (see selected, counterPoints and
	// bucketRates): an evaluation reads the window some fifteen times.
	scratch struct {
		snaps   []*Snapshot
		pts     []point
		backing []point
		bounds  []float64
		series  [][]point
	}
}

// NewWindow returns a window of the given width holding at most capacity
// snapshots. capacity must cover width at the scrape interval, or rates are
// computed over fewer samples than Prometheus would see.
func NewWindow(width time.Duration, capacity int) (*Window, error) {
	if width < time.Millisecond {
		return nil, fmt.Errorf("window width %s is shorter than 1ms", width)
	}
	if capacity < 2 {
		return nil, fmt.Errorf("window capacity %d: need at least 2 snapshots for a rate", capacity)
	}
	return &Window{width: width, capacity: capacity, ring: make([]Snapshot, capacity)}, nil
}

// Width returns the window's duration.
func (w *Window) Width() time.Duration { return w.width }

// Len returns how many snapshots the window holds.
func (w *Window) Len() int { return w.n }

// Add appends a snapshot, which must be newer than the latest one (at
// millisecond precision). It drops snapshots that no evaluation at or after
// s.Time can select, and the oldest when the window is full. The window
// keeps s's maps: do not modify them afterwards.
func (w *Window) Add(s Snapshot) error {
	if s.Time.IsZero() {
		return errors.New("snapshot has no time")
	}
	if last, ok := w.Latest(); ok && s.Time.UnixMilli() <= last.Time.UnixMilli() {
		return fmt.Errorf("snapshot at %s is not after the latest at %s", s.Time.Format(time.RFC3339Nano), last.Time.Format(time.RFC3339Nano))
	}
	if w.n == w.capacity {
		w.ring[w.head] = Snapshot{}
		w.head = (w.head + 1) % w.capacity
		w.n--
	}
	w.ring[(w.head+w.n)%w.capacity] = s
	w.n++
	oldest := s.Time.UnixMilli() - w.width.Milliseconds()
	for w.n > 0 && w.ring[w.head].Time.UnixMilli() <= oldest {
		w.ring[w.head] = Snapshot{}
		w.head = (w.head + 1) % w.capacity
		w.n--
	}
	return nil
}

// Latest returns the newest snapshot.
func (w *Window) Latest() (Snapshot, bool) {
	if w.n == 0 {
		return Snapshot{}, false
	}
	return w.ring[(w.head+w.n-1)%w.capacity], true
}

// at returns the snapshots selected at evaluation time at, oldest first,
// and the range bounds in milliseconds.
func (w *Window) selected(at time.Time) (snaps []*Snapshot, rangeStart, rangeEnd int64) {
	rangeEnd = at.UnixMilli()
	rangeStart = rangeEnd - w.width.Milliseconds()
	snaps = w.scratch.snaps[:0]
	defer func() { w.scratch.snaps = snaps }()
	for i := 0; i < w.n; i++ {
		s := &w.ring[(w.head+i)%w.capacity]
		if t := s.Time.UnixMilli(); t > rangeStart && t <= rangeEnd {
			snaps = append(snaps, s)
		}
	}
	return snaps, rangeStart, rangeEnd
}

// point is one sample: a millisecond timestamp and a value.
type point struct {
	t int64
	v float64
}

func (w *Window) counterPoints(sig Signal, at time.Time) ([]point, int64, int64, error) {
	if sig.Kind() != KindCounter {
		return nil, 0, 0, fmt.Errorf("%s is not a counter", sig)
	}
	snaps, start, end := w.selected(at)
	// Valid until the next counterPoints: every caller is done with it by then.
	pts := w.scratch.pts[:0]
	for _, s := range snaps {
		if v, ok := s.Counters[sig]; ok {
			pts = append(pts, point{s.Time.UnixMilli(), v})
		}
	}
	w.scratch.pts = pts
	if len(pts) == 0 {
		return nil, 0, 0, fmt.Errorf("%s: %w", sig, ErrMissingSignal)
	}
	return pts, start, end, nil
}

// Increase is PromQL's increase(x[width]) evaluated at at: the counter's
// growth over the window, counter resets corrected, extrapolated to the
// window's edges as Prometheus does (see extrapolatedDelta).
func (w *Window) Increase(sig Signal, at time.Time) (float64, error) {
	pts, start, end, err := w.counterPoints(sig, at)
	if err != nil {
		return 0, err
	}
	d, ok := extrapolatedDelta(pts, start, end, true)
	if !ok {
		return 0, fmt.Errorf("increase of %s: %w (have %d, need 2)", sig, ErrTooFewSamples, len(pts))
	}
	return d, nil
}

// Rate is PromQL's rate(x[width]) evaluated at at: Increase divided by the
// window width in seconds (not by the span between the samples).
func (w *Window) Rate(sig Signal, at time.Time) (float64, error) {
	d, err := w.Increase(sig, at)
	if err != nil {
		return 0, err
	}
	return d / w.width.Seconds(), nil
}

// SampledRate is the counter's rate over the span its samples actually
// cover. While the samples reach back to the window's start it is Rate,
// PromQL's rate(). When they start well inside the window (kneewatch just
// started, the replica just appeared, or its engine was unreachable), the
// increase is divided by the span sampled, not the window's width: PromQL
// would extrapolate only half a scrape interval towards the start and
// divide by the full width, reading a steady replica's throughput as a
// fraction of what it is.
func (w *Window) SampledRate(sig Signal, at time.Time) (float64, error) {
	pts, start, _, err := w.counterPoints(sig, at)
	if err != nil {
		return 0, err
	}
	if len(pts) < 2 {
		return 0, fmt.Errorf("rate of %s: %w (have %d, need 2)", sig, ErrTooFewSamples, len(pts))
	}
	first, last := pts[0], pts[len(pts)-1]
	sampled := float64(last.t-first.t) / 1000
	avgStep := sampled / float64(len(pts)-1)
	if float64(first.t-start)/1000 < avgStep*1.1 {
		return w.Rate(sig, at)
	}
	delta := last.v - first.v
	for i := 1; i < len(pts); i++ {
		if pts[i].v < pts[i-1].v {
			delta += pts[i-1].v
		}
	}
	return delta / sampled, nil
}

// WarmedUp reports whether the snapshots selected at at span at least a
// quarter of the window (and are at least three): until then means and
// rates rest on too few scrapes to judge a replica by.
func (w *Window) WarmedUp(at time.Time) bool {
	snaps, _, _ := w.selected(at)
	if len(snaps) < 3 {
		return false
	}
	span := snaps[len(snaps)-1].Time.Sub(snaps[0].Time)
	return span >= w.width/4
}

// CounterRatio is increase(num[width]) / increase(den[width]): an average
// per event, such as seconds per request from cumulative microsecond
// counters. A denominator that did not grow gives ErrNoObservations.
func (w *Window) CounterRatio(num, den Signal, at time.Time) (float64, error) {
	n, err := w.Increase(num, at)
	if err != nil {
		return 0, err
	}
	d, err := w.Increase(den, at)
	if err != nil {
		return 0, err
	}
	if d == 0 {
		return 0, fmt.Errorf("%s per %s: %w", num, den, ErrNoObservations)
	}
	return n / d, nil
}

// gaugePoints returns, per selected snapshot carrying every signal, the sum
// of the signals (e.g. running + waiting = in-flight requests).
func (w *Window) gaugePoints(at time.Time, sigs []Signal) ([]point, error) {
	if len(sigs) == 0 {
		return nil, errors.New("no signal given")
	}
	for _, sig := range sigs {
		if sig.Kind() != KindGauge {
			return nil, fmt.Errorf("%s is not a gauge", sig)
		}
	}
	snaps, _, _ := w.selected(at)
	pts := make([]point, 0, len(snaps))
next:
	for _, s := range snaps {
		var sum float64
		for _, sig := range sigs {
			v, ok := s.Gauges[sig]
			if !ok {
				continue next
			}
			sum += v
		}
		pts = append(pts, point{s.Time.UnixMilli(), sum})
	}
	if len(pts) == 0 {
		return nil, fmt.Errorf("%v: %w", sigs, ErrMissingSignal)
	}
	return pts, nil
}

// gaugeValues are the window's samples of one gauge, oldest first; nil
// when it has none. A sample that is no count (negative, NaN, ±Inf) is
// kept as it is: the knee package then reads the mean alone (see
// knee.Profile.expectedOutput).
func (w *Window) gaugeValues(at time.Time, sig Signal) []float64 {
	pts, err := w.gaugePoints(at, []Signal{sig})
	if err != nil {
		return nil
	}
	vs := make([]float64, len(pts))
	for i, p := range pts {
		vs[i] = p.v
	}
	return vs
}

// GaugeMean is PromQL's avg_over_time of the sum of the given gauges: the
// mean over the snapshots in the window that carry all of them.
func (w *Window) GaugeMean(at time.Time, sigs ...Signal) (float64, error) {
	pts, err := w.gaugePoints(at, sigs)
	if err != nil {
		return 0, err
	}
	var sum, c float64
	for _, p := range pts {
		sum, c = kahanAdd(p.v, sum, c)
	}
	return (sum + c) / float64(len(pts)), nil
}

// GaugeSlope is PromQL's deriv() of the sum of the given gauges: the
// least-squares slope per second over the window, e.g. queue growth.
func (w *Window) GaugeSlope(at time.Time, sigs ...Signal) (float64, error) {
	pts, err := w.gaugePoints(at, sigs)
	if err != nil {
		return 0, err
	}
	if len(pts) < 2 {
		return 0, fmt.Errorf("slope of %v: %w (have %d, need 2)", sigs, ErrTooFewSamples, len(pts))
	}
	return leastSquaresSlope(pts), nil
}

// extrapolatedDelta is the core of PromQL's rate() and increase() for float
// samples (Prometheus ≥ 3.0, without start timestamps). pts are the samples
// in (rangeStart, rangeEnd], oldest first. It needs two samples. For
// counters, a drop between two samples is a reset: the value before the
// drop is added back. The delta between the first and last sample is then
// extrapolated towards each window edge: all the way if the gap to the edge
// is less than 1.1× the average sample spacing, otherwise by half a spacing
// (the series is assumed to start or end there). For counters the
// extrapolation to the start never goes past the point where the counter
// would have been zero.
func extrapolatedDelta(pts []point, rangeStart, rangeEnd int64, isCounter bool) (float64, bool) {
	if len(pts) < 2 {
		return 0, false
	}
	first, last := pts[0], pts[len(pts)-1]
	delta := last.v - first.v
	if isCounter {
		for i := 1; i < len(pts); i++ {
			if pts[i].v < pts[i-1].v {
				delta += pts[i-1].v
			}
		}
	}
	toStart := float64(first.t-rangeStart) / 1000
	toEnd := float64(rangeEnd-last.t) / 1000
	sampled := float64(last.t-first.t) / 1000
	avgStep := sampled / float64(len(pts)-1)
	threshold := avgStep * 1.1
	if toStart >= threshold {
		toStart = avgStep / 2
	}
	if isCounter && delta > 0 && first.v >= 0 {
		if toZero := sampled * (first.v / delta); toZero < toStart {
			toStart = toZero
		}
	}
	if toEnd >= threshold {
		toEnd = avgStep / 2
	}
	factor := 1.0
	if sampled != 0 {
		factor = (sampled + toStart + toEnd) / sampled
	}
	return delta * factor, true
}

// kahanAdd adds v to the compensated sum (sum, c).
func kahanAdd(v, sum, c float64) (float64, float64) {
	t := sum + v
	switch {
	case math.IsInf(t, 0):
		c = 0
	case math.Abs(sum) >= math.Abs(v):
		c += (sum - t) + v
	default:
		c += (v - t) + sum
	}
	return t, c
}

// leastSquaresSlope fits v = a + b·t (t in seconds relative to the first
// sample, for precision) and returns b. A constant series has slope 0.
func leastSquaresSlope(pts []point) float64 {
	var n, sumX, cX, sumY, cY, sumXY, cXY, sumX2, cX2 float64
	constant := true
	for i, p := range pts {
		if i > 0 && p.v != pts[0].v {
			constant = false
		}
		x := float64(p.t-pts[0].t) / 1000
		n++
		sumX, cX = kahanAdd(x, sumX, cX)
		sumY, cY = kahanAdd(p.v, sumY, cY)
		sumXY, cXY = kahanAdd(x*p.v, sumXY, cXY)
		sumX2, cX2 = kahanAdd(x*x, sumX2, cX2)
	}
	if constant {
		return 0
	}
	sumX += cX
	sumY += cY
	sumXY += cXY
	sumX2 += cX2
	return (sumXY - sumX*sumY/n) / (sumX2 - sumX*sumX/n)
}
