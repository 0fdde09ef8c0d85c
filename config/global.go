package config

import (
	"time"

	"github.com/kneewatch/kneewatch/strictyaml"
)

// Global holds settings that apply to every target.
type Global struct {
	// ScrapeTimeout bounds each scrape of an engine or DCGM endpoint. It must
	// be shorter than the evaluation interval. Default 3s.
	ScrapeTimeout Duration `yaml:"scrape_timeout"`
	// BodySizeLimit is the largest scrape body read; a larger one fails that
	// source's scrape. 0 means no limit. Default 16MiB.
	BodySizeLimit ByteSize `yaml:"body_size_limit"`
	// SeriesLimit is the most series one scrape may hold; more fails that
	// source's scrape. 0 means no limit. Default 20000.
	SeriesLimit int `yaml:"series_limit"`
	// ScrapeMemoryLimit bounds the memory the scrapes in flight at once may
	// hold together, counted as the bytes of the bodies being read plus
	// 512 bytes per parsed series. A scrape waits for room, within its
	// scrape_timeout; one that gets none in time (or needs more than the
	// whole limit) is counted as problem "memory_budget", not as its
	// target being down. 0 means no limit. Default 256MiB.
	ScrapeMemoryLimit ByteSize `yaml:"scrape_memory_limit"`
	// SLO is the latency contract a replica is judged against when its knee
	// profile does not carry one, and the default for `kneewatch sweep`.
	SLO SLO `yaml:"slo"`
	// TargetHeadroom is the headroom each replica should keep when sizing
	// the fleet: replicas needed = Σ (1 − headroom) over the model's
	// evaluated replicas ÷ (1 − target_headroom). 0 ≤ value < 1. Default 0.2.
	TargetHeadroom float64 `yaml:"target_headroom"`
	// ProfilesDir, when set, adds every *.yaml and *.yml file in this
	// directory to the profiles, named by its file name without the
	// extension (llama-8b-h100.yaml is profile "llama-8b-h100"). Relative
	// to the config file's directory.
	ProfilesDir string `yaml:"profiles_dir,omitempty"`
	// ExternalLabels are put on every series kneewatch exports, e.g.
	// cluster: eu-1, so the rules and dashboards can tell clusters apart
	// in a Prometheus or Thanos that sees several. Unlike Prometheus's own
	// external_labels, which only label data leaving that Prometheus
	// (remote write, federation, alerts), these are on the series as
	// scraped: the generated rules group by cluster inside one Prometheus,
	// where Prometheus's external labels are not visible. If Prometheus
	// sets the same external label, the series' own value is kept.
	// Changing them takes a restart.
	ExternalLabels map[string]string `yaml:"external_labels,omitempty"`
}

// SLO is a latency contract: the Quantile of time to first token must stay at
// or under TTFT, and the Quantile of time per output token at or under TPOT.
type SLO struct {
	// TTFT is the time-to-first-token threshold. Default 1s.
	TTFT Duration `yaml:"ttft"`
	// TPOT is the time-per-output-token threshold. Default 100ms.
	TPOT Duration `yaml:"tpot"`
	// Quantile is the share of requests that must meet both thresholds,
	// 0 < value < 1. Default 0.99.
	Quantile float64 `yaml:"quantile"`
}

// DefaultGlobal returns the global defaults.
func DefaultGlobal() Global {
	return Global{
		ScrapeTimeout: Duration(3 * time.Second),
		BodySizeLimit: 16 << 20,
		SeriesLimit:   20000,
		// 256 MiB holds five scrapes of 16 MiB bodies at once.
		ScrapeMemoryLimit: 256 << 20,
		SLO:               DefaultSLO(),
		TargetHeadroom:    0.2,
	}
}

// DefaultSLO returns the default latency contract: p99 TTFT ≤ 1s and p99
// TPOT ≤ 100ms (10 tokens/s per stream, about reading speed).
func DefaultSLO() SLO {
	return SLO{
		TTFT:     Duration(time.Second),
		TPOT:     Duration(100 * time.Millisecond),
		Quantile: 0.99,
	}
}

func (g Global) validate(p *strictyaml.List) {
	if g.ScrapeTimeout <= 0 {
		p.Add("global.scrape_timeout", "must be above 0, got %s", g.ScrapeTimeout)
	}
	if g.BodySizeLimit < 0 {
		p.Add("global.body_size_limit", "must not be negative (0 means no limit), got %s", g.BodySizeLimit)
	}
	if g.ScrapeMemoryLimit < 0 {
		p.Add("global.scrape_memory_limit", "must not be negative (0 means no limit), got %s", g.ScrapeMemoryLimit)
	}
	if g.SeriesLimit < 0 {
		p.Add("global.series_limit", "must not be negative (0 means no limit), got %d", g.SeriesLimit)
	}
	g.SLO.validate(p, "global.slo")
	validateLabelNames(g.ExternalLabels, reservedLabels(), "is set by kneewatch itself", "global.external_labels", p)
	for _, name := range sortedKeys(g.ExternalLabels) {
		if g.ExternalLabels[name] == "" {
			p.Add("global.external_labels", "%q has an empty value, which Prometheus treats as no label", name)
		}
	}
	if g.TargetHeadroom < 0 || g.TargetHeadroom >= 1 {
		p.Add("global.target_headroom", "%v is outside [0, 1): it is the headroom each replica should keep when sizing the fleet", g.TargetHeadroom)
	}
}

func (s SLO) validate(p *strictyaml.List, path string) {
	if s.TTFT <= 0 {
		p.Add(path+".ttft", "must be above 0, got %s", s.TTFT)
	}
	if s.TPOT <= 0 {
		p.Add(path+".tpot", "must be above 0, got %s", s.TPOT)
	}
	if !(s.Quantile > 0 && s.Quantile < 1) {
		p.Add(path+".quantile", "%v is outside (0, 1) (0.99 means p99)", s.Quantile)
	}
}
