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
	"github.com/kneewatch/kneewatch/watch"
)

// pod builds a serving pod; opts adjust it.
func pod(name string, opts ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "llm", Name: name, Labels: map[string]string{}, Annotations: map[string]string{}},
		Spec:       corev1.PodSpec{NodeName: "gpu-node-1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.1.0.7",
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
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
func unready(p *corev1.Pod) {
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
}
func withPhase(ph corev1.PodPhase) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Status.Phase = ph }
}

func testProfiles() map[string]*knee.Profile {
	return map[string]*knee.Profile{
		"llama-h100":   {Match: knee.Match{Model: "llama", GPU: "NVIDIA H100 80GB HBM3", Engine: "vllm"}},
		"llama-a100":   {Match: knee.Match{Model: "llama", GPU: "NVIDIA A100-SXM4-80GB"}},
		"qwen":         {Match: knee.Match{Model: "qwen"}},
		"llama-3.1-8b": {Match: knee.Match{Model: "meta-llama/Llama-3.1-8B-Instruct"}},
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
		want      []watch.Target
		problems  []string
		counts    PodCounts // checked when set
	}{
		{
			name:   "a running pod becomes a target on the configured port, path and OpenAI path",
			mapper: testMapper(nil),
			pods:   []*corev1.Pod{pod("vllm-0")},
			want: []watch.Target{{
				Replica: "llm/vllm-0", Namespace: "llm", Pod: "vllm-0", MetricsURL: "http://10.1.0.7:8000/metrics", OpenAIURL: "http://10.1.0.7:8000/v1",
			}},
		},
		{
			name:   "annotations override the port, the path and the whole OpenAI URL",
			mapper: testMapper(nil),
			pods: []*corev1.Pod{pod("sglang-0",
				withAnnotation("kneewatch.dev/metrics-port", "30000"),
				withAnnotation("kneewatch.dev/metrics-path", "/engine/metrics"),
				withAnnotation("kneewatch.dev/openai-url", "https://llm.example/v1"))},
			want: []watch.Target{{
				Replica: "llm/sglang-0", Namespace: "llm", Pod: "sglang-0", MetricsURL: "http://10.1.0.7:30000/engine/metrics", OpenAIURL: "https://llm.example/v1",
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
			want: []watch.Target{{
				Replica: "llm/q", Namespace: "llm", Pod: "q", Engine: "sglang", ProfileName: "qwen",
				MetricsURL: "http://10.1.0.7:8000/metrics", OpenAIURL: "http://10.1.0.7:8000/v1",
			}},
		},
		{
			name:   "the profile label names the profile",
			mapper: testMapper(nil),
			pods:   []*corev1.Pod{pod("a", withLabel("kneewatch.dev/profile", "llama-a100"))},
			want: []watch.Target{{
				Replica: "llm/a", Namespace: "llm", Pod: "a", ProfileName: "llama-a100",
				MetricsURL: "http://10.1.0.7:8000/metrics", OpenAIURL: "http://10.1.0.7:8000/v1",
			}},
		},
		{
			name:   "the profile annotation wins over the profile label",
			mapper: testMapper(func(c *config.Kubernetes) { c.ProfileLabel = "profile" }),
			pods: []*corev1.Pod{pod("a", withLabel("profile", "llama-a100"),
				withAnnotation("kneewatch.dev/profile", "llama-h100"))},
			want: []watch.Target{{
				Replica: "llm/a", Namespace: "llm", Pod: "a", ProfileName: "llama-h100",
				MetricsURL: "http://10.1.0.7:8000/metrics", OpenAIURL: "http://10.1.0.7:8000/v1",
			}},
		},
		{
			name:   "a model learned from the engine's metrics matches the profile for the pinned GPU",
			mapper: func() mapper { m := testMapper(nil); m.modelOf = func(string) string { return "llama" }; return m }(),
			pods: []*corev1.Pod{pod("h", func(p *corev1.Pod) {
				p.Spec.NodeSelector = map[string]string{GPUProductLabel: "NVIDIA-H100-80GB-HBM3"}
			})},
			want: []watch.Target{{
				Replica: "llm/h", Namespace: "llm", Pod: "h", ProfileName: "llama-h100",
				MetricsURL: "http://10.1.0.7:8000/metrics", OpenAIURL: "http://10.1.0.7:8000/v1",
			}},
		},
		{
			name:      "the dcgm-exporter on the pod's node serves its GPUs, picked by pod and namespace",
			mapper:    testMapper(nil),
			pods:      []*corev1.Pod{pod("vllm-0"), pod("elsewhere", withNode("gpu-node-2"), withIP("10.1.0.8"))},
			exporters: []*corev1.Pod{exporter},
			want: []watch.Target{
				{Replica: "llm/elsewhere", Namespace: "llm", Pod: "elsewhere", MetricsURL: "http://10.1.0.8:8000/metrics", OpenAIURL: "http://10.1.0.8:8000/v1"},
				{
					Replica: "llm/vllm-0", Namespace: "llm", Pod: "vllm-0", MetricsURL: "http://10.1.0.7:8000/metrics", OpenAIURL: "http://10.1.0.7:8000/v1",
					DCGM: &watch.DCGMTarget{
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
			want:      []watch.Target{{Replica: "llm/vllm-0", Namespace: "llm", Pod: "vllm-0", MetricsURL: "http://10.1.0.7:8000/metrics", OpenAIURL: "http://10.1.0.7:8000/v1"}},
		},
		{
			name:   "an IPv6 pod IP is bracketed in its URLs",
			mapper: testMapper(nil),
			pods:   []*corev1.Pod{pod("v6", withIP("fd00::7"))},
			want:   []watch.Target{{Replica: "llm/v6", Namespace: "llm", Pod: "v6", MetricsURL: "http://[fd00::7]:8000/metrics", OpenAIURL: "http://[fd00::7]:8000/v1"}},
		},
		{
			name:   "a bad port annotation skips the pod and says which annotation",
			mapper: testMapper(nil),
			pods:   []*corev1.Pod{pod("bad", withAnnotation("kneewatch.dev/metrics-port", "http")), pod("good")},
			want:   []watch.Target{{Replica: "llm/good", Namespace: "llm", Pod: "good", MetricsURL: "http://10.1.0.7:8000/metrics", OpenAIURL: "http://10.1.0.7:8000/v1"}},
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
			want:   []watch.Target{{Replica: "llm/p", Namespace: "llm", Pod: "p", MetricsURL: "http://10.1.0.7:8000/metrics", OpenAIURL: "http://10.1.0.7:8000/v1"}},
			problems: []string{
				`llm/p: annotation kneewatch.dev/openai-url="llm:8000" is not an http(s) URL; using http://10.1.0.7:8000/v1`,
			},
		},
		{
			name:     "an unknown engine label is reported and the engine auto-detected",
			mapper:   testMapper(nil),
			pods:     []*corev1.Pod{pod("p", withLabel("kneewatch.dev/engine", "ollama"))},
			want:     []watch.Target{{Replica: "llm/p", Namespace: "llm", Pod: "p", MetricsURL: "http://10.1.0.7:8000/metrics", OpenAIURL: "http://10.1.0.7:8000/v1"}},
			problems: []string{`llm/p: label kneewatch.dev/engine="ollama" is not an engine (want vllm, sglang, tgi or trtllm); auto-detecting`},
		},
		{
			name:     "a profile label naming no profile leaves the replica without a knee",
			mapper:   testMapper(nil),
			pods:     []*corev1.Pod{pod("p", withLabel("kneewatch.dev/profile", "mistral"))},
			want:     []watch.Target{{Replica: "llm/p", Namespace: "llm", Pod: "p", MetricsURL: "http://10.1.0.7:8000/metrics", OpenAIURL: "http://10.1.0.7:8000/v1"}},
			problems: []string{`llm/p: label kneewatch.dev/profile="mistral" names no configured profile; the replica has no knee`},
		},
		{
			name:   "replicas are always namespace/pod, whatever other namespaces hold",
			mapper: testMapper(nil),
			pods: []*corev1.Pod{
				pod("vllm-0", withNamespace("b")), pod("vllm-0", withNamespace("a"), withIP("10.1.0.9")),
				pod("vllm-1", withNamespace("a"), withIP("10.1.0.10")),
				pod("vllm-1", withNamespace("b"), withPhase(corev1.PodSucceeded)),
			},
			want: []watch.Target{
				{Replica: "a/vllm-0", Namespace: "a", Pod: "vllm-0", MetricsURL: "http://10.1.0.9:8000/metrics", OpenAIURL: "http://10.1.0.9:8000/v1"},
				{Replica: "a/vllm-1", Namespace: "a", Pod: "vllm-1", MetricsURL: "http://10.1.0.10:8000/metrics", OpenAIURL: "http://10.1.0.10:8000/v1"},
				{Replica: "b/vllm-0", Namespace: "b", Pod: "vllm-0", MetricsURL: "http://10.1.0.7:8000/metrics", OpenAIURL: "http://10.1.0.7:8000/v1"},
			},
			counts: PodCounts{Ready: 3, Finished: 1},
		},
		{
			name:   "a Running pod that is not Ready is not a replica, only counted",
			mapper: testMapper(nil),
			pods:   []*corev1.Pod{pod("ready"), pod("out-of-rotation", unready), pod("no-condition", func(p *corev1.Pod) { p.Status.Conditions = nil })},
			want: []watch.Target{
				{Replica: "llm/ready", Namespace: "llm", Pod: "ready", MetricsURL: "http://10.1.0.7:8000/metrics", OpenAIURL: "http://10.1.0.7:8000/v1"},
			},
			counts: PodCounts{Ready: 1, Unready: 2},
		},
		{
			name:   "the model annotation holds a model name with a slash and matches its profile",
			mapper: testMapper(nil),
			pods:   []*corev1.Pod{pod("m", withAnnotation("kneewatch.dev/model", "meta-llama/Llama-3.1-8B-Instruct"))},
			want: []watch.Target{{
				Replica: "llm/m", Namespace: "llm", Pod: "m", ProfileName: "llama-3.1-8b",
				MetricsURL: "http://10.1.0.7:8000/metrics", OpenAIURL: "http://10.1.0.7:8000/v1",
			}},
		},
		{
			name:   "a model label spells / as --",
			mapper: testMapper(func(c *config.Kubernetes) { c.ModelLabel = "model" }),
			pods:   []*corev1.Pod{pod("m", withLabel("model", "meta-llama--Llama-3.1-8B-Instruct"))},
			want: []watch.Target{{
				Replica: "llm/m", Namespace: "llm", Pod: "m", ProfileName: "llama-3.1-8b",
				MetricsURL: "http://10.1.0.7:8000/metrics", OpenAIURL: "http://10.1.0.7:8000/v1",
			}},
		},
		{
			name: "a declared model the engine contradicts leaves the replica without a knee, and says why",
			mapper: func() mapper {
				m := testMapper(nil)
				m.modelOf = func(string) string { return "qwen" }
				return m
			}(),
			pods: []*corev1.Pod{pod("m", withAnnotation("kneewatch.dev/model", "meta-llama/Llama-3.1-8B-Instruct"))},
			want: []watch.Target{{
				Replica: "llm/m", Namespace: "llm", Pod: "m",
				MetricsURL: "http://10.1.0.7:8000/metrics", OpenAIURL: "http://10.1.0.7:8000/v1",
			}},
			problems: []string{`llm/m: annotation kneewatch.dev/model declares model "meta-llama/Llama-3.1-8B-Instruct" but the engine reports "qwen"; the replica has no knee until they agree`},
		},
		{
			name: "a declared model the engine confirms keeps its profile",
			mapper: func() mapper {
				m := testMapper(nil)
				m.modelOf = func(string) string { return "meta-llama/Llama-3.1-8B-Instruct" }
				return m
			}(),
			pods: []*corev1.Pod{pod("m", withAnnotation("kneewatch.dev/model", "meta-llama/Llama-3.1-8B-Instruct"))},
			want: []watch.Target{{
				Replica: "llm/m", Namespace: "llm", Pod: "m", ProfileName: "llama-3.1-8b",
				MetricsURL: "http://10.1.0.7:8000/metrics", OpenAIURL: "http://10.1.0.7:8000/v1",
			}},
		},
		{
			name:   "the model annotation wins over the model label",
			mapper: testMapper(func(c *config.Kubernetes) { c.ModelLabel = "model" }),
			pods:   []*corev1.Pod{pod("m", withLabel("model", "llama"), withAnnotation("kneewatch.dev/model", "qwen"))},
			want: []watch.Target{{
				Replica: "llm/m", Namespace: "llm", Pod: "m", ProfileName: "qwen",
				MetricsURL: "http://10.1.0.7:8000/metrics", OpenAIURL: "http://10.1.0.7:8000/v1",
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := tt.mapper.targets(tt.pods, tt.exporters)
			got, problems, counts := res.targets, res.problems, res.counts
			if tt.counts != (PodCounts{}) && counts != tt.counts {
				t.Errorf("pod counts = %+v, want %+v", counts, tt.counts)
			}
			opts := cmp.Options{
				cmpopts.IgnoreFields(watch.Target{}, "Client", "Profile", "SLO"),
				cmpopts.IgnoreFields(watch.DCGMTarget{}, "Client"),
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
	round := &watch.Round{Replicas: []watch.ReplicaEval{
		{Replica: "a", Model: "llama"},
		{Replica: "b"},
		{Replica: "c", Model: "qwen"},
	}}
	tests := []struct {
		name    string
		latest  *watch.Round
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
			if got := ModelsFrom(func() *watch.Round { return tt.latest })(tt.replica); got != tt.want {
				t.Errorf("model of %s = %q, want %q", tt.replica, got, tt.want)
			}
		})
	}
}
