package config

import (
	"slices"
	"sort"
	"strings"

	"github.com/prometheus/common/model"

	"github.com/kneewatch/kneewatch/strictyaml"
)

// reservedLabels are the label names kneewatch puts on its own series; a
// user label with one of these names would clash.
func reservedLabels() []string {
	return []string{"replica", "model", "profile", "namespace", "pod", "engine", "source", "problem", "dimension", "slo", "slo_quantile",
		"quantile", "resource", "reason", "class", "job", "instance"}
}

func sortedKeys(m map[string]string) []string {
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// validateLabelNames checks user-supplied label names: legacy Prometheus
// names, none of reserved (why says who sets those). It goes in name order
// so errors do not shuffle between runs.
func validateLabelNames(labels map[string]string, reserved []string, why, path string, p *strictyaml.List) {
	for _, name := range sortedKeys(labels) {
		switch {
		case !model.LegacyValidation.IsValidLabelName(name):
			p.Add(path, "%q is not a valid label name (want [a-zA-Z_][a-zA-Z0-9_]*)", name)
		case strings.HasPrefix(name, "__"):
			p.Add(path, "%q starts with __, which Prometheus reserves", name)
		case slices.Contains(reserved, name):
			p.Add(path, "%q %s (reserved: %s)", name, why, strings.Join(reserved, ", "))
		}
	}
}
