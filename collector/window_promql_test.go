package collector

// Proof that the Window's math equals Prometheus's: the same samples go into
// Prometheus's own PromQL engine (test-only import; the binary
// does not link Prometheus) and into a Window, and every rate, increase,
// histogram_quantile, histogram_fraction, avg_over_time and deriv is
// compared at many evaluation times and window widths.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"

	"github.com/kneewatch/kneewatch/internal/promstore"
)

// promTolerance is the relative difference allowed between PromQL and the
// Window: both run the same float operations, so only summation order may
// differ (avg_over_time, deriv).
const promTolerance = 1e-12

var (
	proofBounds     = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5}
	proofQuantiles  = []float64{0, 0.01, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 1}
	proofWidths     = []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute}
	proofThresholds = []float64{0, 0.01, 0.05, 0.07, 0.1, 0.2, 0.25, 0.4, 0.5, 0.75, 1, 2, 2.5, 4}
)

// proofScenario is a scrape history: one counter, two gauges and a TTFT
// histogram with proofBounds.
type proofScenario struct {
	name  string
	snaps []Snapshot
	// layoutChanges marks histories whose bucket bounds change, where
	// proofBounds no longer says which thresholds are edges.
	layoutChanges bool
}

// historyBuilder accumulates a scenario scrape by scrape.
type historyBuilder struct {
	rng      *rand.Rand
	tokens   float64
	buckets  []float64 // cumulative, +Inf last
	sum      float64
	snaps    []Snapshot
	noHistAt map[int]bool
}

func newHistoryBuilder(seed uint64) *historyBuilder {
	return &historyBuilder{rng: rand.New(rand.NewPCG(seed, seed*7+1)), buckets: make([]float64, len(proofBounds)+1)}
}

// observe adds n random observations (log-normal around 0.3 s) to the
// histogram and tokens to the counter.
func (b *historyBuilder) observe(n int) {
	for range n {
		v := math.Exp(b.rng.NormFloat64()*0.9 - 1.2)
		b.sum += v
		for i, ub := range proofBounds {
			if v <= ub {
				b.buckets[i]++
			}
		}
		b.buckets[len(proofBounds)]++
		b.tokens += float64(50 + b.rng.IntN(200))
	}
}

// observeAt adds n observations of exactly v (to land on bucket edges).
func (b *historyBuilder) observeAt(v float64, n int) {
	for range n {
		b.sum += v
		for i, ub := range proofBounds {
			if v <= ub {
				b.buckets[i]++
			}
		}
		b.buckets[len(proofBounds)]++
		b.tokens += 100
	}
}

func (b *historyBuilder) reset() {
	b.tokens, b.sum = 0, 0
	clear(b.buckets)
}

func (b *historyBuilder) scrape(at time.Time, running, waiting float64, withHist bool) {
	s := NewSnapshot("proof")
	s.Time = at
	s.Gauges[SignalRunning] = running
	s.Gauges[SignalWaiting] = waiting
	s.Counters[SignalGenerationTokens] = b.tokens
	if withHist {
		h := Histogram{Count: b.buckets[len(proofBounds)], Sum: b.sum}
		for i, ub := range append(append([]float64(nil), proofBounds...), math.Inf(+1)) {
			h.Buckets = append(h.Buckets, Bucket{UpperBound: ub, Count: b.buckets[i]})
		}
		s.Histograms[SignalTTFT] = h
	}
	b.snaps = append(b.snaps, s)
}

var proofStart = time.Unix(1_800_000_000, 0).UTC()

