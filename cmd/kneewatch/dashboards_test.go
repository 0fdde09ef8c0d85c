package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kneewatch/kneewatch/dashboards"
)

func TestDashboardsWritesOneFilePerDashboardIntoOut(t *testing.T) {
	for _, format := range dashboards.Formats() {
		t.Run(string(format), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "new", "dir")
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), []string{"dashboards", "--format", string(format), "--out", dir, "--page-headroom", "0.1"}, &stdout, &stderr)
			if err != nil {
				t.Fatalf("run: %v\nstderr: %s", err, stderr.String())
			}
			want, err := dashboards.Render(dashboards.Options{PageHeadroom: 0.1}, format)
			if err != nil {
				t.Fatal(err)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != len(want) {
				t.Errorf("%d files in --out, want %d", len(entries), len(want))
			}
			for _, f := range want {
				got, err := os.ReadFile(filepath.Join(dir, f.Name))
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(string(f.Data), string(got)); diff != "" {
					t.Errorf("%s (-rendered +written):\n%s", f.Name, diff)
				}
				if !strings.Contains(stderr.String(), filepath.Join(dir, f.Name)) {
					t.Errorf("stderr does not say %s was written: %s", f.Name, stderr.String())
				}
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout is not empty with --out: %q", stdout.String())
			}
		})
	}
}

func TestDashboardsPrintsAConfigMapStreamWithoutOut(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"dashboards", "--format=configmap", "--folder", "LLM"}, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v", err)
	}
	docs := strings.Split(stdout.String(), "\n---\n")
	if len(docs) != 2 {
		t.Fatalf("got %d YAML documents, want 2", len(docs))
	}
	for _, want := range []string{"name: kneewatch-fleet-dashboard", "name: kneewatch-replica-dashboard", `grafana_dashboard: "1"`, "grafana_folder: LLM"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

func TestDashboardsRejectsBadFlagsNamingThem(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"an unknown format", []string{"--format", "xml"}, `unknown dashboard format "xml"`},
		{"thresholds the wrong way round", []string{"--page-headroom", "0.5"}, "page headroom: 0.5 must be below the warning headroom 0.2"},
		{"a stray argument", []string{"fleet"}, "takes no arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), append([]string{"dashboards"}, tc.args...), &stdout, &stderr)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
			if stdout.Len() != 0 {
				t.Errorf("wrote output despite the error: %q", stdout.String()[:min(80, stdout.Len())])
			}
		})
	}
}

// TestDashboardsDrawTheConfigsAlertThresholds renders the dashboards with
// --config.file and finds them equal to the dashboards rendered with the
// config's page and warning headroom and SLO objective; a flag given on
// the command line wins over the file.
func TestDashboardsDrawTheConfigsAlertThresholds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kneewatch.yml")
	cfg := `targets:
  - replica: vllm-0
    metrics_url: http://127.0.0.1:8000/metrics
alerts:
  headroom_low: {below: 0.3, for: 2m}
  headroom_exhausted: {below: 0.05}
  slo_objective: 0.995
`
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		flags []string
		want  dashboards.Options
	}{
		{nil, dashboards.Options{PageHeadroom: 0.05, WarningHeadroom: 0.3, Objective: 0.995}},
		{[]string{"--warning-headroom", "0.25"}, dashboards.Options{PageHeadroom: 0.05, WarningHeadroom: 0.25, Objective: 0.995}},
	} {
		var stdout, stderr bytes.Buffer
		args := append([]string{"dashboards", "--config.file", path}, tc.flags...)
		if err := run(context.Background(), args, &stdout, &stderr); err != nil {
			t.Fatalf("%v\n%s", err, stderr.String())
		}
		files, err := dashboards.Render(tc.want, dashboards.FormatJSON)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(dashboards.Join(dashboards.FormatJSON, files)), stdout.String()); diff != "" {
			t.Errorf("dashboards %v differ from those rendered with %+v (-want +got):\n%s", tc.flags, tc.want, diff)
		}
	}
}
