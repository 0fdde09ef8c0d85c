package sim

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// smallPreset is the 8B/H100 preset cut down so limits bite with few
// requests: kvBlocks KV blocks of 16 tokens, the given batch limits.
func smallPreset(t *testing.T, kvBlocks, maxSeqs, maxBatched int) Preset {
	t.Helper()
	p, err := LoadPreset("llama-3.1-8b-h100")
	if err != nil {
		t.Fatal(err)
	}
	p.MaxNumSeqs = maxSeqs
	p.MaxNumBatchedTokens = maxBatched
	p.MaxModelLen = min(1024, kvBlocks*p.BlockSize)
	// Size GPU memory so exactly kvBlocks blocks fit.
	p.GPUMemoryUtilization = 1
	p.GPUMemoryBytes = p.WeightBytes + p.ActivationReserveBytes + (float64(kvBlocks)+0.5)*p.KVBytesPerToken*float64(p.BlockSize)
	if got := p.KVBlocks(); got != kvBlocks {
		t.Fatalf("test preset has %d KV blocks, want %d", got, kvBlocks)
	}
	return p
}

// checkedRun submits reqs at epoch, steps the engine until idle and calls
// check after every step with the step's result. It returns the engine.
func checkedRun(t *testing.T, p Preset, reqs []*Request, check func(StepResult, *Engine)) *Engine {
	t.Helper()
	e, err := NewEngine(Config{Preset: p})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs {
		r.Arrival = epoch
		if err := e.Submit(r); err != nil {
			t.Fatal(err)
		}
	}
	now := epoch
	for steps := 0; !e.Idle(); steps++ {
		if steps > 1_000_000 {
			t.Fatal("engine made no progress in a million steps")
		}
		res := e.Step(now)
		if res.Duration <= 0 {
			t.Fatalf("step at %v had no duration with %d running, %d waiting", now, e.State().Running, e.State().Waiting)
		}
		check(res, e)
		now = res.End
	}
	return e
}

func requests(n, prompt, output int) []*Request {
	out := make([]*Request, n)
	for i := range out {
		out[i] = &Request{ID: uint64(i + 1), PromptTokens: prompt, MaxTokens: output}
	}
	return out
}

// blocksHeld sums the KV blocks every running request holds.
func blocksHeld(e *Engine) int {
	n := 0
	for _, r := range e.running {
		n += r.blocks
	}
	return n
}

func TestNeverMoreThanMaxNumSeqsRun(t *testing.T) {
	p := smallPreset(t, 1000, 4, 512)
	checkedRun(t, p, requests(20, 50, 30), func(res StepResult, e *Engine) {
		if st := e.State(); st.Running > 4 || res.BatchSize > 4 {
			t.Fatalf("running %d, batch %d: more than max_num_seqs 4", st.Running, res.BatchSize)
		}
	})
}

func TestKVBlocksNeverExceedCapacity(t *testing.T) {
	// 40 blocks = 640 tokens for 12 requests that each grow to 300 tokens:
	// the cache fills and the engine must preempt rather than overcommit.
	p := smallPreset(t, 40, 64, 512)
	preemptions := 0
	checkedRun(t, p, requests(12, 100, 200), func(res StepResult, e *Engine) {
		st := e.State()
		if st.KVUsedBlocks > st.KVTotalBlocks {
			t.Fatalf("%d KV blocks used of %d", st.KVUsedBlocks, st.KVTotalBlocks)
		}
		if held := blocksHeld(e); held != st.KVUsedBlocks {
			t.Fatalf("running requests hold %d blocks but the engine counts %d used", held, st.KVUsedBlocks)
		}
		for _, r := range e.running {
			if need := (r.computed + 15) / 16; r.blocks < need {
				t.Fatalf("request %d has %d computed tokens in only %d blocks", r.ID, r.computed, r.blocks)
			}
		}
		preemptions += len(res.Preempted)
	})
	if preemptions == 0 {
		t.Error("the cache never filled: the test does not exercise preemption")
	}
}

func TestChunkedPrefillRespectsTheTokenBudget(t *testing.T) {
	const budget = 64
	p := smallPreset(t, 1000, 8, budget)
	long := &Request{ID: 1, PromptTokens: 1000, MaxTokens: 5}
	steps, firstTokenStep := 0, 0
	checkedRun(t, p, []*Request{long}, func(res StepResult, e *Engine) {
		steps++
		if got := res.PrefillTokens + res.DecodeTokens; got > budget {
			t.Fatalf("step %d computed %d tokens, budget %d", steps, got, budget)
		}
		if len(res.FirstTokens) > 0 {
			firstTokenStep = steps
		}
	})
	// 1000 prompt tokens in chunks of 64 take ceil(1000/64) = 16 steps.
	if firstTokenStep != 16 {
		t.Errorf("first token after %d steps, want 16 chunks of ≤ 64 tokens", firstTokenStep)
	}
	if long.Generated != 5 {
		t.Errorf("generated %d tokens, want 5", long.Generated)
	}
}

