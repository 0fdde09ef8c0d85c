// Package sim is a simulated LLM-serving replica with a real knee: an
// iteration-level continuous-batching engine in the style of vLLM V1, a
// roofline cost model per step, and the closed-loop driver that measures the
// simulator's true latency-throughput curve and knee in virtual time.
package sim

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Config configures an Engine.
type Config struct {
	// Preset is the model, GPU and scheduler limits.
	Preset Preset
	// Speed K makes the simulated GPU K times faster: every step cost is divided
	// by K. 0 means 1.
	Speed float64
	// Slowdown is a throttling factor ≥ 1 that multiplies every step cost.
	// 0 means 1. It can be changed at runtime with SetSlowdown.
	Slowdown float64
}

// Engine is the continuous-batching core. It is a pure state machine: time
// only advances through the `now` given to Step, so callers can run it in
// virtual time (tests, ground truth) or against the wall clock (the HTTP
// replica).
//
// An Engine is not safe for concurrent use; callers that share one between
// goroutines must hold their own mutex around every method.
type Engine struct {
	p        Preset
	roofline roofline
	speed    float64
	slowdown float64

	totalBlocks int
	usedBlocks  int

	// running is in admission order, so the newest request is last: it is
	// the one preempted when KV runs out.
	running []*Request
	// waiting is FCFS; preempted requests go back to its front.
	waiting []*Request

	// Cumulative counters since the engine started.
	totals Totals

	// scratch holds the buffers every Step reuses: the step's batch, and
	// the backing of the StepResult lists it returns (valid until the next
	// Step). A step per few milliseconds of simulated time, each growing
	// its lists from nothing, was half of a virtual-time knee search.
	scratch struct {
		batch                                              []chunk
		tokens, firstTokens, finished, admitted, preempted []*Request
	}
}

// Totals are cumulative counters since the engine started, for metrics
// exposition.
type Totals struct {
	Steps            uint64
	BusyTime         time.Duration // sum of step durations
	PromptTokens     uint64        // prefill tokens computed, including recomputation after preemption
	GenerationTokens uint64        // output tokens produced
	Preemptions      uint64
	Finished         uint64
	Aborted          uint64
}

// StepResult is what one engine iteration did. Its lists are the engine's
// buffers, valid until its next Step. Every event in it happens at
// End = Start + Duration, when the step's tokens are produced.
type StepResult struct {
	Start    time.Time
	Duration time.Duration
	End      time.Time

	// Tokens lists the requests that produced one output token in this step
	// (a step produces at most one token per request).
	Tokens []*Request
	// FirstTokens lists the requests whose first output token this was.
	FirstTokens []*Request
	// Finished lists the requests that produced their last token.
	Finished []*Request
	// Admitted lists the requests admitted from the waiting queue, including
	// readmitted preempted ones.
	Admitted []*Request
	// Preempted lists the requests that lost their KV blocks and went back to
	// the waiting queue.
	Preempted []*Request

	// PrefillTokens counts prompt (and recomputed) tokens processed.
	PrefillTokens int
	// DecodeTokens counts single-token decode steps processed.
	DecodeTokens int
	// BatchSize is the number of requests scheduled in the step.
	BatchSize int

	// ComputeTime and MemoryTime are the roofline terms of the step, after
	// speed and slowdown; Duration = overhead + max(ComputeTime, MemoryTime).
	// Their ratio to Duration tells how busy the tensor cores and HBM were.
	ComputeTime time.Duration
	MemoryTime  time.Duration
}

// State is a snapshot of the engine's queues and KV cache.
type State struct {
	Running       int
	Waiting       int
	KVUsedBlocks  int
	KVTotalBlocks int
	// KVUsage is KVUsedBlocks ÷ KVTotalBlocks, 0..1.
	KVUsage float64
	Totals  Totals
}

// NewEngine validates cfg and returns an idle engine.
func NewEngine(cfg Config) (*Engine, error) {
	if err := cfg.Preset.Validate(); err != nil {
		return nil, err
	}
	speed := cfg.Speed
	if speed == 0 {
		speed = 1
	}
	if !(speed > 0) || math.IsInf(speed, 0) {
		return nil, fmt.Errorf("speed must be a finite number > 0, got %v", cfg.Speed)
	}
	e := &Engine{
		p:           cfg.Preset,
		speed:       speed,
		slowdown:    1,
		totalBlocks: cfg.Preset.KVBlocks(),
	}
	e.roofline = rooflineOf(&e.p)
	if cfg.Slowdown != 0 {
		if err := e.SetSlowdown(cfg.Slowdown); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// Preset returns the engine's preset.
func (e *Engine) Preset() Preset { return e.p }

// SetSlowdown changes the throttling factor (≥ 1) for all following steps.
func (e *Engine) SetSlowdown(f float64) error {
	if !(f >= 1) || math.IsInf(f, 0) {
		return fmt.Errorf("slowdown must be a finite factor ≥ 1, got %v", f)
	}
	e.slowdown = f
	return nil
}

// Slowdown returns the current throttling factor.
func (e *Engine) Slowdown() float64 { return e.slowdown }

// ErrTooLong marks a request that can never run on this engine.
var ErrTooLong = errors.New("request too long")

// Submit enqueues r at the back of the waiting queue. The caller sets
// r.Arrival to the time the request arrived (it is only recorded, for queue
// time and TTFT) and submits requests in arrival order. A request whose
// prompt plus output exceeds max_model_len is refused with ErrTooLong, as
// vLLM refuses it with HTTP 400.
func (e *Engine) Submit(r *Request) error {
	if r == nil {
		return errors.New("submit: nil request")
	}
	if r.state != stateNew {
		return fmt.Errorf("submit: request %d was already submitted", r.ID)
	}
	if r.PromptTokens < 1 || r.MaxTokens < 1 {
		return fmt.Errorf("submit: request %d needs prompt_tokens ≥ 1 and max_tokens ≥ 1, got %d and %d", r.ID, r.PromptTokens, r.MaxTokens)
	}
	if n := r.PromptTokens + r.MaxTokens; n > e.p.MaxModelLen {
		return fmt.Errorf("submit: request %d: %w: %d prompt + %d output tokens exceed max_model_len %d",
			r.ID, ErrTooLong, r.PromptTokens, r.MaxTokens, e.p.MaxModelLen)
	}
	r.state = stateWaiting
	e.waiting = append(e.waiting, r)
	return nil
}

// Abort removes a waiting or running request (a client went away), frees
// its KV blocks and marks it Aborted and Finished at now. It is a no-op for a
// request that is already done.
func (e *Engine) Abort(r *Request, now time.Time) {
	switch r.state {
	case stateWaiting:
		e.waiting = remove(e.waiting, r)
	case stateRunning:
		e.running = remove(e.running, r)
		e.freeBlocks(r)
	default:
		return
	}
	r.state = stateDone
	r.Aborted = true
	r.Finished = now
	e.totals.Aborted++
}

func remove(q []*Request, r *Request) []*Request {
	for i, x := range q {
		if x == r {
			return append(q[:i], q[i+1:]...)
		}
	}
	return q
}

// Idle reports whether the engine has nothing to run.
func (e *Engine) Idle() bool { return len(e.running) == 0 && len(e.waiting) == 0 }

// State returns the queue lengths and KV-cache occupancy.
func (e *Engine) State() State {
	return State{
		Running:       len(e.running),
		Waiting:       len(e.waiting),
		KVUsedBlocks:  e.usedBlocks,
		KVTotalBlocks: e.totalBlocks,
		KVUsage:       float64(e.usedBlocks) / float64(e.totalBlocks),
		Totals:        e.totals,
	}
}
