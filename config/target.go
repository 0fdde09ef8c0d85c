package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kneewatch/kneewatch/strictyaml"
)

// Engine names the serving engine whose metric names a target exposes.
type Engine string

// The engines kneewatch has adapters for. An empty Engine means auto-detect
// from the metric names of the first scrape.
const (
	EngineAuto   Engine = ""
	EngineVLLM   Engine = "vllm"
	EngineSGLang Engine = "sglang"
	EngineTGI    Engine = "tgi"
	EngineTRTLLM Engine = "trtllm" // Triton with the TensorRT-LLM backend
)

// KnownEngines lists the engines a target may name, in documentation order.
func KnownEngines() []Engine {
	return []Engine{EngineVLLM, EngineSGLang, EngineTGI, EngineTRTLLM}
}

// EngineChoice lists the known engines for a message: "vllm, sglang, tgi
// or trtllm", or with orElse that as the last choice ("vllm, sglang, tgi,
// trtllm or empty for auto-detect"), so no message spells the list again.
func EngineChoice(orElse string) string {
	var names []string
	for _, e := range KnownEngines() {
		names = append(names, string(e))
	}
	if orElse != "" {
		names = append(names, orElse)
	}
	last := len(names) - 1
	return strings.Join(names[:last], ", ") + " or " + names[last]
}

// Target is one statically configured serving replica.
type Target struct {
	// Replica names the replica; it is the `replica` label on every series
	// about it. Required, unique.
	Replica string `yaml:"replica"`
	// Model is the served model name (the `model` label, and how fleet
	// sizing groups replicas). Empty: taken from the engine's own metrics
	// (vLLM's model_name label) where it has one.
	Model string `yaml:"model,omitempty"`
	// Engine is vllm, sglang, tgi or trtllm; empty to auto-detect it from the
	// metric names.
	Engine Engine `yaml:"engine,omitempty"`
	// MetricsURL is the engine's Prometheus endpoint, e.g.
	// http://10.0.0.7:8000/metrics. Required, http or https.
	MetricsURL URL `yaml:"metrics_url"`
	// Profile names an entry of profiles (or a file in global.profiles_dir).
	// Empty: the replica has no knee, so its evaluation is not ok and it
	// exports no headroom.
	Profile string `yaml:"profile,omitempty"`
	// DCGM, when set, is where this replica's GPU metrics come from.
	DCGM *DCGM `yaml:"dcgm,omitempty"`
	// OpenAIURL is the replica's OpenAI-compatible base URL as given to
	// OpenAI clients, usually ending in /v1 (http://10.0.0.7:8000/v1).
	// Probes go there; a target without it is not probed.
	OpenAIURL URL `yaml:"openai_url,omitempty"`
	// HTTPClient configures requests to metrics_url and openai_url (TLS,
	// bearer_token_file, basic_auth with password_file, …).
	HTTPClient HTTPClient `yaml:"http_client"`
	// Namespace and Pod are the Kubernetes namespace and pod serving the
	// replica, put on every series about it as the namespace and pod
	// labels (discovery sets them itself). kube-prometheus-stack's
	// Alertmanager groups pages by namespace, so set namespace to route
	// the replica's pages to the team owning it. Empty: no such label.
	Namespace string `yaml:"namespace,omitempty"`
	Pod       string `yaml:"pod,omitempty"`
	// Labels are extra labels put on every series about this replica.
	Labels map[string]string `yaml:"labels,omitempty"`
}

// DCGM says where a replica's GPU metrics are and which GPUs are its own.
// dcgm-exporter usually serves every GPU of a node, so a selector is required:
// gpu_uuids, or the pod and namespace labels dcgm-exporter adds in Kubernetes.
type DCGM struct {
	// URL is the dcgm-exporter metrics endpoint (http://node:9400/metrics).
	// Required, http or https.
	URL URL `yaml:"url"`
	// GPUUUIDs selects the GPUs whose UUID label is listed (several for a
	// tensor-parallel replica).
	GPUUUIDs []string `yaml:"gpu_uuids,omitempty"`
	// Pod and Namespace select the GPUs dcgm-exporter labels with this pod
	// and namespace. Set both or neither.
	Pod       string `yaml:"pod,omitempty"`
	Namespace string `yaml:"namespace,omitempty"`
	// HTTPClient configures requests to URL. It is separate from the
	// target's so the engine's credentials never go to another host.
	HTTPClient HTTPClient `yaml:"http_client"`
}

// UnmarshalYAML sets the target's defaults, then decodes over them.
func (t *Target) UnmarshalYAML(unmarshal func(any) error) error {
	*t = Target{HTTPClient: DefaultHTTPClient()}
	// Decode through a method-less copy of the type. It is named Target too,
	// so a strict-decoding error names config.Target, the type whose keys
	// it lists (see strictyaml.unknownKeyMessage).
	type fields Target
	type Target fields
	return unmarshal((*Target)(t))
}