func proofScenarios() []proofScenario {
	var out []proofScenario
	{
		b := newHistoryBuilder(1)
		for i := range 40 {
			b.observe(20 + b.rng.IntN(20))
			b.scrape(proofStart.Add(time.Duration(i)*15*time.Second), float64(10+i%7), float64(i%5), true)
		}
		out = append(out, proofScenario{name: "regular 15s scrapes with steady traffic", snaps: b.snaps})
	}
	{
		b := newHistoryBuilder(2)
		for i := range 40 {
			if i == 17 {
				b.reset() // the engine restarted: the counter and every bucket start over
			}
			b.observe(10 + b.rng.IntN(30))
			b.scrape(proofStart.Add(time.Duration(i)*15*time.Second), float64(i), 3, true)
		}
		out = append(out, proofScenario{name: "a restart resets the counter and every bucket", snaps: b.snaps})
	}
	{
		b := newHistoryBuilder(3)
		for i := range 40 {
			b.observe(15 + b.rng.IntN(10))
			b.scrape(proofStart.Add(time.Duration(i)*15*time.Second), 5, 1, true)
			if i == 20 {
				// One bucket drops on its own (a non-atomic exposition): the
				// per-bucket rates then disagree and PromQL's envelope applies.
				h := b.snaps[len(b.snaps)-1].Histograms[SignalTTFT]
				h.Buckets = append([]Bucket(nil), h.Buckets...)
				h.Buckets[3].Count -= 40
				b.snaps[len(b.snaps)-1].Histograms[SignalTTFT] = h
			}
		}
		out = append(out, proofScenario{name: "one bucket resets alone", snaps: b.snaps})
	}
	{
		b := newHistoryBuilder(4)
		at := proofStart
		for i := range 45 {
			b.observe(b.rng.IntN(40))
			// Jittered 10–20 s scrapes, with three missed ones.
			at = at.Add(time.Duration(10_000+b.rng.IntN(10_000)) * time.Millisecond)
			if i == 12 || i == 13 || i == 30 {
				continue
			}
			b.scrape(at, float64(b.rng.IntN(50)), float64(b.rng.IntN(10)), true)
		}
		out = append(out, proofScenario{name: "jittered scrapes with gaps", snaps: b.snaps})
	}
	{
		b := newHistoryBuilder(5)
		for i := range 30 {
			b.observe(25)
			// The histogram appears only from the 12th scrape (first request
			// served), so rates start inside some windows.
			b.scrape(proofStart.Add(time.Duration(i)*15*time.Second), 8, 2, i >= 12)
		}
		out = append(out, proofScenario{name: "the histogram appears mid-window", snaps: b.snaps})
	}
	{
		b := newHistoryBuilder(6)
		for i := range 30 {
			// Every observation on an edge: quantile ranks land on bucket
			// boundaries and thresholds at edges are exact.
			for j, ub := range proofBounds {
				b.observeAt(ub, 1+(i+j)%3)
			}
			b.observeAt(10, i%2) // some above the highest finite edge
			b.scrape(proofStart.Add(time.Duration(i)*15*time.Second), 4, 0, true)
		}
		out = append(out, proofScenario{name: "observations exactly on bucket edges", snaps: b.snaps})
	}
	{
		b := newHistoryBuilder(7)
		b.observe(30)
		for i := range 20 {
			// No traffic at all: every rate is 0 and quantiles are NaN.
			b.scrape(proofStart.Add(time.Duration(i)*15*time.Second), 0, 0, true)
		}
		out = append(out, proofScenario{name: "no traffic in the window", snaps: b.snaps})
	}
	{
		b := newHistoryBuilder(8)
		for i := range 40 {
			if i == 20 {
				b.reset()
			}
			b.observe(10 + b.rng.IntN(30))
			b.scrape(proofStart.Add(time.Duration(i)*15*time.Second), 6, 1, true)
			if i >= 20 {
				// After the restart the engine exposes an extra le="0.75"
				// bucket: windows spanning the change see one bucket series
				// start, as PromQL does.
				s := &b.snaps[len(b.snaps)-1]
				h := s.Histograms[SignalTTFT]
				var withExtra []Bucket
				for j, bk := range h.Buckets {
					withExtra = append(withExtra, bk)
					if bk.UpperBound == 0.5 {
						withExtra = append(withExtra, Bucket{UpperBound: 0.75, Count: math.Floor((bk.Count + h.Buckets[j+1].Count) / 2)})
					}
				}
				h.Buckets = withExtra
				s.Histograms[SignalTTFT] = h
			}
		}
		out = append(out, proofScenario{name: "the bucket layout changes at a restart", snaps: b.snaps, layoutChanges: true})
	}
	for seed := uint64(100); seed < 106; seed++ {
		b := newHistoryBuilder(seed)
		at := proofStart
		for range 35 {
			if b.rng.IntN(12) == 0 {
				b.reset()
			}
			if b.rng.IntN(4) > 0 {
				b.observe(b.rng.IntN(60))
			}
			at = at.Add(time.Duration(1_000+b.rng.IntN(30_000)) * time.Millisecond)
			b.scrape(at, float64(b.rng.IntN(100)), float64(b.rng.IntN(30)), true)
		}
		out = append(out, proofScenario{name: fmt.Sprintf("random history seed %d", seed), snaps: b.snaps})
	}
	return out
}