func TestDecodesGoFirstAndPrefillsTakeWhatIsLeft(t *testing.T) {
	p := smallPreset(t, 1000, 8, 64)
	e, _ := NewEngine(Config{Preset: p})
	a := &Request{ID: 1, PromptTokens: 10, MaxTokens: 50, Arrival: epoch}
	_ = e.Submit(a)
	now := e.Step(epoch).End // a prefills and produces its first token
	b := &Request{ID: 2, PromptTokens: 500, MaxTokens: 5, Arrival: now}
	_ = e.Submit(b)
	res := e.Step(now)
	if res.DecodeTokens != 1 || res.PrefillTokens != 63 {
		t.Errorf("step with one decode and a long prefill: %d decode + %d prefill tokens, want 1 + 63", res.DecodeTokens, res.PrefillTokens)
	}
}

func TestAdmissionIsFirstComeFirstServed(t *testing.T) {
	p := smallPreset(t, 1000, 3, 128)
	var admitted []uint64
	reqs := requests(10, 40, 20)
	checkedRun(t, p, reqs, func(res StepResult, e *Engine) {
		for _, r := range res.Admitted {
			admitted = append(admitted, r.ID)
		}
	})
	for i, id := range admitted {
		if id != uint64(i+1) {
			t.Fatalf("admission order %v, want 1..10 in order", admitted)
		}
	}
	for i := 1; i < len(reqs); i++ {
		if reqs[i].Scheduled.Before(reqs[i-1].Scheduled) {
			t.Errorf("request %d scheduled at %v before request %d at %v", reqs[i].ID, reqs[i].Scheduled, reqs[i-1].ID, reqs[i-1].Scheduled)
		}
	}
}

func TestPreemptionTakesTheNewestAndRecomputes(t *testing.T) {
	p := smallPreset(t, 40, 64, 512)
	reqs := requests(12, 100, 200)
	checkedRun(t, p, reqs, func(res StepResult, e *Engine) {
		for _, v := range res.Preempted {
			// The victim is newer than (admitted after) everything still running.
			for _, r := range e.running {
				if r.Scheduled.After(v.Scheduled) || (r.Scheduled.Equal(v.Scheduled) && r.ID > v.ID) {
					t.Fatalf("preempted request %d while newer request %d kept running", v.ID, r.ID)
				}
			}
			if v.computed != 0 || v.blocks != 0 {
				t.Fatalf("preempted request %d kept %d computed tokens and %d blocks", v.ID, v.computed, v.blocks)
			}
			if e.waiting[0] != v && !contains(res.Preempted, e.waiting[0]) {
				t.Fatalf("preempted request %d is not at the front of the waiting queue", v.ID)
			}
		}
	})
	preempted := 0
	for _, r := range reqs {
		if r.Generated != r.MaxTokens {
			t.Errorf("request %d finished with %d tokens, want %d", r.ID, r.Generated, r.MaxTokens)
		}
		if r.Finished.IsZero() || r.FirstToken.After(r.Finished) || r.Scheduled.After(r.FirstToken) {
			t.Errorf("request %d timeline out of order: scheduled %v first %v finished %v", r.ID, r.Scheduled, r.FirstToken, r.Finished)
		}
		if r.Preemptions > 0 {
			preempted++
		}
	}
	if preempted == 0 {
		t.Error("no request was preempted: the test does not exercise preemption")
	}
}

func contains(rs []*Request, r *Request) bool {
	for _, x := range rs {
		if x == r {
			return true
		}
	}
	return false
}

func TestTokensAreReportedOncePerStepPerRequest(t *testing.T) {
	p := smallPreset(t, 1000, 8, 256)
	reqs := requests(5, 30, 40)
	tokens := map[uint64]int{}
	var totalTokens, finished int
	e := checkedRun(t, p, reqs, func(res StepResult, e *Engine) {
		seen := map[uint64]bool{}
		for _, r := range res.Tokens {
			if seen[r.ID] {
				t.Fatalf("request %d produced two tokens in one step", r.ID)
			}
			seen[r.ID] = true
			tokens[r.ID]++
		}
		totalTokens += len(res.Tokens)
		finished += len(res.Finished)
		if res.End != res.Start.Add(res.Duration) {
			t.Fatalf("End %v != Start %v + Duration %v", res.End, res.Start, res.Duration)
		}
	})
	for _, r := range reqs {
		if tokens[r.ID] != 40 {
			t.Errorf("request %d: %d token events, want 40", r.ID, tokens[r.ID])
		}
	}
	tot := e.State().Totals
	if tot.GenerationTokens != uint64(totalTokens) || tot.Finished != uint64(finished) || finished != 5 {
		t.Errorf("totals %+v disagree with %d token events and %d finished", tot, totalTokens, finished)
	}
	if tot.PromptTokens != 5*30 {
		t.Errorf("prompt tokens total %d, want 150", tot.PromptTokens)
	}
}

