package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"github.com/kneewatch/kneewatch/config"
	"github.com/kneewatch/kneewatch/rules"
	"github.com/kneewatch/kneewatch/watch"
	"io"
	"os"
	"path/filepath"
)

func init() {
	register("rules", "print the generated Prometheus alerting and recording rules (rule file or PrometheusRule)", runRules)
}

// runRules wires `kneewatch rules` flags to the rules package and writes the
// rules to --out or standard output.
func runRules(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("rules", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configFile := fs.String("config.file", "", "kneewatch config file whose alerts section sets the thresholds, SLO objective, URLs and labels")
	format := fs.String("format", string(rules.FormatRules), "output format: rules (a Prometheus rule file), prometheusrule (a monitoring.coreos.com/v1 PrometheusRule) or helm (the Helm chart's rule template, which reads the alerts section from the chart's values)")
	out := fs.String("out", "", "file to write the rules to; empty: standard output")
	window := config.DefaultSettings().Window
	fs.TextVar(&window, "evaluation.window", window, "kneewatch serve's --evaluation.window: the span the ruler group averages the raw engine series over, so it computes the same mean")
	newLogger := logFlags(fs, "info")
	if err := fs.Parse(args); err != nil {
		return err
	}
	logger, err := newLogger(stderr)
	if err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: rules takes no arguments, got %q", errUsage, fs.Args())
	}
	f, err := rules.ParseFormat(*format)
	if err != nil {
		return fmt.Errorf("%w: --format: %v", errUsage, err)
	}

	if window <= 0 {
		return fmt.Errorf("%w: --evaluation.window: must be above 0, got %s", errUsage, window)
	}

	opts := rules.DefaultOptions()
	opts.Ruler.Window = window.D()
	if f == rules.FormatHelm && (*configFile != "" || window != config.DefaultSettings().Window) {
		// The template's values come from the chart; its defaults are
		// kneewatch's, as a config without an alerts section has them.
		return fmt.Errorf("%w: --format helm takes neither --config.file nor --evaluation.window: the chart's values set them", errUsage)
	}
	if *configFile != "" {
		if _, err := os.Stat(*configFile); err != nil {
			return fmt.Errorf("--config.file: %w", err)
		}
		// The whole file is validated, as serve would: rules generated from
		// a config serve rejects would page on a deployment that cannot run.
		cfg, err := config.Load(*configFile)
		if err != nil {
			return err
		}
		if opts, err = rules.FromConfig(cfg.Alerts, window.D()); err != nil {
			return fmt.Errorf("%s: %w", *configFile, err)
		}
		// Fleet sizing in PromQL keeps the headroom serve sizes with.
		opts.Fleet.TargetHeadroom = cfg.Global.TargetHeadroom
		// The burn-rate alerts page on kneewatch's good-request counters:
		// say where an SLO threshold is judged at a bucket edge instead.
		// A profile that does not load is serve's error to report; the
		// rules do not read profiles, so only their check is skipped.
		profiles, err := watch.LoadProfiles(cfg)
		if err != nil {
			logger.Warn("SLO thresholds of the profiles not checked against bucket edges", "err", err)
		}
		warnSLOEdges(logger, cfg, profiles, false)
	}

	var b bytes.Buffer
	if err := rules.Render(&b, opts, f); err != nil {
		return err
	}
	if *out == "" {
		_, err := stdout.Write(b.Bytes())
		return err
	}
	if err := writeFileAtomically(*out, b.Bytes()); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	fmt.Fprintln(stderr, "wrote", *out)
	return nil
}

// writeFileAtomically writes data to a temporary file beside path and renames
// it over path, so a Prometheus reloading its rule files never reads half a file.
func writeFileAtomically(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
