package sweep

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/measure"
)

// ErrPoissonUnreachable: under Poisson arrivals the SLO broke even at the
// open-loop search's low rate, so there is no poisson knee to report.
var ErrPoissonUnreachable = errors.New("under Poisson arrivals the SLO is not kept even at the lowest rate tried")

// trialFunc runs one open-loop trial at a rate (requests/s), the index-th
// of the sweep, in its search-th rate search (from 1); the sweep's is
// RunTrial against the target, tests give a fake.
type trialFunc func(ctx context.Context, index, search int, rate float64) (Trial, error)

// runPoisson follows a closed-loop search that stopped soon after its
// first break (measure.Search.StopAtBreak, DefaultBreakProbes): it bisects
// a steady Poisson rate between OpenLoop.Low and 1 × the start rate, one
// trial after another, and moves the profile's knee to the best kept rate.
// The start is the lowest broken level's request rate, or the last kept
// level's when the broken one's throughput collapsed (OpenLoopStart). The
// points and levels stay the closed-loop curve.
//
// The closed loop is not refined to its precision: its levels near the
// knee were the slowest of a sweep to judge (minutes each for long
// requests), and the Poisson search needs only a rate above its knee to
// start from (see DefaultBreakProbes for what that saves and costs).
func (cfg *Config) runPoisson(ctx context.Context, out *Outcome, search *measure.Search) error {
	closed := out.Profile.Knee
	sp, ok := OpenLoopStart(out.Profile.Points, search)
	if !ok {
		return errors.New("no closed-loop level measured a request rate to start the open-loop search from")
	}
	start := int(sp.Concurrency)
	out.ClosedLoopKnee = &closed
	out.StartConcurrency, out.StartRate = start, sp.RequestsPerSecond
	out.ClosedLoopEstimate = math.Floor(search.Estimate())
	ol := cfg.OpenLoop
	out.ThresholdShare = ol.ThresholdShare
	maxOut := ol.MaxOutstanding
	if maxOut == 0 {
		maxOut = int(math.Ceil(DefaultOutstandingFactor * out.ClosedLoopEstimate))
	}
	cfg.Logger.Info("open-loop search started", "closed_loop_knee_about", out.ClosedLoopEstimate, "start_concurrency", start, "start_rate", sp.RequestsPerSecond,
		"warmup", ol.Warmup, "min_steady", ol.Steady, "requests_per_trial", ol.Requests, "threshold_share", ol.ThresholdShare, "max_outstanding", maxOut)
	trial := func(ctx context.Context, index, search int, rate float64) (Trial, error) {
		seed := trialSeed(cfg.Seed+uint64(search-1)*SearchSeedStride, rate)
		gen := cfg.Workload.WithSeed(levelSeed(seed, 1))
		steady := ol.SteadyFor(rate)
		cfg.Progress.StartTrial(index, rate, ol.Warmup+steady)
		defer cfg.Progress.EndTrial()
		return RunTrial(ctx, cfg.Client, TrialConfig{
			Rate: rate, Warmup: ol.Warmup, Steady: steady, Tick: ol.Tick, SLOWindow: ol.SLOWindow,
			MaxOutstanding: maxOut, Seed: seed, SLO: cfg.SLO, ThresholdShare: ol.ThresholdShare, Runaway: measure.DefaultRunaway, Metrics: cfg.Metrics, StopAtBreach: true,
			Next: func() Request {
				w := gen.Next()
				return Request{PromptTokens: w.PromptTokens, MaxTokens: w.OutputTokens}
			},
			OnProgress: cfg.Progress.UpdateTrial,
		})
	}
	return cfg.poissonProfile(ctx, out, trial)
}