func TestAbortFreesTheRequestsBlocks(t *testing.T) {
	p := smallPreset(t, 100, 8, 512)
	e, _ := NewEngine(Config{Preset: p})
	a := &Request{ID: 1, PromptTokens: 200, MaxTokens: 100, Arrival: epoch}
	b := &Request{ID: 2, PromptTokens: 10, MaxTokens: 100, Arrival: epoch}
	_ = e.Submit(a)
	_ = e.Submit(b)
	now := e.Step(epoch).End
	if e.State().KVUsedBlocks != 13+1 {
		t.Fatalf("used %d blocks after prefill, want 13 + 1", e.State().KVUsedBlocks)
	}
	e.Abort(a, now)
	if st := e.State(); st.KVUsedBlocks != 1 || st.Running != 1 {
		t.Errorf("after abort: %d blocks used, %d running; want 1 and 1", st.KVUsedBlocks, st.Running)
	}
	if !a.Aborted || !a.Done() || !a.Finished.Equal(now) {
		t.Errorf("aborted request: Aborted %v Done %v Finished %v", a.Aborted, a.Done(), a.Finished)
	}
	e.Abort(a, now) // a second abort is a no-op
	if e.State().Totals.Aborted != 1 {
		t.Errorf("aborted total %d, want 1", e.State().Totals.Aborted)
	}
}

func TestSpeedAndSlowdownScaleStepTime(t *testing.T) {
	p, _ := LoadPreset("llama-3.1-8b-h100")
	stepTime := func(speed, slowdown float64) time.Duration {
		e, err := NewEngine(Config{Preset: p, Speed: speed, Slowdown: slowdown})
		if err != nil {
			t.Fatal(err)
		}
		_ = e.Submit(&Request{ID: 1, PromptTokens: 512, MaxTokens: 2, Arrival: epoch})
		return e.Step(epoch).Duration
	}
	base := stepTime(1, 1)
	// Steps are rounded to the nanosecond, so allow one.
	near := func(a, b time.Duration) bool { return a-b <= 1 && b-a <= 1 }
	if got := stepTime(4, 1); !near(got, base/4) {
		t.Errorf("speed 4: step %v, want %v", got, base/4)
	}
	if got := stepTime(1, 2.5); !near(got, base*5/2) {
		t.Errorf("slowdown 2.5: step %v, want %v", got, base*5/2)
	}
	e, _ := NewEngine(Config{Preset: p})
	if err := e.SetSlowdown(0.5); err == nil || !strings.Contains(err.Error(), "slowdown must be a finite factor ≥ 1, got 0.5") {
		t.Errorf("SetSlowdown(0.5) = %v, want a clear error", err)
	}
	if _, err := NewEngine(Config{Preset: p, Speed: -1}); err == nil || err.Error() != "speed must be a finite number > 0, got -1" {
		t.Errorf("speed -1: %v", err)
	}
}

func TestSubmitRejectsRequestsTheEngineCannotRun(t *testing.T) {
	p := smallPreset(t, 1000, 8, 512) // max_model_len 1024
	e, _ := NewEngine(Config{Preset: p})
	tests := []struct {
		name string
		r    *Request
		want string
	}{
		{"longer than max_model_len", &Request{ID: 7, PromptTokens: 1000, MaxTokens: 25},
			"submit: request 7: request too long: 1000 prompt + 25 output tokens exceed max_model_len 1024"},
		{"no prompt", &Request{ID: 8, MaxTokens: 1},
			"submit: request 8 needs prompt_tokens ≥ 1 and max_tokens ≥ 1, got 0 and 1"},
		{"nil", nil, "submit: nil request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := e.Submit(tt.r)
			if err == nil || err.Error() != tt.want {
				t.Errorf("got %v, want %q", err, tt.want)
			}
		})
	}
	if err := e.Submit(&Request{ID: 9, PromptTokens: 1000, MaxTokens: 25}); !errors.Is(err, ErrTooLong) {
		t.Errorf("too long: %v does not wrap ErrTooLong", err)
	}
	r := &Request{ID: 10, PromptTokens: 1, MaxTokens: 1}
	_ = e.Submit(r)
	if err := e.Submit(r); err == nil || err.Error() != "submit: request 10 was already submitted" {
		t.Errorf("double submit: %v", err)
	}
}

func TestIdleEngineStepsAreEmpty(t *testing.T) {
	p, _ := LoadPreset("llama-3.1-8b-h100")
	e, _ := NewEngine(Config{Preset: p})
	res := e.Step(epoch)
	if !e.Idle() || res.Duration != 0 || !res.End.Equal(epoch) || res.BatchSize != 0 {
		t.Errorf("idle step: %+v", res)
	}
}
