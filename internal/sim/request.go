package sim

import "time"

// Request is one inference request inside the engine. The caller fills
// ID, PromptTokens, MaxTokens and Arrival before Submit; the engine fills the
// rest as the request moves through the queue. All times are engine times
// (the `now` passed to Step plus step durations).
type Request struct {
	// ID is the caller's handle; the engine does not interpret it.
	ID uint64
	// PromptTokens is the prompt length in tokens (≥ 1).
	PromptTokens int
	// MaxTokens is how many output tokens the request generates (≥ 1): the
	// simulator has no EOS, so every request runs to MaxTokens.
	MaxTokens int

	// Generated counts output tokens produced so far.
	Generated int
	// computed is how many of the request's tokens (prompt, then generated)
	// have their KV in the cache. A preemption resets it to 0 (recompute).
	computed int
	// blocks is how many KV blocks the request holds.
	blocks int
	// state says which engine queue holds the request.
	state requestState
	// The fields above are the ones every step reads and writes for every
	// request in its batch; kept together, they share a cache line or two.

	// Arrival is when the request reached the engine.
	Arrival time.Time

	// Scheduled is when the request was first admitted to the running batch.
	Scheduled time.Time
	// FirstToken is when its first output token was produced.
	FirstToken time.Time
	// Finished is when its last output token was produced (or when it was aborted).
	Finished time.Time
	// Preemptions counts how often it lost its KV blocks and went back to the queue.
	Preemptions int
	// Aborted is true when the caller removed the request with Abort.
	Aborted bool
}

type requestState uint8

const (
	stateNew requestState = iota
	stateWaiting
	stateRunning
	stateDone
)

// QueueDuration is the time from arrival to first admission.
func (r *Request) QueueDuration() time.Duration { return sub(r.Scheduled, r.Arrival) }

// PrefillDuration is the time from first admission to the first token.
func (r *Request) PrefillDuration() time.Duration { return sub(r.FirstToken, r.Scheduled) }

// DecodeDuration is the time from the first token to the last.
func (r *Request) DecodeDuration() time.Duration { return sub(r.Finished, r.FirstToken) }

// TTFT is the time from arrival to the first output token.
func (r *Request) TTFT() time.Duration { return sub(r.FirstToken, r.Arrival) }

// E2E is the time from arrival to the last output token.
func (r *Request) E2E() time.Duration { return sub(r.Finished, r.Arrival) }

// TPOT is the mean time per output token after the first,
// (E2E − TTFT) ÷ (Generated − 1). ok is false for requests with fewer than
// two tokens or not yet finished, whose TPOT is undefined.
func (r *Request) TPOT() (tpot time.Duration, ok bool) {
	if r.Generated < 2 || r.Finished.IsZero() || r.FirstToken.IsZero() {
		return 0, false
	}
	return r.DecodeDuration() / time.Duration(r.Generated-1), true
}

// Done reports whether the request finished or was aborted.
func (r *Request) Done() bool { return r.state == stateDone }

// sub returns a − b, or 0 when either time is not set yet.
func sub(a, b time.Time) time.Duration {
	if a.IsZero() || b.IsZero() {
		return 0
	}
	return a.Sub(b)
}
