package tests

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kneewatch/kneewatch/internal/testtools"
)

// renders are the chart renders checked against golden files: the default
// values, and every toggle on.
var renders = []struct {
	name, values string
}{
	{"default", ""},
	{"all-on", "testdata/values-all-on.yaml"},
	{"sharded", "testdata/values-sharded.yaml"},
	{"web-tls", "testdata/values-web-tls.yaml"},
}

func valuesArgs(values string) []string {
	if values == "" {
		return nil
	}
	return []string{"--values", values}
}

// monitoringAPI tells `helm template` the cluster serves prometheus-operator's
// API, as a kube-prometheus-stack cluster does: without it the chart leaves
// out its ServiceMonitor and PrometheusRule.
const monitoringAPI = "monitoring.coreos.com/v1"

// helmTemplate renders the chart as release "kneewatch" in namespace
// "monitoring", as `helm template --api-versions monitoring.coreos.com/v1`
// shows a user of kube-prometheus-stack.
func helmTemplate(t *testing.T, values string, extra ...string) []byte {
	t.Helper()
	helm := testtools.Path(t, "helm")
	args := append([]string{"template", "kneewatch", chartDir(), "--namespace", "monitoring", "--api-versions", monitoringAPI}, valuesArgs(values)...)
	return command(t, helmEnv(t, ""), nil, helm, append(args, extra...)...)
}

func TestHelmLintStrict(t *testing.T) {
	helm := testtools.Path(t, "helm")
	for _, r := range renders {
		t.Run(r.name+" values pass helm lint --strict", func(t *testing.T) {
			out := command(t, helmEnv(t, ""), nil, helm, append([]string{"lint", "--strict", chartDir()}, valuesArgs(r.values)...)...)
			if !bytes.Contains(out, []byte("1 chart(s) linted, 0 chart(s) failed")) {
				t.Errorf("helm lint did not report a clean lint:\n%s", out)
			}
		})
	}
}

func TestHelmTemplateMatchesGolden(t *testing.T) {
	for _, r := range renders {
		t.Run(r.name+" values render as the golden file", func(t *testing.T) {
			got := helmTemplate(t, r.values)
			golden := filepath.Join("testdata", r.name+".golden.yaml")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("helm template differs from %s (-want +got; rerun with -update if intended):\n%s", golden, diff)
			}
		})
	}
}

func TestRenderedManifestsPassKubeconformStrict(t *testing.T) {
	kubeconform := testtools.Path(t, "kubeconform")
	schemas := filepath.Join(kubeSchemas(t), "kubernetes")
	for _, r := range renders {
		t.Run(r.name+" values", func(t *testing.T) {
			rendered := helmTemplate(t, r.values)
			out := command(t, nil, rendered, kubeconform,
				"-strict", "-summary",
				"-schema-location", filepath.Join(schemas, "{{.ResourceKind}}{{.KindSuffix}}.json"),
				"-")
			// kubeconform exits non-zero on any invalid or unschema'd
			// resource; also check it really looked at every document.
			docs := bytes.Count(rendered, []byte("\n---\n")) + 1
			if !strings.Contains(string(out), "Invalid: 0, Errors: 0, Skipped: 0") || !strings.Contains(string(out), "Valid: "+strconv.Itoa(docs)) {
				t.Errorf("kubeconform summary does not show %d valid resources:\n%s", docs, out)
			}
		})
	}
}

// TestKubeconformRejectsAMisspelledField proves the schemas are strict: a
// field the API does not have must fail validation, or the test above
// proves nothing.
func TestKubeconformRejectsAMisspelledField(t *testing.T) {
	kubeconform := testtools.Path(t, "kubeconform")
	schemas := filepath.Join(kubeSchemas(t), "kubernetes")
	for _, tt := range []struct{ name, manifest, complaint string }{
		{"a Deployment with a misspelled container field", `apiVersion: apps/v1
kind: Deployment
metadata: {name: x}
spec:
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}}
    spec:
      containers: [{name: x, image: x, imagePullPolicyy: Always}]
`, "imagePullPolicyy"},
		{"a ServiceMonitor with a misspelled endpoint field", `apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: x}
spec:
  selector: {matchLabels: {a: b}}
  endpoints: [{port: http, intervall: 30s}]
`, "intervall"},
		{"a PrometheusRule whose rule lacks expr", `apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata: {name: x}
spec:
  groups: [{name: g, rules: [{alert: A}]}]
`, "expr"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tryCommand(nil, []byte(tt.manifest), kubeconform, "-strict", "-summary",
				"-schema-location", filepath.Join(schemas, "{{.ResourceKind}}{{.KindSuffix}}.json"), "-")
			var ce *commandError
			if !errors.As(err, &ce) {
				t.Fatalf("kubeconform accepted an invalid manifest (err %v)", err)
			}
			if !strings.Contains(ce.stdout, tt.complaint) || !strings.Contains(ce.stdout, "Invalid: 1") {
				t.Errorf("kubeconform did not reject the manifest for %q:\n%s", tt.complaint, ce.stdout)
			}
		})
	}
}
