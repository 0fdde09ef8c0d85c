package tests

// This file's name sorts before chart_test.go on purpose: go test runs the
// tests in file order, so with -update the chart's generated files are
// rewritten before the golden renders that include them.

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
)

// kneewatchBinary builds the kneewatch command, so the chart's generated
// files are compared with what the real commands print.
func kneewatchBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "kneewatch")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/kneewatch")
	cmd.Dir = moduleRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/kneewatch: %v\n%s", err, out)
	}
	return bin
}

// TestChartRulesAndDashboardsAreKneewatchsOwn fails when the rule template
// or the dashboard ConfigMaps checked into the chart differ from what
// `kneewatch rules` and `kneewatch dashboards` print now.
func TestChartRulesAndDashboardsAreKneewatchsOwn(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the kneewatch command; not in -short")
	}
	bin := kneewatchBinary(t)

	t.Run("templates/_rules.tpl is kneewatch rules --format helm", func(t *testing.T) {
		got := command(t, nil, nil, bin, "rules", "--format", "helm")
		checkGenerated(t, filepath.Join(chartDir(), "templates", "_rules.tpl"), got)
	})

	t.Run("files/dashboards is kneewatch dashboards --format configmap", func(t *testing.T) {
		out := t.TempDir()
		command(t, nil, nil, bin, "dashboards", "--format", "configmap", "--out", out)
		dir := filepath.Join(chartDir(), "files", "dashboards")
		generated, err := filepath.Glob(filepath.Join(out, "*.yaml"))
		if err != nil || len(generated) == 0 {
			t.Fatalf("kneewatch dashboards wrote no ConfigMaps (%v)", err)
		}
		if *update {
			old, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
			for _, f := range old {
				os.Remove(f)
			}
		}
		var names []string
		for _, f := range generated {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, filepath.Base(f))
			checkGenerated(t, filepath.Join(dir, filepath.Base(f)), data)
		}
		checked, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		var have []string
		for _, f := range checked {
			have = append(have, filepath.Base(f))
		}
		slices.Sort(names)
		if diff := cmp.Diff(names, have); diff != "" {
			t.Errorf("dashboard files in the chart differ from the generated set (-generated +chart):\n%s", diff)
		}
	})
}

func checkGenerated(t *testing.T, path string, generated []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, generated, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	have, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(generated), string(have)); diff != "" {
		t.Errorf("%s differs from kneewatch's output (-kneewatch +chart; rerun with -update):\n%s", path, diff)
	}
}

// TestChartRendersTheGeneratedDashboards checks that the rendered dashboard
// ConfigMaps carry the generated files' content unchanged: only names,
// namespaces and labels are the chart's. (The PrometheusRule is held to
// `kneewatch rules` by TestPrometheusRuleIsKneewatchRulesForTheSameConfig.)
func TestChartRendersTheGeneratedDashboards(t *testing.T) {
	objs := manifests(t, helmTemplate(t, ""))
	files, _ := filepath.Glob(filepath.Join(chartDir(), "files", "dashboards", "*.yaml"))
	if len(files) == 0 {
		t.Fatal("the chart has no files/dashboards/*.yaml")
	}
	for _, f := range files {
		generated := readYAML(t, f)
		var rendered map[string]any
		for _, o := range objs {
			if o["kind"] == "ConfigMap" && cmp.Equal(o["data"], generated["data"]) {
				rendered = o
			}
		}
		if rendered == nil {
			t.Errorf("no rendered ConfigMap carries the dashboard of %s", filepath.Base(f))
			continue
		}
		for k, v := range dig(generated, "metadata", "labels").(map[string]any) {
			if got := dig(rendered, "metadata", "labels", k); got != v {
				t.Errorf("%s: label %s = %v, want the generated %v", filepath.Base(f), k, got, v)
			}
		}
		for k, v := range dig(generated, "metadata", "annotations").(map[string]any) {
			if got := dig(rendered, "metadata", "annotations", k); got != v {
				t.Errorf("%s: annotation %s = %v, want the generated %v", filepath.Base(f), k, got, v)
			}
		}
	}
}

func readYAML(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}
