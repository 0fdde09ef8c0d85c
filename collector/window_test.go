package collector

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/kneewatch/kneewatch/knee"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func sec(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

// snap builds a snapshot at t0+s seconds with the given signals.
func snap(s float64, gauges, counters map[Signal]float64, hists map[Signal]Histogram) Snapshot {
	out := NewSnapshot("test")
	out.Time = sec(s)
	for k, v := range gauges {
		out.Gauges[k] = v
	}
	for k, v := range counters {
		out.Counters[k] = v
	}
	for k, v := range hists {
		out.Histograms[k] = v
	}
	return out
}

// hist builds a cumulative histogram from bounds (without +Inf) and
// cumulative counts (with the +Inf count last).
func hist(bounds []float64, cumulative ...float64) Histogram {
	h := Histogram{Sum: math.NaN(), Count: cumulative[len(cumulative)-1]}
	for i, b := range append(append([]float64(nil), bounds...), math.Inf(+1)) {
		h.Buckets = append(h.Buckets, Bucket{UpperBound: b, Count: cumulative[i]})
	}
	return h
}

func mustWindow(t *testing.T, width time.Duration, capacity int, snaps ...Snapshot) *Window {
	t.Helper()
	w, err := NewWindow(width, capacity)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range snaps {
		if err := w.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

func TestNewWindowRejectsUnusableSizes(t *testing.T) {
	if _, err := NewWindow(0, 10); err == nil {
		t.Error("zero width accepted")
	}
	if _, err := NewWindow(time.Minute, 1); err == nil || !strings.Contains(err.Error(), "at least 2") {
		t.Errorf("capacity 1: err = %v", err)
	}
}

func TestWindowAdd(t *testing.T) {
	t.Run("an older or equal time is refused", func(t *testing.T) {
		w := mustWindow(t, time.Minute, 4, snap(10, nil, nil, nil))
		if err := w.Add(snap(10, nil, nil, nil)); err == nil {
			t.Error("same time accepted")
		}
		if err := w.Add(snap(5, nil, nil, nil)); err == nil {
			t.Error("older time accepted")
		}
		if err := w.Add(Snapshot{}); err == nil {
			t.Error("zero time accepted")
		}
	})
	t.Run("snapshots older than the width are dropped", func(t *testing.T) {
		w := mustWindow(t, time.Minute, 10, snap(0, nil, nil, nil), snap(30, nil, nil, nil), snap(60, nil, nil, nil), snap(75, nil, nil, nil))
		if w.Len() != 3 {
			t.Errorf("len = %d, want 3 (t=0 is outside (0s,60s] once t=60 arrives)", w.Len())
		}
	})
	t.Run("the oldest snapshot goes when the ring is full", func(t *testing.T) {
		w := mustWindow(t, time.Hour, 3, snap(1, nil, nil, nil), snap(2, nil, nil, nil), snap(3, nil, nil, nil), snap(4, nil, nil, nil))
		latest, _ := w.Latest()
		if w.Len() != 3 || !latest.Time.Equal(sec(4)) {
			t.Errorf("len %d latest %v", w.Len(), latest.Time)
		}
		snaps, _, _ := w.selected(sec(4))
		if len(snaps) != 3 || !snaps[0].Time.Equal(sec(2)) {
			t.Errorf("selected %d, first at %v; want 3 from t=2", len(snaps), snaps[0].Time)
		}
	})
}

func TestCounterRateHandlesAResetLikePromQL(t *testing.T) {
	c := func(s, v float64) Snapshot { return snap(s, nil, map[Signal]float64{SignalGenerationTokens: v}, nil) }
	w := mustWindow(t, time.Minute, 10, c(10, 10), c(25, 20), c(40, 5), c(55, 15))
	// Worked by hand: growth 15−10 plus 20 lost at the reset = 25 over 45 s
	// of samples; 10 s to the window start (< 1.1 × 15 s spacing, and
	// before the counter's zero point 18 s back) and 5 s to the end are
	// extrapolated: 25 × 60/45.
	want := 25 * 60.0 / 45
	got, err := w.Increase(SignalGenerationTokens, sec(60))
	if err != nil || math.Abs(got-want) > 1e-12 {
		t.Errorf("Increase = %v, %v; want %v", got, err, want)
	}
	rate, err := w.Rate(SignalGenerationTokens, sec(60))
	if err != nil || math.Abs(rate-want/60) > 1e-12 {
		t.Errorf("Rate = %v, %v; want %v", rate, err, want/60)
	}
}

func TestUnknownInputsGiveErrorsNotNumbers(t *testing.T) {
	one := mustWindow(t, time.Minute, 10, snap(10, map[Signal]float64{SignalRunning: 1}, map[Signal]float64{SignalPromptTokens: 5},
		map[Signal]Histogram{SignalTTFT: hist([]float64{1}, 1, 2)}))
	flat := mustWindow(t, time.Minute, 10,
		snap(10, nil, map[Signal]float64{SignalRequestsFinished: 7, SignalE2ESecondsTotal: 3}, map[Signal]Histogram{SignalTTFT: hist([]float64{1}, 1, 2)}),
		snap(20, nil, map[Signal]float64{SignalRequestsFinished: 7, SignalE2ESecondsTotal: 3}, map[Signal]Histogram{SignalTTFT: hist([]float64{1}, 1, 2)}))
	tests := []struct {
		name   string
		call   func() error
		wantIs error
	}{
		{"a rate of a signal never scraped", func() error { _, err := one.Rate(SignalGenerationTokens, sec(10)); return err }, ErrMissingSignal},
		{"a rate from one sample", func() error { _, err := one.Rate(SignalPromptTokens, sec(10)); return err }, ErrTooFewSamples},
		{"a quantile from one sample", func() error { _, err := one.HistogramQuantile(SignalTTFT, 0.5, sec(10)); return err }, ErrTooFewSamples},
		{"a quantile of a histogram never scraped", func() error { _, err := one.HistogramQuantile(SignalE2E, 0.5, sec(10)); return err }, ErrMissingSignal},
		{"a quantile over a window without observations", func() error { _, err := flat.HistogramQuantile(SignalTTFT, 0.5, sec(20)); return err }, ErrNoObservations},
		{"an attainment over a window without observations", func() error { _, err := flat.SLOAttainment(SignalTTFT, 1, sec(20)); return err }, ErrNoObservations},
		{"a mean of a histogram without _sum", func() error { _, err := flat.HistogramMean(SignalTTFT, sec(20)); return err }, ErrTooFewSamples},
		{"a per-request average when no request finished", func() error {
			_, err := flat.CounterRatio(SignalE2ESecondsTotal, SignalRequestsFinished, sec(20))
			return err
		}, ErrNoObservations},
		{"a gauge mean of a gauge never scraped", func() error { _, err := one.GaugeMean(sec(10), SignalRunning, SignalWaiting); return err }, ErrMissingSignal},
		{"a slope from one sample", func() error { _, err := one.GaugeSlope(sec(10), SignalRunning); return err }, ErrTooFewSamples},
		{"a window evaluated after its snapshots aged out", func() error { _, err := one.GaugeMean(sec(100), SignalRunning); return err }, ErrMissingSignal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); !errors.Is(err, tt.wantIs) {
				t.Errorf("err = %v, want %v", err, tt.wantIs)
			}
		})
	}
	t.Run("a quantile outside 0..1 is refused", func(t *testing.T) {
		if _, err := flat.HistogramQuantile(SignalTTFT, 1.5, sec(20)); err == nil {
			t.Error("q=1.5 accepted")
		}
	})
	t.Run("a signal of the wrong kind is refused", func(t *testing.T) {
		if _, err := one.Rate(SignalRunning, sec(10)); err == nil || !strings.Contains(err.Error(), "not a counter") {
			t.Errorf("err = %v", err)
		}
	})
}

