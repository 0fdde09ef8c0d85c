package tests

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kneewatch/kneewatch/internal/testtools"
)

// TestChartRendersAsADependencyOfAnUmbrellaChart builds testdata/umbrella
// (kneewatch as a file:// dependency, with global values and the
// kneewatch.enabled condition) with the real helm and renders it: the
// schema must accept the keys helm adds to a subchart's values, and the
// condition must turn the whole subchart off. Then it installs the umbrella
// onto the shared API server (which serves the prometheus-operator CRDs).
func TestChartRendersAsADependencyOfAnUmbrellaChart(t *testing.T) {
	helm := testtools.Path(t, "helm")
	// A copy, so `helm dependency build` writes charts/ and Chart.lock
	// outside the source tree; the dependency points back at this chart.
	dir := filepath.Join(t.TempDir(), "umbrella")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"Chart.yaml", "values.yaml"} {
		data, err := os.ReadFile(filepath.Join("testdata", "umbrella", f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "Chart.yaml" {
			data = []byte(strings.Replace(string(data), "file://../../..", "file://"+chartDir(), 1))
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := helmEnv(t, "")
	out := command(t, env, nil, helm, "dependency", "build", dir)
	t.Logf("helm dependency build:\n%s", out)

	rendered := command(t, env, nil, helm, "template", "platform", dir, "--namespace", "monitoring", "--api-versions", monitoringAPI)
	objs := manifests(t, rendered)
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o["kind"].(string))
	}
	t.Logf("umbrella render: %d objects: %v", len(objs), kinds)
	for _, want := range []string{"Deployment", "Service", "ConfigMap", "ServiceMonitor", "PrometheusRule", "Role"} {
		if !slices.Contains(kinds, want) {
			t.Errorf("the umbrella render lacks a %s: %v", want, kinds)
		}
	}
	for _, kind := range []string{"ServiceMonitor", "PrometheusRule"} {
		o := find(t, objs, kind, "")
		if got := dig(o, "metadata", "labels", "release"); got != "kube-prometheus-stack" {
			t.Errorf("%s release label = %v, want the umbrella's kneewatch.releaseLabel", kind, got)
		}
	}
	if d := find(t, objs, "Deployment", ""); dig(d, "metadata", "name") != "platform-kneewatch" {
		t.Errorf("Deployment name = %v, want platform-kneewatch", dig(d, "metadata", "name"))
	}

	off := command(t, env, nil, helm, "template", "platform", dir, "--set", "kneewatch.enabled=false")
	if n := len(manifests(t, off)); n != 0 {
		t.Errorf("with kneewatch.enabled=false the umbrella still renders %d objects", n)
	}

	t.Run("helm install of the umbrella onto the API server creates kneewatch's objects", func(t *testing.T) {
		c := sharedCluster(t)
		const release, ns, name = "platform", "platform", "platform-kneewatch"
		c.createNamespaces(t, ns, "llm")
		out := string(c.helm(t, "install", release, dir, "--namespace", ns))
		t.Logf("helm install %s umbrella:\n%s", release, out)
		if !strings.Contains(out, "STATUS: deployed") {
			t.Errorf("helm install did not report the umbrella deployed:\n%s", out)
		}
		manifest := c.releaseManifest(t, release, ns)
		t.Logf("umbrella release: %v", manifest)
		for _, want := range []objectID{
			{"deployments", ns, name}, {"services", ns, name}, {"configmaps", ns, name},
			{"servicemonitors", ns, name}, {"prometheusrules", ns, name},
			{"roles", "llm", name}, {"rolebindings", "llm", name},
		} {
			if !slices.Contains(manifest, want) {
				t.Errorf("the umbrella release lacks %s", want)
			}
		}
		if diff := cmp.Diff(manifest, c.releaseObjects(t, release)); diff != "" {
			t.Errorf("objects in the API server differ from the umbrella's manifest (-manifest +server):\n%s", diff)
		}
		checkMonitoringObjects(t, c, ns, name, "kube-prometheus-stack")

		c.helm(t, "uninstall", release, "--namespace", ns)
		if left := c.releaseObjects(t, release); len(left) > 0 {
			t.Errorf("objects left after uninstall: %v", left)
		}
	})
}
