package discovery

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kneewatch/kneewatch/collector"
	"github.com/kneewatch/kneewatch/config"
	"github.com/kneewatch/kneewatch/knee"
)

// pod builds a serving pod; opts adjust it.
func pod(name string, opts ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "llm", Name: name, Labels: map[string]string{}, Annotations: map[string]string{}},
		Spec:       corev1.PodSpec{NodeName: "gpu-node-1"},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.1.0.7"},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func withLabel(k, v string) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Labels[k] = v } }
func withAnnotation(k, v string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Annotations[k] = v }
}
func withIP(ip string) func(*corev1.Pod)        { return func(p *corev1.Pod) { p.Status.PodIP = ip } }
func withNode(n string) func(*corev1.Pod)       { return func(p *corev1.Pod) { p.Spec.NodeName = n } }
func withNamespace(ns string) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Namespace = ns } }
func withPhase(ph corev1.PodPhase) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Status.Phase = ph }
}

func testProfiles() map[string]*knee.Profile {
	return map[string]*knee.Profile{
		"llama-h100": {Match: knee.Match{Model: "llama", GPU: "NVIDIA H100 80GB HBM3", Engine: "vllm"}},
		"llama-a100": {Match: knee.Match{Model: "llama", GPU: "NVIDIA A100-SXM4-80GB"}},
		"qwen":       {Match: knee.Match{Model: "qwen"}},
	}
}

func testMapper(mod func(*config.Kubernetes)) mapper {
	cfg := config.DefaultKubernetes()
	cfg.LabelSelector = "app=llm"
	dc := config.DefaultKubernetesDCGM()
	cfg.DCGM = &dc
	if mod != nil {
		mod(&cfg)
	}
	return mapper{cfg: cfg, profiles: testProfiles(), client: http.DefaultClient, dcgm: http.DefaultClient}
}

