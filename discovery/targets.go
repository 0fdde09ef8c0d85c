package discovery

import (
	"cmp"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/kneewatch/kneewatch/collector"
	"github.com/kneewatch/kneewatch/config"
	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/watch"
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

// PodCounts counts the pods matching the selector by state: only Ready
// ones are evaluated; the others are visible here instead.
type PodCounts struct {
	Ready       int // Running, Ready, with an IP: a replica
	Unready     int // Running but not Ready (starting, failing its readiness probe, taken out of rotation)
	Pending     int // not Running yet, or without an IP
	Terminating int // being deleted
	Finished    int // Succeeded or Failed
}

// mapping is the outcome of mapping the pods.
type mapping struct {
	targets  []watch.Target // sorted by replica
	problems []Problem      // in pod order
	counts   PodCounts
	// awaiting are the replicas whose profile depends on the model their
	// engine reports, which it has not yet: once it has, the targets are
	// rebuilt.
	awaiting []string
}

// targets builds one target per ready pod, and the problems found on the
// way. exporters are the dcgm-exporter pods.
func (m mapper) targets(pods, exporters []*corev1.Pod) mapping {
	byNode := m.exportersByNode(exporters)
	var live []*corev1.Pod
	var counts PodCounts
	for _, pod := range pods {
		switch podState(pod) {
		case stateReady:
			counts.Ready++
			live = append(live, pod)
		case stateUnready:
			counts.Unready++
		case statePending:
			counts.Pending++
		case stateTerminating:
			counts.Terminating++
		case stateFinished:
			counts.Finished++
		}
	}
	// Informer caches list in no particular order; a stable order keeps the
	// problems (logged only when they change) and the targets comparable.
	slices.SortFunc(live, func(a, b *corev1.Pod) int { return cmp.Compare(podID(a), podID(b)) })
	res := mapping{counts: counts}
	for _, pod := range live {
		t, probs, ok := m.target(pod, byNode)
		res.problems = append(res.problems, probs...)
		if !ok {
			continue
		}
		res.targets = append(res.targets, t)
		if m.awaitsModel(pod, t.Replica) {
			res.awaiting = append(res.awaiting, t.Replica)
		}
	}
	slices.SortFunc(res.targets, func(a, b watch.Target) int { return cmp.Compare(a.Replica, b.Replica) })
	return res
}

// awaitsModel reports whether the pod's profile depends on the model its
// engine reports (no profile annotation or label names it), and the engine
// has reported none yet.
func (m mapper) awaitsModel(pod *corev1.Pod, replica string) bool {
	if m.modelOf == nil {
		return false
	}
	for _, src := range []struct {
		key    string
		values map[string]string
	}{{m.cfg.Annotations.Profile, pod.Annotations}, {m.cfg.ProfileLabel, pod.Labels}} {
		if _, ok := src.values[src.key]; ok && src.key != "" {
			return false
		}
	}
	return m.modelOf(replica) == ""
}

type podStateKind int

const (
	statePending podStateKind = iota
	stateReady
	stateUnready
	stateTerminating
	stateFinished
)

// podState classifies a pod. Only a Ready pod is a replica: a Running pod
// whose readiness probe fails (still loading the model, or taken out of
// rotation) receives no traffic from its Service, so counting it would
// inflate the fleet's capacity. A terminating pod stops serving within its
// grace period; dropping it at once leaves no series that only go stale.
func podState(pod *corev1.Pod) podStateKind {
	switch {
	case pod.DeletionTimestamp != nil:
		return stateTerminating
	case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
		return stateFinished
	case pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP == "":
		return statePending
	case !podReady(pod):
		return stateUnready
	}
	return stateReady
}

// podReady reports the pod's Ready condition, as the kubelet sets it from
// its containers' readiness probes (and readiness gates).
func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// serving reports whether a pod can be scraped now: Running and Ready with
// an IP, and not on its way out.
func serving(pod *corev1.Pod) bool { return podState(pod) == stateReady }

// podID is namespace/name, unique in the cluster: the replica's name.
func podID(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }

// modelLabelSlash is what stands for "/" in a model label's value, which
// Kubernetes restricts to [A-Za-z0-9._-]. Hugging Face spells a repository
// id the same way in its cache ("models--meta-llama--Llama-3.1-8B"), and no
// Hugging Face repository id holds "--" of its own.
const modelLabelSlash = "--"

// DecodeModelLabel turns a model label's value into the model name:
// every "--" is a "/".
func DecodeModelLabel(v string) string { return strings.ReplaceAll(v, modelLabelSlash, "/") }

// target maps one serving pod. The replica is always named namespace/pod,
// and carries both as Namespace and Pod: a name that depended on the other
// pods (the pod's name alone while it is unique) would change, and restart
// the replica's series, when a pod of the same name appears elsewhere.
func (m mapper) target(pod *corev1.Pod, exporters map[string]*corev1.Pod) (watch.Target, []Problem, bool) {
	replica := podID(pod)
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
				return watch.Target{}, problems, false
			}
			port = p
		}
	}
	path := m.cfg.MetricsPath
	if key := m.cfg.Annotations.MetricsPath; key != "" {
		if v, ok := pod.Annotations[key]; ok {
			if len(v) == 0 || v[0] != '/' {
				bad("annotation %s=%q must start with /; pod skipped", key, v)
				return watch.Target{}, problems, false
			}
			path = v
		}
	}
	host := net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(port))
	metrics := url.URL{Scheme: m.cfg.Scheme, Host: host, Path: path}
	t := watch.Target{
		Replica:    replica,
		Namespace:  pod.Namespace,
		Pod:        pod.Name,
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
	// The declared model picks the profile (see profile) but is not handed
	// to the scraper as the model to read: a pod that declares a model its
	// engine does not serve would read as engine_down every round, when
	// the engine is up and only its knee is unknown.
	declared, from := m.model(pod)
	if key := m.cfg.EngineLabel; key != "" {
		if v, ok := pod.Labels[key]; ok {
			if slices.Contains(config.KnownEngines(), config.Engine(v)) {
				t.Engine = v
			} else {
				bad("label %s=%q is not an engine (want %s); auto-detecting", key, v, config.EngineChoice(""))
			}
		}
	}

	t.ProfileName, t.Profile = m.profile(pod, t, declared, from, bad)

	if exp := exporters[pod.Spec.NodeName]; exp != nil && pod.Spec.NodeName != "" {
		u := url.URL{Scheme: "http", Host: net.JoinHostPort(exp.Status.PodIP, strconv.Itoa(m.cfg.DCGM.Port)), Path: m.cfg.DCGM.Path}
		t.DCGM = &watch.DCGMTarget{
			URL:       u.String(),
			Client:    m.dcgm,
			Selectors: []collector.GPUSelector{{Pod: pod.Name, Namespace: pod.Namespace}},
		}
	}
	return t, problems, true
}

// model is the model the pod declares: the model annotation as is, else
// the model label decoded (see DecodeModelLabel), else "". from names where
// it came from, for problems.
func (m mapper) model(pod *corev1.Pod) (model, from string) {
	if key := m.cfg.Annotations.Model; key != "" {
		if v := strings.TrimSpace(pod.Annotations[key]); v != "" {
			return v, "annotation " + key
		}
	}
	if key := m.cfg.ModelLabel; key != "" {
		if v := pod.Labels[key]; v != "" {
			return DecodeModelLabel(v), "label " + key
		}
	}
	return "", ""
}

// profile names the pod's knee profile: the annotation, else the label,
// else the one profile matching its model and GPU.
func (m mapper) profile(pod *corev1.Pod, t watch.Target, declared, from string, bad func(string, ...any)) (string, *knee.Profile) {
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
	served := ""
	if m.modelOf != nil {
		served = m.modelOf(t.Replica)
	}
	model := declared
	switch {
	case declared != "" && served != "" && served != declared:
		// The engine knows best what it serves; a profile for another
		// model would compare the replica with the wrong knee.
		bad("%s declares model %q but the engine reports %q; the replica has no knee until they agree", from, declared, served)
		return "", nil
	case model == "":
		model = served
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
