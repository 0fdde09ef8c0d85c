package collector

import (
	"context"
	"fmt"

	"golang.org/x/sync/semaphore"
)

// MemoryBudget is a number of bytes shared by concurrent scrapes (see
// ScrapeLimits.MemoryBudgetBytes). A nil or zero-sized budget is no limit.
type MemoryBudget struct {
	size int64
	sem  *semaphore.Weighted
}

// NewMemoryBudget returns a budget of n bytes: 0 means
// DefaultMemoryBudgetBytes, a negative n no limit.
func NewMemoryBudget(n int64) *MemoryBudget {
	size := budgetSize(n)
	b := &MemoryBudget{size: size}
	if size > 0 {
		b.sem = semaphore.NewWeighted(size)
	}
	return b
}

func budgetSize(n int64) int64 {
	switch {
	case n == 0:
		return DefaultMemoryBudgetBytes
	case n < 0:
		return 0
	}
	return n
}

// reservation is one scrape's share of a budget.
type reservation struct {
	b    *MemoryBudget
	held int64
}

func (b *MemoryBudget) reservation() *reservation { return &reservation{b: b} }

func (r *reservation) unlimited() bool { return r.b == nil || r.b.sem == nil }

// wait reserves n bytes, waiting for them until ctx ends. It must be the
// reservation's first: a scrape waits only while it holds nothing, so
// waiting scrapes cannot hold each other up.
func (r *reservation) wait(ctx context.Context, n int64) error {
	if r.unlimited() {
		r.held += n
		return nil
	}
	if n > r.b.size {
		n = r.b.size // a body this large fails in grow, with the reason
	}
	if err := r.b.sem.Acquire(ctx, n); err != nil {
		return fmt.Errorf("%w: waited for %d bytes of %d until %v", ErrMemoryBudget, n, r.b.size, err)
	}
	r.held += n
	return nil
}

// grow reserves n more bytes without waiting.
func (r *reservation) grow(n int64) error {
	if r.unlimited() {
		r.held += n
		return nil
	}
	if !r.b.sem.TryAcquire(n) {
		return fmt.Errorf("%w: the budget of %d bytes is in use by parallel scrapes (this one holds %d and needs %d more)",
			ErrMemoryBudget, r.b.size, r.held, n)
	}
	r.held += n
	return nil
}

// release returns everything held. It may be called more than once.
func (r *reservation) release() {
	if !r.unlimited() && r.held > 0 {
		r.b.sem.Release(r.held)
	}
	r.held = 0
}
