package main

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	"k8s.io/klog/v2"

	"github.com/kneewatch/kneewatch/collector"
	"github.com/kneewatch/kneewatch/config"
	"github.com/kneewatch/kneewatch/discovery"
	"github.com/kneewatch/kneewatch/knee"
)

// discoveryRunner returns the loop that keeps the watched targets in step
// with the cluster's serving pods (the static targets plus the discovered
// ones, handed to setTargets), or nil when the config has no kubernetes
// section. Run the returned function beside the watcher until ctx ends.
func discoveryRunner(cfg *config.Config, profiles map[string]*knee.Profile, w *collector.Watcher, setTargets func([]collector.Target) error, static []collector.Target, logger *slog.Logger) (func(context.Context) error, error) {
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
		SLO:      collector.GlobalSLO(cfg),
		Sink: func(found []collector.Target) error {
			return setTargets(slices.Concat(static, found))
		},
		ModelOf: discovery.ModelsFrom(w.Latest),
		Logger:  logger.With("component", "discovery"),
	})
	if err != nil {
		return nil, fmt.Errorf("kubernetes discovery: %w", err)
	}
	return d.Run, nil
}
