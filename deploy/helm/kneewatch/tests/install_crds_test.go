package tests

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kneewatch/kneewatch/internal/testtools"
)

var (
	serviceMonitors = schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "servicemonitors"}
	prometheusRules = schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "prometheusrules"}
)

// TestHelmInstallWithoutThenWithCRDs is the zero-edit install: on an API
// server without prometheus-operator's CRDs `helm install` with default
// values succeeds (and creates no ServiceMonitor or PrometheusRule, which
// would fail it); once the CRDs are installed, `helm upgrade` with one value,
// releaseLabel, creates both, labelled for kube-prometheus-stack's selectors.
// It starts its own etcd and kube-apiserver: the shared cluster has the CRDs
// from the start (TestHelmInstallOntoAClusterWithTheCRDs installs there).
func TestHelmInstallWithoutThenWithCRDs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and kube-apiserver; not in -short")
	}
	etcd := testtools.Path(t, "etcd")
	kas := testtools.Path(t, "kube-apiserver")
	helm := testtools.Path(t, "helm")
	crds := filepath.Join(kubeSchemas(t), "crds")
	began := time.Now()
	c, err := startCluster(etcd, kas, "")
	if err != nil {
		t.Fatalf("starting a cluster without CRDs: %v", err)
	}
	t.Cleanup(func() {
		if err := c.stop(); err != nil {
			t.Errorf("stopping the cluster: %v", err)
		}
	})
	t.Logf("etcd + kube-apiserver without CRDs ready in %s", time.Since(began).Round(time.Millisecond))

	const release, ns = "kneewatch", "monitoring"
	c.createNamespaces(t, ns)
	// HOME too: kubectl-style discovery caches live under ~/.kube/cache, and
	// a cache from before the CRDs would hide them from helm's capabilities.
	env := append(helmEnv(t, c.kubeconfig), "HOME="+t.TempDir())
	helmRun := func(t *testing.T, args ...string) string {
		t.Helper()
		out := command(t, env, nil, helm, args...)
		t.Logf("helm %s:\n%s", strings.Join(args, " "), out)
		return string(out)
	}
	ctx := context.Background()
	monitoringObjects := func(t *testing.T) map[string]map[string]string {
		t.Helper()
		got := map[string]map[string]string{}
		for _, gvr := range []schema.GroupVersionResource{serviceMonitors, prometheusRules} {
			list, err := c.dynamic.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatalf("listing %s: %v", gvr.Resource, err)
			}
			for _, o := range list.Items {
				got[gvr.Resource+"/"+o.GetName()] = o.GetLabels()
			}
		}
		return got
	}

	t.Run("helm install with default values and no CRDs succeeds", func(t *testing.T) {
		out := helmRun(t, "install", release, chartDir(), "--namespace", ns, "--wait=false")
		if !strings.Contains(out, "STATUS: deployed") {
			t.Errorf("helm install did not report the release deployed:\n%s", out)
		}
		if !strings.Contains(out, "does not serve monitoring.coreos.com/v1") {
			t.Errorf("the notes do not say why there is no ServiceMonitor or PrometheusRule:\n%s", out)
		}
		manifest := c.releaseManifest(t, release, ns)
		for _, id := range manifest {
			if id.Resource == "servicemonitors" || id.Resource == "prometheusrules" {
				t.Errorf("release holds %s without the CRDs", id)
			}
		}
		if !slices.Contains(manifest, objectID{"deployments", ns, release}) {
			t.Errorf("release lacks the Deployment: %v", manifest)
		}
	})

	t.Run("without the check the same install fails, which is what the gate prevents", func(t *testing.T) {
		_, err := tryCommand(env, nil, helm, "install", "forced", chartDir(), "--namespace", ns,
			"--set", "monitoringCapabilityCheck=false", "--set", "fullnameOverride=forced")
		if err == nil {
			t.Fatal("helm install with monitoringCapabilityCheck=false succeeded on an API server without the CRDs")
		}
		t.Logf("helm install --set monitoringCapabilityCheck=false: %v", err)
		if !strings.Contains(err.Error(), "ServiceMonitor") && !strings.Contains(err.Error(), "PrometheusRule") {
			t.Errorf("helm's error does not name the missing kinds: %v", err)
		}
	})

	t.Run("with the CRDs, helm upgrade --set releaseLabel creates both, labelled release", func(t *testing.T) {
		if err := c.installCRDs(crds); err != nil {
			t.Fatal(err)
		}
		out := helmRun(t, "upgrade", release, chartDir(), "--namespace", ns, "--set", "releaseLabel=kube-prometheus-stack")
		if strings.Contains(out, "NOTE:") {
			t.Errorf("the notes still warn with the CRDs and the release label:\n%s", out)
		}
		got := monitoringObjects(t)
		for _, name := range []string{"servicemonitors/" + release, "prometheusrules/" + release} {
			labels, ok := got[name]
			t.Logf("API server holds %s in %s: present %v, release label %q", name, ns, ok, labels["release"])
			if !ok {
				t.Errorf("the API server holds no %s in %s; it holds %v", name, ns, got)
				continue
			}
			if labels["release"] != "kube-prometheus-stack" {
				t.Errorf("%s labels %v lack release=kube-prometheus-stack", name, labels)
			}
		}
	})

	// alerts reads the PrometheusRule from the API server: alert name → rule.
	alerts := func(t *testing.T) map[string]map[string]any {
		t.Helper()
		o, err := c.dynamic.Resource(prometheusRules).Namespace(ns).Get(ctx, release, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]map[string]any{}
		groups, _, _ := unstructured.NestedSlice(o.Object, "spec", "groups")
		for _, g := range groups {
			rules, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
			for _, r := range rules {
				r := r.(map[string]any)
				if name, ok := r["alert"].(string); ok {
					got[name] = r
				}
			}
		}
		return got
	}

	t.Run("helm upgrade with config.alerts changes the PrometheusRule in the API server", func(t *testing.T) {
		before := alerts(t)
		helmRun(t, "upgrade", release, chartDir(), "--namespace", ns, "--reuse-values",
			"--set", "config.alerts.labels.team=ml-platform", "--set", "config.alerts.disabled={KneewatchProbeSuccessLow}",
			"--set-json", `config.alerts.headroom_low={"below":0.3,"for":"5m"}`)
		after := alerts(t)
		t.Logf("alerts before: %d, after: %d", len(before), len(after))
		if _, ok := before["KneewatchProbeSuccessLow"]; !ok {
			t.Fatalf("KneewatchProbeSuccessLow missing before the upgrade: %v", before)
		}
		if _, ok := after["KneewatchProbeSuccessLow"]; ok || len(after) != len(before)-1 {
			t.Errorf("after disabling KneewatchProbeSuccessLow: %d alerts (before %d), it still there: %v", len(after), len(before), ok)
		}
		for name, rule := range after {
			if labels, _ := rule["labels"].(map[string]any); labels["team"] != "ml-platform" {
				t.Errorf("%s labels %v lack team=ml-platform", name, labels)
			}
		}
		low := after["KneewatchHeadroomLow"]
		t.Logf("KneewatchHeadroomLow before: %v for %v; after: %v for %v",
			before["KneewatchHeadroomLow"]["expr"], before["KneewatchHeadroomLow"]["for"], low["expr"], low["for"])
		if low["expr"] != "kneewatch_replica_headroom_ratio < 0.3" || low["for"] != "5m" {
			t.Errorf("KneewatchHeadroomLow after headroom_low {below: 0.3, for: 5m}: expr %v, for %v", low["expr"], low["for"])
		}
	})
}