func TestGaugeMeanAndSlope(t *testing.T) {
	g := func(s, running, waiting float64) Snapshot {
		return snap(s, map[Signal]float64{SignalRunning: running, SignalWaiting: waiting}, nil, nil)
	}
	onlyRunning := snap(40, map[Signal]float64{SignalRunning: 100}, nil, nil)
	w := mustWindow(t, time.Minute, 10, g(10, 4, 0), g(25, 6, 4), onlyRunning, g(55, 10, 12))
	mean, err := w.GaugeMean(sec(60), SignalRunning, SignalWaiting)
	if err != nil || mean != (4+10+22)/3.0 {
		t.Errorf("mean in-flight = %v, %v; want 12 (the snapshot without waiting is skipped)", mean, err)
	}
	slope, err := w.GaugeSlope(sec(60), SignalWaiting)
	// waiting 0, 4, 12 at 10, 25, 55 s: least squares.
	wantSlope := leastSquaresSlope([]point{{10000, 0}, {25000, 4}, {55000, 12}})
	if err != nil || slope != wantSlope || wantSlope < 0.2 || wantSlope > 0.3 {
		t.Errorf("slope = %v, %v; want %v", slope, err, wantSlope)
	}
	flat, _ := mustWindow(t, time.Minute, 10, g(10, 3, 0), g(20, 3, 0)).GaugeSlope(sec(20), SignalRunning)
	if flat != 0 {
		t.Errorf("slope of a constant = %v, want 0", flat)
	}
}

