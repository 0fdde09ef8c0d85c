package sweep

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kneewatch/kneewatch/internal/sim"
	"github.com/kneewatch/kneewatch/knee"
)

// TestPoissonSweepFindsAKneeBelowTheClosedLoopOne sweeps the simulator over
// HTTP with --arrivals poisson: the closed-loop search, then steady Poisson
// trials. Poisson arrivals bunch prefills and swing the in-flight count
// around its mean, so on this KV-queueing case (the accuracy test's first:
// past 11 in flight requests wait for KV slots) the largest rate that kept
// the windowed SLO must lie below the closed-loop knee's rate, at fewer
// requests in flight than the closed-loop knee. A trial at a rate far past
// the knee with a small outstanding cap must end on the cap.
//
// The simulator runs at speed 6 (every latency ÷ 6), so a trial's 6 s
// warm-up and 5 s steady part are 36 s and 30 s of the replica's time. The
// warm-up is what lets the steady part be judged: a windowed percentile
// needs 100 requests, and at 0.6× the knee's rate (~24 req/s) a 2 s
// warm-up left half of the steady ticks unjudged.
func TestPoissonSweepFindsAKneeBelowTheClosedLoopOne(t *testing.T) {
	if testing.Short() {
		t.Skip("a closed-loop sweep and five Poisson trials against the simulator in wall time (about a minute)")
	}
	kc := kneeCases[0]
	p := kc.simPreset(t)
	slo := scaled(kc.slo(), kc.speed)
	st := startSimPreset(t, p, kc.speed)
	start := time.Now()
	out, err := Run(context.Background(), Config{
		Client: st.client(64), Workload: resolve(t, kc.workload), Seed: 1, SLO: slo,
		MaxConcurrency: 32, Precision: 0.25, MinRequests: 100,
		Metrics: st.metrics(100 * time.Millisecond), Logger: testLogger(t),
		Arrivals: knee.ArrivalsPoisson,
		OpenLoop: OpenLoopConfig{PoissonSearch: knee.PoissonSearch{Warmup: 6 * time.Second, Steady: 5 * time.Second, Tick: 250 * time.Millisecond, SLOWindow: 2 * time.Second, Steps: 3}},
	})
	t.Logf("closed-loop levels %v (%s); took %s", levelsOf(out), out.Reason, time.Since(start).Round(100*time.Millisecond))
	for _, tr := range out.Trials {
		t.Logf("trial %g req/s (%.3g×): %g in flight, %d sent, judged %d/%d ticks, kept %v %s",
			tr.Rate, tr.Fraction, tr.Point.Concurrency, tr.Sent, tr.Judged, tr.Ticks, tr.Kept, tr.Breach)
	}
	if err != nil {
		t.Fatal(err)
	}
	prof := out.Profile
	k, closed := prof.Knee, out.ClosedLoopKnee
	t.Logf("poisson knee %g in flight at %g req/s; closed loop: last kept level %g, first broken %d at %g req/s, knee about %g",
		k.Concurrency, k.RequestsPerSecond, closed.Concurrency, out.StartConcurrency, out.StartRate, out.ClosedLoopEstimate)
	// The closed loop stopped after its first break and one probe inside
	// that bracket, and the knee it records lies between the last kept and
	// the lowest broken level.
	broken := math.Inf(1)
	for _, l := range out.Levels {
		if !l.Point.MeetsSLO {
			broken = min(broken, l.Point.Concurrency)
		}
	}
	if lv := levelsOf(out); len(lv) < 3 || lv[len(lv)-2] != 2*lv[len(lv)-3] || lv[len(lv)-1] >= lv[len(lv)-2] ||
		!(k.ClosedLoopConcurrency >= closed.Concurrency && k.ClosedLoopConcurrency < broken) {
		t.Errorf("closed loop: levels %v, last kept %g, lowest broken %g, recorded knee %g: want the doubling, one probe under its break, and the knee in between",
			lv, closed.Concurrency, broken, k.ClosedLoopConcurrency)
	}
	if k.Arrivals != knee.ArrivalsPoisson || k.ClosedLoopConcurrency != out.ClosedLoopEstimate {
		t.Errorf("knee %+v: want arrivals poisson and the closed-loop estimate %g for reference", k, out.ClosedLoopEstimate)
	}
	// The trials are fractions of the start rate, never above
	// it. Whether they fall below the closed-loop knee's depends on that
	// measurement: on a busy machine the wall-clock closed loop reads
	// latency high (every late step adds some), and one Poisson trial can
	// keep the SLO. So the strict claim, Poisson arrivals knee below
	// closed-loop ones, is judged against the closed-loop knee the
	// virtual-time engine measures, which no scheduling delay moves; a
	// loaded machine only pushes the wall-clock Poisson knee further below it.
	if k.RequestsPerSecond > out.StartRate {
		t.Errorf("the poisson knee's rate %g is above the start rate %g it was searched under", k.RequestsPerSecond, out.StartRate)
	}
	truth, err := sim.FindKnee(context.Background(), sim.KneeConfig{
		Engine: sim.Config{Preset: p, Speed: kc.speed}, Workload: resolve(t, kc.workload), SLO: slo, Seed: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	truthRate := rateAt(truth, truth.Knee.Concurrency)
	t.Logf("virtual-time closed-loop knee %g in flight at %.4g req/s", truth.Knee.Concurrency, truthRate)
	if !(k.RequestsPerSecond < truthRate) {
		t.Errorf("the poisson knee's rate %g is not below the closed-loop knee's %.4g (virtual time)", k.RequestsPerSecond, truthRate)
	}
	if !(k.Concurrency < truth.Knee.Concurrency) {
		t.Errorf("the poisson knee's mean in-flight %g is not below the closed-loop knee %g (virtual time)", k.Concurrency, truth.Knee.Concurrency)
	}
	// The knee's trial was judged, not waved through for want of requests.
	for _, tr := range out.Trials {
		if tr.Rate == k.RequestsPerSecond && tr.Judged < tr.Ticks/2 {
			t.Errorf("the poisson knee's trial was judged at only %d of %d ticks", tr.Judged, tr.Ticks)
		}
	}
	if len(prof.Sweep.RateLevels) != len(out.Trials) || len(prof.Sweep.Levels) != len(out.Levels) || len(prof.Points) != len(out.Levels) {
		t.Errorf("rate levels %v for %d trials, levels %v and %d points for %d closed-loop levels",
			prof.Sweep.RateLevels, len(out.Trials), prof.Sweep.Levels, len(prof.Points), len(out.Levels))
	}
	path := filepath.Join(t.TempDir(), "profile.yaml")
	data, err := prof.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(path, data); err != nil {
		t.Fatal(err)
	}
	loaded, err := knee.Load(path)
	if err != nil {
		t.Fatalf("the written poisson profile does not load: %v", err)
	}
	if loaded.Knee.Arrivals != knee.ArrivalsPoisson || loaded.Knee.RequestsPerSecond != k.RequestsPerSecond {
		t.Errorf("the loaded knee %+v lost how it was measured", loaded.Knee)
	}

	// Far past the knee, a cap of 8 outstanding requests ends the trial
	// long before its steady part ends, as one that did not keep the SLO.
	gen := resolve(t, kc.workload)
	tr, err := RunTrial(context.Background(), st.client(16), TrialConfig{
		Rate: 2 * out.StartRate, Warmup: time.Second, Steady: 20 * time.Second, Tick: 250 * time.Millisecond, SLOWindow: 2 * time.Second,
		MaxOutstanding: 8, Seed: 1, SLO: slo,
		Next: func() Request {
			w := gen.Next()
			return Request{PromptTokens: w.PromptTokens, MaxTokens: w.OutputTokens}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Capped || tr.Kept || tr.CappedAfter > 5*time.Second || !strings.Contains(tr.Breach, "8 requests outstanding (the cap)") {
		t.Errorf("trial at 2× the start rate with a cap of 8: capped %v after %s, kept %v, breach %q", tr.Capped, tr.CappedAfter, tr.Kept, tr.Breach)
	}
	t.Logf("whole test %s", time.Since(start).Round(100*time.Millisecond))
}

// rateAt is the request rate a profile measured at concurrency c, or NaN.
func rateAt(p knee.Profile, c float64) float64 {
	for _, pt := range p.Points {
		if pt.Concurrency == c {
			return pt.RequestsPerSecond
		}
	}
	return math.NaN()
}
