package knee

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// chatLikeProfile has the shape the simulator measures for an 8B model on an
// H100 with a chat mix under p99 TTFT 1 s, TPOT 25 ms: TPOT starts at 8.4 ms
// for one request (the per-step cost that does not grow with the batch) and
// reaches the threshold at the knee of 132. Requests/s are output ÷ 180
// tokens, prompts 200 tokens on average.
func chatLikeProfile() *Profile {
	p := &Profile{
		SLO:      SLO{TTFT: Duration(time.Second), TPOT: Duration(25 * time.Millisecond), Quantile: 0.99},
		Workload: WorkloadInfo{MeanPromptTokens: 200, MeanOutputTokens: 180},
		Knee:     Knee{Concurrency: 132, OutputTokensPerSecond: 6340, GoodputTokensPerSecond: 6300, KVCacheUsage: 0.11, LimitingResource: ResourceCompute},
	}
	for _, c := range []struct {
		conc, out, ttft, tpot float64
	}{
		{1, 105, 0.085, 0.0084}, {16, 1500, 0.10, 0.0111}, {64, 4300, 0.096, 0.0161},
		{128, 6200, 0.109, 0.0243}, {132, 6340, 0.11, 0.0249}, {256, 6670, 0.147, 0.0456},
	} {
		p.Points = append(p.Points, Point{
			Concurrency: c.conc, OutputTokensPerSecond: c.out, GoodputTokensPerSecond: c.out,
			RequestsPerSecond: c.out / 180,
			TTFT:              Quantiles{P50: c.ttft / 4, P99: c.ttft}, TPOT: Quantiles{P50: c.tpot * 0.85, P99: c.tpot},
			MeetsSLO: c.conc <= 132,
		})
	}
	return p
}

func TestSpeedKnee(t *testing.T) {
	tests := []struct {
		name    string
		profile *Profile
		speed   float64
		want    float64
		wantOK  bool
	}{
		{"at full speed the knee is the profiled one", computeProfile(), 1, 100, true},
		{"a faster replica keeps the profiled knee", computeProfile(), 1.3, 100, true},
		{"at half speed the knee is where twice the profiled TPOT meets the SLO", computeProfile(), 0.5, 60, true},
		{"a replica too slow for the lightest measured load scales down from the first point", computeProfile(), 0.1, 0.5, true},
		{"a TPOT-bound knee with a large fixed step cost moves further than in proportion", chatLikeProfile(), 1 / 1.36,
			64 + (1/1.36-0.0161/0.025)/((0.0243-0.0161)/0.025)*64, true},
		{"a knee the SLO did not bind stays until the stretched latencies reach the SLO", func() *Profile {
			p := computeProfile()
			p.Points[3].TTFT.P99, p.Points[3].TPOT.P99 = 0.2, 0.02 // the knee point is far inside the SLO
			return p
		}(), 0.6, 100, true},
		{"an SLO at a quantile the points do not keep cannot be read", func() *Profile {
			p := computeProfile()
			p.SLO.Quantile = 0.95
			return p
		}(), 0.5, 0, false},
		{"an SLO at p50 reads the points' p50", func() *Profile {
			p := computeProfile()
			p.SLO.Quantile = 0.5
			return p
		}(), 0.25, 60, true},
		{"a profile without points has no moved knee", &Profile{Knee: Knee{Concurrency: 10}, SLO: testSLO}, 0.5, 0, false},
		{"no speed has no moved knee", computeProfile(), 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.profile.speedKnee(tt.speed)
			if ok != tt.wantOK {
				t.Fatalf("speedKnee(%g) ok = %v, want %v", tt.speed, ok, tt.wantOK)
			}
			if diff := cmp.Diff(tt.want, got, approx); ok && diff != "" {
				t.Errorf("speedKnee(%g) (-want +got):\n%s", tt.speed, diff)
			}
		})
	}
}

func TestEvaluateReadsTheKneeASlowReplicaHasLeft(t *testing.T) {
	p := chatLikeProfile()
	const load, speed = 80.0, 1 / 1.36
	expected, _ := p.CurveAt(load)
	r := Evaluate(observe(load, output(speed*expected.OutputTokensPerSecond)), p, Options{})
	moved, _ := p.speedKnee(speed)
	// In proportion the knee would be 132 × 0.735 ≈ 97 and the replica 18%
	// from it; on the latency curve it is at ~82, 3% away.
	want := load / moved
	if diff := cmp.Diff(want, r.Ratios[DimensionEffectiveLoad], approx); diff != "" {
		t.Errorf("effective load ratio (-want +got):\n%s", diff)
	}
	if r.Dimension != DimensionEffectiveLoad || math.Abs(r.Headroom-(1-want)) > 1e-9 {
		t.Errorf("headroom %g set by %s, want %g set by effective_load", r.Headroom, r.Dimension, 1-want)
	}
	if prop := load / p.Knee.Concurrency / speed; !(want > prop) {
		t.Errorf("the latency curve's knee gives ratio %g, want more than the proportional %g for this profile", want, prop)
	}
}

