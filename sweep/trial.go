package sweep

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/measure"
)

// TrialConfig is one open-loop trial: a steady Poisson arrival rate.
type TrialConfig struct {
	// Rate is the arrival rate, requests/s.
	Rate float64
	// Warmup runs before the steady part, which is judged.
	Warmup, Steady time.Duration
	// Tick and SLOWindow: the windowed SLO is judged every Tick of the
	// steady part over windows of SLOWindow (see knee.KeptSLO).
	Tick, SLOWindow time.Duration
	// MaxOutstanding caps the requests in flight: a request due while
	// that many are in flight ends the trial as past the knee.
	MaxOutstanding int
	// StopAtBreach ends the trial at the first tick of the steady part
	// whose windowed SLO is breached, judged on the requests back by then:
	// the verdict is already "not kept", and the time left is saved.
	StopAtBreach bool
	// Seed draws the gaps between arrivals.
	Seed uint64
	// Next returns the next request's lengths. It is called in arrival
	// order from one goroutine, so a seeded source makes the trial's
	// requests reproducible.
	Next func() Request
	SLO  knee.SLO
	// ThresholdShare, in (0, 1], is the share of each SLO threshold the
	// windowed percentiles must stay within for the trial to keep the SLO
	// (0 means 1: the thresholds themselves). See
	// OpenLoopConfig.ThresholdShare.
	ThresholdShare float64
	// Runaway, when its Growth is > 0, does not keep a trial whose
	// requests in flight kept growing through its steady part (see
	// Runaway); the sweep uses measure.DefaultRunaway.
	Runaway measure.Runaway
	// Metrics, when set, is scraped while the trial runs.
	Metrics *Metrics
	// OnProgress, when set, is called after every arrival with the time
	// since the trial started and the requests then in flight.
	OnProgress func(elapsed time.Duration, inFlight int)
}

// Trial is what one open-loop trial measured.
type Trial struct {
	// Rate is the arrival rate asked for (requests/s); Fraction is it as a
	// share of the closed-loop knee's rate (set by the sweep).
	Rate, Fraction float64
	// Search is the rate search the trial belongs to, from 1 (set by the
	// sweep; OpenLoopConfig.Searches).
	Search int
	// Sent is the requests sent, warm-up included.
	Sent int
	// InFlight is the mean of the client's in-flight requests over the
	// steady part: the exact time integral of the count ÷ its length.
	InFlight float64
	// InFlightThirds are the same mean over the first and the last third
	// of the steady part, for the runaway test (see measure.Runaway).
	InFlightThirds [2]float64
	// Point holds the steady part's figures: completed requests and their
	// rate, output tokens/s, goodput, TTFT and TPOT p50/p99 over the
	// requests completed in it, error rate, and the engine metrics.
	// Concurrency is InFlight; MeetsSLO is Kept.
	Point knee.Point
	// Kept is the verdict: the windowed SLO held at every tick of the
	// steady part (knee.KeptSLO), the error rate was at most MaxErrorRate,
	// and the outstanding cap was not reached.
	Kept bool
	// Breach says why the trial did not keep the SLO ("" when it did).
	Breach string
	// StoppedAtBreach is set when the trial ended at its first breached
	// tick (TrialConfig.StopAtBreach).
	StoppedAtBreach bool
	// Capped is set when the outstanding cap ended the trial, CappedAfter
	// is when.
	Capped      bool
	CappedAfter time.Duration
	// Ticks and Judged count the steady part's ticks and those at which
	// both windowed percentiles were known (a window holds at least
	// knee.MinWindowRequests requests); an unknown percentile is no breach.
	Ticks, Judged int
	// TTFTAtQuantile and TPOTAtQuantile are the SLO quantile over the
	// steady part's requests, in seconds.
	TTFTAtQuantile, TPOTAtQuantile float64
	// Errors counts the steady part's failed requests.
	Errors int
	// Steady is how long the steady part ran (shorter when capped).
	Steady time.Duration
	// Completed holds the steady part's completed requests' results.
	Completed []Result
	// KVMeasured says Point.KVCacheUsage came from the engine metrics.
	KVMeasured     bool
	MetricProblems []string
}

// sentRequest is one request of a trial: when the client sent it and when
// it came back.
type sentRequest struct {
	sent, done time.Time
	res        Result
	// cancelled: still in flight when the trial ended, so cut off.
	cancelled bool
}

