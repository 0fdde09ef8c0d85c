package main

import (
	"context"
	"flag"
	"fmt"
	"github.com/kneewatch/kneewatch/internal/demo"
	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/server"
	"github.com/kneewatch/kneewatch/watch"
	"io"
	"net"
	"time"
)

func init() {
	register("demo", "run the whole product against a built-in simulated fleet (no GPU needed)", runDemo)
}

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("web.listen-address", "127.0.0.1:9847", "address of kneewatch's /metrics")
	simListen := fs.String("sim.web.listen-address", "127.0.0.1:8100", "first simulated replica's address (replica i on port + i)")
	aliasFlag(fs, "sim.listen", "sim.web.listen-address")
	dcgmListen := fs.String("sim.dcgm.listen-address", "127.0.0.1:9400", "the simulated DCGM exporter's address")
	aliasFlag(fs, "sim.dcgm-listen", "sim.dcgm.listen-address")
	preset := fs.String("preset", "llama-3.1-8b-h100", "simulator preset")
	wl := fs.String("workload", "chat", "workload preset the load generator draws from")
	sloTTFT := fs.Duration("slo-ttft", demo.DefaultTTFT, "TTFT SLO threshold the knee is measured against")
	sloTPOT := fs.Duration("slo-tpot", demo.DefaultTPOT, "TPOT SLO threshold the knee is measured against")
	interval := fs.Duration("evaluation.interval", 2*time.Second, "how often the watcher scrapes and evaluates")
	window := fs.Duration("evaluation.window", 30*time.Second, "window of rates and quantiles")
	every := fs.Duration("table.interval", 5*time.Second, "how often the live table is printed")
	settle := fs.Duration("load.settle", demo.SteadyAfter, "how long the fleet runs under its load before kneewatch starts watching (the true headroom is the steady state's)")
	duration := fs.Duration("duration", 0, "stop after this long (0 runs until interrupted)")
	profileFile := fs.String("profile", "", "judge the replicas against this knee profile (e.g. written by `kneewatch sweep`) instead of the simulator's true knee")
	// warn: the live table on standard output is the demo's display.
	newLogger := logFlags(fs, "warn")
	if err := fs.Parse(args); err != nil {
		return err
	}
	logger, err := newLogger(stderr)
	if err != nil {
		return err
	}
	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}

	opts := demo.Options{
		Preset: *preset, Workload: *wl,
		SLO:    knee.SLO{TTFT: knee.Duration(*sloTTFT), TPOT: knee.Duration(*sloTPOT), Quantile: 0.99},
		Listen: *simListen, DCGMListen: *dcgmListen, Logger: logger,
	}
	if *profileFile != "" {
		p, err := knee.Load(*profileFile)
		if err != nil {
			return fmt.Errorf("--profile: %w", err)
		}
		opts.Profile = p
		fmt.Fprintf(stdout, "judging %s replicas against the profile %s\n", *preset, *profileFile)
	} else {
		fmt.Fprintf(stdout, "finding the true knee of %s on %s in virtual time…\n", *preset, *wl)
	}
	fleet, err := demo.Start(ctx, opts)
	if err != nil {
		return err
	}
	defer fleet.Close()
	// kneewatch starts watching a fleet under steady load, the case the
	// table's true headroom describes; see demo.Fleet.WaitSteady.
	if *settle > 0 {
		fmt.Fprintln(stdout, "holding the fleet at its loads until they are steady…")
		if err := fleet.WaitSteady(ctx, *settle); err != nil {
			return err
		}
	}

	prober, err := newProber(demoProbes(), *window, fleet.Targets(), logger)
	if err != nil {
		return err
	}
	w := watch.NewWatcher(watch.WatcherOptions{Interval: *interval, Window: *window, TargetHeadroom: 0.2, Logger: logger, Probes: prober})
	if err := w.SetTargets(fleet.Targets()); err != nil {
		return err
	}
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("--web.listen-address: %w", err)
	}
	fmt.Fprintf(stdout, "knee: %.0f concurrent requests (%.0f output tok/s, limited by %s) for SLO p99 TTFT ≤ %s, TPOT ≤ %s\n",
		fleet.Profile.Knee.Concurrency, fleet.Profile.Knee.OutputTokensPerSecond, fleet.Profile.Knee.LimitingResource, *sloTTFT, *sloTPOT)
	fmt.Fprintf(stdout, "kneewatch:  http://%s/metrics\n", l.Addr())
	var links []server.Link
	for _, r := range fleet.Replicas {
		fmt.Fprintf(stdout, "replica %-7s %s (OpenAI %s, metrics %s), held at %d in flight\n", r.Name, r.URL, r.OpenAIBaseURL, r.MetricsURL, r.Concurrency)
		links = append(links, server.Link{Address: r.MetricsURL, Text: r.Name + " metrics"})
	}
	fmt.Fprintf(stdout, "DCGM:       %s\n\n", fleet.DCGMURL)

	go func() {
		t := time.NewTicker(*every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				fmt.Fprintf(stdout, "%s  (load-generator errors: %d)\n", time.Now().Format(time.TimeOnly), fleet.Errors())
				_ = fleet.WriteTable(stdout, w.Latest())
				fmt.Fprintln(stdout)
			}
		}
	}()
	return serveWatcher(ctx, w, l, "", nil, logger, links, nil, watcherReady(w), background{
		func(ctx context.Context) error { return runProber(ctx, prober, w) },
	}, proberCollectors(prober)...)
}