func TestHistogramQuantileAndAttainment(t *testing.T) {
	bounds := []float64{0.1, 0.5, 1}
	// Between the scrapes: 10 observations ≤0.1, 20 in (0.1,0.5], 10 in
	// (0.5,1], 10 above 1. Scrapes 15 s apart inside a 30 s window starting
	// at the first scrape's counts, so extrapolation scales every bucket
	// alike and shares are exact.
	w := mustWindow(t, 30*time.Second, 10,
		snap(10, nil, nil, map[Signal]Histogram{SignalTTFT: hist(bounds, 0, 0, 0, 0)}),
		snap(25, nil, nil, map[Signal]Histogram{SignalTTFT: hist(bounds, 10, 30, 40, 50)}),
	)
	at := sec(25)
	tests := []struct {
		q    float64
		want Quantile
	}{
		{0.1, Quantile{Value: 0.05}},
		{0.2, Quantile{Value: 0.1}},
		{0.5, Quantile{Value: 0.1 + 0.4*(15.0/20)}},
		{0.7, Quantile{Value: 0.5 + 0.5*(5.0/10)}},
		{0.99, Quantile{Value: 1, AboveHighestBound: true}},
	}
	for _, tt := range tests {
		got, err := w.HistogramQuantile(SignalTTFT, tt.q, at)
		if err != nil || !cmp.Equal(got, tt.want, cmpopts.EquateApprox(1e-12, 0)) {
			t.Errorf("q%v = %+v, %v; want %+v", tt.q, got, err, tt.want)
		}
	}
	att := []struct {
		name      string
		threshold float64
		want      Attainment
	}{
		{"a threshold on a bucket edge is exact", 0.5, Attainment{Ratio: 30.0 / 50, Lower: 30.0 / 50, Upper: 30.0 / 50, Exact: true}},
		{"a threshold inside a bucket interpolates linearly, bounded by its edges", 0.3, Attainment{Ratio: (10 + 20*0.5) / 50.0, Lower: 10.0 / 50, Upper: 30.0 / 50}},
		{"a threshold below the first edge interpolates from zero", 0.05, Attainment{Ratio: 5.0 / 50, Lower: 0, Upper: 10.0 / 50}},
		{"a threshold above the highest finite edge counts only up to that edge, and cannot bound it from above", 5, Attainment{Ratio: 40.0 / 50, Lower: 40.0 / 50, Upper: 1}},
		{"the highest finite edge is exact", 1, Attainment{Ratio: 40.0 / 50, Lower: 40.0 / 50, Upper: 40.0 / 50, Exact: true}},
	}
	for _, tt := range att {
		t.Run(tt.name, func(t *testing.T) {
			got, err := w.SLOAttainment(SignalTTFT, tt.threshold, at)
			if err != nil || !cmp.Equal(got, tt.want, cmpopts.EquateApprox(1e-12, 0)) {
				t.Errorf("attainment(%v) = %+v, %v; want %+v", tt.threshold, got, err, tt.want)
			}
		})
	}
}

