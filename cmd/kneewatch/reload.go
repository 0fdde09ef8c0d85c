package main

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"reflect"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kneewatch/kneewatch/catalog"
	"github.com/kneewatch/kneewatch/config"
	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/watch"
)

// reloader re-reads the config file and the profiles it names on SIGHUP
// and POST /-/reload, as Prometheus does: a config that loads and
// validates replaces the running one (targets, profiles, scrape limits,
// fleet target headroom); one that does not leaves the running one in
// place, logs why and sets kneewatch_config_last_reload_successful to 0.
// A replica whose name and metrics URL are unchanged keeps its window.
//
// The kubernetes and probes sections, and the process flags, are read
// only at start: a reload that changes those sections fails, saying so,
// rather than half-applying them.
type reloader struct {
	file     string
	settings config.Settings
	watcher  *watch.Watcher
	// apply hands the full target set (static and discovered) to the
	// watcher and the probes.
	apply  func([]watch.Target) error
	logger *slog.Logger
	now    func() time.Time

	mu          sync.Mutex // serializes reloads and guards what follows
	cfg         *config.Config
	profiles    map[string]*knee.Profile
	static      []watch.Target
	discovered  []watch.Target
	ok          bool
	lastSuccess time.Time

	okDesc, atDesc *prometheus.Desc
}

func newReloader(file string, s config.Settings, cfg *config.Config, profiles map[string]*knee.Profile, static []watch.Target,
	w *watch.Watcher, apply func([]watch.Target) error, logger *slog.Logger) *reloader {
	return &reloader{
		file: file, settings: s, watcher: w, apply: apply, logger: logger, now: time.Now,
		cfg: cfg, profiles: profiles, static: static, ok: true, lastSuccess: time.Now(),
		okDesc: catalog.MetricConfigReloadOK.Desc(), atDesc: catalog.MetricConfigReloadTime.Desc(),
	}
}

// Reload re-reads the config file and applies it, or keeps the running
// config and returns why not.
func (r *reloader) Reload() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.reloadLocked()
	r.ok = err == nil
	if err != nil {
		r.logger.Error("config reload failed; the previous config keeps running", "file", r.file, "err", err)
		return err
	}
	r.lastSuccess = r.now()
	r.logger.Info("config reloaded", "file", r.file, "targets", len(r.cfg.Targets), "profiles", len(r.profiles))
	return nil
}

func (r *reloader) reloadLocked() error {
	cfg, err := config.Load(r.file)
	if err != nil {
		return err
	}
	if err := cfg.CheckSettings(r.settings); err != nil {
		return err
	}
	if err := checkAlerts(r.file, cfg, r.settings.Window.D()); err != nil {
		return err
	}
	var restart []string
	if !reflect.DeepEqual(cfg.Kubernetes, r.cfg.Kubernetes) {
		restart = append(restart, "kubernetes")
	}
	if !reflect.DeepEqual(cfg.Probes, r.cfg.Probes) {
		restart = append(restart, "probes")
	}
	// They wrap the registry the HTTP handler was built with.
	if !maps.Equal(cfg.Global.ExternalLabels, r.cfg.Global.ExternalLabels) {
		restart = append(restart, "global.external_labels")
	}
	if len(restart) > 0 {
		return fmt.Errorf("%s: changes to %v take a restart; nothing was applied", r.file, restart)
	}
	profiles, err := watch.LoadProfiles(cfg)
	if err != nil {
		return err
	}
	static, err := watch.StaticTargets(cfg, profiles)
	if err != nil {
		return err
	}
	discovered := withProfiles(r.discovered, profiles, watch.GlobalSLO(cfg))
	if err := r.apply(slices.Concat(static, discovered)); err != nil {
		return err
	}
	r.watcher.SetLimits(watch.ScrapeLimits(cfg))
	r.watcher.SetTargetHeadroom(cfg.Global.TargetHeadroom)
	warnClosedLoopKnees(r.logger, profiles)
	r.cfg, r.profiles, r.static, r.discovered = cfg, profiles, static, discovered
	return nil
}

// setDiscovered is discovery's sink: the discovered targets, judged by the
// current profiles, beside the static ones.
func (r *reloader) setDiscovered(found []watch.Target) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.discovered = withProfiles(found, r.profiles, watch.GlobalSLO(r.cfg))
	return r.apply(slices.Concat(r.static, r.discovered))
}

// withProfiles points discovered targets at the profiles now loaded, by
// name: discovery resolved them against the profiles of its start.
func withProfiles(ts []watch.Target, profiles map[string]*knee.Profile, slo knee.SLO) []watch.Target {
	out := slices.Clone(ts)
	for i := range out {
		out[i].Profile = profiles[out[i].ProfileName]
		out[i].SLO = slo
	}
	return out
}

// watchSIGHUP reloads on every SIGHUP until ctx ends. Without it, SIGHUP's
// default action would end the process with status 129 and no log line.
func (r *reloader) watchSIGHUP(ctx context.Context) error {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-hup:
			r.logger.Info("SIGHUP: reloading config", "file", r.file)
			_ = r.Reload() // logged; the running config stays
		}
	}
}

// Describe implements prometheus.Collector.
func (r *reloader) Describe(ch chan<- *prometheus.Desc) {
	ch <- r.okDesc
	ch <- r.atDesc
}

// Collect implements prometheus.Collector.
func (r *reloader) Collect(ch chan<- prometheus.Metric) {
	r.mu.Lock()
	ok, at := r.ok, r.lastSuccess
	r.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(r.okDesc, prometheus.GaugeValue, boolFloat(ok))
	ch <- prometheus.MustNewConstMetric(r.atDesc, prometheus.GaugeValue, float64(at.UnixNano())/1e9)
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