// checkMonitoringObjects reads the ServiceMonitor and PrometheusRule named
// name in ns from the API server and checks what kube-prometheus-stack's
// Prometheus needs of them: the release label its default
// serviceMonitorSelector and ruleSelector match, a ServiceMonitor that
// selects the release's Service by its labels and names a port the Service
// has, and a PrometheusRule holding the page.
func checkMonitoringObjects(t *testing.T, c *cluster, ns, name, release string) {
	t.Helper()
	ctx := context.Background()
	sm, err := c.dynamic.Resource(serviceMonitors).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the API server holds no ServiceMonitor %s/%s: %v", ns, name, err)
	}
	pr, err := c.dynamic.Resource(prometheusRules).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the API server holds no PrometheusRule %s/%s: %v", ns, name, err)
	}
	for _, o := range []*unstructured.Unstructured{sm, pr} {
		t.Logf("API server holds %s %s/%s, release label %q", o.GetKind(), ns, o.GetName(), o.GetLabels()["release"])
		if got := o.GetLabels()["release"]; got != release {
			t.Errorf("%s %s/%s release label = %q, want %q", o.GetKind(), ns, o.GetName(), got, release)
		}
	}

	svc, err := c.client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the API server holds no Service %s/%s: %v", ns, name, err)
	}
	match, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	if len(match) == 0 {
		t.Errorf("ServiceMonitor %s/%s selects no labels: %v", ns, name, sm.Object["spec"])
	}
	for k, v := range match {
		if svc.Labels[k] != v {
			t.Errorf("ServiceMonitor %s/%s selects %s=%s; Service %s has labels %v", ns, name, k, v, svc.Name, svc.Labels)
		}
	}
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	var svcPorts []string
	for _, p := range svc.Spec.Ports {
		svcPorts = append(svcPorts, p.Name)
	}
	for _, e := range endpoints {
		if port, _ := e.(map[string]any)["port"].(string); !slices.Contains(svcPorts, port) {
			t.Errorf("ServiceMonitor %s/%s scrapes port %q; Service %s has ports %v", ns, name, port, svc.Name, svcPorts)
		}
	}

	var alerts []string
	groups, _, _ := unstructured.NestedSlice(pr.Object, "spec", "groups")
	for _, g := range groups {
		rules, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
		for _, r := range rules {
			if a, ok := r.(map[string]any)["alert"].(string); ok {
				alerts = append(alerts, a)
			}
		}
	}
	t.Logf("PrometheusRule %s/%s: %d groups, %d alerts", ns, name, len(groups), len(alerts))
	if !slices.Contains(alerts, "KneewatchHeadroomExhausted") {
		t.Errorf("PrometheusRule %s/%s lacks KneewatchHeadroomExhausted: %v", ns, name, alerts)
	}
}

