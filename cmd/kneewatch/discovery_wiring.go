package main

import (
	"fmt"
	"log/slog"
	"slices"

	"github.com/kneewatch/kneewatch/config"
	"github.com/kneewatch/kneewatch/discovery"
	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/watch"
	"k8s.io/klog/v2"
)

// discoveryRunner returns the discoverer that keeps the watched targets in
// step with the cluster's serving pods (the static targets plus the
// discovered ones, handed to setTargets), or nil when the config has no
// kubernetes section. Run it beside the watcher until ctx ends; it is also
// the collector of discovery's health metrics.
func discoveryRunner(cfg *config.Config, profiles map[string]*knee.Profile, w *watch.Watcher, setTargets func([]watch.Target) error, static []watch.Target, logger *slog.Logger) (*discovery.Discoverer, error) {
	if cfg.Kubernetes == nil {
		return nil, nil
	}
	// client-go logs through klog; send it to kneewatch's logger instead of
	// klog's own stderr format.
	klog.SetSlogLogger(logger.With("component", "client-go"))
	client, err := discovery.NewClient(*cfg.Kubernetes)
	if err != nil {
		return nil, err
	}
	d, err := discovery.New(client, discovery.Options{
		Config:   *cfg.Kubernetes,
		Profiles: profiles,
		SLO:      watch.GlobalSLO(cfg),
		Sink: func(found []watch.Target) error {
			return setTargets(slices.Concat(static, found))
		},
		ModelOf: discovery.ModelsFrom(w.Latest),
		Logger:  logger.With("component", "discovery"),
	})
	if err != nil {
		return nil, fmt.Errorf("kubernetes discovery: %w", err)
	}
	return d, nil
}
