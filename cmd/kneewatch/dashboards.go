package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/kneewatch/kneewatch/config"
	"github.com/kneewatch/kneewatch/dashboards"
	"github.com/kneewatch/kneewatch/rules"
)

func init() {
	register("dashboards", "print the generated Grafana dashboards (JSON, or ConfigMaps for the Grafana sidecar)", runDashboards)
}

// runDashboards wires `kneewatch dashboards` flags to the dashboards package
// and writes its files to --out or standard output.
func runDashboards(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dashboards", flag.ContinueOnError)
	fs.SetOutput(stderr)
	d := dashboards.DefaultOptions()
	var formatNames []string
	for _, f := range dashboards.Formats() {
		formatNames = append(formatNames, string(f))
	}
	format := fs.String("format", string(dashboards.FormatJSON), "output format: "+strings.Join(formatNames, " or ")+
		" (Kubernetes ConfigMaps labelled for the Grafana sidecar)")
	out := fs.String("out", "", "directory to write one file per dashboard into (kneewatch-fleet.json, …); empty: standard output")
	configFile := fs.String("config.file", "", "kneewatch config file whose alerts section sets the page and warning headroom and the SLO objective the dashboards draw (the flags below win when given)")
	var o dashboards.Options
	fs.StringVar(&o.DefaultDatasource, "datasource", "", "Prometheus data source (name or UID) selected when a dashboard opens; empty: Grafana's default")
	fs.StringVar(&o.DatasourceVariable, "datasource-variable", d.DatasourceVariable, "name of the data source variable every panel queries")
	fs.StringVar(&o.TitlePrefix, "title-prefix", d.TitlePrefix, "start of every dashboard title")
	fs.Float64Var(&o.PageHeadroom, "page-headroom", d.PageHeadroom, "headroom ratio below which kneewatch pages (the alert rules' headroom_exhausted.below; see --config.file)")
	fs.Float64Var(&o.WarningHeadroom, "warning-headroom", d.WarningHeadroom, "headroom ratio below which kneewatch warns (the alert rules' headroom_low.below; see --config.file)")
	fs.StringVar(&o.SLOQuantile, "slo-quantile", d.SLOQuantile, "quantile label value of the latency series the SLO is written against")
	fs.Float64Var(&o.Objective, "objective", 0, "share of requests that must meet the SLO, for the error budget (default: the SLO quantile)")
	fs.StringVar(&o.Folder, "folder", d.Folder, "Grafana folder named in the ConfigMaps' grafana_folder annotation")
	fs.Func("vllm-dashboard-tags", "comma-separated tags of the dashboards the vLLM link lists (default "+dashboards.DefaultVLLMDashboardTag+")", func(v string) error {
		o.VLLMDashboardTags = strings.Split(v, ",")
		return nil
	})
	fs.Func("dcgm-dashboard-tags", "comma-separated tags of the dashboards the DCGM link lists (default "+dashboards.DefaultDCGMDashboardTag+"; NVIDIA's dashboard has none, tag it on import)", func(v string) error {
		o.DCGMDashboardTags = strings.Split(v, ",")
		return nil
	})
	fs.BoolVar(&o.MultiCluster, "multi-cluster", false, "show the cluster variable, for a Prometheus holding several clusters' series told apart by a cluster label")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: dashboards takes no arguments, got %q", errUsage, fs.Args())
	}

	if *configFile != "" {
		if err := alertsFromConfig(*configFile, fs, &o); err != nil {
			return err
		}
	}

	f := dashboards.Format(*format)
	files, err := dashboards.Render(o, f)
	if err != nil {
		return err
	}
	if *out == "" {
		_, err := stdout.Write(dashboards.Join(f, files))
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	for _, file := range files {
		path := filepath.Join(*out, file.Name)
		if err := os.WriteFile(path, file.Data, 0o644); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
		fmt.Fprintln(stderr, "wrote", path)
	}
	return nil
}

// alertsFromConfig sets the alert parameters the dashboards draw (the page
// and warning headroom, the SLO objective) from the config file's alerts
// section, read as `kneewatch rules --config.file` reads it, so the lines on
// the panels are the generated alerts' own. A flag given on the command
// line wins over the file.
func alertsFromConfig(path string, fs *flag.FlagSet, o *dashboards.Options) error {
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("--config.file: %w", err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		return err
	}
	// The evaluation window shapes only the ruler group, not what is drawn.
	ro, err := rules.FromConfig(cfg.Alerts, config.DefaultSettings().Window.D())
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["page-headroom"] {
		o.PageHeadroom = ro.HeadroomExhausted.Below
	}
	if !set["warning-headroom"] {
		o.WarningHeadroom = ro.HeadroomLow.Below
	}
	if !set["objective"] {
		o.Objective = ro.SLO.Objective
	}
	return nil
}