func TestTargets(t *testing.T) {
	exporter := pod("dcgm-exporter-x", withNamespace("gpu-operator"), withIP("10.1.0.2"))
	tests := []struct {
		name      string
		mapper    mapper
		pods      []*corev1.Pod
		exporters []*corev1.Pod
		want      []collector.Target
		problems  []string
	}{
		{
			name:   "a running pod becomes a target on the configured port, path and OpenAI path",
			mapper: testMapper(nil),
			pods:   []*corev1.Pod{pod("vllm-0")},
			want: []collector.Target{{
				Replica: "vllm-0", MetricsURL: "http://10.1.0.7:8000/metrics", OpenAIURL: "http://10.1.0.7:8000/v1",
			}},
		},
		{
			name:   "annotations override the port, the path and the whole OpenAI URL",
			mapper: testMapper(nil),
			pods: []*corev1.Pod{pod("sglang-0",
				withAnnotation("kneewatch.dev/metrics-port", "30000"),
				withAnnotation("kneewatch.dev/metrics-path", "/engine/metrics"),
				withAnnotation("kneewatch.dev/openai-url", "https://llm.example/v1"))},
			want: []collector.Target{{
				Replica: "sglang-0", MetricsURL: "http://10.1.0.7:30000/engine/metrics", OpenAIURL: "https://llm.example/v1",
			}},
		},
		{
			name:   "pending, IP-less and terminating pods are not targets",
			mapper: testMapper(nil),
			pods: []*corev1.Pod{
				pod("pending", withPhase(corev1.PodPending)),
				pod("no-ip", withIP("")),
				pod("terminating", func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} }),
				pod("failed", withPhase(corev1.PodFailed)),
			},
		},
		{
			name:   "the model and engine come from the configured labels",
			mapper: testMapper(func(c *config.Kubernetes) { c.ModelLabel = "model" }),
			pods:   []*corev1.Pod{pod("q", withLabel("model", "qwen"), withLabel("kneewatch.dev/engine", "sglang"))},
			want: []collector.Target{{
				Replica: "q", Model: "qwen", Engine: "sglang", ProfileName: "qwen",
				MetricsURL: "http://10.1.0.7:8000/metrics", OpenAIURL: "http://10.1.0.7:8000/v1",
			}},
		},
		{
			name:   "the profile label names the profile",
			mapper: testMapper(nil),
			pods:   []*corev1.Pod{pod("a", withLabel("kneewatch.dev/profile", "llama-a100"))},
			want: []collector.Target{{
				Replica: "a", ProfileName: "llama-a100",
				MetricsURL: "http://10.1.0.7:8000/metrics", OpenAIURL: "http://10.1.0.7:8000/v1",
			}},
		},
		{
			name:   "the profile annotation wins over the profile label",
			mapper: testMapper(func(c *config.Kubernetes) { c.ProfileLabel = "profile" }),
			pods: []*corev1.Pod{pod("a", withLabel("profile", "llama-a100"),
				withAnnotation("kneewatch.dev/profile", "llama-h100"))},
			want: []collector.Target{{
				Replica: "a", ProfileName: "llama-h100",
				MetricsURL: "http://10.1.0.7:8000/metrics", OpenAIURL: "http://10.1.0.7:8000/v1",
			}},
		},
		{
			name:   "a model learned from the engine's metrics matches the profile for the pinned GPU",
			mapper: func() mapper { m := testMapper(nil); m.modelOf = func(string) string { return "llama" }; return m }(),
			pods: []*corev1.Pod{pod("h", func(p *corev1.Pod) {
				p.Spec.NodeSelector = map[string]string{GPUProductLabel: "NVIDIA-H100-80GB-HBM3"}
			})},
			want: []collector.Target{{
				Replica: "h", ProfileName: "llama-h100",
				MetricsURL: "http://10.1.0.7:8000/metrics", OpenAIURL: "http://10.1.0.7:8000/v1",
			}},
		},
		{
			name:      "the dcgm-exporter on the pod's node serves its GPUs, picked by pod and namespace",
			mapper:    testMapper(nil),
			pods:      []*corev1.Pod{pod("vllm-0"), pod("elsewhere", withNode("gpu-node-2"), withIP("10.1.0.8"))},
			exporters: []*corev1.Pod{exporter},
			want: []collector.Target{
				{Replica: "elsewhere", MetricsURL: "http://10.1.0.8:8000/metrics", OpenAIURL: "http://10.1.0.8:8000/v1"},
				{
					Replica: "vllm-0", MetricsURL: "http://10.1.0.7:8000/metrics", OpenAIURL: "http://10.1.0.7:8000/v1",
					DCGM: &collector.DCGMTarget{
						URL:       "http://10.1.0.2:9400/metrics",
						Selectors: []collector.GPUSelector{{Pod: "vllm-0", Namespace: "llm"}},
					},
				},
			},
		},
		{
			name:      "without dcgm discovery no GPU metrics are joined",
			mapper:    testMapper(func(c *config.Kubernetes) { c.DCGM = nil }),
			pods:      []*corev1.Pod{pod("vllm-0")},
			exporters: []*corev1.Pod{exporter},
			want:      []collector.Target{{Replica: "vllm-0", MetricsURL: "http://10.1.0.7:8000/metrics", OpenAIURL: "http://10.1.0.7:8000/v1"}},
		},
		{
			name:   "an IPv6 pod IP is bracketed in its URLs",
			mapper: testMapper(nil),
			pods:   []*corev1.Pod{pod("v6", withIP("fd00::7"))},
			want:   []collector.Target{{Replica: "v6", MetricsURL: "http://[fd00::7]:8000/metrics", OpenAIURL: "http://[fd00::7]:8000/v1"}},
		},
		{
			name:   "a bad port annotation skips the pod and says which annotation",
			mapper: testMapper(nil),
			pods:   []*corev1.Pod{pod("bad", withAnnotation("kneewatch.dev/metrics-port", "http")), pod("good")},
			want:   []collector.Target{{Replica: "good", MetricsURL: "http://10.1.0.7:8000/metrics", OpenAIURL: "http://10.1.0.7:8000/v1"}},
			problems: []string{
				`llm/bad: annotation kneewatch.dev/metrics-port="http" is not a port (want 1-65535); pod skipped`,
			},
		},
		{
			name:   "problems come in pod order whatever order the cache lists pods in",
			mapper: testMapper(nil),
			pods: []*corev1.Pod{
				pod("z", withAnnotation("kneewatch.dev/metrics-port", "0")),
				pod("a", withAnnotation("kneewatch.dev/metrics-port", "99999")),
			},
			problems: []string{
				`llm/a: annotation kneewatch.dev/metrics-port="99999" is not a port (want 1-65535); pod skipped`,
				`llm/z: annotation kneewatch.dev/metrics-port="0" is not a port (want 1-65535); pod skipped`,
			},
		},
		{
			name:     "a metrics path annotation without a leading slash skips the pod",
			mapper:   testMapper(nil),
			pods:     []*corev1.Pod{pod("bad", withAnnotation("kneewatch.dev/metrics-path", "metrics"))},
			problems: []string{`llm/bad: annotation kneewatch.dev/metrics-path="metrics" must start with /; pod skipped`},
		},
		{
			name:   "a bad OpenAI URL annotation falls back to the derived URL",
			mapper: testMapper(nil),
			pods:   []*corev1.Pod{pod("p", withAnnotation("kneewatch.dev/openai-url", "llm:8000"))},
			want:   []collector.Target{{Replica: "p", MetricsURL: "http://10.1.0.7:8000/metrics", OpenAIURL: "http://10.1.0.7:8000/v1"}},
			problems: []string{
				`llm/p: annotation kneewatch.dev/openai-url="llm:8000" is not an http(s) URL; using http://10.1.0.7:8000/v1`,
			},
		},
		{
			name:     "an unknown engine label is reported and the engine auto-detected",
			mapper:   testMapper(nil),
			pods:     []*corev1.Pod{pod("p", withLabel("kneewatch.dev/engine", "ollama"))},
			want:     []collector.Target{{Replica: "p", MetricsURL: "http://10.1.0.7:8000/metrics", OpenAIURL: "http://10.1.0.7:8000/v1"}},
			problems: []string{`llm/p: label kneewatch.dev/engine="ollama" is not an engine (want vllm, sglang, tgi or trtllm); auto-detecting`},
		},
		{
			name:     "a profile label naming no profile leaves the replica without a knee",
			mapper:   testMapper(nil),
			pods:     []*corev1.Pod{pod("p", withLabel("kneewatch.dev/profile", "mistral"))},
			want:     []collector.Target{{Replica: "p", MetricsURL: "http://10.1.0.7:8000/metrics", OpenAIURL: "http://10.1.0.7:8000/v1"}},
			problems: []string{`llm/p: label kneewatch.dev/profile="mistral" names no configured profile; the replica has no knee`},
		},
		{
			name:   "pods sharing a name across namespaces are told apart by namespace, the others keep their name",
			mapper: testMapper(nil),
			pods: []*corev1.Pod{
				pod("vllm-0", withNamespace("b")), pod("vllm-0", withNamespace("a"), withIP("10.1.0.9")),
				pod("vllm-1", withNamespace("a"), withIP("10.1.0.10")),
				pod("vllm-1", withNamespace("b"), withPhase(corev1.PodSucceeded)),
			},
			want: []collector.Target{
				{Replica: "a/vllm-0", MetricsURL: "http://10.1.0.9:8000/metrics", OpenAIURL: "http://10.1.0.9:8000/v1"},
				{Replica: "b/vllm-0", MetricsURL: "http://10.1.0.7:8000/metrics", OpenAIURL: "http://10.1.0.7:8000/v1"},
				{Replica: "vllm-1", MetricsURL: "http://10.1.0.10:8000/metrics", OpenAIURL: "http://10.1.0.10:8000/v1"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, problems := tt.mapper.targets(tt.pods, tt.exporters)
			opts := cmp.Options{
				cmpopts.IgnoreFields(collector.Target{}, "Client", "Profile", "SLO"),
				cmpopts.IgnoreFields(collector.DCGMTarget{}, "Client"),
			}
			if diff := cmp.Diff(tt.want, got, opts); diff != "" {
				t.Errorf("targets (-want +got):\n%s", diff)
			}
			var msgs []string
			for _, p := range problems {
				msgs = append(msgs, p.String())
			}
			if diff := cmp.Diff(tt.problems, msgs); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
			for _, tg := range got {
				if tg.ProfileName != "" && tg.Profile != tt.mapper.profiles[tg.ProfileName] {
					t.Errorf("%s: profile %q is not the loaded profile of that name", tg.Replica, tg.ProfileName)
				}
				if tg.Client == nil {
					t.Errorf("%s: no HTTP client", tg.Replica)
				}
			}
		})
	}
}

