package detection

import (
	"context"
	"sync"

	"github.com/kneewatch/kneewatch/knee"
)

// kneeCache shares true knees and derived SLOs between the scenarios a run
// works on at once: each is measured once per run, and a scenario asking
// for one another worker is measuring waits for that measurement rather
// than repeating it. Each measurement uses a kneeFinder of its own, so the
// finder's map is never shared between goroutines.
type kneeCache struct {
	opts     Options
	profiles flights[kneeKey, knee.Profile]
	slos     flights[Deployment, knee.SLO]
	// gridSeeds measure the truth's grid again with other seeds
	// (Options.TruthGridSeeds).
	gridSeeds []*kneeCache
}

// gridSeedStride spaces the seeds of the truth grid's extra searches away
// from the run's own and from the resweep what-if's (the run's + 1, 2, …).
const gridSeedStride = 1000

func newKneeCache(o Options) *kneeCache {
	c := &kneeCache{opts: o}
	for i := 1; i < o.TruthGridSeeds; i++ {
		gs := o
		gs.Seed = o.Seed + uint64(i)*gridSeedStride
		gs.TruthGridSeeds = 1
		c.gridSeeds = append(c.gridSeeds, &kneeCache{opts: gs})
	}
	return c
}

// profile is kneeFinder.profile, measured once per set of conditions.
func (c *kneeCache) profile(ctx context.Context, dep Deployment, alt string, share, slowdown float64) (knee.Profile, error) {
	if alt == "" || share <= 0 {
		alt, share = "", 0
	}
	key := kneeKey{preset: dep.Preset, workload: dep.Workload, alt: alt, share: share, slowdown: slowdown, slo: dep.SLO}
	return c.profiles.do(key, func() (knee.Profile, error) {
		return newKneeFinder(c.opts).profile(ctx, dep, alt, share, slowdown)
	})
}

// slo is deriveSLO, once per deployment.
func (c *kneeCache) slo(ctx context.Context, dep Deployment) (knee.SLO, error) {
	return c.slos.do(dep, func() (knee.SLO, error) { return deriveSLO(ctx, dep) })
}

// flights runs a function once per key and hands its result to every
// caller of that key, including those that arrive while it runs.
type flights[K comparable, V any] struct {
	mu    sync.Mutex
	calls map[K]*flight[V]
}

type flight[V any] struct {
	done chan struct{}
	v    V
	err  error
}

func (f *flights[K, V]) do(key K, fn func() (V, error)) (V, error) {
	f.mu.Lock()
	if f.calls == nil {
		f.calls = map[K]*flight[V]{}
	}
	if c, ok := f.calls[key]; ok {
		f.mu.Unlock()
		<-c.done
		return c.v, c.err
	}
	c := &flight[V]{done: make(chan struct{})}
	f.calls[key] = c
	f.mu.Unlock()
	c.v, c.err = fn()
	close(c.done)
	return c.v, c.err
}