func TestEvaluateReadsPromptHeavyTrafficOnThePromptCurve(t *testing.T) {
	nan := math.NaN()
	withPrompt := func(tps float64) func(*Observation) {
		return func(o *Observation) { o.PromptTokensPerSecond = tps }
	}
	tests := []struct {
		name    string
		obs     Observation
		profile *Profile
		want    float64 // the throughput ratio
	}{
		{
			name:    "traffic with the profile's mix reads the same from prompt and output tokens",
			obs:     observe(64, output(4300), withPrompt(4300*200.0/180)),
			profile: chatLikeProfile(),
			want:    64.0 / 132,
		},
		{
			// The same requests per second, 1.3× the prompt tokens: the
			// prefill work of the profile's mix at ~107 in flight.
			name:    "a shift to longer prompts at the same request rate reads on the prompt rate",
			obs:     observe(64, output(4300), withPrompt(1.3*4300*200.0/180)),
			profile: chatLikeProfile(),
			want:    littleReading(64, 4300, 128, 6200, 1.3*4300) / 132,
		},
		{
			name:    "from the knee's prompt rate up the plain ratio counts",
			obs:     observe(64, output(4300), withPrompt(3*4300*200.0/180)),
			profile: chatLikeProfile(),
			want:    3 * 4300.0 / 6340,
		},
		{
			name:    "shorter prompts leave the output rate in charge",
			obs:     observe(64, output(4300), withPrompt(1000)),
			profile: chatLikeProfile(),
			want:    64.0 / 132,
		},
		{
			name:    "a profile without request rates reads throughput from output tokens alone",
			obs:     observe(50, output(5000), withPrompt(50000)),
			profile: computeProfile(),
			want:    0.5,
		},
		{
			name:    "prompt tokens alone are enough for a throughput ratio",
			obs:     observe(64, withPrompt(4300*200.0/180)),
			profile: chatLikeProfile(),
			want:    64.0 / 132,
		},
		{
			name:    "a negative prompt rate is ignored",
			obs:     observe(64, withPrompt(-1)),
			profile: chatLikeProfile(),
			want:    nan,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Evaluate(tt.obs, tt.profile, Options{})
			if diff := cmp.Diff(tt.want, r.Ratios[DimensionThroughput], approx); diff != "" {
				t.Errorf("throughput ratio (-want +got):\n%s", diff)
			}
		})
	}
}

func TestKneePromptRateIsReadOffTheCurveAtTheKnee(t *testing.T) {
	p := chatLikeProfile()
	if diff := cmp.Diff(6340*200.0/180, p.kneeRate(promptRate), approx); diff != "" {
		t.Errorf("at a knee that is a sweep point (-want +got):\n%s", diff)
	}
	p.Knee.Concurrency = 130 // an interpolated knee, half way from 128 to 132
	if diff := cmp.Diff((6200+6340)/2*200.0/180, p.kneeRate(promptRate), approx); diff != "" {
		t.Errorf("at a knee between two points (-want +got):\n%s", diff)
	}
	p.Knee.Concurrency = 300 // past the last point: nothing to read
	if got := p.kneeRate(promptRate); Known(got) {
		t.Errorf("past the last point: %g, want unknown", got)
	}
}

func TestSpeedKneeOfAPoissonKneeBlendsItsTwoReadings(t *testing.T) {
	closed := chatLikeProfile()
	poisson := chatLikeProfile()
	poisson.Knee.Arrivals = ArrivalsPoisson
	poisson.Knee.Concurrency, poisson.Knee.RequestsPerSecond, poisson.Knee.ClosedLoopConcurrency = 80, 28, 132
	for _, e := range []float64{0.9, 0.7, 0.5} {
		moved, ok := closed.speedKnee(e)
		if !ok {
			t.Fatalf("closed-loop speedKnee(%g) not ok", e)
		}
		got, ok := poisson.speedKnee(e)
		if !ok {
			t.Fatalf("Poisson speedKnee(%g) not ok", e)
		}
		// 3/4 in proportion to the closed-loop knee, 1/4 held where only
		// the thresholds force it (see speedKnee).
		inProportion, held := moved/132, min(1, moved/(e*132))
		want := 80 * math.Pow(inProportion, 0.75) * math.Pow(held, 0.25)
		if diff := cmp.Diff(want, got, approx); diff != "" || !(got < 80) || !(got >= 80*inProportion) {
			t.Errorf("speedKnee(%g) = %g, want %g, between %g (in proportion) and 80 (-want +got):\n%s", e, got, want, 80*inProportion, diff)
		}
	}
}
