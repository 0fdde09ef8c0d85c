package collector

import (
	"bytes"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kneewatch/kneewatch/knee"
)

func sloOf(ttft, tpot time.Duration) knee.SLO {
	return knee.SLO{TTFT: knee.Duration(ttft), TPOT: knee.Duration(tpot), Quantile: 0.99}
}

func TestCheckSLOEdges(t *testing.T) {
	tests := []struct {
		name   string
		engine string
		slo    knee.SLO
		want   []string
	}{
		{"thresholds inside vLLM's buckets name the edges around them", "vllm", sloOf(230*time.Millisecond, 23*time.Millisecond), []string{
			"ttft SLO 230ms is not a bucket edge of vllm:time_to_first_token_seconds (vllm default buckets): it falls between 100ms and 250ms, " +
				"so attainment counts requests up to 250ms as meeting it (an upper bound on the true share; exact only on an edge); " +
				"set the threshold to 100ms or 250ms, or give the engine a bucket at 230ms",
			"tpot SLO 23ms is not a bucket edge of vllm:request_time_per_output_token_seconds (vllm default buckets): it falls between 10ms and 25ms, " +
				"so attainment counts requests up to 25ms as meeting it (an upper bound on the true share; exact only on an edge); " +
				"set the threshold to 10ms or 25ms, or give the engine a bucket at 23ms",
		}},
		{"thresholds on vLLM's edges are exact", "vllm", sloOf(250*time.Millisecond, 25*time.Millisecond), nil},
		{"a threshold above the highest finite edge says nothing over it can be told apart", "sglang", sloOf(500*time.Second, 20*time.Millisecond), []string{
			"ttft SLO 8m20s is above the highest finite bucket edge of sglang:time_to_first_token_seconds (sglang default buckets, 6m40s): " +
				"no requests over 6m40s can be told apart from ones within the SLO, so attainment counts every request as meeting it; " +
				"give the engine a bucket at 8m20s or lower the threshold to 6m40s",
		}},
		{"TGI has no TTFT histogram, and its geometric TPOT edges are matched within rounding", "tgi", sloOf(230*time.Millisecond, 759375*time.Nanosecond), nil},
		{"Triton's TensorRT-LLM backend has no latency histogram to check", "trtllm", sloOf(230*time.Millisecond, 23*time.Millisecond), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, w := range CheckSLOEdges(tt.engine, tt.slo) {
				got = append(got, w.String())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("an auto-detected engine is checked against every engine's defaults", func(t *testing.T) {
		var engines []string
		for _, w := range CheckSLOEdges("", sloOf(230*time.Millisecond, 23*time.Millisecond)) {
			engines = append(engines, w.Engine+"/"+w.SLO)
		}
		want := []string{"sglang/ttft", "sglang/tpot", "tgi/tpot", "vllm/ttft", "vllm/tpot"}
		if diff := cmp.Diff(want, engines); diff != "" {
			t.Errorf("warnings (-want +got):\n%s", diff)
		}
	})
}

// TestBucketShareBoundsHoldTheInterpolation: on monotonic buckets, PromQL's
// interpolated fraction lies between the bounds, which meet on an edge.
func TestBucketShareBoundsHoldTheInterpolation(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for i := range 2000 {
		var bs []Bucket
		bound, count := 0.01+rng.Float64(), 0.0
		for range 1 + rng.IntN(8) {
			count += float64(rng.IntN(20))
			bs = append(bs, Bucket{UpperBound: bound, Count: count})
			bound += 0.05 + rng.Float64()
		}
		bs = append(bs, Bucket{UpperBound: math.Inf(+1), Count: count + float64(rng.IntN(5))})
		th := rng.Float64() * bound
		if i%5 == 0 {
			th = bs[rng.IntN(len(bs)-1)].UpperBound
		}
		frac, exact := bucketFractionBelow(th, bs)
		lo, hi := bucketShareBounds(th, bs)
		if math.IsNaN(frac) {
			if !math.IsNaN(lo) || !math.IsNaN(hi) {
				t.Fatalf("no observations: bounds %v, %v, want NaN", lo, hi)
			}
			continue
		}
		if lo > frac+1e-12 || frac > hi+1e-12 {
			t.Fatalf("threshold %v over %+v: interpolated %v outside [%v, %v]", th, bs, frac, lo, hi)
		}
		if exact && lo != hi {
			t.Fatalf("threshold %v on an edge: bounds %v and %v differ", th, lo, hi)
		}
	}
}

// TestLightLoadInsideABucketMeetsTheSLO is the false page of issue 14: every
// TPOT at 10.5 ms, in vLLM's (0.01, 0.025] bucket, against a 23 ms SLO. The
// interpolation read 0.867; the bound the buckets support is 1, the truth.
func TestLightLoadInsideABucketMeetsTheSLO(t *testing.T) {
	edges := vllmTPOTBuckets
	h := func(n float64) Histogram {
		var bs []Bucket
		for _, e := range edges {
			c := 0.0
			if e >= 0.0105 {
				c = n
			}
			bs = append(bs, Bucket{UpperBound: e, Count: c})
		}
		bs = append(bs, Bucket{UpperBound: math.Inf(+1), Count: n})
		return Histogram{Buckets: bs, Count: n, Sum: n * 0.0105}
	}
	base := time.Unix(1_800_000_000, 0)
	w, err := NewWindow(time.Minute, 16)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 13 {
		s := NewSnapshot("vllm")
		s.Time = base.Add(time.Duration(i) * 5 * time.Second)
		s.Histograms[SignalTPOT] = h(float64(100 * i))
		if err := w.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	at := base.Add(time.Minute)
	a, err := w.SLOAttainment(SignalTPOT, 0.023, at)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(a.Ratio-(0.023-0.01)/0.015) > 1e-9 || a.Lower != 0 || a.Upper != 1 {
		t.Errorf("attainment = %+v, want the interpolation 0.867 between bounds 0 and 1", a)
	}
	slo := sloOf(230*time.Millisecond, 23*time.Millisecond)
	if got := Observe(w, at, &slo).TPOTAttainment; got != 1 {
		t.Errorf("observed TPOT attainment %v, want 1 (no request can be shown to miss 23 ms)", got)
	}
	var c SLOCounters
	for i := range 3 {
		s := NewSnapshot("vllm")
		s.Histograms[SignalTTFT] = h(float64(100 * i))
		s.Histograms[SignalTPOT] = h(float64(100 * i))
		c.Add(s, &slo)
	}
	if c.Total != 200 || c.GoodTPOT != 200 {
		t.Errorf("counted %v good TPOT requests of %v, want all 200", c.GoodTPOT, c.Total)
	}
}

func TestScrapedEdgesAreWarnedOncePerReplica(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	snap := normalizeText(t, readFixture(t, "vllm-v1-full-synthetic.prom"), Options{})
	slo := sloOf(230*time.Millisecond, 23*time.Millisecond)
	var e EdgeWarner
	for range 3 {
		e.Check(logger, nil, "r0", snap, &slo)
	}
	out := buf.String()
	if n := strings.Count(out, "level=WARN"); n != 2 {
		t.Fatalf("logged %d warnings over 3 scrapes, want 2 (ttft and tpot, once):\n%s", n, out)
	}
	for _, want := range []string{"it falls between 100ms and 250ms", "it falls between 10ms and 25ms", "buckets as scraped", "replica=r0"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	buf.Reset()
	onEdges := sloOf(250*time.Millisecond, 25*time.Millisecond)
	e.Check(logger, nil, "r0", snap, &onEdges)
	if buf.Len() != 0 {
		t.Errorf("thresholds on edges logged:\n%s", buf.String())
	}
}

func TestScrapedEdgesAreWarnedOncePerFleet(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	snap := normalizeText(t, readFixture(t, "vllm-v1-full-synthetic.prom"), Options{})
	slo := sloOf(230*time.Millisecond, 23*time.Millisecond)
	var shared EdgeLog
	replicas := make([]EdgeWarner, 4)
	for i := range replicas {
		replicas[i].Check(logger, &shared, fmt.Sprintf("r%d", i), snap, &slo)
	}
	out := buf.String()
	if n := strings.Count(out, "level=WARN"); n != 2 {
		t.Fatalf("logged %d warnings for 4 replicas with the same buckets and SLO, want 2 (ttft and tpot, once):\n%s", n, out)
	}
	if n := strings.Count(out, "level=DEBUG"); n != 6 {
		t.Errorf("logged %d at debug level, want the other 3 replicas' 6:\n%s", n, out)
	}
	// Another SLO's warnings are new to the fleet.
	buf.Reset()
	other := sloOf(300*time.Millisecond, 25*time.Millisecond)
	replicas[3].Check(logger, &shared, "r3", snap, &other)
	if n := strings.Count(buf.String(), "level=WARN"); n != 1 {
		t.Errorf("a new SLO's ttft warning logged %d times at warning level, want 1:\n%s", n, buf.String())
	}
}

func TestGoodTPOTRequestsAreCountedOnTheRequestsTotalCounts(t *testing.T) {
	// A replica keeping its SLO while load rises: each interval, 100 more
	// requests get their first token than finish (the TPOT histogram counts
	// a request when it ends), every TPOT within the threshold, then one
	// interval where a fifth of those finishing miss it.
	bounds := []float64{0.025, 0.05}
	h := func(good, bad float64) Histogram { return hist(bounds, good, good, good+bad) }
	slo := sloOf(time.Second, 25*time.Millisecond)
	var c SLOCounters
	add := func(firsts, tpotGood, tpotBad float64) {
		s := NewSnapshot("vllm")
		s.Histograms[SignalTTFT] = h(firsts, 0)
		s.Histograms[SignalTPOT] = h(tpotGood, tpotBad)
		c.Add(s, &slo)
	}
	add(0, 0, 0)
	add(200, 100, 0)
	add(400, 300, 0)
	if c.Total != 400 || c.GoodTPOT != c.Total {
		t.Errorf("rising load, every TPOT good: %v good of %v requests, want all good (finishing lags first tokens; that is no miss)", c.GoodTPOT, c.Total)
	}
	add(600, 460, 40) // of 200 finishing: 160 good, 40 (a fifth) missed
	if want := 400 + 200*0.8; c.Total != 600 || c.GoodTPOT != want {
		t.Errorf("a fifth missing TPOT: %v good of %v, want %v (the interval's good share of its requests)", c.GoodTPOT, c.Total, want)
	}
	add(700, 460, 40) // 100 first tokens, none finishing
	if want := 560 + 100*0.8; c.Total != 700 || c.GoodTPOT != want {
		t.Errorf("an interval in which none finished: %v good of %v, want %v (the last share, not all missing)", c.GoodTPOT, c.Total, want)
	}
}

func TestGoodTPOTRequestsBeforeAnyFinishedAreGood(t *testing.T) {
	bounds := []float64{0.025, 0.05}
	slo := sloOf(time.Second, 25*time.Millisecond)
	var c SLOCounters
	for i, firsts := range []float64{0, 50, 120} {
		s := NewSnapshot("vllm")
		s.Histograms[SignalTTFT] = hist(bounds, firsts, firsts, firsts)
		s.Histograms[SignalTPOT] = hist(bounds, 0, 0, 0)
		c.Add(s, &slo)
		if c.GoodTPOT != c.Total {
			t.Errorf("after %d scrapes: %v good TPOT of %v requests, none finished yet: want all good", i+1, c.GoodTPOT, c.Total)
		}
	}
}
