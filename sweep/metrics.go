package sweep

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/kneewatch/kneewatch/collector"
)

// Metrics says where to read the replica's engine and GPU metrics while a
// level runs. The values go through the watcher's own adapters, so a
// profile's KV usage and running/waiting counts are the same quantities
// `kneewatch serve` later compares against.
type Metrics struct {
	Scraper *collector.Scraper
	// EngineURL is the engine's /metrics; empty means not measured.
	EngineURL string
	// Engine selects the adapter and the model (see collector.Options).
	Engine collector.Options
	// DCGMURL is a dcgm-exporter /metrics; empty means not measured.
	DCGMURL string
	// GPUs picks the replica's GPUs on the DCGM endpoint; empty matches all.
	GPUs collector.GPUSelector
	// Interval between scrapes (0 means 1 s). A level's window should span
	// several: the means are over the scrapes inside it.
	Interval time.Duration
}

func (m *Metrics) enabled() bool { return m != nil && (m.EngineURL != "" || m.DCGMURL != "") }

// engineReadings are a level window's engine and GPU figures. A figure whose
// source was not configured or not readable is absent (its ok flag false).
type engineReadings struct {
	kvUsage, running, waiting, preemptionRate float64
	kvOK, runningOK, waitingOK, preemptionOK  bool
	gpuUtil                                   *float64
	// problems say why a configured figure is missing.
	problems []string
}

// sampler scrapes in the background for one level.
type sampler struct {
	m      *Metrics
	cancel context.CancelFunc
	done   chan struct{}
	now    chan chan struct{}

	mu       sync.Mutex
	engine   []collector.Snapshot
	gpu      []collector.Snapshot
	failures map[string]error // last error per source
}

func (m *Metrics) start(ctx context.Context) *sampler {
	ctx, cancel := context.WithCancel(ctx)
	s := &sampler{m: m, cancel: cancel, done: make(chan struct{}), now: make(chan chan struct{}), failures: map[string]error{}}
	interval := m.Interval
	if interval <= 0 {
		interval = time.Second
	}
	go func() {
		defer close(s.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		s.scrape(ctx)
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				s.scrape(ctx)
			case ack := <-s.now:
				s.scrape(ctx)
				close(ack)
			}
		}
	}()
	return s
}

// scrapeNow takes a scrape at once and waits for it, so the window's edges
// have a sample each.
func (s *sampler) scrapeNow() {
	ack := make(chan struct{})
	select {
	case s.now <- ack:
		<-ack
	case <-s.done:
	}
}

func (s *sampler) stop() {
	s.cancel()
	<-s.done
}

func (s *sampler) scrape(ctx context.Context) {
	if s.m.EngineURL != "" {
		snap, err := s.m.Scraper.Scrape(ctx, s.m.EngineURL, s.m.Engine)
		s.mu.Lock()
		if err != nil {
			s.failures["engine metrics"] = err
		} else {
			s.engine = append(s.engine, snap)
		}
		s.mu.Unlock()
	}
	if s.m.DCGMURL != "" {
		d, err := s.m.Scraper.ScrapeDCGM(ctx, s.m.DCGMURL)
		s.mu.Lock()
		switch gpus := d.Select(s.m.GPUs); {
		case err != nil:
			s.failures["DCGM metrics"] = err
		case len(gpus) == 0:
			s.failures["DCGM metrics"] = fmt.Errorf("no GPU on %s matches the selector %+v", s.m.DCGMURL, s.m.GPUs)
		default:
			snap := collector.Snapshot{Time: d.Time}
			snap.AttachGPUs(gpus)
			s.gpu = append(s.gpu, snap)
		}
		s.mu.Unlock()
	}
}

// readings computes the window's figures from the scrapes taken in
// [open, end]: gauges as the mean over the scrapes (avg_over_time),
// preemptions as a rate with PromQL's rate() semantics, both through the
// watcher's collector.Window.
func (s *sampler) readings(open, end time.Time) engineReadings {
	s.mu.Lock()
	defer s.mu.Unlock()
	var r engineReadings
	for src, err := range s.failures {
		r.problems = append(r.problems, fmt.Sprintf("%s: %v", src, err))
	}
	// +1 ms because a window is left-open: the scrape taken at open belongs in it.
	width := end.Sub(open) + time.Millisecond
	gauge := func(w *collector.Window, sig collector.Signal) (float64, bool) {
		if w == nil {
			return 0, false
		}
		v, err := w.GaugeMean(end, sig)
		if err != nil {
			r.problems = append(r.problems, err.Error())
			return 0, false
		}
		return v, true
	}
	if s.m.EngineURL != "" {
		w := windowOf(s.engine, width)
		if w == nil {
			r.problems = append(r.problems, "engine metrics: no scrape inside the window")
		}
		r.kvUsage, r.kvOK = gauge(w, collector.SignalKVUsage)
		r.running, r.runningOK = gauge(w, collector.SignalRunning)
		r.waiting, r.waitingOK = gauge(w, collector.SignalWaiting)
		if w != nil {
			rate, err := w.Rate(collector.SignalPreemptions, end)
			if err != nil {
				r.problems = append(r.problems, err.Error())
			} else {
				r.preemptionRate, r.preemptionOK = rate, true
			}
		}
	}
	if s.m.DCGMURL != "" {
		w := windowOf(s.gpu, width)
		if w == nil {
			r.problems = append(r.problems, "DCGM metrics: no scrape inside the window")
		}
		if v, ok := gauge(w, collector.SignalGPUUtilization); ok {
			r.gpuUtil = &v
		}
	}
	return r
}

// windowOf loads snapshots into a collector.Window of the given width; the
// window keeps those it can select at the last one's time. nil when there
// are none.
func windowOf(snaps []collector.Snapshot, width time.Duration) *collector.Window {
	if len(snaps) == 0 {
		return nil
	}
	w, err := collector.NewWindow(width, len(snaps)+1)
	if err != nil {
		return nil
	}
	for _, s := range snaps {
		// Two scrapes in the same millisecond: the later one is dropped,
		// as Prometheus would reject a duplicate timestamp.
		_ = w.Add(s)
	}
	return w
}
