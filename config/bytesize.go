package config

import (
	"github.com/alecthomas/units"
	"go.yaml.in/yaml/v3"

	"github.com/kneewatch/kneewatch/strictyaml"
)

// ByteSize is a size in bytes written with a base-2 unit, as in Prometheus'
// body_size_limit: "16MiB", "512KiB", "1GiB" (KB and MB also mean 1024 and
// 1024², as there). 0 means no limit.
type ByteSize int64

// String formats the size with the largest exact unit ("16MiB").
func (b ByteSize) String() string { return units.Base2Bytes(b).String() }

// UnmarshalYAML reads a size such as 16MiB.
func (b *ByteSize) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return strictyaml.ErrorAt(n, "want a size such as 16MiB, got a %s", strictyaml.KindName(n))
	}
	v, err := units.ParseBase2Bytes(n.Value)
	if err != nil {
		return strictyaml.ErrorAt(n, "%q is not a size (want a number and a unit, e.g. 512KiB, 16MiB, 1GiB)", n.Value)
	}
	*b = ByteSize(v)
	return nil
}

// MarshalYAML writes the size with its unit.
func (b ByteSize) MarshalYAML() (any, error) { return b.String(), nil }