// TestHelmInstallOntoAClusterWithTheCRDs is the zero-edit install where
// kube-prometheus-stack already runs: a fresh `helm install` with default
// values and one value, releaseLabel, onto an API server that serves the
// prometheus-operator CRDs creates the ServiceMonitor and PrometheusRule,
// labelled for kube-prometheus-stack's selectors, with no warning in the
// notes. It uses the shared cluster, which has the CRDs from the start.
func TestHelmInstallOntoAClusterWithTheCRDs(t *testing.T) {
	c := sharedCluster(t)
	// A release name other than "kneewatch", so its instance label is its
	// own on the shared cluster: the objects are named release-kneewatch.
	const release, ns, name = "kw-fresh", "kw-fresh", "kw-fresh-kneewatch"
	c.createNamespaces(t, ns)
	out := string(c.helm(t, "install", release, chartDir(), "--namespace", ns, "--set", "releaseLabel=kube-prometheus-stack"))
	t.Logf("helm install %s --set releaseLabel=kube-prometheus-stack:\n%s", release, out)
	if !strings.Contains(out, "STATUS: deployed") {
		t.Errorf("helm install did not report the release deployed:\n%s", out)
	}
	if strings.Contains(out, "NOTE:") {
		t.Errorf("the notes warn on a cluster with the CRDs and the release label:\n%s", out)
	}
	manifest := c.releaseManifest(t, release, ns)
	for _, want := range []objectID{{"servicemonitors", ns, name}, {"prometheusrules", ns, name}, {"deployments", ns, name}} {
		if !slices.Contains(manifest, want) {
			t.Errorf("release lacks %s: %v", want, manifest)
		}
	}
	if diff := cmp.Diff(manifest, c.releaseObjects(t, release)); diff != "" {
		t.Errorf("objects in the API server differ from the release manifest (-manifest +server):\n%s", diff)
	}
	checkMonitoringObjects(t, c, ns, name, "kube-prometheus-stack")

	c.helm(t, "uninstall", release, "--namespace", ns)
	if left := c.releaseObjects(t, release); len(left) > 0 {
		t.Errorf("objects left after uninstall: %v", left)
	}
}