// UnmarshalYAML sets the DCGM defaults, then decodes over them.
func (d *DCGM) UnmarshalYAML(unmarshal func(any) error) error {
	*d = DCGM{HTTPClient: DefaultHTTPClient()}
	type fields DCGM
	type DCGM fields
	return unmarshal((*DCGM)(d))
}

func validateTargets(targets []Target, profiles []Profile, external map[string]string, p *strictyaml.List) {
	known := map[string]bool{}
	for _, pr := range profiles {
		known[pr.Name] = true
	}
	seen := map[string]int{}
	for i, t := range targets {
		path := fmt.Sprintf("targets[%d]", i)
		switch {
		case t.Replica == "":
			p.Add(path+".replica", "missing (every target needs a unique replica name)")
		case strings.TrimSpace(t.Replica) != t.Replica:
			p.Add(path+".replica", "%q has leading or trailing spaces", t.Replica)
		default:
			if j, dup := seen[t.Replica]; dup {
				p.Add(path+".replica", "%q is already used by targets[%d]", t.Replica, j)
			} else {
				seen[t.Replica] = i
			}
		}
		if t.Engine != EngineAuto && !slices.Contains(KnownEngines(), t.Engine) {
			p.Add(path+".engine", "unknown engine %q (want %s)", t.Engine, EngineChoice("empty for auto-detect"))
		}
		if t.MetricsURL.IsZero() {
			p.Add(path+".metrics_url", "missing (the engine's Prometheus endpoint, e.g. http://10.0.0.7:8000/metrics)")
		} else {
			validateHTTPURL(t.MetricsURL, path+".metrics_url", p)
		}
		if t.Profile != "" && !known[t.Profile] {
			if len(profiles) == 0 {
				p.Add(path+".profile", "unknown profile %q: no profiles are configured (list them under profiles or set global.profiles_dir)", t.Profile)
			} else {
				p.Add(path+".profile", "unknown profile %q (known: %s)", t.Profile, strings.Join(profileNames(profiles), ", "))
			}
		}
		if t.DCGM != nil {
			t.DCGM.validate(path+".dcgm", p)
		}
		if !t.OpenAIURL.IsZero() {
			validateHTTPURL(t.OpenAIURL, path+".openai_url", p)
		}
		validateHTTPClient(t.HTTPClient, path+".http_client", p)
		validateLabelNames(t.Labels, reservedLabels(), "is set by kneewatch itself", path+".labels", p)
		for _, name := range sortedKeys(t.Labels) {
			if _, clash := external[name]; clash {
				p.Add(path+".labels", "%q is also in global.external_labels, which kneewatch puts on every series", name)
			}
		}
		validateIdentity(t.Namespace, path+".namespace", p)
		validateIdentity(t.Pod, path+".pod", p)
	}
}

func (d DCGM) validate(path string, p *strictyaml.List) {
	if d.URL.IsZero() {
		p.Add(path+".url", "missing (the dcgm-exporter endpoint, e.g. http://10.0.0.7:9400/metrics)")
	} else {
		validateHTTPURL(d.URL, path+".url", p)
	}
	for i, id := range d.GPUUUIDs {
		if strings.TrimSpace(id) == "" {
			p.Add(fmt.Sprintf("%s.gpu_uuids[%d]", path, i), "empty GPU UUID")
		}
	}
	byPod := d.Pod != "" || d.Namespace != ""
	switch {
	case byPod && (d.Pod == "" || d.Namespace == ""):
		p.Add(path, "set both pod and namespace (dcgm-exporter labels GPUs with both), got pod %q and namespace %q", d.Pod, d.Namespace)
	case byPod && len(d.GPUUUIDs) > 0:
		p.Add(path, "set gpu_uuids or pod and namespace, not both")
	case !byPod && len(d.GPUUUIDs) == 0:
		p.Add(path, "no GPU selector: set gpu_uuids, or pod and namespace, to pick this replica's GPUs from the exporter")
	}
	validateHTTPClient(d.HTTPClient, path+".http_client", p)
}

// validateHTTPClient runs prometheus/common's own checks on a client config
// built in code; decoding already ran them for the file.
func validateHTTPClient(h HTTPClient, path string, p *strictyaml.List) {
	if err := h.Validate(); err != nil {
		p.Add(path, "%v", err)
	}
}

// validateIdentity checks a namespace or pod name as far as a label value
// carries it: no surrounding spaces, which would route the page nowhere.
func validateIdentity(v, path string, p *strictyaml.List) {
	if strings.TrimSpace(v) != v {
		p.Add(path, "%q has leading or trailing spaces", v)
	}
}
