package watch

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// schedule runs the replicas' turns (scrape and evaluation) under Run.
// One goroutine keeps every replica's next turn in a heap ordered by time
// and sleeps on one timer until the earliest is due.
//
// Replicas are staggered over the interval, as Prometheus staggers its
// targets, but their phases are rounded to a grid of slots (slotOf: a
// tenth of the interval, at most a second), so the turns of a large fleet
// come due together, a slot's worth at a time, rather than one by one.
// Each wake-up from idle costs the process far more than the scrape that
// woke it: at 1,000 replicas every 15 s, scraping them one at a time cost
// about three times the CPU of scraping them in slots of a second
// (docs/benchmarks/scale.md).
//
// At most maxRunning turns run at once; the others of a slot wait in turn
// order, and a worker that ends a turn takes the next waiting one. So a
// slot's scrapes do not all hold bodies and take the memory budget at
// once. A turn that has waited a slot starts anyway, so scrapes that hang
// until their timeout hold up only their own replicas.
//
// Each replica keeps its own cadence, as a time.Ticker would give it:
// turns at phase + k·interval; a turn still running when the next is due
// runs that next one as soon as it ends (a ticker's one buffered tick) and
// drops any others.
type schedule struct {
	interval, slot time.Duration
	pool           *workers
	// run is a replica's turn.
	run func(ctx context.Context, s *replicaState)

	mu      sync.Mutex
	turns   turnHeap // not yet due, earliest first
	waiting []*turn  // due, waiting for a running turn to end
	running int
	// wake tells the loop that the earliest turn changed.
	wake chan struct{}
}

// maxRunning bounds the turns running at once, unless some have waited a
// slot: enough to keep two cores busy while scrapes wait on the network.
const maxRunning = 32

// turn is one replica's place in the schedule.
type turn struct {
	s   *replicaState
	ctx context.Context // the replica's: ended when it is removed
	// tick is the cadence time this turn is for; due is when it runs
	// (tick, or later after an overrun).
	tick, due time.Time
}

// slotOf is the grid replicas' phases are rounded to for an interval.
func slotOf(interval time.Duration) time.Duration {
	return max(min(interval/10, time.Second), time.Millisecond)
}

func newSchedule(interval time.Duration, pool *workers, run func(context.Context, *replicaState)) *schedule {
	return &schedule{interval: interval, slot: slotOf(interval), pool: pool, run: run, wake: make(chan struct{}, 1)}
}

// add schedules s's turns from first, rounded up to the slot grid.
func (sc *schedule) add(ctx context.Context, s *replicaState, first time.Time) {
	if t := first.Truncate(sc.slot); t.Before(first) {
		first = t.Add(sc.slot)
	}
	t := &turn{s: s, ctx: ctx, tick: first, due: first}
	sc.mu.Lock()
	heap.Push(&sc.turns, t)
	earliest := sc.turns[0] == t
	sc.mu.Unlock()
	if earliest {
		sc.poke()
	}
}

func (sc *schedule) poke() {
	select {
	case sc.wake <- struct{}{}:
	default:
	}
}

// loop starts turns as they come due until ctx ends.
func (sc *schedule) loop(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var start []*turn
	for {
		now := time.Now()
		sc.mu.Lock()
		for len(sc.turns) > 0 && !sc.turns[0].due.After(now) {
			sc.waiting = append(sc.waiting, heap.Pop(&sc.turns).(*turn))
		}
		for len(sc.waiting) > 0 && (sc.running < maxRunning || now.Sub(sc.waiting[0].due) >= sc.slot) {
			start = append(start, sc.next())
			sc.running++
		}
		wait := time.Hour
		if len(sc.turns) > 0 {
			wait = sc.turns[0].due.Sub(now)
		}
		if len(sc.waiting) > 0 {
			wait = min(wait, sc.waiting[0].due.Add(sc.slot).Sub(now))
		}
		sc.mu.Unlock()
		for i, t := range start {
			start[i] = nil
			sc.pool.submit(func() { sc.take(t) })
		}
		start = start[:0]
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-sc.wake:
		}
	}
}

// next takes the first waiting turn. sc.mu must be held.
func (sc *schedule) next() *turn {
	t := sc.waiting[0]
	sc.waiting[0] = nil
	sc.waiting = sc.waiting[1:]
	return t
}

// take runs t's turn on a worker and schedules the replica's next, then
// runs the waiting turns while there are any.
func (sc *schedule) take(t *turn) {
	for t != nil {
		if t.ctx.Err() == nil { // else the replica was removed
			sc.run(t.ctx, t.s)
		}
		earliest := false
		sc.mu.Lock()
		if t.ctx.Err() == nil {
			sc.reschedule(t, time.Now())
			heap.Push(&sc.turns, t)
			earliest = sc.turns[0] == t
		}
		t = nil
		if len(sc.waiting) > 0 {
			t = sc.next()
		} else {
			sc.running--
		}
		sc.mu.Unlock()
		if earliest {
			sc.poke()
		}
	}
}

// reschedule sets t's next tick and due time after a turn that ended at
// now.
func (sc *schedule) reschedule(t *turn, now time.Time) {
	t.tick = t.tick.Add(sc.interval)
	t.due = t.tick
	if !t.tick.After(now) {
		// The turn overran the next tick: run again now, as a ticker's
		// buffered tick would, then keep to the cadence, dropping the
		// ticks missed meanwhile.
		t.tick = t.tick.Add(now.Sub(t.tick).Truncate(sc.interval))
		t.due = now
	}
}

// turnHeap orders turns by due time (container/heap).
type turnHeap []*turn

func (h turnHeap) Len() int           { return len(h) }
func (h turnHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h turnHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *turnHeap) Push(x any)        { *h = append(*h, x.(*turn)) }

func (h *turnHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return t
}