// loadStorage turns the snapshots into the series a Prometheus server
// would have scraped: one per gauge, counter, and histogram bucket, _sum
// and _count, named after the signal.
func loadStorage(t *testing.T, snaps []Snapshot) *promstore.Store {
	st := promstore.New()
	add := func(l labels.Labels, ts int64, v float64) {
		if err := st.Add(l, ts, v); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range snaps {
		ts := s.Time.UnixMilli()
		for sig, v := range s.Gauges {
			add(labels.FromStrings(model.MetricNameLabel, sig.String()), ts, v)
		}
		for sig, v := range s.Counters {
			add(labels.FromStrings(model.MetricNameLabel, sig.String()), ts, v)
		}
		for sig, h := range s.Histograms {
			for _, b := range h.Buckets {
				add(labels.FromStrings(model.MetricNameLabel, sig.String()+"_bucket", "le", formatBound(b.UpperBound)), ts, b.Count)
			}
			add(labels.FromStrings(model.MetricNameLabel, sig.String()+"_sum"), ts, h.Sum)
			add(labels.FromStrings(model.MetricNameLabel, sig.String()+"_count"), ts, h.Count)
		}
	}
	return st
}

type promEval struct {
	t  *testing.T
	ng *promql.Engine
	st *promstore.Store
}

// query runs an instant query expected to return at most one sample; ok
// is false when PromQL returns nothing.
func (p promEval) query(expr string, at time.Time) (v float64, ok bool) {
	p.t.Helper()
	vec, err := promstore.Instant(p.ng, p.st, expr, at)
	if err != nil {
		p.t.Fatal(err)
	}
	switch len(vec) {
	case 0:
		return 0, false
	case 1:
		return vec[0].F, true
	}
	p.t.Fatalf("%s returned %d samples", expr, len(vec))
	return 0, false
}

// comparisons counts what the proof compared, so a broken harness that
// compares nothing fails.
type comparisons struct{ numbers, unknowns int }

// agree checks one Window result against PromQL's: PromQL's empty result
// or NaN must be a Window error, anything else the same number.
func (c *comparisons) agree(t *testing.T, what string, promV float64, promOK bool, got float64, err error) {
	t.Helper()
	if !promOK || math.IsNaN(promV) {
		c.unknowns++
		if err == nil {
			t.Errorf("%s: PromQL has no value (ok=%v, %v), Window returned %v", what, promOK, promV, got)
		}
		return
	}
	c.numbers++
	if err != nil {
		t.Errorf("%s: PromQL = %v, Window error: %v", what, promV, err)
		return
	}
	if diff := math.Abs(got - promV); diff > promTolerance*math.Max(1, math.Abs(promV)) {
		t.Errorf("%s: PromQL = %v, Window = %v (diff %g)", what, promV, got, diff)
	}
}

func TestWindowEqualsPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("loads Prometheus's TSDB and engine")
	}
	ng := promstore.NewEngine()
	t.Cleanup(func() { _ = ng.Close() })
	var total comparisons
	for _, sc := range proofScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			p := promEval{t: t, ng: ng, st: loadStorage(t, sc.snaps)}
			var c comparisons
			for _, width := range proofWidths {
				compareAlongHistory(t, p, &c, sc, width)
			}
			if c.numbers == 0 {
				t.Error("compared no numbers")
			}
			total.numbers += c.numbers
			total.unknowns += c.unknowns
		})
	}
	t.Logf("compared %d values and %d PromQL unknowns", total.numbers, total.unknowns)
}