// RunTrial sends streaming requests to client at exponentially distributed
// gaps (a Poisson process of cfg.Rate), never waiting for completions. It
// runs cfg.Warmup then cfg.Steady, or until a request comes due with
// cfg.MaxOutstanding in flight, then cancels the requests still in flight.
// It returns an error only when ctx is cancelled or cfg is invalid.
func RunTrial(ctx context.Context, client *Client, cfg TrialConfig) (Trial, error) {
	switch {
	case !(cfg.Rate > 0) || math.IsInf(cfg.Rate, 0):
		return Trial{}, fmt.Errorf("trial: the arrival rate must be > 0 requests/s, got %v", cfg.Rate)
	case cfg.Steady <= 0 || cfg.Tick <= 0 || cfg.SLOWindow <= 0 || cfg.Warmup < 0:
		return Trial{}, fmt.Errorf("trial: steady %s, tick %s and SLO window %s must be > 0, warm-up %s ≥ 0", cfg.Steady, cfg.Tick, cfg.SLOWindow, cfg.Warmup)
	case cfg.MaxOutstanding < 1:
		return Trial{}, fmt.Errorf("trial: the outstanding cap must be ≥ 1, got %d", cfg.MaxOutstanding)
	case cfg.Next == nil:
		return Trial{}, fmt.Errorf("trial: no request source")
	case cfg.ThresholdShare != 0 && !(cfg.ThresholdShare > 0 && cfg.ThresholdShare <= 1):
		return Trial{}, fmt.Errorf("trial: the threshold share must be in (0, 1], got %v", cfg.ThresholdShare)
	}
	if err := cfg.Runaway.Validate(); err != nil {
		return Trial{}, fmt.Errorf("trial: %w", err)
	}
	judged := cfg.JudgedSLO()
	var smp *sampler
	if cfg.Metrics.enabled() {
		smp = cfg.Metrics.start(ctx)
		defer smp.stop()
	}
	trialCtx, cancel := context.WithCancel(ctx)
	defer cancel()

	rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x5851f42d4c957f2d))
	var (
		reqs     []*sentRequest
		inFlight atomic.Int64
		wg       sync.WaitGroup
		// finished holds the requests that came back, for judging the SLO
		// while the trial runs; a request's fields are written before it
		// is added, under mu.
		mu       sync.Mutex
		finished []*sentRequest
	)
	start := time.Now()
	steadyStart := start.Add(cfg.Warmup)
	end := steadyStart.Add(cfg.Steady)
	if smp != nil {
		// The steady part's edges get a scrape each, off the dispatcher
		// so that arrivals stay on time.
		wg.Add(1)
		go func() {
			defer wg.Done()
			if sleepUntil(trialCtx, steadyStart) {
				smp.scrapeNow()
			}
		}()
	}
	// breachedAt judges the windowed SLO at a tick on the requests back so far.
	breachedAt := func(tick time.Time) bool {
		mu.Lock()
		done := slices.Clone(finished)
		mu.Unlock()
		ttft, tpot := latencyEvents(done, judged, tick)
		return windowedSLO(ttft, tpot, judged, cfg.SLOWindow, tick, tick, cfg.Tick).breached
	}

	t := Trial{Rate: cfg.Rate}
	gap := func() time.Duration { return time.Duration(rng.ExpFloat64() / cfg.Rate * float64(time.Second)) }
	offset := gap()
	tick := steadyStart
	for {
		due := start.Add(offset)
		if cfg.StopAtBreach && !tick.After(due) && tick.Before(end) {
			if !sleepUntil(ctx, tick) {
				break
			}
			if breachedAt(tick) {
				t.StoppedAtBreach = true
				end = tick
				break
			}
			tick = tick.Add(cfg.Tick)
			continue
		}
		if !due.Before(end) {
			sleepUntil(ctx, end)
			break
		}
		if !sleepUntil(ctx, due) {
			break
		}
		if inFlight.Load() >= int64(cfg.MaxOutstanding) {
			t.Capped, t.CappedAfter = true, time.Since(start)
			break
		}
		req := cfg.Next()
		r := &sentRequest{sent: time.Now()}
		reqs = append(reqs, r)
		n := inFlight.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := client.Do(trialCtx, req)
			mu.Lock()
			r.done, r.res = time.Now(), res
			r.cancelled = res.Err != nil && trialCtx.Err() != nil
			finished = append(finished, r)
			mu.Unlock()
			inFlight.Add(-1)
		}()
		if cfg.OnProgress != nil {
			cfg.OnProgress(time.Since(start), int(n))
		}
		offset += gap()
	}
	stopped := time.Now()
	if ctx.Err() != nil {
		cancel()
		wg.Wait()
		return Trial{}, ctx.Err()
	}
	var metricsEnd time.Time
	if smp != nil {
		smp.scrapeNow()
		metricsEnd = time.Now()
	}
	cancel()
	wg.Wait()

	t.Sent = len(reqs)
	steadyEnd := end
	if stopped.Before(end) {
		steadyEnd = stopped
	}
	t.Steady = max(0, steadyEnd.Sub(steadyStart))
	judgeTrial(&t, reqs, cfg, steadyStart, steadyEnd)
	if smp != nil && t.Steady > 0 {
		rd := smp.readings(steadyStart, metricsEnd)
		t.Point.KVCacheUsage = min(max(rd.kvUsage, 0), 1)
		t.KVMeasured = rd.kvOK
		t.Point.Running, t.Point.Waiting = rd.running, rd.waiting
		t.Point.PreemptionsPerSecond = rd.preemptionRate
		t.Point.GPUUtilization = rd.gpuUtil
		t.MetricProblems = rd.problems
	}
	round(&t.Point)
	return t, nil
}

