package sim

import (
	"context"
	"time"
)

// aheadTolerance is how far a step's end may lie in the future before the
// driver sleeps until it. Below it the driver keeps stepping, so that at a
// high --speed many sub-millisecond steps run back to back instead of each
// paying a timer's granularity.
const aheadTolerance = time.Millisecond

// Run drives the engine in real time until ctx is cancelled: while there is
// work it runs a step, waits until the step's end on the wall clock, then
// delivers the step's tokens to the waiting streams and records metrics at
// that time. With no work (or while stalled by a fault) it blocks until a
// submit, a fault change or the stall's end. When ctx ends, every in-flight
// request fails and Run returns. Call it once per replica.
func (r *Replica) Run(ctx context.Context) {
	defer func() {
		r.mu.Lock()
		r.closed = true
		r.failAllLocked(errClosed)
		r.mu.Unlock()
	}()
	for {
		r.mu.Lock()
		now := time.Now()
		if wait, blocked := r.blockedLocked(now); blocked {
			r.continuous = false
			r.mu.Unlock()
			if !r.idle(ctx, wait) {
				return
			}
			continue
		}
		start := r.stepStartLocked(now)
		gen := r.gen
		res := r.engine.Step(start)
		r.lastEnd = res.End
		r.continuous = true
		r.act.record(&res)
		r.mu.Unlock()

		if res.BatchSize == 0 {
			// Work exists but nothing could be scheduled; the engine rules
			// this out, but never spin on it.
			r.log.Warn("engine step scheduled nothing while requests wait")
			if !sleepCtx(ctx, 10*time.Millisecond) {
				return
			}
			continue
		}
		if ahead := time.Until(res.End); ahead > aheadTolerance {
			if !sleepCtx(ctx, ahead) {
				return
			}
		}

		r.mu.Lock()
		if r.gen == gen { // a restart during the step discards it
			r.deliverLocked(&res)
		}
		r.mu.Unlock()
	}
}

// maxCatchUp is how far the engine's timeline may trail the wall clock
// before the driver restarts it at now instead of catching up (the process
// was descheduled for long). Catching up delivers the overdue tokens back to
// back, so this also bounds how bursty the stream gets after a hiccup.
const maxCatchUp = 10 * time.Millisecond

// stepStartLocked is when the next step starts. While the engine stays busy,
// each step starts where the previous one ended, not when the driver woke up:
// timers fire late by up to a millisecond or more on a loaded machine, and
// starting from the wake-up time would add that to every step (a 60-token
// request at --speed 5 came out 1.6× too slow). The oversleep then only
// delays delivery, without accumulating. A step never starts before the
// latest submit, so no request is scheduled before it arrived.
func (r *Replica) stepStartLocked(now time.Time) time.Time {
	if !r.continuous && !r.lastEnd.After(now) {
		return now // after idling or stalling the timeline restarts at now
	}
	start := r.lastEnd
	if r.lastSubmit.After(start) {
		start = r.lastSubmit
	}
	if now.Sub(start) > maxCatchUp {
		return now
	}
	return start
}

// blockedLocked reports whether the driver must wait, and for how long at
// most (0 means until nudged).
func (r *Replica) blockedLocked(now time.Time) (time.Duration, bool) {
	if stalled, until := r.faults.stalled(now); stalled {
		if until.IsZero() {
			return 0, true
		}
		return until.Sub(now), true
	}
	return 0, r.engine.Idle()
}

// idle waits for a nudge, for d when d > 0, or for ctx. It reports false
// when ctx ended.
func (r *Replica) idle(ctx context.Context, d time.Duration) bool {
	var timeout <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-ctx.Done():
		return false
	case <-r.wake:
	case <-timeout:
	}
	return true
}

// sleepCtx sleeps for d unless ctx ends first; it reports whether ctx is alive.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// deliverLocked hands a finished step's tokens to the streams and records
// its metrics.
func (r *Replica) deliverLocked(res *StepResult) {
	ev := stepEvent{
		at:              res.End,
		iterationTokens: res.PrefillTokens + res.DecodeTokens,
		generated:       len(res.Tokens),
		preempted:       len(res.Preempted),
	}
	for _, q := range res.Admitted {
		s := r.streams[q]
		if s == nil || s.admitted {
			continue // cancelled meanwhile, or readmitted after a preemption
		}
		s.admitted = true
		ev.admitted = append(ev.admitted, admission{queue: q.QueueDuration(), promptTokens: q.PromptTokens})
	}
	for _, q := range res.FirstTokens {
		ev.firstTokens = append(ev.firstTokens, firstToken{ttft: q.TTFT(), promptTokens: q.PromptTokens})
	}
	for _, q := range res.Tokens {
		s := r.streams[q]
		if s == nil {
			continue
		}
		if !s.lastToken.IsZero() {
			ev.intervals = append(ev.intervals, res.End.Sub(s.lastToken))
		}
		s.lastToken = res.End
		s.produced = q.Generated
		s.signal()
	}
	r.rec.step(&ev)
	for _, q := range res.Finished {
		r.rec.finished(newFinishEvent(q))
		if s := r.streams[q]; s != nil {
			s.done = true
			s.signal()
			delete(r.streams, q)
		}
	}
	r.rec.state(r.engine.State())
}
