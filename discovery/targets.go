package discovery

import (
	"cmp"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/kneewatch/kneewatch/collector"
	"github.com/kneewatch/kneewatch/config"
	"github.com/kneewatch/kneewatch/knee"
)

// GPUProductLabel is the node label NVIDIA's GPU feature discovery sets to
// the GPU model ("NVIDIA-H100-80GB-HBM3"). A serving pod that pins its GPU
// model with a node selector on it tells discovery which profile fits.
const GPUProductLabel = "nvidia.com/gpu.product"

// Problem is something wrong with one pod's labels or annotations. The pod
// is skipped, or the bad value ignored, and the problem is logged.
type Problem struct {
	Pod     string // namespace/name
	Message string
}

func (p Problem) String() string { return p.Pod + ": " + p.Message }

// mapper turns pods into targets. It does no I/O, so tests feed it pods.
type mapper struct {
	cfg      config.Kubernetes
	profiles map[string]*knee.Profile
	slo      knee.SLO
	client   *http.Client // for the engines' metrics and OpenAI endpoints
	dcgm     *http.Client // for dcgm-exporter
	// modelOf returns the model a replica's engine last reported, or "".
	modelOf func(replica string) string
}

// targets builds one target per serving pod, sorted by replica, and the
// problems found on the way. exporters are the dcgm-exporter pods.
func (m mapper) targets(pods, exporters []*corev1.Pod) ([]collector.Target, []Problem) {
	byNode := m.exportersByNode(exporters)
	var live []*corev1.Pod
	sameName := map[string]int{}
	for _, pod := range pods {
		if serving(pod) {
			live = append(live, pod)
			sameName[pod.Name]++
		}
	}
	// Informer caches list in no particular order; a stable order keeps the
	// problems (logged only when they change) and the targets comparable.
	slices.SortFunc(live, func(a, b *corev1.Pod) int { return cmp.Compare(podID(a), podID(b)) })
	var out []collector.Target
	var problems []Problem
	for _, pod := range live {
		replica := pod.Name
		if sameName[pod.Name] > 1 {
			replica = podID(pod)
		}
		t, probs, ok := m.target(pod, replica, byNode)
		problems = append(problems, probs...)
		if ok {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b collector.Target) int { return cmp.Compare(a.Replica, b.Replica) })
	return out, problems
}

// serving reports whether a pod can be scraped now: Running, with an IP, and
// not on its way out (a terminating pod stops serving within its grace
// period; dropping it at once leaves no series that only go stale).
func serving(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodRunning && pod.Status.PodIP != "" && pod.DeletionTimestamp == nil
}

// podID is namespace/name, unique in the cluster.
func podID(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }

