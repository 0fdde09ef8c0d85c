package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/common/version"
	"golang.org/x/sync/errgroup"

	"github.com/kneewatch/kneewatch/config"
	"github.com/kneewatch/kneewatch/discovery"
	"github.com/kneewatch/kneewatch/rules"
	"github.com/kneewatch/kneewatch/server"
	"github.com/kneewatch/kneewatch/shard"
	"github.com/kneewatch/kneewatch/watch"
)

func init() {
	register("serve", "watch replicas: scrape, infer headroom to the knee, export it on /metrics", runServe)
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config.RegisterFlags(fs)
	check := fs.Bool("config.check", false, "validate the config file, print the effective config (secrets masked) and exit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	settings, err := config.LoadSettings(ctx, config.SetFlags(fs))
	if err != nil {
		return err
	}
	cfg, err := config.Load(settings.ConfigFile)
	if err != nil {
		return err
	}
	if err := cfg.CheckSettings(settings); err != nil {
		return err
	}
	if err := checkAlerts(settings.ConfigFile, cfg, settings.Window.D()); err != nil {
		return err
	}
	profiles, err := watch.LoadProfiles(cfg)
	if err != nil {
		return err
	}
	targets, err := watch.StaticTargets(cfg, profiles)
	if err != nil {
		return err
	}
	logger := settings.Logger(stderr)
	for _, d := range settings.Deprecations() {
		logger.Warn(d)
	}
	if *check {
		warnSLOEdges(logger, cfg, profiles, false)
		fmt.Fprintf(stdout, "# %s is valid: %d targets, %d profiles\n%s", settings.ConfigFile, len(cfg.Targets), len(cfg.Profiles), cfg)
		return nil
	}
	applyMemoryLimit(logger, float64(settings.AutoGoMemLimitRatio), memlimit.FromCgroup)
	assign, err := shard.New(int(settings.Shard), int(settings.TotalShards))
	if err != nil {
		return err
	}
	if assign.Sharded() {
		logger.Info("sharded: watching only the replicas hashed to this shard",
			"shard", assign.Shard, "total_shards", assign.Total, "static_targets", len(targets))
	}
	targets = ownedTargets(assign, targets)
	warnClosedLoopKnees(logger, profiles)
	warnSLOEdges(logger, cfg, profiles, true)
	prober, err := newProber(cfg.Probes, settings.Window.D(), targets, logger)
	if err != nil {
		return err
	}
	opts := watcherOptions(cfg, settings, logger)
	if prober != nil {
		opts.Probes = prober
	}
	w := watch.NewWatcher(opts)
	// setTargets keeps the watcher and the probes on one target set, as
	// discovery and reloads change it. Every target set passes through it,
	// so it is where a sharded instance drops the replicas it does not own.
	setTargets := func(ts []watch.Target) error {
		ts = ownedTargets(assign, ts)
		if err := w.SetTargets(ts); err != nil {
			return err
		}
		if prober != nil {
			return prober.SetTargets(probeTargets(ts))
		}
		return nil
	}
	if err := setTargets(targets); err != nil {
		return err
	}
	rl := newReloader(settings.ConfigFile, settings, cfg, profiles, targets, w, setTargets, logger)
	d, err := discoveryRunner(cfg, profiles, w, rl.setDiscovered, nil, logger)
	if err != nil {
		return err
	}
	var discover func(context.Context) error
	extra := append(proberCollectors(prober), rl, assign)
	if d != nil {
		discover = d.Run
		extra = append(extra, d)
	}
	l, err := net.Listen("tcp", settings.ListenAddress)
	if err != nil {
		return fmt.Errorf("--web.listen-address: %w", err)
	}
	logger.Info("kneewatch serving", "version", version.Version, "address", l.Addr().String(),
		"targets", len(targets), "discovery", discover != nil, "probes", prober != nil)
	return serveWatcher(ctx, w, l, settings.WebConfigFile, cfg.Global.ExternalLabels, logger, nil, rl.Reload, serveReady(w, d), background{
		func(ctx context.Context) error { return runProber(ctx, prober, w) },
		discover,
		rl.watchSIGHUP,
	}, extra...)
}

// ownedTargets keeps the targets whose replica this shard owns, by the
// replica name: the configured name of a static target, namespace/pod of a
// discovered one, so static and discovered replicas shard alike.
func ownedTargets(a shard.Assignment, ts []watch.Target) []watch.Target {
	if !a.Sharded() {
		return ts
	}
	out := make([]watch.Target, 0, len(ts)/a.Total+1)
	for _, t := range ts {
		if a.Owns(t.Replica) {
			out = append(out, t)
		}
	}
	return out
}

// serveReady is serve's readiness: discovery's first list of the serving
// pods (when it is on), then the watcher's first evaluation. Until
// discovery has listed the pods, kneewatch watches only its static
// targets: answering ready then would let a rollout proceed on a kneewatch
// that sees no replicas.
func serveReady(w *watch.Watcher, d *discovery.Discoverer) func() error {
	if d == nil {
		return watcherReady(w)
	}
	return func() error {
		if err := d.Ready(); err != nil {
			return err
		}
		return watcherReady(w)()
	}
}

// watcherReady is the watcher's readiness: its first evaluation.
func watcherReady(w *watch.Watcher) func() error {
	return func() error {
		if !w.Ready() {
			return errors.New("no evaluation has completed yet")
		}
		return nil
	}
}

// background lists loops that run beside the watcher until ctx ends; nil
// entries (a feature turned off) are skipped.
type background []func(context.Context) error

// watcherOptions maps the config file and process settings onto the watcher.
func watcherOptions(cfg *config.Config, s config.Settings, logger *slog.Logger) watch.WatcherOptions {
	return watch.WatcherOptions{
		Interval:       s.EvaluationInterval.D(),
		Window:         s.Window.D(),
		Limits:         watch.ScrapeLimits(cfg),
		TargetHeadroom: cfg.Global.TargetHeadroom,
		Logger:         logger,
	}
}

// newRegistry is kneewatch's own registry: the exporter, build info and the
// Go runtime and process collectors every Prometheus exporter carries (heap,
// goroutines, CPU, open fds: what kube-prometheus-stack's and the
// kubernetes-mixin's process panels read), never the default registry.
// external (global.external_labels) is put on every series registered.
func newRegistry(w *watch.Watcher, external map[string]string, extra ...prometheus.Collector) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	r := prometheus.WrapRegistererWith(external, reg)
	r.MustRegister(watch.NewExporter(w.Latest), versioncollector.NewCollector("kneewatch"),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	r.MustRegister(extra...)
	return reg
}

// serveWatcher runs the evaluation loop, the background loops and the HTTP
// surface until ctx ends.
func serveWatcher(ctx context.Context, w *watch.Watcher, l net.Listener, webConfig string, external map[string]string, logger *slog.Logger, extraLinks []server.Link, reload func() error, ready func() error, loops background, extra ...prometheus.Collector) error {
	h, err := server.Handler(server.Options{
		Registry:    newRegistry(w, external, extra...),
		Ready:       ready,
		Version:     version.Version,
		Description: "Headroom to the knee for GPU LLM-serving replicas",
		ExtraLinks:  extraLinks,
		Reload:      reload,
		Logger:      logger,
	})
	if err != nil {
		return err
	}
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return w.Run(ctx) })
	for _, loop := range loops {
		if loop != nil {
			g.Go(func() error { return loop(ctx) })
		}
	}
	g.Go(func() error { return server.Serve(ctx, l, h, webConfig, logger) })
	return g.Wait()
}

// checkAlerts refuses a config whose alerts section `kneewatch rules`
// would refuse: the section is only read by the rule generator, and a
// --config.check that passes it would let the chart or a CI step render
// rules from a file that cannot produce them.
func checkAlerts(path string, cfg *config.Config, window time.Duration) error {
	if _, err := rules.FromConfig(cfg.Alerts, window); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
