package workload

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"time"
)

// Request is one drawn request: how long its prompt and output are and, for
// open-loop replay, when it arrives relative to the start.
type Request struct {
	PromptTokens int
	OutputTokens int
	// Offset is the arrival time relative to the start of the run. Mixes
	// have no arrival process and leave it zero; traces with timestamps
	// replay theirs (closed-loop callers ignore it).
	Offset time.Duration
}

// Info describes what a Generator draws from, for a knee profile to record.
type Info struct {
	// Source is the preset name, mix file or trace path.
	Source string
	// Mix is the mix drawn from; for a trace it is named after the file's
	// base name and has no distributions.
	Mix              Mix
	MeanPromptTokens float64
	MeanOutputTokens float64
	// P999PromptTokens is the 99.9th percentile of the prompt lengths.
	P999PromptTokens float64
	// PromptTokensCV and OutputTokensCV are the lengths' coefficients of
	// variation: how noisy a mean over a few requests is.
	PromptTokensCV, OutputTokensCV float64
	// TraceRecords is the number of records of a replayed trace, 0 for a mix.
	TraceRecords int
}

// Generator draws requests from a mix (seeded, deterministic) or replays a
// trace in order, cycling when it runs out. A Generator is not safe for
// concurrent use.
type Generator struct {
	info  Info
	mix   *Mix
	trace *Trace
	seed  uint64
	rng   *rand.Rand

	next   int           // next trace record
	period time.Duration // a trace's length plus one mean gap, added per cycle
	cycle  time.Duration // offset of the current cycle
}

// NewMixGenerator draws from m with a PCG generator seeded by seed: the same
// mix and seed always give the same sequence.
func NewMixGenerator(m Mix, source string, seed uint64) (*Generator, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &Generator{
		info: Info{Source: source, Mix: m, MeanPromptTokens: m.MeanPromptTokens(), MeanOutputTokens: m.MeanOutputTokens(),
			P999PromptTokens: m.Prompt.Quantile(0.999), PromptTokensCV: m.Prompt.CV(), OutputTokensCV: m.Output.CV()},
		mix:  &m,
		seed: seed,
		rng:  rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
	}, nil
}

// NewTraceGenerator replays t's records in order, cycling when it runs out.
// Each cycle's offsets follow the previous cycle's by the trace's span plus one
// mean gap, so open-loop replay keeps its rate. Replay is deterministic and
// does not use a seed.
func NewTraceGenerator(t Trace) (*Generator, error) {
	if len(t.Records) == 0 {
		return nil, fmt.Errorf("trace %s has no records", t.Source)
	}
	g := &Generator{
		info: Info{
			Source:           t.Source,
			Mix:              Mix{Name: strings.TrimSuffix(filepath.Base(t.Source), filepath.Ext(t.Source))},
			MeanPromptTokens: t.MeanPromptTokens(),
			MeanOutputTokens: t.MeanOutputTokens(),
			P999PromptTokens: t.PromptTokensQuantile(0.999),
			PromptTokensCV:   t.PromptTokensCV(),
			OutputTokensCV:   t.OutputTokensCV(),
			TraceRecords:     len(t.Records),
		},
		trace: &t,
	}
	if n := len(t.Records); n > 0 {
		span := t.Records[n-1].Offset
		g.period = span
		if n > 1 {
			g.period += span / time.Duration(n-1)
		}
	}
	return g, nil
}

// Info describes what g draws from.
func (g *Generator) Info() Info { return g.info }

// WithSeed returns a fresh generator over the same mix or trace, reseeded:
// callers that run several independent levels give each its own stream.
func (g *Generator) WithSeed(seed uint64) *Generator {
	if g.mix != nil {
		c := *g
		c.seed = seed
		c.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		return &c
	}
	c := *g
	c.next, c.cycle = 0, 0
	return &c
}

// Next draws the next request. Output lengths are at least 1 token.
func (g *Generator) Next() Request {
	if g.mix != nil {
		// Draw prompt then output, always in this order, for reproducibility.
		p := g.mix.Prompt.Sample(g.rng)
		o := g.mix.Output.Sample(g.rng)
		return Request{PromptTokens: p, OutputTokens: o}
	}
	rec := g.trace.Records[g.next]
	req := Request{PromptTokens: rec.PromptTokens, OutputTokens: max(rec.OutputTokens, 1), Offset: g.cycle + rec.Offset}
	g.next++
	if g.next == len(g.trace.Records) {
		g.next = 0
		g.cycle += g.period
	}
	return req
}
