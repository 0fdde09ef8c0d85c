// Package workload describes the requests a replica serves: token-length
// distributions, named request mixes, readers for recorded traces, and the
// token-word rule (tokens.go) by which prompts of n tokens are built and the
// simulator bills them. The simulator, the sweep and the demo draw their
// load from here, and knee profiles record the mix they were measured with.
package workload

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/kneewatch/kneewatch/strictyaml"
)

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

// Validate reports the first bad field of m, by its YAML path.
func (m Mix) Validate() error {
	for _, part := range []struct {
		name string
		d    Dist
	}{{"prompt", m.Prompt}, {"output", m.Output}} {
		if part.d == (Dist{}) {
			return fieldErr(part.name, "is required")
		}
		if err := part.d.Validate(); err != nil {
			var fe *strictyaml.FieldError
			if errors.As(err, &fe) {
				return fieldErr(part.name+"."+fe.Field, "%s", fe.Message)
			}
			return fmt.Errorf("%s: %w", part.name, err)
		}
	}
	return nil
}

// MeanPromptTokens is the analytic mean prompt length (see Dist.Mean).
func (m Mix) MeanPromptTokens() float64 { return m.Prompt.Mean() }

// MeanOutputTokens is the analytic mean output length (see Dist.Mean).
func (m Mix) MeanOutputTokens() float64 { return m.Output.Mean() }

// Blend is a trace of records drawn from primary, each one instead from
// alt with probability share: a mix that is not a scaled copy of either
// (two humps, not one stretched), such as a chat deployment some of whose
// traffic turned to RAG. The same seed gives the same trace.
func Blend(primary, alt Mix, share float64, records int, seed uint64) Trace {
	rng := rand.New(rand.NewPCG(seed, seed^0x2545f4914f6cdd1d))
	recs := make([]Record, records)
	for i := range recs {
		m := primary
		if rng.Float64() < share {
			m = alt
		}
		recs[i] = Record{PromptTokens: m.Prompt.Sample(rng), OutputTokens: m.Output.Sample(rng)}
	}
	return Trace{Source: fmt.Sprintf("%s+%.0f%%%s", primary.Name, 100*share, alt.Name), Records: recs}
}
