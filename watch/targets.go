package watch

import (
	"fmt"

	"github.com/kneewatch/kneewatch/collector"
	"github.com/kneewatch/kneewatch/config"
	"github.com/kneewatch/kneewatch/knee"
)

// StaticTargets builds the watcher's targets from the config file's
// `targets`, with the knee profiles LoadProfiles loaded from it, and builds
// each target's HTTP clients from its Prometheus-style http_client settings.
func StaticTargets(cfg *config.Config, profiles map[string]*knee.Profile) ([]Target, error) {
	out := make([]Target, 0, len(cfg.Targets))
	for i, t := range cfg.Targets {
		client, err := collector.NewHTTPClient(t.HTTPClient.HTTPClientConfig, t.Replica)
		if err != nil {
			return nil, fmt.Errorf("targets[%d] (%s): %w", i, t.Replica, err)
		}
		tg := Target{
			Replica:     t.Replica,
			Namespace:   t.Namespace,
			Pod:         t.Pod,
			Labels:      t.Labels,
			Model:       t.Model,
			Engine:      string(t.Engine),
			MetricsURL:  t.MetricsURL.URL.String(),
			Client:      client,
			ProfileName: t.Profile,
			Profile:     profiles[t.Profile],
			SLO:         GlobalSLO(cfg),
		}
		if !t.OpenAIURL.IsZero() {
			tg.OpenAIURL = t.OpenAIURL.URL.String()
		}
		if d := t.DCGM; d != nil {
			dc, err := collector.NewHTTPClient(d.HTTPClient.HTTPClientConfig, t.Replica+"-dcgm")
			if err != nil {
				return nil, fmt.Errorf("targets[%d] (%s) dcgm: %w", i, t.Replica, err)
			}
			tg.DCGM = &DCGMTarget{URL: d.URL.URL.String(), Client: dc}
			for _, uuid := range d.GPUUUIDs {
				tg.DCGM.Selectors = append(tg.DCGM.Selectors, collector.GPUSelector{UUID: uuid})
			}
			if d.Pod != "" || d.Namespace != "" {
				tg.DCGM.Selectors = append(tg.DCGM.Selectors, collector.GPUSelector{Pod: d.Pod, Namespace: d.Namespace})
			}
		}
		out = append(out, tg)
	}
	return out, nil
}

// LoadProfiles loads every profile the config names, keyed by name.
func LoadProfiles(cfg *config.Config) (map[string]*knee.Profile, error) {
	out := make(map[string]*knee.Profile, len(cfg.Profiles))
	for _, p := range cfg.Profiles {
		prof, err := knee.Load(p.File)
		if err != nil {
			return nil, fmt.Errorf("profile %q: %w", p.Name, err)
		}
		out[p.Name] = prof
	}
	return out, nil
}

// GlobalSLO is the config's default SLO, used for attainment when a replica
// has no profile.
func GlobalSLO(cfg *config.Config) knee.SLO {
	s := cfg.Global.SLO
	return knee.SLO{TTFT: knee.Duration(s.TTFT.D()), TPOT: knee.Duration(s.TPOT.D()), Quantile: s.Quantile}
}

// ScrapeLimits maps the config's scrape limits onto the collector's: the
// config's 0 means no limit (collector.NoLimit), where the collector's 0
// would mean its own default.
func ScrapeLimits(cfg *config.Config) collector.ScrapeLimits {
	orNone := func(v int64) int64 {
		if v == 0 {
			return collector.NoLimit
		}
		return v
	}
	return collector.ScrapeLimits{
		Timeout:           cfg.Global.ScrapeTimeout.D(),
		MaxBodyBytes:      orNone(int64(cfg.Global.BodySizeLimit)),
		MaxSeries:         int(orNone(int64(cfg.Global.SeriesLimit))),
		MemoryBudgetBytes: orNone(int64(cfg.Global.ScrapeMemoryLimit)),
	}
}
