package sim

import (
	"slices"
	"time"
)

// chunk is one request's share of a step: n tokens to compute.
type chunk struct {
	r *Request
	n int
}

// pending is how many of r's known tokens (prompt plus generated) still
// need their KV computed: the prompt (or what is left of it) before the first
// token, 1 while decoding, everything after a preemption.
func (r *Request) pending() int { return r.PromptTokens + r.Generated - r.computed }

// Step runs one engine iteration starting at now and returns what it did.
// The scheduling follows vLLM V1:
//
//  1. Running requests, oldest first, each get their pending tokens (1 for a
//     decode, the rest of a chunked prefill) within the max_num_batched_tokens
//     budget. When one needs a KV block and none is free, the newest running
//     request is preempted (its blocks freed, itself pushed to the front of the
//     waiting queue, to recompute prompt and generated tokens when readmitted);
//     if that is the request itself, it stops there.
//  2. If nothing was preempted, waiting requests are admitted in FCFS order
//     while max_num_seqs, free KV blocks and the token budget allow; a prompt
//     larger than the remaining budget is prefilled in chunks over several steps.
//
// The step lasts overhead + max(compute, memory), scaled by slowdown ÷ speed.
// Calling Step on an idle engine returns a zero-length result.
func (e *Engine) Step(now time.Time) StepResult {
	res := StepResult{Start: now, End: now}
	if e.Idle() {
		return res
	}
	budget := e.p.MaxNumBatchedTokens
	sc := &e.scratch
	batch := sc.batch[:0]
	res.Tokens, res.FirstTokens, res.Finished = sc.tokens[:0], sc.firstTokens[:0], sc.finished[:0]
	res.Admitted, res.Preempted = sc.admitted[:0], sc.preempted[:0]
	// The buffers keep what they grew to (keep, at every return below);
	// pointers left in them past this step's lengths are overwritten by the
	// next, and a request is small.
	keep := func() {
		sc.batch, sc.tokens, sc.firstTokens, sc.finished = batch, res.Tokens, res.FirstTokens, res.Finished
		sc.admitted, sc.preempted = res.Admitted, res.Preempted
	}

	preempted := false
scheduleRunning:
	for i := 0; i < len(e.running) && budget > 0; i++ {
		r := e.running[i]
		n := min(r.pending(), budget)
		for !e.allocate(r, n) {
			victim := e.running[len(e.running)-1]
			e.preempt(victim)
			res.Preempted = append(res.Preempted, victim)
			preempted = true
			if victim == r {
				break scheduleRunning
			}
		}
		batch = append(batch, chunk{r, n})
		budget -= n
	}

	// vLLM V1 admits nothing in a step that had to preempt: memory is short.
	if !preempted {
		for budget > 0 && len(e.waiting) > 0 && len(e.running) < e.p.MaxNumSeqs {
			r := e.waiting[0]
			n := min(r.pending(), budget)
			if !e.allocate(r, n) {
				break
			}
			e.waiting[0] = nil
			e.waiting = e.waiting[1:]
			r.state = stateRunning
			e.running = append(e.running, r)
			if r.Scheduled.IsZero() {
				r.Scheduled = now
			}
			res.Admitted = append(res.Admitted, r)
			batch = append(batch, chunk{r, n})
			budget -= n
		}
	}

	if len(batch) == 0 {
		// Only possible when the head of the queue cannot get a block even
		// with nothing running, which Submit's max_model_len check and the
		// preset's capacity check rule out.
		keep()
		return res
	}

	var tokens, kvRead int
	for _, c := range batch {
		if c.n == 1 && c.r.Generated > 0 && c.r.pending() == 1 {
			res.DecodeTokens++
		} else {
			res.PrefillTokens += c.n
		}
		tokens += c.n
		// Attention reads the whole context up to the last computed token.
		kvRead += c.r.computed + c.n
	}
	res.BatchSize = len(batch)
	res.ComputeTime, res.MemoryTime, res.Duration = e.cost(tokens, kvRead)
	res.End = now.Add(res.Duration)

	finished := false
	for _, c := range batch {
		r := c.r
		r.computed += c.n
		if r.computed < r.PromptTokens+r.Generated {
			continue // mid-prefill: no token yet
		}
		r.Generated++
		res.Tokens = append(res.Tokens, r)
		if r.Generated == 1 && r.FirstToken.IsZero() {
			r.FirstToken = res.End
			res.FirstTokens = append(res.FirstTokens, r)
		}
		if r.Generated >= r.MaxTokens {
			r.Finished = res.End
			r.state = stateDone
			e.freeBlocks(r)
			res.Finished = append(res.Finished, r)
			finished = true
		}
	}
	if finished {
		e.running = slices.DeleteFunc(e.running, func(r *Request) bool { return r.state == stateDone })
	}

	e.totals.Steps++
	e.totals.BusyTime += res.Duration
	e.totals.PromptTokens += uint64(res.PrefillTokens)
	e.totals.GenerationTokens += uint64(len(res.Tokens))
	e.totals.Preemptions += uint64(len(res.Preempted))
	e.totals.Finished += uint64(len(res.Finished))
	keep()
	return res
}

// allocate grows r's KV blocks to hold n more tokens, if enough are free.
func (e *Engine) allocate(r *Request, n int) bool {
	// Most calls are a decode that fits the blocks already held; that check
	// is a multiplication, not the division below, on every request of
	// every step.
	if r.computed+n <= r.blocks*e.p.BlockSize {
		return true
	}
	need := (r.computed+n+e.p.BlockSize-1)/e.p.BlockSize - r.blocks
	if need > e.totalBlocks-e.usedBlocks {
		return false
	}
	r.blocks += need
	e.usedBlocks += need
	return true
}

func (e *Engine) freeBlocks(r *Request) {
	e.usedBlocks -= r.blocks
	r.blocks = 0
}

// preempt removes the newest running request (r must be last in running),
// frees its blocks and puts it at the front of the waiting queue to be
// recomputed from scratch.
func (e *Engine) preempt(r *Request) {
	e.running = e.running[:len(e.running)-1]
	e.freeBlocks(r)
	r.computed = 0
	r.Preemptions++
	r.state = stateWaiting
	e.waiting = slices.Insert(e.waiting, 0, r)
}