// OpenLoopStart is the closed-loop point the open-loop search's rates are
// shares of: the search's lowest broken level, unless its request rate
// fell under CollapsedRateShare of the last kept level's, and then the
// kept one (also when nothing broke); false when it measured no rate.
func OpenLoopStart(points []knee.Point, search *measure.Search) (knee.Point, bool) {
	lo, hi := search.Bracket()
	kept, okKept := knee.PointAt(points, float64(lo))
	broken, okBroken := knee.PointAt(points, float64(hi))
	switch {
	case hi > 0 && okBroken && (lo == 0 || !okKept || broken.RequestsPerSecond >= CollapsedRateShare*kept.RequestsPerSecond):
		return broken, broken.RequestsPerSecond > 0
	case lo > 0 && okKept:
		return kept, kept.RequestsPerSecond > 0
	}
	return knee.Point{}, false
}

// CollapsedRateShare is how far under the last kept level's request rate
// a broken level's may fall before its throughput counts as collapsed.
// Past a KV-bound knee a replica preempts and recomputes, and its
// throughput falls off a cliff: in the simulator a 70B/H200 long-context
// replica kept the SLO at concurrency 26 with 0.281 requests/s and broke
// at 32 with 0.059, a quarter of its true poisson knee (0.227), and a
// search from 0.059 found 0.059. Over every suite deployment (seed 1), a
// broken level's rate over the kept one's was 0.21-0.50 where the knee
// was KV-bound and preempting (70B/H200 and 8B/H100 long-context, 8B/L4
// summarize), and 0.73-1.25 elsewhere. Starting from the kept level's rate
// wherever it was the higher did worse where the broken level had not
// collapsed: over the 15 deployments whose knee serves ≥ 1 request/s, 4
// seeds each, within ±10% of the truth 50 → 43 of 60 sweeps and within 20
// minutes 47 → 43 (TestSweepCoarseBeforePoisson).
const CollapsedRateShare = 0.6

// poissonProfile runs the open-loop search with trial and moves the
// profile's knee to the best kept rate; out.ClosedLoopKnee, out.StartRate
// and out.ClosedLoopEstimate must be set. Interrupted with a rate kept, the knee is
// that rate's, marked partial; interrupted before, the profile keeps the
// closed-loop knee, marked partial. When no rate kept the SLO there is no
// profile.
func (cfg *Config) poissonProfile(ctx context.Context, out *Outcome, trial trialFunc) error {
	best, err := cfg.searchRate(ctx, out, trial)
	out.Finished = cfg.Clock()
	p := out.Profile
	p.Metadata.CreatedAt = out.Finished.UTC()
	p.Sweep.FinishedAt = out.Finished.UTC()
	for _, tr := range out.Trials {
		p.Sweep.RateLevels = append(p.Sweep.RateLevels, tr.Rate)
	}
	if err != nil {
		if out.Interrupted && best < 0 {
			// Nothing kept yet: what was measured is the closed-loop knee.
			p.Metadata.Partial = true
			return nil
		}
		if !out.Interrupted {
			out.Profile = nil
			return err
		}
	}
	k, err := poissonKnee(p, out.Trials[best], out.ClosedLoopEstimate)
	if err != nil {
		out.Profile = nil
		return err
	}
	p.Knee = k
	p.Metadata.Partial = p.Metadata.Partial || out.Interrupted
	if err := p.Validate(); err != nil {
		out.Profile = nil
		return fmt.Errorf("the measured poisson profile does not validate (a bug): %w", err)
	}
	return nil
}

// SearchSeedStride separates the draws of repeated rate searches: search
// s runs on the seed cfg.Seed + (s−1) × this, far from the seeds an
// operator passes by hand (1, 2, 3 ...), so `--seed 2` is not a repeat of
// another sweep's second search.
const SearchSeedStride = 1_000_003

