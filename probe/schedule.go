package probe

import (
	"context"
	"strings"
	"time"

	commonconfig "github.com/prometheus/common/config"

	"github.com/kneewatch/kneewatch/knee"
)

// loop probes one replica until ctx ends. The first probe comes at a random
// offset within the interval (so replicas started together spread out),
// each next one an interval later, ±10%. Probes run one at a time in this
// goroutine, so at most one is in flight per replica; a slot that comes due
// while a probe still runs is skipped with reason in_flight.
func (r *Runner) loop(ctx context.Context, s *replicaState, state StateFunc) {
	interval := r.opts.Probes.Interval.D()
	next := time.Now().Add(time.Duration(r.uniform() * float64(interval)))
	timer := time.NewTimer(time.Until(next))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		sent := r.slot(ctx, s, state)
		next = next.Add(r.jittered(interval))
		for now := time.Now(); !next.After(now); next = next.Add(r.jittered(interval)) {
			if sent {
				s.skip(ReasonInFlight) // due while the probe ran
			} // else the timer fired late (a paused process): nothing was skipped on purpose
		}
		timer.Reset(time.Until(next))
	}
}

// slot decides whether to probe now and, if so, probes. It reports whether
// a probe was sent.
func (r *Runner) slot(ctx context.Context, s *replicaState, state StateFunc) bool {
	st, known := state(s.name)
	if known {
		s.setModel(st.Model)
	}
	if reason, skip := r.skipReason(st, known); skip {
		s.skip(reason)
		r.log.Debug("probe skipped", "replica", s.name, "reason", reason)
		return false
	}
	p := r.opts.Probes
	id, ok := s.reserve(r.opts.Now(), p.MaxTokens, p.LoadRatioCap, r.window)
	if !ok {
		r.log.Debug("probe skipped", "replica", s.name, "reason", ReasonBudget)
		return false
	}
	model := s.settleModel()
	target := s.snapshotTarget()
	key := r.apiKey()
	res := r.client.Probe(ctx, Request{BaseURL: target.BaseURL, Model: model, APIKey: key})
	if res.Canceled {
		s.drop(id)
		return true
	}
	changed := s.finish(id, res, r.opts.Now())
	r.logResult(s.name, res, changed, key)
	return true
}

// skipReason applies the safety switches to the watcher's latest state.
// A replica with no state yet, or an unknown value, is not skipped for it:
// only what the watcher saw can stop a probe (the budget still applies).
//
// "Queue growing" is a waiting queue that is non-empty on average over the
// window and whose slope is positive: requests arrive faster than the
// replica admits them. Either alone is not enough: a positive slope over an
// empty queue is noise, and a steady queue is the past_knee check's job.
func (r *Runner) skipReason(st ReplicaState, known bool) (Reason, bool) {
	if !known {
		return "", false
	}
	p := r.opts.Probes
	if p.SkipPastKnee && knee.Known(st.Headroom) && st.Headroom < 0 {
		return ReasonPastKnee, true
	}
	if p.SkipQueueGrowing && knee.Known(st.QueueGrowthPerSecond) && st.QueueGrowthPerSecond > 0 &&
		knee.Known(st.Waiting) && st.Waiting > 0 {
		return ReasonQueueGrowing, true
	}
	return "", false
}

// logResult logs a finished probe: failures when a replica starts failing
// (at warn) and recoveries (at info), every probe at debug. Error text can
// hold a server's words (an error body), so the API key is masked in it.
func (r *Runner) logResult(replica string, res Result, changed bool, key commonconfig.Secret) {
	if res.OK() {
		if changed {
			r.log.Info("probes of the replica succeed again", "replica", replica, "ttft_seconds", res.TTFT.Seconds())
		}
		r.log.Debug("probe succeeded", "replica", replica, "status", res.StatusCode, "ttft_seconds", res.TTFT.Seconds(),
			"tpot_seconds", res.TPOT.Seconds(), "e2e_seconds", res.E2E.Seconds(), "tokens", res.OutputTokens)
		return
	}
	level := r.log.Debug
	if changed {
		level = r.log.Warn
	}
	level("probe failed", "replica", replica, "class", string(res.Class), "status", res.StatusCode,
		"e2e_seconds", res.E2E.Seconds(), "err", redact(res.Err.Error(), key))
}

// apiKey reads the key at each probe, so a rotated key file is picked up.
// When reading fails it keeps the last good key and logs the error (which
// names the file or variable, never the key) once per distinct error.
func (r *Runner) apiKey() commonconfig.Secret {
	key, err := r.opts.Probes.APIKey()
	r.keyMu.Lock()
	defer r.keyMu.Unlock()
	if err != nil {
		if msg := err.Error(); msg != r.lastKeyErr {
			r.lastKeyErr = msg
			r.log.Warn("cannot read the probe API key; using the last good one", "err", msg)
		}
		return r.lastKey
	}
	r.lastKey, r.lastKeyErr = key, ""
	return key
}

// redact masks the key wherever it appears in s.
func redact(s string, key commonconfig.Secret) string {
	if key == "" {
		return s
	}
	return strings.ReplaceAll(s, string(key), "<secret>")
}

// uniform returns a random number in [0, 1).
func (r *Runner) uniform() float64 {
	r.randMu.Lock()
	defer r.randMu.Unlock()
	return r.rand.Float64()
}

// jittered returns d scaled by a random factor in [1 − jitterFraction, 1 + jitterFraction).
func (r *Runner) jittered(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (1 + jitterFraction*(2*r.uniform()-1)))
}
