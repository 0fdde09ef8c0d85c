package watch

import (
	"context"
	"sync/atomic"
)

// workers runs replica evaluations on a few goroutines that stay warm
// between them. Each replica's loop is a goroutine that sleeps for an
// interval between scrapes; the garbage collector shrinks a sleeping
// goroutine's stack, and every scrape then grew it again, copying it
// several times (a scrape's HTTP and parsing run deep). Handed to a
// worker that ran a scrape a moment ago, a scrape finds its stack grown.
//
// A job waits for no worker: if none is idle it runs on a new goroutine,
// which stays on as a worker while fewer than maxIdle wait. So a hung
// scrape holds up only its own replica, as before.
type workers struct {
	jobs chan func()
	idle atomic.Int32
	done <-chan struct{}
}

// maxIdleWorkers bounds the workers waiting for a job: about what runs at
// once when a thousand replicas are scraped every 15 s.
const maxIdleWorkers = 8

func newWorkers(ctx context.Context) *workers {
	return &workers{jobs: make(chan func()), done: ctx.Done()}
}

// do runs job on a warm worker, or a new one, and waits for it.
func (p *workers) do(job func()) {
	finished := make(chan struct{})
	run := func() {
		defer close(finished)
		job()
	}
	select {
	case p.jobs <- run:
	default:
		go p.work(run)
	}
	<-finished
}

// work runs job, then waits for more while there is room among the idle,
// until the watcher stops.
func (p *workers) work(job func()) {
	for {
		job()
		if p.idle.Add(1) > maxIdleWorkers {
			p.idle.Add(-1)
			return
		}
		select {
		case job = <-p.jobs:
			p.idle.Add(-1)
		case <-p.done:
			p.idle.Add(-1)
			return
		}
	}
}
