package main

import (
	"fmt"
	"log/slog"
	"slices"

	"github.com/kneewatch/kneewatch/collector"
	"github.com/kneewatch/kneewatch/config"
	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/watch"
)

// sloEdgeCheck is one SLO to check against one engine's default bucket
// edges; engine "" means the engine is auto-detected.
type sloEdgeCheck struct {
	source string // what the SLO comes from: `profile "x"` or global.slo
	engine string
	slo    knee.SLO
}

// sloEdgeChecks lists what the config's SLOs are judged against: each static
// target's SLO (its profile's, else global.slo) with its engine and, with
// Kubernetes discovery, every profile's and global.slo with any engine.
// Each (source, engine) pair once, in config order.
func sloEdgeChecks(cfg *config.Config, profiles map[string]*knee.Profile) []sloEdgeCheck {
	var out []sloEdgeCheck
	add := func(c sloEdgeCheck) {
		if !slices.ContainsFunc(out, func(o sloEdgeCheck) bool { return o.source == c.source && o.engine == c.engine }) {
			out = append(out, c)
		}
	}
	global := watch.GlobalSLO(cfg)
	for _, t := range cfg.Targets {
		if p := profiles[t.Profile]; p != nil {
			add(sloEdgeCheck{fmt.Sprintf("profile %q", t.Profile), string(t.Engine), p.SLO})
		} else {
			add(sloEdgeCheck{"global.slo", string(t.Engine), global})
		}
	}
	if cfg.Kubernetes != nil {
		names := make([]string, 0, len(profiles))
		for n := range profiles {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			add(sloEdgeCheck{fmt.Sprintf("profile %q", n), profiles[n].Match.Engine, profiles[n].SLO})
		}
		add(sloEdgeCheck{"global.slo", "", global})
	}
	return out
}

// warnSLOEdges logs, once each, the SLO thresholds of the config that fall
// between an engine's default bucket edges (see collector.CheckSLOEdges),
// and returns how many. With detectedLater, auto-detected engines are left
// to the watcher, which checks the edges each replica actually exposes at
// its first scrape; otherwise (offline checks: --config.check, rules) they
// are checked against every engine's defaults.
func warnSLOEdges(logger *slog.Logger, cfg *config.Config, profiles map[string]*knee.Profile, detectedLater bool) int {
	n := 0
	for _, c := range sloEdgeChecks(cfg, profiles) {
		if c.engine == "" && detectedLater {
			continue
		}
		attrs := []any{"slo_from", c.source}
		if c.engine == "" {
			attrs = append(attrs, "note", "engine auto-detected: checked against every engine's default buckets; set the target's engine to narrow it")
		}
		n += collector.LogSLOEdges(logger, c.engine, c.slo, attrs...)
	}
	return n
}