// searchRate runs cfg.OpenLoop.Searches rate searches, one after another,
// and returns the index in out.Trials of the knee: the best kept trial of
// the median search, by its best kept rate, a search that kept none
// counting lowest (the lower of the two middle ones for an even count);
// −1 when that search kept none. out.SearchBests records each search's
// best.
//
// Why repeat: one search's knee is one draw. Near the knee whether a trial
// of a few hundred requests meets a bad window is itself random, so a
// search lands off the rate a long run would hold, and its knee in
// flight, which grows faster than the rate there, further off. In the
// simulator, over every suite deployment with four seeds
// (KNEEWATCH_POISSON_VARIANTS=inflight in internal/detection), the median
// of three searches put the knee's rate within ±10% of the truth's in 40
// and 52 of 56 sweeps on the two halves (one search: 36 and 45) and its
// in-flight requests within ±20% in 38 and 40 (32 and 38). The lower of
// two searches read the rate nearly as well (39, 48) but the knee in flight worse
// (26, 35): it picks the search that kept the lower rate, and its lower
// in-flight mean with it.
//
// An interrupted run keeps the median of the searches it finished, or,
// with none finished, the best kept trial so far, and returns an error
// wrapping the context's with out.Interrupted set.
func (cfg *Config) searchRate(ctx context.Context, out *Outcome, trial trialFunc) (int, error) {
	n := max(cfg.OpenLoop.Searches, 1)
	out.SearchBests = nil
	for s := 1; s <= n; s++ {
		best, err := cfg.searchOnce(ctx, out, trial, s, n)
		if err != nil && (out.Interrupted || !errors.Is(err, ErrPoissonUnreachable) || n == 1) {
			if out.Interrupted && len(out.SearchBests) > 0 {
				return medianSearch(out), err
			}
			return best, err
		}
		out.SearchBests = append(out.SearchBests, best)
	}
	best := medianSearch(out)
	if n > 1 {
		var found []string
		for _, i := range out.SearchBests {
			if i < 0 {
				found = append(found, "none")
			} else {
				found = append(found, strconv.FormatFloat(out.Trials[i].Rate, 'g', -1, 64))
			}
		}
		out.OpenLoopReason = fmt.Sprintf("%d rate searches kept up to %s requests/s; the knee is the median search's", n, strings.Join(found, ", "))
	}
	if best < 0 {
		tr := out.Trials[len(out.Trials)-1]
		return best, fmt.Errorf("%w: the median of %d searches kept none (the last trial: %g requests/s, %s)", ErrPoissonUnreachable, n, tr.Rate, tr.Breach)
	}
	return best, nil
}

// medianSearch is the best kept trial of the median of out.SearchBests by
// rate (−1, no kept trial, counting lowest), the lower middle one for an
// even count; −1 without searches.
func medianSearch(out *Outcome) int {
	if len(out.SearchBests) == 0 {
		return -1
	}
	bests := slices.Clone(out.SearchBests)
	rate := func(i int) float64 {
		if i < 0 {
			return -1
		}
		return out.Trials[i].Rate
	}
	slices.SortStableFunc(bests, func(a, b int) int { return cmp.Compare(rate(a), rate(b)) })
	return bests[(len(bests)-1)/2]
}

// searchOnce runs the trials one knee.RateSearch asks for, as search s of
// n, and returns the index in out.Trials of its best kept one (−1 when
// none). An interrupted search returns an error wrapping the context's,
// with out.Interrupted set.
func (cfg *Config) searchOnce(ctx context.Context, out *Outcome, trial trialFunc, s, n int) (int, error) {
	search, err := knee.NewRateSearch(cfg.OpenLoop.Low, cfg.OpenLoop.Steps)
	if err != nil {
		return -1, err
	}
	search.Start = startRateName
	best := -1
	if n > 1 {
		cfg.Logger.Info("open-loop rate search started", "search", s, "of", n)
	}
	for {
		f, ok := search.Next()
		if !ok {
			break
		}
		rate := roundSignificantDown(f*out.StartRate, 4)
		tr, err := trial(ctx, len(out.Trials)+1, s, rate)
		if err != nil {
			if ctx.Err() != nil {
				out.Interrupted = true
				out.OpenLoopReason = fmt.Sprintf("interrupted during the trial at %g requests/s (that trial is discarded)", rate)
				return best, fmt.Errorf("open-loop search: %w", ctx.Err())
			}
			return best, err
		}
		tr.Fraction, tr.Search = f, s
		out.Trials = append(out.Trials, tr)
		logTrial(cfg.Logger, tr)
		search.Record(tr.Kept)
		if tr.Kept {
			best = len(out.Trials) - 1
		}
	}
	out.OpenLoopReason = search.Done()
	if best < 0 {
		tr := out.Trials[len(out.Trials)-1] // the low end, tried last
		return best, fmt.Errorf("%w: %g requests/s (%g× %s, %g): %s", ErrPoissonUnreachable,
			tr.Rate, tr.Fraction, startRateName, out.StartRate, tr.Breach)
	}
	return best, nil
}

