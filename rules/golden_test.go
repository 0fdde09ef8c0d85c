package rules

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files")

// goldenCases are the rendered files checked in under testdata. The alert
// unit tests under testdata/alerts run against rules.golden.yaml, so they
// test exactly what `kneewatch rules` prints with the default options.
func goldenCases(t testing.TB) []struct {
	name   string
	opts   Options
	format Format
	file   string
} {
	operator := DefaultOptions()
	operator.PrometheusRule.Namespace = "monitoring"
	operator.PrometheusRule.Release = "kube-prometheus-stack"
	operator.PrometheusRule.Labels = map[string]string{"app.kubernetes.io/name": "kneewatch"}
	example := exampleConfigOptions(t)
	return []struct {
		name   string
		opts   Options
		format Format
		file   string
	}{
		{"the default options print the golden rule file", DefaultOptions(), FormatRules, "rules.golden.yaml"},
		{"a namespaced PrometheusRule with a release label prints the golden object", operator, FormatPrometheusRule, "prometheusrule.golden.yaml"},
		{"config/example.yml's alerts section prints the golden rule file", example, FormatRules, "example-config.golden.yaml"},
	}
}

func TestGoldenFiles(t *testing.T) {
	for _, tc := range goldenCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			var got bytes.Buffer
			if err := Render(&got, tc.opts, tc.format); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", tc.file)
			if *update {
				if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./rules -run TestGoldenFiles -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), got.String()); diff != "" {
				t.Errorf("%s differs from the generated output (-golden +generated); if the change is intended, rerun with -update:\n%s", path, diff)
			}
		})
	}
}
