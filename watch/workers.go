package watch

import (
	"context"
	"sync/atomic"
)

// workers runs replica turns on a few goroutines that stay warm between
// them. A goroutine that sleeps for an interval between scrapes has its
// stack shrunk by the garbage collector, and every scrape then grew it
// again, copying it several times (a scrape's HTTP and parsing run deep).
// Handed to a worker that ran a scrape a moment ago, a scrape finds its
// stack grown.
//
// A job waits for no worker: if none is idle it runs on a new goroutine,
// which stays on as a worker while fewer than maxIdle wait. So a hung
// scrape holds up only its own replica.
type workers struct {
	jobs chan func()
	idle atomic.Int32
	done <-chan struct{}
}

// maxIdleWorkers bounds the workers waiting for a job. A slot's turns
// (schedule.go) start up to maxRunning workers; the rest end after it.
const maxIdleWorkers = 8

func newWorkers(ctx context.Context) *workers {
	return &workers{jobs: make(chan func()), done: ctx.Done()}
}

// submit runs job on a warm worker, or a new one, without waiting for it.
func (p *workers) submit(job func()) {
	select {
	case p.jobs <- job:
	default:
		go p.work(job)
	}
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
