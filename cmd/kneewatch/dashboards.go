package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/kneewatch/kneewatch/dashboards"
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
	var o dashboards.Options
	fs.StringVar(&o.DefaultDatasource, "datasource", "", "Prometheus data source (name or UID) selected when a dashboard opens; empty: Grafana's default")
	fs.StringVar(&o.DatasourceVariable, "datasource-variable", d.DatasourceVariable, "name of the data source variable every panel queries")
	fs.StringVar(&o.TitlePrefix, "title-prefix", d.TitlePrefix, "start of every dashboard title")
	fs.Float64Var(&o.PageHeadroom, "page-headroom", d.PageHeadroom, "headroom ratio below which kneewatch pages (keep equal to the alert rules')")
	fs.Float64Var(&o.WarningHeadroom, "warning-headroom", d.WarningHeadroom, "headroom ratio below which kneewatch warns (keep equal to the alert rules')")
	fs.StringVar(&o.SLOQuantile, "slo-quantile", d.SLOQuantile, "quantile label value of the latency series the SLO is written against")
	fs.Float64Var(&o.Objective, "objective", 0, "share of requests that must meet the SLO, for the error budget (default: the SLO quantile)")
	fs.StringVar(&o.Folder, "folder", d.Folder, "Grafana folder named in the ConfigMaps' grafana_folder annotation")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: dashboards takes no arguments, got %q", errUsage, fs.Args())
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
