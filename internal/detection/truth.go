package detection

import (
	"time"

	"github.com/kneewatch/kneewatch/knee"
)

// TruthPoint is the ground truth at one scrape tick.
type TruthPoint struct {
	At time.Time
	// Load is the mean in-flight requests over the last load window (the
	// same window kneewatch averages over), integrated exactly.
	Load float64
	// Knee is the true knee concurrency under the conditions of the moment
	// (slowdown, traffic mix), and Headroom = 1 − Load ÷ Knee.
	Knee, Headroom float64
	// TTFTP and TPOTP are the SLO percentile of TTFT over the requests whose
	// first token came in the last SLO window, and of TPOT over those that
	// finished in it, reaching back as far as it takes to hold
	// knee.MinWindowRequests; NaN while the run has not yet produced that
	// many.
	TTFTP, TPOTP float64
	// Breached is true when either percentile is over its threshold.
	Breached bool
	// Unknown is true when neither percentile could be judged (and neither
	// breached): the start of a run, before enough requests finished.
	Unknown bool
}

// Episode is a stretch of time, [Start, End].
type Episode struct {
	Start, End time.Time
}

// breachMergeGap joins breach stretches less than this apart into one
// episode: a percentile that dips under the threshold for a moment between
// two over it is one incident to an on-call, not two.
const breachMergeGap = 5 * time.Minute

// truthConfig says how the ground truth is judged.
type truthConfig struct {
	slo        knee.SLO
	interval   time.Duration // between ticks
	loadWindow time.Duration // of the true load, as kneewatch's window
	sloWindow  time.Duration // of the windowed SLO percentiles
	grid       *kneeGrid
}

// groundTruth computes the truth at every tick of a run.
func groundTruth(tr *runTrace, cfg truthConfig) []TruthPoint {
	out := make([]TruthPoint, len(tr.ticks))
	// No cap on how far back a window reaches for enough requests: at a
	// low request rate (a long-context replica at a third of its knee
	// finishes a request every ten seconds or more) a 10-minute cap left
	// whole stretches of a run unjudged, counted as "not breached". The
	// truth judges every moment; it is unknown only until the run has
	// produced enough requests at all.
	ttft := knee.WindowedQuantile{Events: tr.ttft, Width: cfg.sloWindow, Q: cfg.slo.Quantile, MaxStretch: -1}
	tpot := knee.WindowedQuantile{Events: tr.tpot, Width: cfg.sloWindow, Q: cfg.slo.Quantile, MaxStretch: -1}
	for i, tk := range tr.ticks {
		p := TruthPoint{At: tk.at}
		p.Load, p.Knee, p.Headroom = trueHeadroom(tr.ticks, i, cfg)
		p.TTFTP = ttft.At(tk.at)
		p.TPOTP = tpot.At(tk.at)
		p.Breached = cfg.slo.BreachedBy(p.TTFTP, p.TPOTP)
		p.Unknown = !p.Breached && !(knee.Known(p.TTFTP) && knee.Known(p.TPOTP))
		out[i] = p
	}
	return out
}

// trueHeadroom is the true load, knee and headroom at ticks[i]; it reads
// only ticks up to i, so it can be computed as the run goes (the oracle).
func trueHeadroom(ticks []tickTruth, i int, cfg truthConfig) (load, kneeC, headroom float64) {
	tk := ticks[i]
	// The load window's start is a tick (ticks are evenly spaced from the
	// start), or the start of the run.
	back := int(cfg.loadWindow / cfg.interval)
	area0, span := 0.0, tk.offset
	if i-back >= 0 {
		area0, span = ticks[i-back].inflightArea, cfg.loadWindow
	}
	load = (tk.inflightArea - area0) / span.Seconds()
	kneeC = cfg.grid.at(tk.altShare, tk.slowdown)
	return load, kneeC, 1 - load/kneeC
}

// breachEpisodes groups the breached ticks into episodes.
func breachEpisodes(truth []TruthPoint) []Episode {
	var out []Episode
	for _, p := range truth {
		if !p.Breached {
			continue
		}
		if n := len(out); n > 0 && p.At.Sub(out[n-1].End) <= breachMergeGap {
			out[n-1].End = p.At
			continue
		}
		out = append(out, Episode{Start: p.At, End: p.At})
	}
	return out
}