func TestHistogramMeanAndCounterRatio(t *testing.T) {
	h := func(count, sum float64) Histogram {
		x := hist([]float64{1}, count, count)
		x.Sum = sum
		return x
	}
	w := mustWindow(t, time.Minute, 10,
		snap(10, nil, map[Signal]float64{SignalE2ESecondsTotal: 100, SignalRequestsSucceeded: 50}, map[Signal]Histogram{SignalE2E: h(0, 0)}),
		snap(40, nil, map[Signal]float64{SignalE2ESecondsTotal: 160, SignalRequestsSucceeded: 70}, map[Signal]Histogram{SignalE2E: h(20, 8)}),
	)
	mean, err := w.HistogramMean(SignalE2E, sec(40))
	if err != nil || math.Abs(mean-0.4) > 1e-12 {
		t.Errorf("mean = %v, %v; want 8/20", mean, err)
	}
	avg, err := w.CounterRatio(SignalE2ESecondsTotal, SignalRequestsSucceeded, sec(40))
	if err != nil || math.Abs(avg-3) > 1e-12 {
		t.Errorf("seconds per request = %v, %v; want 60/20", avg, err)
	}
}

func TestObserveGivesAQuantileOnlyOverEnoughObservations(t *testing.T) {
	bounds := []float64{0.1, 0.5, 1}
	// n observations between two scrapes in a 30 s window, the first at
	// zero (so the window's increase is exactly n, as PromQL would count
	// it): half ≤ 0.1, the rest in (0.1, 0.5] but one slow one above 1.
	observe := func(n float64) knee.Observation {
		w := mustWindow(t, 30*time.Second, 10,
			snap(10, nil, nil, map[Signal]Histogram{SignalTTFT: hist(bounds, 0, 0, 0, 0)}),
			snap(25, nil, nil, map[Signal]Histogram{SignalTTFT: hist(bounds, n/2, n-1, n-1, n)}),
		)
		return Observe(w, sec(25), nil)
	}
	tests := []struct {
		name          string
		n             float64
		p50, p90, p99 bool // known
	}{
		{"one observation has no quantile", 1, false, false, false},
		{"2 observations have a median", 2, true, false, false},
		{"40 observations have a p90 but no p99: their slowest is not a p99", 40, true, true, false},
		{"99 observations are still one short of a p99", 99, true, true, false},
		{"100 observations have a p99", 100, true, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := observe(tt.n).TTFT
			for _, c := range []struct {
				name  string
				v     float64
				known bool
			}{{"p50", q.P50, tt.p50}, {"p90", q.P90, tt.p90}, {"p99", q.P99, tt.p99}} {
				if knee.Known(c.v) != c.known {
					t.Errorf("%s = %v, want known = %v", c.name, c.v, c.known)
				}
			}
		})
	}
}

// The prompt tail is the lower edge of the bucket holding the window's p99
// prompt length, over 100 requests or more: an interpolated p99 inside the
// engine's wide 1-2-5 buckets must not read a tail as longer than it is.
func TestObservePromptTailIsTheFloorOfThePercentilesBucket(t *testing.T) {
	bounds := []float64{1000, 2000, 5000, 10000, 20000}
	observe := func(counts ...float64) knee.Observation {
		zeros := make([]float64, len(counts))
		w := mustWindow(t, 30*time.Second, 10,
			snap(10, nil, nil, map[Signal]Histogram{SignalPromptLength: hist(bounds, zeros...)}),
			snap(25, nil, nil, map[Signal]Histogram{SignalPromptLength: hist(bounds, counts...)}),
		)
		return Observe(w, sec(25), nil)
	}
	tests := []struct {
		name   string
		counts []float64 // cumulative, the last the +Inf bucket
		want   float64   // NaN: unknown
	}{
		// 200 RAG prompts, all in (2000, 5000]: the p99 lies inside that
		// bucket, and 2000 is all the buckets say of it.
		{"a mix inside one bucket", []float64{0, 0, 200, 200, 200, 200}, 2000},
		// 4 of 200 in (10000, 20000]: the p99 is one of them.
		{"a tail of long prompts", []float64{0, 0, 196, 196, 200, 200}, 10000},
		{"past the highest bucket, the highest edge", []float64{0, 0, 190, 190, 190, 200}, 20000},
		{"99 requests are too few for a p99", []float64{0, 0, 95, 95, 99, 99}, math.NaN()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := observe(tt.counts...).PromptTokensP99
			if math.IsNaN(tt.want) != math.IsNaN(got) || (!math.IsNaN(tt.want) && got != tt.want) {
				t.Errorf("prompt tail = %v, want %v", got, tt.want)
			}
		})
	}
}

