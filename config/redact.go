package config

import (
	"bytes"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// String prints the effective config (defaults filled in, paths resolved,
// profiles_dir expanded) as YAML, for `--config.check`. Secrets from
// prometheus/common's HTTP client config print as <secret> and passwords in
// URLs as xxxxx. (prometheus/common has a process-wide switch,
// config.MarshalSecretValue, that would reveal them; kneewatch never sets it.)
func (c *Config) String() string {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(c); err != nil {
		return fmt.Sprintf("# config cannot be printed: %v\n", err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Sprintf("# config cannot be printed: %v\n", err)
	}
	return buf.String()
}