// judgingShare is the share of the thresholds a trial judged with share
// (a ThresholdShare) is held to: 0 means the thresholds themselves.
func judgingShare(share float64) float64 {
	if share > 0 && share < 1 {
		return share
	}
	return 1
}

// JudgedSLO is the SLO a trial's windows are judged against: each
// threshold times ThresholdShare.
func (cfg TrialConfig) JudgedSLO() knee.SLO {
	slo := cfg.SLO
	if share := judgingShare(cfg.ThresholdShare); share < 1 {
		// To the microsecond, so a report reads 75ms, not 74.999999ms.
		scale := func(d knee.Duration) knee.Duration {
			return knee.Duration(time.Duration(float64(d) * share).Round(time.Microsecond))
		}
		slo.TTFT, slo.TPOT = scale(slo.TTFT), scale(slo.TPOT)
	}
	return slo
}

// sleepUntil waits until the moment or until ctx ends, reporting whether
// the moment came.
func sleepUntil(ctx context.Context, at time.Time) bool {
	d := time.Until(at)
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-tm.C:
		return true
	}
}

// judgeTrial fills in the trial's figures and verdict from its requests:
// the in-flight integral and the completions over [from, to], the
// windowed SLO at every tick of it.
func judgeTrial(t *Trial, reqs []*sentRequest, cfg TrialConfig, from, to time.Time) {
	third := t.Steady / 3
	var area, firstArea, lastArea time.Duration
	for _, r := range reqs {
		area += overlap(r.sent, r.done, from, to)
		firstArea += overlap(r.sent, r.done, from, from.Add(third))
		lastArea += overlap(r.sent, r.done, to.Add(-third), to)
	}
	if t.Steady > 0 {
		t.InFlight = area.Seconds() / t.Steady.Seconds()
	}
	if third > 0 {
		t.InFlightThirds = [2]float64{firstArea.Seconds() / third.Seconds(), lastArea.Seconds() / third.Seconds()}
	}
	judged := cfg.JudgedSLO()
	ttft, tpot := latencyEvents(reqs, judged, to)
	for _, r := range reqs {
		if !r.cancelled && !r.done.Before(from) && !r.done.After(to) {
			t.Completed = append(t.Completed, r.res)
		}
	}
	st := summarize(t.Completed, t.Steady, cfg.SLO)
	t.Point = st.point
	t.Point.Concurrency = math.Round(t.InFlight*1e3) / 1e3
	t.TTFTAtQuantile, t.TPOTAtQuantile, t.Errors = st.ttftQ, st.tpotQ, st.errors

	q := measure.QuantileLabel(cfg.SLO.Quantile)
	w := windowedSLO(ttft, tpot, judged, cfg.SLOWindow, from, to, cfg.Tick)
	t.Ticks, t.Judged = w.ticks, w.judged
	switch {
	case t.Capped:
		t.Breach = fmt.Sprintf("%d requests outstanding (the cap) after %s", cfg.MaxOutstanding, t.CappedAfter.Round(time.Millisecond))
	case w.breached:
		// Before the steady part's length: a trial stopped at a breach on
		// its first tick has none.
		t.Breach = w.describe(q, judged, from)
		if share := judgingShare(cfg.ThresholdShare); share < 1 {
			t.Breach += fmt.Sprintf(" (judged at %.0f%% of the SLO's thresholds)", 100*share)
		}
	case t.Steady <= 0:
		t.Breach = "the steady part never started"
	case w.judged == 0:
		t.Breach = fmt.Sprintf("no tick of the steady part could be judged: fewer than %d requests completed", knee.MinWindowRequests)
	case t.Point.ErrorRate > MaxErrorRate:
		t.Breach = fmt.Sprintf("%.1f%% errors", 100*t.Point.ErrorRate)
	case t.Point.Requests == 0:
		t.Breach = "no request completed in the steady part"
	case cfg.Runaway.Judged(cfg.Warmup, meanDecode(t.Completed)) && cfg.Runaway.RanAway(t.InFlightThirds[0], t.InFlightThirds[1]):
		t.Breach = cfg.Runaway.Describe(t.InFlightThirds[0], t.InFlightThirds[1])
	}
	t.Kept = t.Breach == ""
	t.Point.MeetsSLO = t.Kept
}

// meanDecode is the mean time from the first token to the last of the
// requests that succeeded with a first token (0 when none did).
func meanDecode(results []Result) time.Duration {
	var sum time.Duration
	n := 0
	for _, r := range results {
		if r.Err == nil && r.TTFT > 0 {
			sum += r.E2E - r.TTFT
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / time.Duration(n)
}

// overlap is how much of [a, b] lies inside [from, to].
func overlap(a, b, from, to time.Time) time.Duration {
	lo, hi := a, b
	if lo.Before(from) {
		lo = from
	}
	if hi.After(to) {
		hi = to
	}
	return max(0, hi.Sub(lo))
}
