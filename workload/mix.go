// Package workload describes the requests a replica serves: token-length
// distributions, named request mixes, and readers for recorded traces. The
// simulator, the sweep and the demo draw their load from here, and knee
// profiles record the mix they were measured with.
package workload

// Dist is a distribution of token counts. Kind selects which fields apply:
//
//	fixed:     Value
//	uniform:   Min..Max (inclusive)
//	lognormal: Median and Sigma (of the underlying normal), clamped to Min..Max when set
type Dist struct {
	Kind   string  `yaml:"kind" json:"kind"`
	Value  int     `yaml:"value,omitempty" json:"value,omitempty"`
	Min    int     `yaml:"min,omitempty" json:"min,omitempty"`
	Max    int     `yaml:"max,omitempty" json:"max,omitempty"`
	Median float64 `yaml:"median,omitempty" json:"median,omitempty"`
	Sigma  float64 `yaml:"sigma,omitempty" json:"sigma,omitempty"`
}

// Mix is a named request mix: how long prompts and outputs are.
type Mix struct {
	Name   string `yaml:"name" json:"name"`
	Prompt Dist   `yaml:"prompt" json:"prompt"`
	Output Dist   `yaml:"output" json:"output"`
}