// poissonKnee is the knee at a kept trial: its mean in-flight, throughput
// and goodput as measured, its KV-cache usage from the engine metrics or,
// without them, read on the closed-loop curve at that in-flight load.
// closedLoop is the closed-loop knee it records beside it.
func poissonKnee(p *knee.Profile, tr Trial, closedLoop float64) (knee.Knee, error) {
	pt := tr.Point
	lo, hi := p.Points[0].Concurrency, p.Points[len(p.Points)-1].Concurrency
	if pt.Concurrency < lo || pt.Concurrency > hi {
		return knee.Knee{}, fmt.Errorf("the poisson knee's mean in-flight load (%g at %g requests/s) lies outside the concurrencies swept (%g..%g), where the profile cannot describe it",
			pt.Concurrency, tr.Rate, lo, hi)
	}
	if !tr.KVMeasured {
		if at, ok := p.CurveAt(pt.Concurrency); ok {
			pt.KVCacheUsage = math.Round(at.KVCacheUsage*1e6) / 1e6
		}
	}
	return knee.Knee{
		Concurrency:            pt.Concurrency,
		OutputTokensPerSecond:  pt.OutputTokensPerSecond,
		GoodputTokensPerSecond: pt.GoodputTokensPerSecond,
		KVCacheUsage:           pt.KVCacheUsage,
		LimitingResource:       knee.LimitingResource(pt),
		Arrivals:               knee.ArrivalsPoisson,
		RequestsPerSecond:      tr.Rate,
		ClosedLoopConcurrency:  closedLoop,
	}, nil
}

// trialSeed derives a trial's draws from the run's seed and its rate, so a
// trial's arrivals do not depend on which trials ran before it.
func trialSeed(seed uint64, rate float64) uint64 {
	return levelSeed(seed^math.Float64bits(rate), -1)
}

// roundSignificantDown rounds x > 0 down to n significant digits, so the
// rates a profile records read as what was asked for and a trial at the
// closed-loop rate itself is not rounded above it (61.866 req/s read as
// 61.87 made a Poisson knee faster than the closed-loop one).
func roundSignificantDown(x float64, n int) float64 {
	v, err := strconv.ParseFloat(strconv.FormatFloat(x, 'g', n, 64), 64)
	if err != nil {
		return x
	}
	if v > x {
		step := math.Pow(10, math.Floor(math.Log10(x))-float64(n-1))
		v, _ = strconv.ParseFloat(strconv.FormatFloat(v-step, 'g', n, 64), 64)
	}
	return v
}

func logTrial(log *slog.Logger, tr Trial) {
	verdict := "kept the SLO"
	if !tr.Kept {
		verdict = "did not keep the SLO: " + tr.Breach
	}
	log.Info("open-loop trial measured", "search", tr.Search, "rate", tr.Rate, "of_start_rate", math.Round(tr.Fraction*1e4)/1e4,
		"mean_in_flight", tr.Point.Concurrency, "verdict", verdict,
		"output_tok_s", math.Round(tr.Point.OutputTokensPerSecond), "goodput_tok_s", math.Round(tr.Point.GoodputTokensPerSecond),
		"sent", tr.Sent, "completed", len(tr.Completed), "errors", tr.Errors, "judged_ticks", fmt.Sprintf("%d/%d", tr.Judged, tr.Ticks),
		"steady", tr.Steady.Round(time.Millisecond))
	for _, p := range tr.MetricProblems {
		log.Warn("metrics incomplete for this trial", "rate", tr.Rate, "problem", p)
	}
}

// startRateName is what the open-loop search's fractions are of, as its
// reasons and the report say it.
const startRateName = "the start rate"
