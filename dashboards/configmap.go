package dashboards

import (
	"bytes"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// Labels and annotations the Grafana dashboard sidecar of kube-prometheus-stack
// looks for: it loads every ConfigMap labelled grafana_dashboard="1" and,
// with sidecar.dashboards.folderAnnotation set to grafana_folder, files its
// dashboards into the folder the annotation names.
const (
	sidecarLabel     = "grafana_dashboard"
	folderAnnotation = "grafana_folder"
)

// configMap is the part of a Kubernetes ConfigMap the output needs. A small
// struct instead of k8s.io/api keeps the binary free of the Kubernetes
// client libraries; go.yaml.in/yaml/v3 is already a dependency and writes the
// dashboard JSON as a readable literal block.
type configMap struct {
	APIVersion string            `yaml:"apiVersion"`
	Kind       string            `yaml:"kind"`
	Metadata   objectMeta        `yaml:"metadata"`
	Data       map[string]string `yaml:"data"`
}

type objectMeta struct {
	Name        string            `yaml:"name"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

// configMapYAML wraps one dashboard's JSON in a sidecar-ready ConfigMap named
// after the dashboard's UID. It has no namespace: `kubectl apply -n` or the
// sidecar's searchNamespace decides.
func configMapYAML(uid, folder string, dashboardJSON []byte) ([]byte, error) {
	cm := configMap{
		APIVersion: "v1",
		Kind:       "ConfigMap",
		Metadata: objectMeta{
			Name: uid + "-dashboard",
			Labels: map[string]string{
				sidecarLabel:                  "1",
				"app.kubernetes.io/name":      "kneewatch",
				"app.kubernetes.io/component": "dashboards",
			},
			Annotations: map[string]string{folderAnnotation: folder},
		},
		Data: map[string]string{uid + ".json": string(dashboardJSON)},
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(cm); err != nil {
		return nil, fmt.Errorf("encode ConfigMap: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encode ConfigMap: %w", err)
	}
	return out.Bytes(), nil
}
