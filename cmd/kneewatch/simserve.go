package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kneewatch/kneewatch/internal/sim"
)

// faultFlags collects repeated --fault flags.
type faultFlags []sim.FaultFlag

func (f *faultFlags) String() string {
	parts := make([]string, len(*f))
	for i, ff := range *f {
		parts[i] = ff.Key + "=" + ff.Value
	}
	return strings.Join(parts, " ")
}

func (f *faultFlags) Set(s string) error {
	ff, err := sim.ParseFaultFlag(s)
	if err != nil {
		return err
	}
	*f = append(*f, ff)
	return nil
}

// runSimServe runs `kneewatch sim`: simulated replicas on consecutive ports
// and one DCGM endpoint, until SIGINT/SIGTERM (ctx).
func runSimServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cfg        sim.FleetConfig
		presetName = fs.String("preset", "llama-3.1-8b-h100", "built-in preset: "+strings.Join(sim.PresetNames(), ", "))
		presetFile = fs.String("preset-file", "", "YAML file overriding fields of --preset")
		faults     faultFlags
		newLogger  = logFlags(fs, "info")
	)
	aliasFlag(fs, "log-level", "log.level")
	fs.IntVar(&cfg.Replicas, "replicas", 1, "number of replicas")
	fs.StringVar(&cfg.Listen, "web.listen-address", "127.0.0.1:8100", "replica 0's address; replica i listens on port + i")
	aliasFlag(fs, "listen", "web.listen-address")
	fs.StringVar(&cfg.DCGMListen, "dcgm.listen-address", "127.0.0.1:9400", "DCGM-exporter-style endpoint for all GPUs (empty: none)")
	aliasFlag(fs, "dcgm-listen", "dcgm.listen-address")
	fs.StringVar(&cfg.Model, "model", "", "served model name (default: the preset's model)")
	fs.Float64Var(&cfg.Speed, "speed", 1, "make the simulated GPU K times faster (every step cost ÷ K)")
	fs.StringVar(&cfg.MetricsFlavor, "metrics-flavor", sim.DefaultMetricsFlavor, "/metrics names: "+strings.Join(sim.MetricsFlavors(), ", "))
	fs.Var(&faults, "fault", "fault at start, [REPLICA:]KEY=VALUE (repeatable); keys: "+strings.Join(sim.FaultKeys(), ", "))
	fs.StringVar(&cfg.NamePrefix, "name-prefix", "sim", "replica i is named <prefix>-<i> (also its DCGM pod label)")
	fs.StringVar(&cfg.DCGM.Namespace, "dcgm-namespace", "default", "DCGM namespace label")
	fs.StringVar(&cfg.DCGM.Container, "dcgm-container", "vllm", "DCGM container label")
	fs.StringVar(&cfg.DCGM.Hostname, "dcgm-hostname", "kneewatch-sim", "DCGM Hostname label")
	fs.DurationVar(&cfg.ShutdownGrace, "shutdown-grace", 5*time.Second, "time in-flight requests get to finish on shutdown")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: sim takes no arguments, got %q", errUsage, fs.Args())
	}
	logger, err := newLogger(stderr)
	if err != nil {
		return err
	}
	cfg.Logger = logger
	cfg.Faults = faults

	preset, err := sim.LoadPreset(*presetName)
	if err != nil {
		return fmt.Errorf("--preset: %w", err)
	}
	if *presetFile != "" {
		if preset, err = preset.OverrideFile(*presetFile); err != nil {
			return fmt.Errorf("--preset-file: %w", err)
		}
	}
	cfg.Preset = preset
	if cfg.Replicas < 1 {
		return fmt.Errorf("--replicas must be ≥ 1, got %d", cfg.Replicas)
	}
	if !(cfg.Speed > 0) {
		return fmt.Errorf("--speed must be > 0, got %v", cfg.Speed)
	}

	fleet, err := sim.StartFleet(ctx, cfg)
	if err != nil {
		return err
	}
	printFleet(stdout, fleet, preset, cfg)
	<-fleet.Done()
	return nil
}

func printFleet(w io.Writer, fleet *sim.Fleet, p sim.Preset, cfg sim.FleetConfig) {
	model := cfg.Model
	if model == "" {
		model = p.Model
	}
	fmt.Fprintf(w, "kneewatch sim: preset %s (%s on %s), speed ×%g, metrics flavor %s\n",
		p.Name, model, p.GPU, cfg.Speed, cfg.MetricsFlavor)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "REPLICA\tOPENAI BASE URL\tMETRICS")
	for _, r := range fleet.Replicas() {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Name, r.OpenAIBaseURL, r.MetricsURL)
	}
	if u := fleet.DCGMURL(); u != "" {
		fmt.Fprintf(tw, "dcgm\t\t%s\n", u)
	}
	tw.Flush()
	fmt.Fprintln(w, "Faults: POST/GET/DELETE <replica URL>/admin/faults. Stop with Ctrl-C.")
}
