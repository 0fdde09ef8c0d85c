package tests

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kneewatch/kneewatch/config"
	"github.com/kneewatch/kneewatch/discovery"
	"github.com/kneewatch/kneewatch/internal/testtools"
	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/watch"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// engine serves a vLLM scrape on loopback, standing in for a serving pod.
func engine(t *testing.T) (port string) {
	t.Helper()
	body, err := os.ReadFile(filepath.Join(moduleRoot(), "collector", "testdata", "vllm-v1-full-synthetic.prom"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	return u.Port()
}

// servingPod is a pod as a vLLM Deployment would create it, pinned to H100s.
func servingPod(ns, name, metricsPort string, labels map[string]string) *corev1.Pod {
	l := map[string]string{"app.kubernetes.io/component": "llm-server"}
	for k, v := range labels {
		l[k] = v
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: l,
			Annotations: map[string]string{"kneewatch.dev/metrics-port": metricsPort}},
		Spec: corev1.PodSpec{
			NodeName:     "gpu-node-1",
			NodeSelector: map[string]string{discovery.GPUProductLabel: "NVIDIA-H100-80GB-HBM3"},
			Containers:   []corev1.Container{{Name: "vllm", Image: "vllm/vllm-openai:v0.11.0"}},
		},
	}
}

// setRunning does the kubelet's part: the pod runs with an IP and passes
// its readiness probe. Only loopback IPs are used, so the watcher's scrapes
// stay on this machine.
func setRunning(t *testing.T, client kubernetes.Interface, pod *corev1.Pod, ip string) *corev1.Pod {
	t.Helper()
	return setStatus(t, client, pod, ip, true)
}

// setStatus makes the pod Running with an IP, Ready or not.
func setStatus(t *testing.T, client kubernetes.Interface, pod *corev1.Pod, ip string, ready bool) *corev1.Pod {
	t.Helper()
	pod.Status.Phase = corev1.PodRunning
	pod.Status.PodIP = ip
	pod.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	setCondition(pod, corev1.PodReady, status)
	got, err := client.CoreV1().Pods(pod.Namespace).UpdateStatus(context.Background(), pod, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("setting pod %s running: %v", pod.Name, err)
	}
	return got
}

// setCondition sets (or adds) one of the pod's status conditions.
func setCondition(pod *corev1.Pod, typ corev1.PodConditionType, status corev1.ConditionStatus) {
	for i, c := range pod.Status.Conditions {
		if c.Type == typ {
			pod.Status.Conditions[i].Status = status
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: typ, Status: status, LastTransitionTime: metav1.Now()})
}

// replicas is the discovered replica names with their profile and metrics URL.
func replicas(ts []watch.Target) []string {
	var out []string
	for _, t := range ts {
		s := t.Replica + " " + t.MetricsURL + " profile=" + t.ProfileName
		if t.DCGM != nil {
			s += " dcgm=" + t.DCGM.URL
		}
		out = append(out, s)
	}
	return out
}

// exportedReplicas is the replica label values on kneewatch's /metrics.
func exportedReplicas(t *testing.T, w *watch.Watcher) []string {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(watch.NewExporter(w.Latest))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "replica" && !slices.Contains(out, l.GetValue()) {
					out = append(out, l.GetValue())
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestDiscoveryFollowsPods runs discovery as the chart's service account
// (installed with its default, cluster-wide RBAC) against the API server,
// feeding a real watcher, while pods appear, change labels and go away.
func TestDiscoveryFollowsPods(t *testing.T) {
	c := sharedCluster(t)
	const ns, gpuNS, kwNS = "llm-disc", "gpu-disc", "kw-disc"
	c.createNamespaces(t, ns, gpuNS, kwNS)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, n := range []string{ns, gpuNS} {
		// The ServiceAccount admission plugin needs it; there is no controller to make it.
		_, err := c.client.CoreV1().ServiceAccounts(n).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	notes := c.helm(t, "install", "disc", chartDir(), "--namespace", kwNS)
	for _, note := range []string{`NOTE: the ServiceMonitor and PrometheusRule have no "release" label`} {
		if !strings.Contains(string(notes), note) {
			t.Errorf("install notes lack %q:\n%s", note, notes)
		}
	}
	t.Cleanup(func() { c.helm(t, "uninstall", "disc", "--namespace", kwNS) })
	sa := c.serviceAccountClient(t, kwNS, "disc-kneewatch")
	checkAccess(t, sa, []access{
		{"list", "pods", "", true}, {"watch", "pods", "", true},
		{"get", "secrets", "", false}, {"get", "secrets", ns, false},
	})

	profile, err := knee.Load(filepath.Join(moduleRoot(), "knee", "testdata", "valid.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.DefaultKubernetes()
	cfg.LabelSelector = "app.kubernetes.io/component=llm-server"
	dcgm := config.DefaultKubernetesDCGM()
	dcgm.Namespace = gpuNS
	cfg.DCGM = &dcgm

	w := watch.NewWatcher(watch.WatcherOptions{Interval: time.Second, Window: 10 * time.Second})
	d, err := discovery.New(sa, discovery.Options{
		Config:   cfg,
		Profiles: map[string]*knee.Profile{"llama-h100": profile},
		Sink:     w.SetTargets,
		ModelOf:  discovery.ModelsFrom(w.Latest),
		// The default 1s check of the engines' models would do; a shorter
		// one keeps the test quick.
		ModelCheck: 100 * time.Millisecond,
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

	waitTargets := func(t *testing.T, want []string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			got := replicas(d.Targets())
			if cmp.Equal(want, got) {
				if diff := cmp.Diff(got, w.Replicas(), cmp.Transformer("names", func(s []string) []string {
					var n []string
					for _, x := range s {
						n = append(n, strings.Fields(x)[0])
					}
					return n
				})); diff != "" {
					t.Errorf("the watcher's replicas differ from discovery's (-discovery +watcher):\n%s", diff)
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("discovered targets after 20s (-want +got):\n%s\nproblems: %v", cmp.Diff(want, got), d.Problems())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	pods := c.client.CoreV1().Pods(ns)
	port := engine(t)
	metrics := "http://127.0.0.1:" + port + "/metrics"

	t.Run("only running pods with an IP that match the selector are targets", func(t *testing.T) {
		waitTargets(t, nil)
		if _, err := pods.Create(ctx, servingPod(ns, "pending", port, nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		other, err := pods.Create(ctx, servingPod(ns, "other", port, map[string]string{"app.kubernetes.io/component": "batch"}), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		setRunning(t, c.client, other, "127.0.0.2")
		p, err := pods.Create(ctx, servingPod(ns, "vllm-0", port, nil), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		setRunning(t, c.client, p, "127.0.0.1")
		// Events arrive in order: once vllm-0 shows, the others were seen.
		waitTargets(t, []string{ns + "/vllm-0 " + metrics + " profile="})
	})

	t.Run("the watcher scrapes the discovered pod and exports its series", func(t *testing.T) {
		r := w.EvaluateOnce(ctx)
		if len(r.Replicas) != 1 || !r.Replicas[0].EngineUp {
			t.Fatalf("round = %+v, want vllm-0 scraped", r.Replicas)
		}
		if got := exportedReplicas(t, w); !cmp.Equal(got, []string{ns + "/vllm-0"}) {
			t.Errorf("exported replicas = %v", got)
		}
	})

	t.Run("the model the engine reports picks the profile for the pod's GPU", func(t *testing.T) {
		waitTargets(t, []string{ns + "/vllm-0 " + metrics + " profile=llama-h100"})
	})

	t.Run("a pending pod that starts running appears", func(t *testing.T) {
		p, err := pods.Get(ctx, "pending", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		setRunning(t, c.client, p, "127.0.0.3")
		waitTargets(t, []string{
			ns + "/pending http://127.0.0.3:" + port + "/metrics profile=",
			ns + "/vllm-0 " + metrics + " profile=llama-h100",
		})
	})

	t.Run("relabelling pods moves them in and out", func(t *testing.T) {
		p, err := pods.Get(ctx, "pending", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Labels["app.kubernetes.io/component"] = "batch"
		if _, err := pods.Update(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		other, err := pods.Get(ctx, "other", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		other.Labels["app.kubernetes.io/component"] = "llm-server"
		if _, err := pods.Update(ctx, other, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitTargets(t, []string{
			ns + "/other http://127.0.0.2:" + port + "/metrics profile=",
			ns + "/vllm-0 " + metrics + " profile=llama-h100",
		})
	})

	t.Run("a profile label names the knee and a dcgm-exporter on the node joins GPU metrics", func(t *testing.T) {
		p, err := pods.Get(ctx, "other", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Labels["kneewatch.dev/profile"] = "llama-h100"
		if _, err := pods.Update(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		exp := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: gpuNS, Name: "dcgm-exporter-a", Labels: map[string]string{"app": "nvidia-dcgm-exporter"}},
			Spec:       corev1.PodSpec{NodeName: "gpu-node-1", Containers: []corev1.Container{{Name: "dcgm-exporter", Image: "nvcr.io/nvidia/k8s/dcgm-exporter"}}},
		}
		exp, err = c.client.CoreV1().Pods(gpuNS).Create(ctx, exp, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		setRunning(t, c.client, exp, "127.0.0.4")
		waitTargets(t, []string{
			ns + "/other http://127.0.0.2:" + port + "/metrics profile=llama-h100 dcgm=http://127.0.0.4:9400/metrics",
			ns + "/vllm-0 " + metrics + " profile=llama-h100 dcgm=http://127.0.0.4:9400/metrics",
		})
	})

	t.Run("pods that go away leave no series", func(t *testing.T) {
		for _, name := range []string{"vllm-0", "other"} {
			if err := pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}); err != nil {
				t.Fatal(err)
			}
		}
		waitTargets(t, nil)
		w.EvaluateOnce(ctx)
		if got := exportedReplicas(t, w); len(got) > 0 {
			t.Errorf("series of deleted pods still exported: %v", got)
		}
	})
}

// TestDiscoveryWithoutPermissionSaysSo runs discovery as a service account
// that may not list pods: it must say why nothing is discovered, not wait
// in silence, and hand over no targets.
func TestDiscoveryWithoutPermissionSaysSo(t *testing.T) {
	c := sharedCluster(t)
	const ns = "kw-noperm"
	c.createNamespaces(t, ns)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := c.client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "nobody"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sa := c.serviceAccountClient(t, ns, "nobody")
	cfg := config.DefaultKubernetes()
	cfg.LabelSelector = "app.kubernetes.io/component=llm-server"
	var logs testtools.SyncBuffer
	var sinkCalls atomic.Int32
	d, err := discovery.New(sa, discovery.Options{
		Config:      cfg,
		Sink:        func([]watch.Target) error { sinkCalls.Add(1); return nil },
		SyncWarning: 200 * time.Millisecond,
		Logger:      slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	const warning = "may kneewatch get, list and watch pods there?"
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), warning) {
		if time.Now().After(deadline) {
			t.Fatalf("no warning after 10s; logs:\n%s", logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run returned %v after its context ended, want nil", err)
	}
	if n := sinkCalls.Load(); n != 0 {
		t.Errorf("the sink got %d target sets from a discovery that never listed pods", n)
	}
}
