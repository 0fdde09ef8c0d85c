package config

import (
	"slices"
	"sort"
	"strings"

	"github.com/prometheus/common/model"
)

// reservedLabels are the label names kneewatch puts on its own series; a
// user label with one of these names would clash.
func reservedLabels() []string {
	return []string{"replica", "model", "profile", "engine", "source", "dimension", "slo", "quantile", "resource", "reason", "class", "job", "instance"}
}

// validateLabelNames checks user-supplied label names: legacy Prometheus
// names, none of reserved (why says who sets those). It goes in name order
// so errors do not shuffle between runs.
func validateLabelNames(labels map[string]string, reserved []string, why, path string, p *problems) {
	names := make([]string, 0, len(labels))
	for name := range labels {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		switch {
		case !model.LegacyValidation.IsValidLabelName(name):
			p.add(path, "%q is not a valid label name (want [a-zA-Z_][a-zA-Z0-9_]*)", name)
		case strings.HasPrefix(name, "__"):
			p.add(path, "%q starts with __, which Prometheus reserves", name)
		case slices.Contains(reserved, name):
			p.add(path, "%q %s (reserved: %s)", name, why, strings.Join(reserved, ", "))
		}
	}
}
