package watch

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/kneewatch/kneewatch/collector"
)

// dcgmResult is one scrape of a DCGM endpoint.
type dcgmResult struct {
	snap     collector.DCGMSnapshot
	err      error
	at       time.Time // when the scrape started
	duration time.Duration
	// pending marks the stand-in result before the endpoint's first scrape
	// completes.
	pending bool
}

// dcgmSource is one DCGM endpoint, shared by the replicas on its node.
// Under Run it has its own loop: its scrapes run alongside the engines'
// and a hung dcgm-exporter delays no engine evaluation; each replica
// evaluation takes the latest completed result.
type dcgmSource struct {
	client    *http.Client
	footprint collector.Footprint
	latest    atomic.Pointer[dcgmResult]
	stop      context.CancelFunc // guarded by Watcher.mu
}

// dcgmURLsLocked returns the DCGM endpoints the targets use, with their
// clients. w.mu must be held.
func (w *Watcher) dcgmURLsLocked() map[string]*http.Client {
	urls := map[string]*http.Client{}
	for _, s := range w.targets {
		if d := s.target.DCGM; d != nil {
			urls[d.URL] = d.Client
		}
	}
	return urls
}

// syncDCGMLocked keeps one source per DCGM endpoint the targets use,
// running a loop for each while Run runs. w.mu must be held.
func (w *Watcher) syncDCGMLocked() {
	urls := w.dcgmURLsLocked()
	for url, src := range w.dcgm {
		if _, used := urls[url]; !used || w.runCtx == nil {
			if src.stop != nil {
				src.stop()
				src.stop = nil
			}
			if !used {
				delete(w.dcgm, url)
			}
		}
	}
	for url, client := range urls {
		src, ok := w.dcgm[url]
		if !ok {
			src = &dcgmSource{}
			w.dcgm[url] = src
		}
		src.client = client
		if w.runCtx != nil && src.stop == nil {
			ctx, stop := context.WithCancel(w.runCtx)
			src.stop = stop
			go w.runDCGM(ctx, url, src)
		}
	}
}

// runDCGM scrapes one DCGM endpoint every interval until ctx ends.
func (w *Watcher) runDCGM(ctx context.Context, url string, src *dcgmSource) {
	t := time.NewTicker(w.opts.Interval)
	defer t.Stop()
	for {
		w.mu.Lock()
		client := src.client
		w.mu.Unlock()
		r := w.scrapeDCGMOnce(ctx, url, client, &src.footprint)
		if ctx.Err() != nil {
			return
		}
		src.latest.Store(&r)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// dcgmLatest returns the latest completed scrape of the endpoint, or nil
// before the first.
func (w *Watcher) dcgmLatest(url string) *dcgmResult {
	w.mu.Lock()
	src := w.dcgm[url]
	w.mu.Unlock()
	if src == nil {
		return nil
	}
	return src.latest.Load()
}

// scrapeDCGMOnce scrapes a DCGM endpoint; fp is the endpoint's footprint
// in the scrape memory budget (nil: none kept).
func (w *Watcher) scrapeDCGMOnce(ctx context.Context, url string, client *http.Client, fp *collector.Footprint) dcgmResult {
	start := time.Now()
	snap, err := collector.NewScraper(client, w.limits()).WithFootprint(fp).ScrapeDCGM(ctx, url)
	return dcgmResult{snap: snap, err: err, at: start, duration: time.Since(start)}
}
