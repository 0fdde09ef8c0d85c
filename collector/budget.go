package collector

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
)

// MemoryBudget is a number of bytes shared by concurrent scrapes (see
// ScrapeLimits.MemoryBudgetBytes). A nil or zero-sized budget is no limit.
//
// A scrape waits for room, in arrival order, only while it holds none of
// the budget; once it holds some it never waits, it takes more without
// waiting or gives everything back and waits again for all it now knows it
// needs (fetching the body again). So scrapes cannot hold each other up:
// each waits at most until the ones ahead of it finish, and with enough
// time every scrape whose cost fits in the budget runs.
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

// Size is the budget in bytes; 0 means no limit.
func (b *MemoryBudget) Size() int64 {
	if b == nil {
		return 0
	}
	return b.size
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

// Footprint remembers what a target's last successful scrape charged to
// the budget (body bytes plus series), so its next scrape waits for all of
// it at once instead of finding out part-way and fetching again. The zero
// value is ready to use; one per target (see Scraper.WithFootprint).
type Footprint struct{ bytes, body atomic.Int64 }

// Bytes is the last successful scrape's charge, 0 before the first.
func (f *Footprint) Bytes() int64 {
	if f == nil {
		return 0
	}
	return f.bytes.Load()
}

// bodyBytes is the last successful scrape's body size, 0 before the first.
func (f *Footprint) bodyBytes() int64 {
	if f == nil {
		return 0
	}
	return f.body.Load()
}

func (f *Footprint) set(charged, body int64) {
	if f != nil {
		f.bytes.Store(charged)
		f.body.Store(body)
	}
}

// reservation is one scrape attempt's share of a budget: held bytes
// acquired from it, of which used are charged so far.
type reservation struct {
	b          *MemoryBudget
	held, used int64
	// waited is how long the attempt waited for room.
	waited time.Duration
}

func (b *MemoryBudget) reservation() *reservation { return &reservation{b: b} }

func (r *reservation) unlimited() bool { return r.b == nil || r.b.sem == nil }

// budgetShort is a take that found no room without waiting: the attempt
// gives everything back and a new one waits for need bytes. It never
// leaves fetch.
type budgetShort struct{ need int64 }

func (e *budgetShort) Error() string {
	return fmt.Sprintf("%v: %d bytes needed", ErrMemoryBudget, e.need)
}

// wait reserves n bytes, waiting for them until ctx ends. It must be the
// reservation's first call: a scrape waits only while it holds nothing.
func (r *reservation) wait(ctx context.Context, n int64) error {
	if r.unlimited() || n <= 0 {
		r.held += max(n, 0)
		return nil
	}
	if n > r.b.size {
		return r.overBudget(n)
	}
	start := time.Now()
	err := r.b.sem.Acquire(ctx, n)
	r.waited += time.Since(start)
	if err != nil {
		return fmt.Errorf("%w: waited %s for %d bytes of the %d-byte budget, in use by parallel scrapes, until %v",
			ErrMemoryBudget, r.waited.Round(time.Millisecond), n, r.b.size, err)
	}
	r.held += n
	return nil
}

// take charges n bytes to the scrape: from what it holds, or else acquired
// without waiting. When there is no room now it returns a *budgetShort
// naming what to wait for next time (at least grow bytes in all); when
// the total would exceed the whole budget, an ErrMemoryBudget.
func (r *reservation) take(n, grow int64) error {
	if r.used+n <= r.held {
		r.used += n
		return nil
	}
	more := r.used + n - r.held
	if !r.unlimited() {
		if r.used+n > r.b.size {
			return r.overBudget(r.used + n)
		}
		if !r.b.sem.TryAcquire(more) {
			return &budgetShort{need: min(max(r.used+n, grow), r.b.size)}
		}
	}
	r.held += more
	r.used += n
	return nil
}

func (r *reservation) overBudget(n int64) error {
	return fmt.Errorf("%w: this scrape needs %d bytes or more, more than the whole budget of %d (raise global.scrape_memory_limit, or lower body_size_limit)",
		ErrMemoryBudget, n, r.b.size)
}

// trim gives back what is held beyond what has been charged.
func (r *reservation) trim() {
	if extra := r.held - r.used; extra > 0 {
		if !r.unlimited() {
			r.b.sem.Release(extra)
		}
		r.held = r.used
	}
}

// release returns everything held. It may be called more than once.
func (r *reservation) release() {
	if !r.unlimited() && r.held > 0 {
		r.b.sem.Release(r.held)
	}
	r.held, r.used = 0, 0
}

// isBudgetShort reports whether err asks for another attempt, and for how
// many bytes.
func isBudgetShort(err error) (int64, bool) {
	var s *budgetShort
	if errors.As(err, &s) {
		return s.need, true
	}
	return 0, false
}
