package detection

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/kneewatch/kneewatch/collector"
	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/watch"
)

// replicaName is the simulated replica's name: kneewatch's replica label, the
// pod dcgm-exporter attributes its GPU to, and the join label on the raw
// engine series (the ruler convention of rules.RulerOptions).
const replicaName = "sim-0"

// pipeline is kneewatch itself, fed in virtual time: every scrape goes
// through the real vLLM and DCGM normalizers, the watcher's window and
// knee evaluation (watch.Watcher.Replay) and the real exporter, whose
// gathered families are what Prometheus would scrape from kneewatch.
type pipeline struct {
	watcher  *watch.Watcher
	exporter *prometheus.Registry
	clock    time.Time
}

func newPipeline(profile *knee.Profile, profileName string, interval, window time.Duration) (*pipeline, error) {
	p := &pipeline{}
	p.watcher = watch.NewWatcher(watch.WatcherOptions{
		Interval: interval,
		Window:   window,
		Now:      func() time.Time { return p.clock },
	})
	err := p.watcher.SetTargets([]watch.Target{{
		Replica:     replicaName,
		Engine:      "vllm",
		MetricsURL:  "replay://" + replicaName,
		ProfileName: profileName,
		Profile:     profile,
		DCGM: &watch.DCGMTarget{URL: "replay://dcgm",
			Selectors: []collector.GPUSelector{{Pod: replicaName, Namespace: "default"}}},
	}})
	if err != nil {
		return nil, err
	}
	p.exporter = prometheus.NewRegistry()
	if err := p.exporter.Register(watch.NewExporter(p.watcher.Latest)); err != nil {
		return nil, err
	}
	return p, nil
}

// evaluate runs one kneewatch round on the replica's scrapes at at and
// returns the round and kneewatch's own /metrics at that moment.
func (p *pipeline) evaluate(at time.Time, engine, dcgm map[string]*dto.MetricFamily) (*watch.Round, map[string]*dto.MetricFamily, error) {
	p.clock = at
	snap, err := collector.Normalize(engine, collector.Options{Engine: "vllm"})
	if err != nil {
		return nil, nil, fmt.Errorf("normalizing the vLLM scrape at %s: %w", at.Format(time.RFC3339), err)
	}
	snap.Time = at
	gpus, err := collector.NormalizeDCGM(dcgm)
	if err != nil {
		return nil, nil, fmt.Errorf("normalizing the DCGM scrape at %s: %w", at.Format(time.RFC3339), err)
	}
	gpus.Time = at
	round, err := p.watcher.Replay([]watch.ReplayScrape{{Replica: replicaName, Engine: snap, DCGM: &gpus}})
	if err != nil {
		return nil, nil, err
	}
	mfs, err := scrapeRegistry(p.exporter)
	if err != nil {
		return nil, nil, fmt.Errorf("scraping kneewatch's metrics: %w", err)
	}
	return round, mfs, nil
}