// compareAlongHistory feeds the snapshots to a Window in order, as a live
// loop would, and compares at every scrape and halfway to the next one.
func compareAlongHistory(t *testing.T, p promEval, c *comparisons, sc proofScenario, width time.Duration) {
	t.Helper()
	snaps := sc.snaps
	w, err := NewWindow(width, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var times []time.Time
	for i, s := range snaps {
		times = append(times, s.Time)
		if i+1 < len(snaps) {
			times = append(times, s.Time.Add(snaps[i+1].Time.Sub(s.Time)/2))
		}
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	next := 0
	r := model.Duration(width).String()
	for _, at := range times {
		for next < len(snaps) && !snaps[next].Time.After(at) {
			if err := w.Add(snaps[next]); err != nil {
				t.Fatal(err)
			}
			next++
		}
		where := fmt.Sprintf("[%s] at +%s", r, at.Sub(proofStart))

		v, ok := p.query("rate(generation_tokens_total["+r+"])", at)
		got, err := w.Rate(SignalGenerationTokens, at)
		c.agree(t, "rate "+where, v, ok, got, err)

		v, ok = p.query("increase(generation_tokens_total["+r+"])", at)
		got, err = w.Increase(SignalGenerationTokens, at)
		c.agree(t, "increase "+where, v, ok, got, err)

		v, ok = p.query("avg_over_time(running_requests["+r+"])", at)
		got, err = w.GaugeMean(at, SignalRunning)
		c.agree(t, "avg_over_time "+where, v, ok, got, err)

		v, ok = p.query("deriv(waiting_requests["+r+"])", at)
		got, err = w.GaugeSlope(at, SignalWaiting)
		c.agree(t, "deriv "+where, v, ok, got, err)

		v, ok = p.query("rate(ttft_seconds_sum["+r+"]) / rate(ttft_seconds_count["+r+"])", at)
		got, err = w.HistogramMean(SignalTTFT, at)
		if ok && math.IsInf(v, 0) {
			ok = false // 0/0 and x/0 are PromQL's; the Window says no observations
		}
		c.agree(t, "histogram mean "+where, v, ok, got, err)

		for _, q := range proofQuantiles {
			v, ok = p.query(fmt.Sprintf("histogram_quantile(%v, rate(ttft_seconds_bucket[%s]))", q, r), at)
			quant, err := w.HistogramQuantile(SignalTTFT, q, at)
			c.agree(t, fmt.Sprintf("histogram_quantile(%v) %s", q, where), v, ok, quant.Value, err)
		}
		for _, th := range proofThresholds {
			v, ok = p.query(fmt.Sprintf("histogram_fraction(-Inf, %v, rate(ttft_seconds_bucket[%s]))", th, r), at)
			att, err := w.SLOAttainment(SignalTTFT, th, at)
			c.agree(t, fmt.Sprintf("histogram_fraction(-Inf, %v) %s", th, where), v, ok, att.Ratio, err)
			if err == nil && !sc.layoutChanges {
				onEdge := false
				for _, b := range proofBounds {
					onEdge = onEdge || b == th
				}
				if att.Exact != onEdge {
					t.Errorf("attainment(%v) %s: Exact = %v, want %v", th, where, att.Exact, onEdge)
				}
			}
		}
	}
}

// TestBucketMathEqualsPrometheus compares the quantile and fraction
// functions with Prometheus's exported BucketQuantile and BucketFraction on
// random bucket sets, including the cases rate() produces: counts that fall
// between neighbouring buckets, differences of one part in 10^13 (float
// noise PromQL ignores), empty histograms, and a first bound ≤ 0.
func TestBucketMathEqualsPrometheus(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 43))
	same := func(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }
	compared := 0
	for i := range 3000 {
		n := 1 + rng.IntN(8)
		var ours []Bucket
		bound := -0.5 + rng.Float64()
		if rng.IntN(2) == 0 {
			bound = rng.Float64()
		}
		count := 0.0
		for j := range n {
			switch rng.IntN(6) {
			case 0: // a fall, as per-bucket rates with different extrapolation give
				count -= rng.Float64() * 3
			case 1: // float noise
				count *= 1 + 1e-13
			case 2: // empty bucket
			default:
				count += float64(rng.IntN(20))
			}
			if i%50 == 0 {
				count = 0
			}
			ub := bound
			if j == n-1 && i%7 != 0 { // most sets end in +Inf; some do not
				ub = math.Inf(+1)
			}
			ours = append(ours, Bucket{UpperBound: ub, Count: math.Max(count, 0)})
			bound += 0.05 + rng.Float64()
		}
		theirs := func() promql.Buckets {
			out := make(promql.Buckets, len(ours))
			for j, b := range ours {
				out[j] = promql.Bucket{UpperBound: b.UpperBound, Count: b.Count}
			}
			return out
		}
		for _, q := range []float64{0, 0.1, 0.5, 0.9, 0.99, 1} {
			want, _, _, _, _, _ := promql.BucketQuantile(q, theirs())
			got, _ := bucketQuantile(q, append([]Bucket(nil), ours...))
			if !same(got, want) {
				t.Errorf("set %d %v: quantile(%v) = %v, Prometheus %v", i, ours, q, got, want)
			}
			compared++
		}
		for _, th := range []float64{-1, 0, 0.3, 1, 2.5, 7, 100} {
			want := promql.BucketFraction(math.Inf(-1), th, theirs())
			got, _ := bucketFractionBelow(th, ours)
			if !same(got, want) {
				t.Errorf("set %d %v: fraction(≤%v) = %v, Prometheus %v", i, ours, th, got, want)
			}
			compared++
		}
	}
	t.Logf("compared %d results", compared)
}