func TestGPUProduct(t *testing.T) {
	affinity := func(terms ...[]string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			var ts []corev1.NodeSelectorTerm
			for _, values := range terms {
				ts = append(ts, corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: GPUProductLabel, Operator: corev1.NodeSelectorOpIn, Values: values},
				}})
			}
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: ts},
			}}
		}
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{"no pinning says nothing", pod("p"), ""},
		{"a node selector pins the GPU", pod("p", func(p *corev1.Pod) {
			p.Spec.NodeSelector = map[string]string{GPUProductLabel: "NVIDIA-L4"}
		}), "NVIDIA-L4"},
		{"a required affinity with one value pins the GPU", pod("p", affinity([]string{"NVIDIA-L4"})), "NVIDIA-L4"},
		{"an affinity allowing two GPUs pins nothing", pod("p", affinity([]string{"NVIDIA-L4", "NVIDIA-A10G"})), ""},
		{"terms naming different GPUs pin nothing", pod("p", affinity([]string{"NVIDIA-L4"}, []string{"NVIDIA-A10G"})), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := gpuProduct(tt.pod); got != tt.want {
				t.Errorf("gpuProduct = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestModelsFrom(t *testing.T) {
	round := &collector.Round{Replicas: []collector.ReplicaEval{
		{Replica: "a", Model: "llama"},
		{Replica: "b"},
		{Replica: "c", Model: "qwen"},
	}}
	tests := []struct {
		name    string
		latest  *collector.Round
		replica string
		want    string
	}{
		{"a scraped replica's model is the engine's", round, "c", "qwen"},
		{"a replica whose engine named no model has none", round, "b", ""},
		{"a replica not yet evaluated has none", round, "d", ""},
		{"before the first round nothing is known", nil, "a", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ModelsFrom(func() *collector.Round { return tt.latest })(tt.replica); got != tt.want {
				t.Errorf("model of %s = %q, want %q", tt.replica, got, tt.want)
			}
		})
	}
}
