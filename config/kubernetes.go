package config

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kneewatch/kneewatch/strictyaml"
)

// Kubernetes configures discovery of serving pods. When the section is
// present, every running pod that matches LabelSelector in Namespaces is a
// replica. Pod annotations override the per-pod
// defaults below.
type Kubernetes struct {
	// Kubeconfig is a kubeconfig file, relative to the config file's
	// directory; empty uses the in-cluster service account.
	Kubeconfig string `yaml:"kubeconfig,omitempty"`
	// Namespaces to watch; empty watches all namespaces (and then needs
	// cluster-wide permission to list pods).
	Namespaces []string `yaml:"namespaces,omitempty"`
	// LabelSelector picks the serving pods, in kubectl syntax
	// ("app.kubernetes.io/component=llm-server"). Required: without it every
	// pod would be taken for a replica.
	LabelSelector string `yaml:"label_selector"`
	// Scheme for metrics and OpenAI requests: http or https. Default http.
	Scheme string `yaml:"scheme"`
	// MetricsPort is the container port serving metrics (and the OpenAI API,
	// as vLLM, SGLang and TGI serve both on one port). Default 8000.
	MetricsPort int `yaml:"metrics_port"`
	// MetricsPath is the metrics path. Default /metrics.
	MetricsPath string `yaml:"metrics_path"`
	// OpenAIPath is appended to scheme://pod-ip:metrics_port to form the
	// probes' OpenAI base URL. Default /v1.
	OpenAIPath string `yaml:"openai_path"`
	// ModelLabel is a pod label holding the model name. Label values cannot
	// hold "/", so "--" in the value stands for "/"
	// (meta-llama--Llama-3.1-8B-Instruct is meta-llama/Llama-3.1-8B-Instruct,
	// as in Hugging Face's cache directory names). Empty (the default): the
	// model comes from the model annotation, else the engine's own metrics.
	ModelLabel string `yaml:"model_label,omitempty"`
	// ProfileLabel is a pod label naming the pod's knee profile. Default
	// kneewatch.dev/profile. Without it (and without the profile
	// annotation) the profile is matched by model and GPU.
	ProfileLabel string `yaml:"profile_label"`
	// EngineLabel is a pod label naming the engine (vllm, sglang, tgi,
	// trtllm). Default kneewatch.dev/engine; absent means auto-detect.
	EngineLabel string `yaml:"engine_label"`
	// Annotations names the pod annotations that override the defaults above.
	Annotations KubernetesAnnotations `yaml:"annotations"`
	// DCGM, when set, discovers dcgm-exporter pods; their series are joined
	// to replica pods through the pod and namespace labels dcgm-exporter adds.
	DCGM *KubernetesDCGM `yaml:"dcgm,omitempty"`
	// HTTPClient configures requests to discovered pods.
	HTTPClient HTTPClient `yaml:"http_client"`
}

// KubernetesAnnotations are the annotation names read from each serving pod.
type KubernetesAnnotations struct {
	// MetricsPort overrides metrics_port. Default kneewatch.dev/metrics-port.
	MetricsPort string `yaml:"metrics_port"`
	// MetricsPath overrides metrics_path. Default kneewatch.dev/metrics-path.
	MetricsPath string `yaml:"metrics_path"`
	// OpenAIURL gives the full OpenAI base URL. Default kneewatch.dev/openai-url.
	OpenAIURL string `yaml:"openai_url"`
	// Profile names the knee profile. Default kneewatch.dev/profile.
	Profile string `yaml:"profile"`
	// Model holds the served model's name as is ("/" allowed); it wins
	// over model_label. Default kneewatch.dev/model.
	Model string `yaml:"model"`
}

// KubernetesDCGM finds dcgm-exporter pods (usually a DaemonSet of the GPU operator).
type KubernetesDCGM struct {
	// Namespace of the dcgm-exporter pods. Default gpu-operator.
	Namespace string `yaml:"namespace"`
	// LabelSelector picks them. Default app=nvidia-dcgm-exporter.
	LabelSelector string `yaml:"label_selector"`
	// Port of their metrics endpoint. Default 9400.
	Port int `yaml:"port"`
	// Path of their metrics endpoint. Default /metrics.
	Path string `yaml:"path"`
}