// In-flight load is read by Little's law over the requests that finished
// when the gauges agree with it within their sampling noise, and from the
// gauges when they stand clearly above it: a queue building holds requests
// that have not finished, which Little's law cannot see.
func TestObserveReadsInFlightByLittlesLawUnlessTheGaugesSeeAQueueItCannot(t *testing.T) {
	bounds := []float64{1, 5, 10}
	// A 60 s window scraped every 5 s: 60 requests of 2 s each finish in
	// it (Little's law: 60 × 2 s ÷ 60 s = 2 in flight), while the gauges
	// read running + waiting as given at each scrape.
	observe := func(inFlight func(i int) float64) knee.Observation {
		var snaps []Snapshot
		for i := 0; i <= 12; i++ {
			n := float64(5 * i)
			e2e := hist(bounds, 0, n, n, n)
			e2e.Sum = 2 * n
			snaps = append(snaps, snap(float64(5*i),
				map[Signal]float64{SignalRunning: inFlight(i), SignalWaiting: 0},
				nil, map[Signal]Histogram{SignalE2E: e2e}))
		}
		return Observe(mustWindow(t, time.Minute, 16, snaps...), sec(60), nil)
	}
	tests := []struct {
		name     string
		inFlight func(i int) float64
		want     float64
	}{
		// Gauges sampling a steady 2 in flight as 1-4: their mean (2.5) is
		// within noise of Little's 2 (3 standard errors: 1.4), which counts
		// every request exactly.
		{"a steady load reads Little's law", func(i int) float64 { return []float64{1, 4, 2, 3}[i%4] }, 2},
		// A queue growing by 4 a scrape to 48: the requests stuck in it have
		// not finished, and the gauges' mean over the window's scrapes (4 to
		// 48, the one at its start excluded) is what is in flight.
		{"a queue building reads the gauges", func(i int) float64 { return float64(4 * i) }, 26},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := observe(tt.inFlight)
			if math.Abs(o.InFlight-tt.want) > 1e-9 {
				t.Errorf("in flight = %v, want %v", o.InFlight, tt.want)
			}
		})
	}
}

// The running batch's samples are kept beside their mean: the knee package
// judges a replica's speed on the curve's output at each (see
// knee.Observation.RunningSamples).
func TestObserveKeepsTheRunningBatchsSamples(t *testing.T) {
	running := func(v float64) map[Signal]float64 { return map[Signal]float64{SignalRunning: v} }
	w := mustWindow(t, time.Minute, 10, snap(10, running(1), nil, nil), snap(20, running(15), nil, nil), snap(30, running(2), nil, nil))
	o := Observe(w, sec(30), nil)
	if diff := cmp.Diff([]float64{1, 15, 2}, o.RunningSamples); diff != "" || o.Running != 6 {
		t.Errorf("running = %v, samples (-want +got):\n%s", o.Running, diff)
	}
	none := mustWindow(t, time.Minute, 10, snap(10, nil, nil, nil), snap(20, nil, nil, nil))
	if got := Observe(none, sec(20), nil).RunningSamples; got != nil {
		t.Errorf("a window without the running gauge kept samples %v, want none", got)
	}
}