// target maps one serving pod. The replica is named after the pod, as
// dcgm-exporter's pod label and the dashboards' replica-to-GPU join expect;
// only pods sharing a name across namespaces are named namespace/name.
func (m mapper) target(pod *corev1.Pod, replica string, exporters map[string]*corev1.Pod) (collector.Target, []Problem, bool) {
	var problems []Problem
	bad := func(format string, args ...any) {
		problems = append(problems, Problem{Pod: podID(pod), Message: fmt.Sprintf(format, args...)})
	}

	port := m.cfg.MetricsPort
	if key := m.cfg.Annotations.MetricsPort; key != "" {
		if v, ok := pod.Annotations[key]; ok {
			p, err := strconv.Atoi(v)
			if err != nil || p < 1 || p > 65535 {
				bad("annotation %s=%q is not a port (want 1-65535); pod skipped", key, v)
				return collector.Target{}, problems, false
			}
			port = p
		}
	}
	path := m.cfg.MetricsPath
	if key := m.cfg.Annotations.MetricsPath; key != "" {
		if v, ok := pod.Annotations[key]; ok {
			if len(v) == 0 || v[0] != '/' {
				bad("annotation %s=%q must start with /; pod skipped", key, v)
				return collector.Target{}, problems, false
			}
			path = v
		}
	}
	host := net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(port))
	metrics := url.URL{Scheme: m.cfg.Scheme, Host: host, Path: path}
	t := collector.Target{
		Replica:    replica,
		MetricsURL: metrics.String(),
		OpenAIURL:  (&url.URL{Scheme: m.cfg.Scheme, Host: host, Path: m.cfg.OpenAIPath}).String(),
		Client:     m.client,
		SLO:        m.slo,
	}
	if key := m.cfg.Annotations.OpenAIURL; key != "" {
		if v, ok := pod.Annotations[key]; ok {
			u, err := url.Parse(v)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				bad("annotation %s=%q is not an http(s) URL; using %s", key, v, t.OpenAIURL)
			} else {
				t.OpenAIURL = v
			}
		}
	}
	if key := m.cfg.ModelLabel; key != "" {
		t.Model = pod.Labels[key]
	}
	if key := m.cfg.EngineLabel; key != "" {
		if v, ok := pod.Labels[key]; ok {
			if slices.Contains(config.KnownEngines(), config.Engine(v)) {
				t.Engine = v
			} else {
				bad("label %s=%q is not an engine (want vllm, sglang, tgi or trtllm); auto-detecting", key, v)
			}
		}
	}

	t.ProfileName, t.Profile = m.profile(pod, t, bad)

	if exp := exporters[pod.Spec.NodeName]; exp != nil && pod.Spec.NodeName != "" {
		u := url.URL{Scheme: "http", Host: net.JoinHostPort(exp.Status.PodIP, strconv.Itoa(m.cfg.DCGM.Port)), Path: m.cfg.DCGM.Path}
		t.DCGM = &collector.DCGMTarget{
			URL:       u.String(),
			Client:    m.dcgm,
			Selectors: []collector.GPUSelector{{Pod: pod.Name, Namespace: pod.Namespace}},
		}
	}
	return t, problems, true
}

// profile names the pod's knee profile: the annotation, else the label,
// else the one profile matching its model and GPU.
func (m mapper) profile(pod *corev1.Pod, t collector.Target, bad func(string, ...any)) (string, *knee.Profile) {
	for _, src := range []struct {
		kind, key string
		values    map[string]string
	}{
		{"annotation", m.cfg.Annotations.Profile, pod.Annotations},
		{"label", m.cfg.ProfileLabel, pod.Labels},
	} {
		if src.key == "" {
			continue
		}
		if name, ok := src.values[src.key]; ok {
			if p := m.profiles[name]; p != nil {
				return name, p
			}
			bad("%s %s=%q names no configured profile; the replica has no knee", src.kind, src.key, name)
			return "", nil
		}
	}
	model := t.Model
	if model == "" && m.modelOf != nil {
		model = m.modelOf(t.Replica)
	}
	if model == "" {
		return "", nil // the engine has not told its model yet
	}
	name, err := matchProfile(m.profiles, model, gpuProduct(pod), t.Engine)
	if err != nil {
		bad("%v", err)
		return "", nil
	}
	return name, m.profiles[name]
}

// gpuProduct is the GPU model the pod is pinned to by a node selector or a
// required node affinity on GPUProductLabel, or "".
func gpuProduct(pod *corev1.Pod) string {
	if v := pod.Spec.NodeSelector[GPUProductLabel]; v != "" {
		return v
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	// Only a single-valued In on every term pins one model.
	product := ""
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		found := ""
		for _, e := range term.MatchExpressions {
			if e.Key == GPUProductLabel && e.Operator == corev1.NodeSelectorOpIn && len(e.Values) == 1 {
				found = e.Values[0]
			}
		}
		if found == "" || (product != "" && found != product) {
			return ""
		}
		product = found
	}
	return product
}

// exportersByNode indexes the serving dcgm-exporter pods by node. With
// DCGM discovery off it is empty.
func (m mapper) exportersByNode(exporters []*corev1.Pod) map[string]*corev1.Pod {
	out := map[string]*corev1.Pod{}
	if m.cfg.DCGM == nil {
		return out
	}
	for _, p := range exporters {
		if !serving(p) || p.Spec.NodeName == "" {
			continue
		}
		// Two exporters on one node (mid-rollout): always pick the first
		// by name, so the DCGM target does not flap between them.
		if old := out[p.Spec.NodeName]; old == nil || p.Name < old.Name {
			out[p.Spec.NodeName] = p
		}
	}
	return out
}
