package config

import (
	"fmt"
	"time"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"

	"github.com/kneewatch/kneewatch/strictyaml"
)

// Duration is a time.Duration written the Prometheus way in YAML and in
// environment variables: "500ms", "30s", "5m", "1h", "1d".
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String formats the duration as Prometheus does ("1m", "1h30m").
func (d Duration) String() string { return model.Duration(d).String() }

// parseDuration explains what a duration looks like when s is not one.
func parseDuration(s string) (Duration, error) {
	v, err := model.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (want a number and a unit, e.g. 500ms, 30s, 5m, 1h)", s)
	}
	return Duration(v), nil
}

// UnmarshalYAML reads a duration string. Its errors carry the line number so
// they read like the decoder's own.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return strictyaml.ErrorAt(n, "want a duration such as 30s, got a %s", strictyaml.KindName(n))
	}
	v, err := parseDuration(n.Value)
	if err != nil {
		return strictyaml.ErrorAt(n, "%v", err)
	}
	*d = v
	return nil
}

// MarshalYAML writes the duration as a string.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// UnmarshalText reads a duration from an environment variable or flag.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := parseDuration(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// MarshalText writes the duration as text.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }
