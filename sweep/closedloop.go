package sweep

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// ClosedLoop keeps Concurrency requests in flight against one client: each
// worker sends its next request as soon as its previous one completes, as
// vllm bench's --max-concurrency and GuideLLM's concurrent mode do. The
// in-flight count is what the knee is measured in.
type ClosedLoop struct {
	Client *Client
	// Next returns the next request; it is called from many goroutines.
	Next func() Request
	// OnResult receives every completed request; called from many goroutines.
	OnResult func(Result)
	// Ramp spreads the first requests of newly started workers evenly over
	// this long, so a level does not begin with one synchronized prefill
	// wave that no steady load would produce.
	Ramp time.Duration

	concurrency atomic.Int64
	mu          sync.Mutex
	cancels     []context.CancelFunc
	wg          sync.WaitGroup
}

// SetConcurrency changes the number of workers, starting or stopping them.
// A stopped worker's request is cancelled.
func (cl *ClosedLoop) SetConcurrency(ctx context.Context, n int) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	added, have := n-len(cl.cancels), len(cl.cancels)
	for len(cl.cancels) < n {
		wctx, cancel := context.WithCancel(ctx)
		var delay time.Duration
		if added > 1 {
			delay = cl.Ramp * time.Duration(len(cl.cancels)-have) / time.Duration(added)
		}
		cl.cancels = append(cl.cancels, cancel)
		cl.wg.Add(1)
		go cl.worker(wctx, delay)
	}
	for len(cl.cancels) > n {
		last := len(cl.cancels) - 1
		cl.cancels[last]()
		cl.cancels = cl.cancels[:last]
	}
	cl.concurrency.Store(int64(n))
}

// Concurrency returns the current number of workers.
func (cl *ClosedLoop) Concurrency() int { return int(cl.concurrency.Load()) }

// Stop cancels every worker and waits for them.
func (cl *ClosedLoop) Stop() {
	cl.mu.Lock()
	for _, c := range cl.cancels {
		c()
	}
	cl.cancels = nil
	cl.concurrency.Store(0)
	cl.mu.Unlock()
	cl.wg.Wait()
}

func (cl *ClosedLoop) worker(ctx context.Context, delay time.Duration) {
	defer cl.wg.Done()
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
	for ctx.Err() == nil {
		res := cl.Client.Do(ctx, cl.Next())
		if ctx.Err() != nil {
			return // cancelled mid-request: not a measurement
		}
		if cl.OnResult != nil {
			cl.OnResult(res)
		}
	}
}
