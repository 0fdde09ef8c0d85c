package probe

import (
	"math"
	"time"
)

// MinFailingProbes is how many probes must have finished in the window, all
// failed, before a replica's probes count as all failing: one lost probe is
// noise, two in a row with none getting through is a replica that does not
// serve tokens.
const MinFailingProbes = 2

// Summaries is what the watcher's evaluation reads: *Runner implements it,
// and a nil *Runner (probes off) answers false for every replica.
type Summaries interface {
	Summary(replica string) (Summary, bool)
	Traffic(replica string, from, to time.Time) (Traffic, bool)
}

// Traffic is what a replica's successful probes added to its engine's
// counters over a span: the watcher takes it out of the request mix, so
// kneewatch's own 16-token probes do not read as a drift of the traffic.
type Traffic struct {
	Requests     int
	PromptTokens float64 // as the server counted them (usage), else as the probe sized its prompt
	OutputTokens float64
}

// Traffic returns the replica's successful probes that finished in
// (from, to], and false when the replica is not probed. Failed probes are
// left out: whether an engine counts a request it failed or aborted, and
// with which tokens, varies by engine and by failure.
func (r *Runner) Traffic(replica string, from, to time.Time) (Traffic, bool) {
	if r == nil {
		return Traffic{}, false
	}
	r.mu.Lock()
	s, ok := r.replicas[replica]
	r.mu.Unlock()
	if !ok {
		return Traffic{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var t Traffic
	for _, rec := range s.records {
		if !rec.finished || !rec.ok || !rec.end.After(from) || rec.end.After(to) {
			continue
		}
		t.Requests++
		t.OutputTokens += float64(rec.tokens)
		prompt := rec.prompt
		if prompt <= 0 {
			prompt = r.opts.Probes.PromptTokens
		}
		t.PromptTokens += float64(prompt)
	}
	return t, true
}

var _ Summaries = (*Runner)(nil)

// Summary is one replica's probes over the summary window (see
// Runner.Window), for the watcher's evaluation.
type Summary struct {
	Window    time.Duration // the span summarized
	Probes    int           // probes that finished in the window
	Successes int
	// SuccessRatio is Successes ÷ Probes; NaN when no probe finished.
	SuccessRatio float64
	// TTFTAttainment and TPOTAttainment are the shares of successful probes
	// in the window whose TTFT (TPOT) was ≤ the SLO threshold; NaN without a
	// threshold or a measured probe.
	TTFTAttainment, TPOTAttainment float64
	// AllFailing is true when at least MinFailingProbes probes finished in
	// the window and none succeeded: the replica is not serving tokens to a
	// client, whatever its metrics say.
	AllFailing bool
	// LastClass is the class of the latest finished probe ("" for success).
	LastClass Class
}

// summaryLocked summarizes the probes that finished in (now − window, now].
func (s *replicaState) summaryLocked(now time.Time, window time.Duration) Summary {
	out := Summary{Window: window, SuccessRatio: math.NaN(), TTFTAttainment: math.NaN(), TPOTAttainment: math.NaN()}
	cut := now.Add(-window)
	var ttft, tpot attainment
	var lastEnd time.Time
	for _, r := range s.records {
		if !r.finished || !r.end.After(cut) || r.end.After(now) {
			continue
		}
		out.Probes++
		if !r.end.Before(lastEnd) {
			lastEnd = r.end
			out.LastClass = r.class
		}
		if !r.ok {
			continue
		}
		out.Successes++
		ttft.add(r.ttft, s.target.SLOTTFT)
		tpot.add(r.tpot, s.target.SLOTPOT)
	}
	if out.Probes > 0 {
		out.SuccessRatio = float64(out.Successes) / float64(out.Probes)
	}
	out.TTFTAttainment, out.TPOTAttainment = ttft.ratio(), tpot.ratio()
	out.AllFailing = out.Probes >= MinFailingProbes && out.Successes == 0
	return out
}

// attainment counts measured values within an SLO threshold.
type attainment struct{ within, measured int }

func (a *attainment) add(v float64, threshold time.Duration) {
	if threshold <= 0 || math.IsNaN(v) {
		return
	}
	a.measured++
	if v <= threshold.Seconds() {
		a.within++
	}
}

func (a attainment) ratio() float64 {
	if a.measured == 0 {
		return math.NaN()
	}
	return float64(a.within) / float64(a.measured)
}
