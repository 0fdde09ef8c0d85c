package tests

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kneewatch/kneewatch/config"
	"github.com/kneewatch/kneewatch/discovery"
	"github.com/kneewatch/kneewatch/internal/testtools"
	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/server"
	"github.com/kneewatch/kneewatch/watch"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

var outage = flag.Duration("discovery.outage", 20*time.Second, "how long TestDiscoveryThroughAnAPIOutage keeps the API server down")

// metricValues gathers collectors into "name{label="value",…}" → value,
// labels sorted by name, as the exposition format spells a series.
func metricValues(t *testing.T, cs ...prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(cs...)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return seriesValues(mfs)
}

// seriesValues flattens metric families into "name{label="value",…}" →
// gauge or counter value, labels sorted by name.
func seriesValues(mfs []*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			sort.Strings(ls)
			out[mf.GetName()+"{"+strings.Join(ls, ",")+"}"] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	return out
}

// replicaSeries is every series name and label set the exporter shows for
// one replica (values left out: they move from round to round).
func replicaSeries(t *testing.T, w *watch.Watcher, replica string) []string {
	t.Helper()
	var out []string
	for s := range metricValues(t, watch.NewExporter(w.Latest)) {
		if strings.Contains(s, fmt.Sprintf("replica=%q", replica)) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// waitUntil polls cond every 50ms for up to timeout; it fails the test
// with what() when cond never holds.
func waitUntil(t *testing.T, timeout time.Duration, cond func() bool, what func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", timeout, what())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// podsReader may get, list and watch pods in the namespaces it is bound in.
var podsReader = rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}}

// TestDiscoveryTellsTheWholeTruth runs discovery, feeding a real watcher,
// as a service account that may read pods in the two serving namespaces
// only (a Role and RoleBinding in each, as a namespace-scoped install
// grants), not in the dcgm-exporter's namespace, with pods written for the
// test: unready, same-named across namespaces, declaring a model with a
// "/" by annotation and by label.
func TestDiscoveryTellsTheWholeTruth(t *testing.T) {
	c := sharedCluster(t)
	const nsA, nsB, gpuNS, kwNS = "truth-a", "truth-b", "truth-gpu", "truth-kw"
	c.createNamespaces(t, nsA, nsB, gpuNS, kwNS)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	admin := c.client
	for _, n := range []string{nsA, nsB, gpuNS} {
		// The ServiceAccount admission plugin needs it; there is no controller to make it.
		if _, err := admin.CoreV1().ServiceAccounts(n).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := admin.CoreV1().ServiceAccounts(kwNS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "kneewatch"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{nsA, nsB} {
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: n, Name: "kneewatch"}, Rules: []rbacv1.PolicyRule{podsReader}}
		if _, err := admin.RbacV1().Roles(n).Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		rb := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: n, Name: "kneewatch"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "kneewatch"},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: kwNS, Name: "kneewatch"}},
		}
		if _, err := admin.RbacV1().RoleBindings(n).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	sa := c.serviceAccountClient(t, kwNS, "kneewatch")
	checkAccess(t, sa, []access{
		{"list", "pods", nsA, true}, {"watch", "pods", nsB, true},
		{"list", "pods", gpuNS, false}, {"list", "pods", "", false},
	})

	profile, err := knee.Load(filepath.Join(moduleRoot(), "knee", "testdata", "valid.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The profile's match.model and the engine fixture's model_name.
	const llama = "meta-llama/Llama-3.1-8B-Instruct"
	if profile.Match.Model != llama {
		t.Fatalf("profile fixture's model = %q, want %q", profile.Match.Model, llama)
	}
	cfg := config.DefaultKubernetes()
	cfg.Namespaces = []string{nsA, nsB}
	cfg.LabelSelector = "app.kubernetes.io/component=llm-server"
	cfg.ModelLabel = "kneewatch.dev/model"
	dcgm := config.DefaultKubernetesDCGM()
	dcgm.Namespace = gpuNS
	cfg.DCGM = &dcgm

	var logs testtools.SyncBuffer
	w := watch.NewWatcher(watch.WatcherOptions{Interval: time.Second, Window: 10 * time.Second})
	d, err := discovery.New(sa, discovery.Options{
		Config:   cfg,
		Profiles: map[string]*knee.Profile{"llama-h100": profile},
		Sink:     w.SetTargets,
		ModelOf:  discovery.ModelsFrom(w.Latest),
		Logger:   slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("discovery.Run: %v", err)
		}
	}()

	// Every pod gets an engine of its own, on 127.0.0.1 and its own port:
	// the engines listen on 127.0.0.1 only.
	urls := map[string]string{} // namespace/pod → metrics URL
	url := func(replica string) string { return urls[replica] }
	waitTargets := func(t *testing.T, want []string) {
		t.Helper()
		waitUntil(t, 20*time.Second, func() bool { return cmp.Equal(want, replicas(d.Targets())) }, func() string {
			return fmt.Sprintf("discovered targets (-want +got):\n%s\nproblems: %v\nlogs:\n%s", cmp.Diff(want, replicas(d.Targets())), d.Problems(), logs.String())
		})
	}
	top := t // the engines serve until the whole test ends
	create := func(t *testing.T, ns, name string, labels, annotations map[string]string, ready bool) *corev1.Pod {
		t.Helper()
		port := engine(top)
		urls[ns+"/"+name] = "http://127.0.0.1:" + port + "/metrics"
		p := servingPod(ns, name, port, labels)
		for k, v := range annotations {
			p.Annotations[k] = v
		}
		p, err := admin.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return setStatus(t, admin, p, "127.0.0.1", ready)
	}
	evaluation := func(t *testing.T, r *watch.Round, replica string) watch.ReplicaEval {
		t.Helper()
		for _, e := range r.Replicas {
			if e.Replica == replica {
				return e
			}
		}
		t.Fatalf("no evaluation of %s in round %+v", replica, r.Replicas)
		return watch.ReplicaEval{}
	}

	// A dcgm-exporter on the pods' node, which the service account may not see.
	exp := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: gpuNS, Name: "dcgm-exporter-a", Labels: map[string]string{"app": "nvidia-dcgm-exporter"}},
		Spec:       corev1.PodSpec{NodeName: "gpu-node-1", Containers: []corev1.Container{{Name: "dcgm-exporter", Image: "nvcr.io/nvidia/k8s/dcgm-exporter"}}},
	}
	if exp, err = admin.CoreV1().Pods(gpuNS).Create(ctx, exp, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	setRunning(t, admin, exp, "127.0.0.9")

	t.Run("a model name with / matches its profile, from the annotation and from the label's -- spelling", func(t *testing.T) {
		create(t, nsA, "vllm-0", nil, map[string]string{"kneewatch.dev/model": llama}, true)
		// The API server itself rejects a "/" in a label value; "--" passes.
		bad := servingPod(nsA, "slash", "8000", map[string]string{"kneewatch.dev/model": llama})
		if _, err := admin.CoreV1().Pods(nsA).Create(ctx, bad, metav1.CreateOptions{}); err == nil || !strings.Contains(err.Error(), "Invalid value") {
			t.Fatalf("creating a pod with a / in a label value: err = %v, want the API server's Invalid value", err)
		}
		create(t, nsA, "vllm-1", map[string]string{"kneewatch.dev/model": "meta-llama--Llama-3.1-8B-Instruct"}, nil, true)
		waitTargets(t, []string{
			nsA + "/vllm-0 " + url(nsA+"/vllm-0") + " profile=llama-h100",
			nsA + "/vllm-1 " + url(nsA+"/vllm-1") + " profile=llama-h100",
		})
		for _, tg := range d.Targets() {
			if tg.Namespace != nsA || tg.Pod != strings.TrimPrefix(tg.Replica, nsA+"/") {
				t.Errorf("target %s: namespace %q pod %q, want %q and the pod's name", tg.Replica, tg.Namespace, tg.Pod, nsA)
			}
		}
	})

	t.Run("without permission in the dcgm-exporter's namespace the replicas are still evaluated, without GPU metrics", func(t *testing.T) {
		r := w.EvaluateOnce(ctx)
		for _, name := range []string{nsA + "/vllm-0", nsA + "/vllm-1"} {
			e := evaluation(t, r, name)
			if !e.EngineUp || e.Model != llama || e.Profile != "llama-h100" {
				t.Errorf("%s: engine up %v, model %q, profile %q; want up, %q, llama-h100", name, e.EngineUp, e.Model, e.Profile, llama)
			}
			if e.Result.Reason == watch.ReasonEngineDown || e.Result.Reason == "no_profile" {
				t.Errorf("%s: reason %q", name, e.Result.Reason)
			}
		}
		m := metricValues(t, d)
		for series, want := range map[string]float64{
			`kneewatch_discovery_synced{role="serving"}`:       1,
			`kneewatch_discovery_synced{role="dcgm_exporter"}`: 0,
		} {
			if got, ok := m[series]; !ok || got != want {
				t.Errorf("%s = %v (present %v), want %v", series, got, ok, want)
			}
		}
		if n := m[`kneewatch_discovery_errors_total{kind="forbidden",role="dcgm_exporter"}`]; n < 1 {
			t.Errorf("forbidden dcgm-exporter errors = %v, want ≥ 1; metrics: %v", n, m)
		}
		if n := m[`kneewatch_discovery_errors_total{kind="forbidden",role="serving"}`]; n != 0 {
			t.Errorf("forbidden serving errors = %v, want 0", n)
		}
		t.Logf("no dcgm-exporter permission: %d replicas evaluated; synced serving %v, dcgm_exporter %v; forbidden dcgm_exporter errors %v",
			len(r.Replicas), m[`kneewatch_discovery_synced{role="serving"}`], m[`kneewatch_discovery_synced{role="dcgm_exporter"}`],
			m[`kneewatch_discovery_errors_total{kind="forbidden",role="dcgm_exporter"}`])
		warning := "cannot list or watch the dcgm-exporter pods"
		if got := strings.Count(logs.String(), warning); got != 1 {
			t.Errorf("%d warnings %q, want exactly 1; logs:\n%s", got, warning, logs.String())
		}
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, warning) && !strings.Contains(line, "namespace="+gpuNS) {
				t.Errorf("the warning does not name the dcgm-exporter's namespace %s: %s", gpuNS, line)
			}
		}
	})

	t.Run("an unready pod is neither a replica nor counted, and shows as unready", func(t *testing.T) {
		unreadyPod := create(t, nsA, "vllm-2", nil, map[string]string{"kneewatch.dev/model": llama}, false)
		unready := `kneewatch_discovery_pods{state="unready"}`
		waitUntil(t, 20*time.Second, func() bool { return metricValues(t, d)[unready] == 1 }, func() string {
			return fmt.Sprintf("%s never 1: %v", unready, metricValues(t, d))
		})
		waitTargets(t, []string{
			nsA + "/vllm-0 " + url(nsA+"/vllm-0") + " profile=llama-h100",
			nsA + "/vllm-1 " + url(nsA+"/vllm-1") + " profile=llama-h100",
		})
		r := w.EvaluateOnce(ctx)
		if got := exportedReplicas(t, w); slices.Contains(got, nsA+"/vllm-2") || len(r.Replicas) != 2 {
			t.Errorf("the unready pod is evaluated: exported replicas %v, round of %d replicas", got, len(r.Replicas))
		}
		if got := metricValues(t, d)[`kneewatch_discovery_pods{state="ready"}`]; got != 2 {
			t.Errorf(`kneewatch_discovery_pods{state="ready"} = %v, want 2`, got)
		}
		t.Logf("with %s unready: kneewatch_discovery_pods ready %v, unready %v; a round of %d replicas; exported replicas %v",
			nsA+"/vllm-2", metricValues(t, d)[`kneewatch_discovery_pods{state="ready"}`], metricValues(t, d)[unready], len(r.Replicas), exportedReplicas(t, w))

		// Ready, it joins; out of rotation again, it leaves.
		setCondition(unreadyPod, corev1.PodReady, corev1.ConditionTrue)
		unreadyPod, err := admin.CoreV1().Pods(nsA).UpdateStatus(ctx, unreadyPod, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		waitTargets(t, []string{
			nsA + "/vllm-0 " + url(nsA+"/vllm-0") + " profile=llama-h100",
			nsA + "/vllm-1 " + url(nsA+"/vllm-1") + " profile=llama-h100",
			nsA + "/vllm-2 " + url(nsA+"/vllm-2") + " profile=llama-h100",
		})
		setCondition(unreadyPod, corev1.PodReady, corev1.ConditionFalse)
		if _, err := admin.CoreV1().Pods(nsA).UpdateStatus(ctx, unreadyPod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitTargets(t, []string{
			nsA + "/vllm-0 " + url(nsA+"/vllm-0") + " profile=llama-h100",
			nsA + "/vllm-1 " + url(nsA+"/vllm-1") + " profile=llama-h100",
		})
		w.EvaluateOnce(ctx)
		if got := exportedReplicas(t, w); slices.Contains(got, nsA+"/vllm-2") {
			t.Errorf("the pod taken out of rotation is still exported: %v", got)
		}
	})

	t.Run("a same-named pod in another namespace leaves the first replica's series untouched", func(t *testing.T) {
		w.EvaluateOnce(ctx)
		before := replicaSeries(t, w, nsA+"/vllm-0")
		if len(before) == 0 {
			t.Fatal("no series for the first replica")
		}
		// The identity the rules route by travels with every series.
		for _, s := range before {
			if !strings.Contains(s, `namespace="`+nsA+`"`) || !strings.Contains(s, `pod="vllm-0"`) {
				t.Errorf("series %s lacks namespace=%q and pod=%q", s, nsA, "vllm-0")
			}
		}
		create(t, nsB, "vllm-0", nil, map[string]string{"kneewatch.dev/model": llama}, true)
		waitTargets(t, []string{
			nsA + "/vllm-0 " + url(nsA+"/vllm-0") + " profile=llama-h100",
			nsA + "/vllm-1 " + url(nsA+"/vllm-1") + " profile=llama-h100",
			nsB + "/vllm-0 " + url(nsB+"/vllm-0") + " profile=llama-h100",
		})
		r := w.EvaluateOnce(ctx)
		if diff := cmp.Diff(before, replicaSeries(t, w, nsA+"/vllm-0")); diff != "" {
			t.Errorf("the first replica's series changed when a same-named pod appeared (-before +after):\n%s", diff)
		}
		t.Logf("%s: %d series before and %d after %s appeared; %s has %d", nsA+"/vllm-0", len(before),
			len(replicaSeries(t, w, nsA+"/vllm-0")), nsB+"/vllm-0", nsB+"/vllm-0", len(replicaSeries(t, w, nsB+"/vllm-0")))
		if e := evaluation(t, r, nsA+"/vllm-0"); e.Profile != "llama-h100" {
			t.Errorf("the first replica's profile became %q", e.Profile)
		}
		if len(replicaSeries(t, w, nsB+"/vllm-0")) == 0 {
			t.Error("no series for the second vllm-0")
		}
	})

	t.Run("a declared model its engine does not serve reads no_profile, not engine_down, and is logged once", func(t *testing.T) {
		create(t, nsB, "qwen-0", nil, map[string]string{"kneewatch.dev/model": "Qwen/Qwen2.5-7B-Instruct"}, true)
		replica := nsB + "/qwen-0"
		waitUntil(t, 20*time.Second, func() bool { return slices.Contains(w.Replicas(), replica) }, func() string {
			return fmt.Sprintf("%s never watched: %v", replica, w.Replicas())
		})
		w.EvaluateOnce(ctx) // the engine reports meta-llama/Llama-3.1-8B-Instruct
		const problem = `declares model \"Qwen/Qwen2.5-7B-Instruct\" but the engine reports \"meta-llama/Llama-3.1-8B-Instruct\"`
		waitUntil(t, 20*time.Second, func() bool { return strings.Contains(logs.String(), problem) }, func() string {
			return "no problem logged; logs:\n" + logs.String()
		})
		var e watch.ReplicaEval
		for range 3 {
			e = evaluation(t, w.EvaluateOnce(ctx), replica)
		}
		if !e.EngineUp || e.Result.Reason != "no_profile" || e.Profile != "" {
			t.Errorf("%s: engine up %v, reason %q, profile %q; want up, no_profile and none", replica, e.EngineUp, e.Result.Reason, e.Profile)
		}
		time.Sleep(1500 * time.Millisecond) // a model check or two
		if n := strings.Count(logs.String(), problem); n != 1 {
			t.Errorf("the problem was logged %d times, want once; logs:\n%s", n, logs.String())
		}
		if err := admin.CoreV1().Pods(nsB).Delete(ctx, "qwen-0", metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, 20*time.Second, func() bool { return !slices.Contains(w.Replicas(), replica) }, func() string {
			return fmt.Sprintf("%s still watched: %v", replica, w.Replicas())
		})
	})

	t.Run("a pod whose model comes from its engine is matched to its profile on the next model check, not a fixed refresh", func(t *testing.T) {
		create(t, nsB, "vllm-1", nil, nil, true)
		replica := nsB + "/vllm-1"
		waitUntil(t, 20*time.Second, func() bool { return slices.Contains(w.Replicas(), replica) }, func() string {
			return fmt.Sprintf("%s never watched: %v", replica, w.Replicas())
		})
		w.EvaluateOnce(ctx) // the engine tells its model
		scraped := time.Now()
		// The default model check is 1s; the old fixed refresh was 30s.
		waitTargets(t, []string{
			nsA + "/vllm-0 " + url(nsA+"/vllm-0") + " profile=llama-h100",
			nsA + "/vllm-1 " + url(nsA+"/vllm-1") + " profile=llama-h100",
			nsB + "/vllm-0 " + url(nsB+"/vllm-0") + " profile=llama-h100",
			nsB + "/vllm-1 " + url(nsB+"/vllm-1") + " profile=llama-h100",
		})
		t.Logf("profile matched %s after the engine reported its model", time.Since(scraped).Round(time.Millisecond))
	})
}

// TestDiscoveryThroughAnAPIOutage runs discovery against an API server of
// its own, which it kills and starts again: before the first list /-/ready is 503
// and the health metrics say why; after the API server returns, discovery
// catches up within seconds; during an outage the metrics show it, and the
// log says so once, not on every retry.
func TestDiscoveryThroughAnAPIOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and kube-apiserver; not in -short")
	}
	etcd := testtools.Path(t, "etcd")
	kas := testtools.Path(t, "kube-apiserver")
	began := time.Now()
	c, err := startCluster(etcd, kas, "")
	if err != nil {
		t.Fatalf("starting a cluster: %v", err)
	}
	t.Cleanup(func() {
		if err := c.stop(); err != nil {
			t.Errorf("stopping the cluster: %v", err)
		}
	})
	t.Logf("etcd + kube-apiserver ready in %s", time.Since(began).Round(time.Millisecond))
	const ns = "outage"
	c.createNamespaces(t, ns)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := c.client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	port := engine(t)
	newPod := func(t *testing.T, client kubernetes.Interface, name, ip string) {
		t.Helper()
		p, err := client.CoreV1().Pods(ns).Create(ctx, servingPod(ns, name, port, nil), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		setRunning(t, client, p, ip)
	}
	newPod(t, c.client, "vllm-0", "127.0.0.1")

	c.killAPIServer()
	cfg := config.DefaultKubernetes()
	cfg.Namespaces = []string{ns}
	cfg.LabelSelector = "app.kubernetes.io/component=llm-server"
	var logs testtools.SyncBuffer
	w := watch.NewWatcher(watch.WatcherOptions{Interval: time.Second, Window: 10 * time.Second})
	d, err := discovery.New(c.client, discovery.Options{
		Config: cfg,
		Sink:   w.SetTargets,
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(d)
	h, err := server.Handler(server.Options{Registry: reg, Ready: d.Ready, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	get := func(t *testing.T, path string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	parse := func(t *testing.T, body string) map[string]float64 {
		t.Helper()
		parser := expfmt.NewTextParser(model.UTF8Validation)
		mfs, err := parser.TextToMetricFamilies(strings.NewReader(body))
		if err != nil {
			t.Fatalf("parsing /metrics: %v", err)
		}
		return seriesValues(slices.Collect(maps.Values(mfs)))
	}
	scrape := func(t *testing.T) map[string]float64 {
		t.Helper()
		code, body := get(t, "/metrics")
		if code != 200 {
			t.Fatalf("/metrics = %d", code)
		}
		return parse(t, body)
	}
	const synced, unavailable = `kneewatch_discovery_synced{role="serving"}`, `kneewatch_discovery_errors_total{kind="unavailable",role="serving"}`
	const lastSync = `kneewatch_discovery_last_sync_timestamp_seconds{role="serving"}`
	const warning = "cannot list or watch the serving pods"

	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("discovery.Run: %v", err)
		}
	}()

	t.Run("before the first list /-/ready is 503 and the metrics say why", func(t *testing.T) {
		waitUntil(t, 20*time.Second, func() bool { return scrape(t)[unavailable] >= 3 }, func() string {
			return fmt.Sprintf("%s never reached 3: %v", unavailable, scrape(t))
		})
		code, body := get(t, "/-/ready")
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "has not listed the serving pods") {
			t.Errorf("/-/ready = %d %q, want 503 naming discovery", code, body)
		}
		t.Logf("API server down from the start: /-/ready %d %q; %s = %v", code, strings.TrimSpace(body), unavailable, scrape(t)[unavailable])
		m := scrape(t)
		if m[synced] != 0 {
			t.Errorf("%s = %v, want 0", synced, m[synced])
		}
		if _, ok := m[lastSync]; ok {
			t.Errorf("%s is exported before any sync", lastSync)
		}
		if n := strings.Count(logs.String(), warning); n != 1 {
			t.Errorf("%d warnings %q over %v failed calls, want 1 (logged on change); logs:\n%s", n, warning, m[unavailable], logs.String())
		}
	})

	t.Run("once the API server answers, discovery lists the pods and /-/ready is 200", func(t *testing.T) {
		restarted := time.Now()
		if err := c.startAPIServer(); err != nil {
			t.Fatal(err)
		}
		up := time.Now()
		waitUntil(t, 30*time.Second, d.Synced, func() string { return "discovery never synced; logs:\n" + logs.String() })
		t.Logf("the API server was ready %s after its start; discovery's first sync came %s after that", up.Sub(restarted).Round(time.Millisecond), time.Since(up).Round(time.Millisecond))
		if code, _ := get(t, "/-/ready"); code != 200 {
			t.Errorf("/-/ready = %d after the first sync, want 200", code)
		}
		if got := replicas(d.Targets()); !cmp.Equal(got, []string{ns + "/vllm-0 http://127.0.0.1:" + port + "/metrics profile="}) {
			t.Errorf("targets = %v", got)
		}
		if m := scrape(t); m[synced] != 1 || m[lastSync] < float64(restarted.Unix()) {
			t.Errorf("%s = %v and %s = %v after the sync, want 1 and a time after the restart at %v", synced, m[synced], lastSync, m[lastSync], restarted)
		}
		if !strings.Contains(logs.String(), "reaches the API server again") {
			t.Errorf("no log of the recovery; logs:\n%s", logs.String())
		}
	})

	t.Run("during an outage the metrics show it, and discovery catches up within seconds of the return", func(t *testing.T) {
		before := scrape(t)
		logsBefore := strings.Count(logs.String(), warning)
		stopped := time.Now()
		c.killAPIServer()
		waitUntil(t, 30*time.Second, func() bool { return scrape(t)[synced] == 0 }, func() string {
			return fmt.Sprintf("%s never 0 during the outage: %v", synced, scrape(t))
		})
		t.Logf("the outage showed in %s %s after the API server was stopped", synced, time.Since(stopped).Round(time.Millisecond))
		// Keep the API server down long enough for client-go's own backoff
		// to have grown past 10s (-discovery.outage=110s measures the
		// outage issue 16 reported).
		time.Sleep(*outage)
		during := scrape(t)
		if during[unavailable] <= before[unavailable] {
			t.Errorf("%s = %v during the outage, %v before", unavailable, during[unavailable], before[unavailable])
		}
		if code, _ := get(t, "/-/ready"); code != 200 {
			t.Errorf("/-/ready = %d during an outage after the first sync, want 200 (the last targets are still watched)", code)
		}
		if n := strings.Count(logs.String(), warning) - logsBefore; n != 1 {
			t.Errorf("%d new warnings during the outage, want 1; logs:\n%s", n, logs.String())
		}
		restarted := time.Now()
		if err := c.startAPIServer(); err != nil {
			t.Fatal(err)
		}
		down := time.Since(stopped)
		up := time.Now()
		newPod(t, c.client, "vllm-1", "127.0.0.2")
		created := time.Now()
		want := []string{
			ns + "/vllm-0 http://127.0.0.1:" + port + "/metrics profile=",
			ns + "/vllm-1 http://127.0.0.2:" + port + "/metrics profile=",
		}
		waitUntil(t, 30*time.Second, func() bool { return cmp.Equal(want, replicas(d.Targets())) }, func() string {
			return fmt.Sprintf("targets after the outage: %v; logs:\n%s", replicas(d.Targets()), logs.String())
		})
		t.Logf("outage of %s (API server ready %s after its start): the pod created %s after ready was discovered %s after its creation",
			down.Round(time.Second), up.Sub(restarted).Round(time.Millisecond), created.Sub(up).Round(time.Millisecond), time.Since(created).Round(time.Millisecond))
		waitUntil(t, 10*time.Second, func() bool { return scrape(t)[synced] == 1 }, func() string {
			return fmt.Sprintf("%s not back to 1: %v", synced, scrape(t))
		})
		m := scrape(t)
		t.Logf("after the outage: %s = %v, %s = %v, last sync %s after the API server's start",
			synced, m[synced], unavailable, m[unavailable], time.Unix(0, int64(m[lastSync]*1e9)).Sub(restarted).Round(time.Millisecond))
	})
}