// DefaultKubernetes returns the discovery defaults (with no label selector,
// which the user must give).
func DefaultKubernetes() Kubernetes {
	return Kubernetes{
		Scheme:       "http",
		MetricsPort:  8000,
		MetricsPath:  "/metrics",
		OpenAIPath:   "/v1",
		ProfileLabel: "kneewatch.dev/profile",
		EngineLabel:  "kneewatch.dev/engine",
		Annotations: KubernetesAnnotations{
			MetricsPort: "kneewatch.dev/metrics-port",
			MetricsPath: "kneewatch.dev/metrics-path",
			OpenAIURL:   "kneewatch.dev/openai-url",
			Profile:     "kneewatch.dev/profile",
			Model:       "kneewatch.dev/model",
		},
		HTTPClient: DefaultHTTPClient(),
	}
}

// DefaultKubernetesDCGM returns defaults matching the NVIDIA GPU operator.
func DefaultKubernetesDCGM() KubernetesDCGM {
	return KubernetesDCGM{
		Namespace:     "gpu-operator",
		LabelSelector: "app=nvidia-dcgm-exporter",
		Port:          9400,
		Path:          "/metrics",
	}
}

// UnmarshalYAML sets the discovery defaults, then decodes over them.
func (k *Kubernetes) UnmarshalYAML(unmarshal func(any) error) error {
	*k = DefaultKubernetes()
	type fields Kubernetes
	type Kubernetes fields
	return unmarshal((*Kubernetes)(k))
}

// UnmarshalYAML sets the dcgm-exporter discovery defaults, then decodes over them.
func (d *KubernetesDCGM) UnmarshalYAML(unmarshal func(any) error) error {
	*d = DefaultKubernetesDCGM()
	type fields KubernetesDCGM
	type KubernetesDCGM fields
	return unmarshal((*KubernetesDCGM)(d))
}

func (k Kubernetes) validate(p *strictyaml.List) {
	const path = "kubernetes"
	for i, ns := range k.Namespaces {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			p.Add(fmt.Sprintf("%s.namespaces[%d]", path, i), "%q is not a namespace name: %s", ns, strings.Join(errs, "; "))
		}
	}
	if strings.TrimSpace(k.LabelSelector) == "" {
		p.Add(path+".label_selector", "missing: without a selector every pod would be taken for a serving replica (e.g. app.kubernetes.io/component=llm-server)")
	} else {
		validateSelector(k.LabelSelector, path+".label_selector", p)
	}
	if k.Scheme != "http" && k.Scheme != "https" {
		p.Add(path+".scheme", "%q is not supported (want http or https)", k.Scheme)
	}
	validatePort(k.MetricsPort, path+".metrics_port", p)
	validateURLPath(k.MetricsPath, path+".metrics_path", p)
	validateURLPath(k.OpenAIPath, path+".openai_path", p)
	for _, key := range []struct{ name, value string }{
		{"model_label", k.ModelLabel},
		{"profile_label", k.ProfileLabel},
		{"engine_label", k.EngineLabel},
		{"annotations.metrics_port", k.Annotations.MetricsPort},
		{"annotations.metrics_path", k.Annotations.MetricsPath},
		{"annotations.openai_url", k.Annotations.OpenAIURL},
		{"annotations.profile", k.Annotations.Profile},
		{"annotations.model", k.Annotations.Model},
	} {
		if key.value == "" {
			continue // that source of per-pod information is turned off
		}
		if errs := validation.IsQualifiedName(key.value); len(errs) > 0 {
			p.Add(path+"."+key.name, "%q is not a Kubernetes label or annotation key: %s", key.value, strings.Join(errs, "; "))
		}
	}
	if d := k.DCGM; d != nil {
		if errs := validation.IsDNS1123Label(d.Namespace); len(errs) > 0 {
			p.Add(path+".dcgm.namespace", "%q is not a namespace name: %s", d.Namespace, strings.Join(errs, "; "))
		}
		validateSelector(d.LabelSelector, path+".dcgm.label_selector", p)
		validatePort(d.Port, path+".dcgm.port", p)
		validateURLPath(d.Path, path+".dcgm.path", p)
	}
	validateHTTPClient(k.HTTPClient, path+".http_client", p)
}

// validateSelector parses s with Kubernetes' own label selector parser.
func validateSelector(s, path string, p *strictyaml.List) {
	if _, err := labels.Parse(s); err != nil {
		p.Add(path, "%q is not a label selector: %v", s, err)
	}
}

func validatePort(port int, path string, p *strictyaml.List) {
	if port < 1 || port > 65535 {
		p.Add(path, "%d is not a port (want 1-65535)", port)
	}
}

func validateURLPath(s, path string, p *strictyaml.List) {
	if !strings.HasPrefix(s, "/") {
		p.Add(path, "%q must start with /", s)
	}
}
