package workload

import (
	"fmt"
	"math"
)

// Scale returns m with every prompt length multiplied by prompt and every
// output length by output, for measuring how a knee moves with the mix. The
// shape stays: a lognormal's median and clamps scale, a uniform's bounds, a
// fixed value. When maxModelLen > 0 the longest request (prompt max plus
// output max) is kept within it, as a server would cap it: the output's
// upper clamp first keeps room for at least the shortest prompt, then the
// prompt's takes what is left. An unbounded lognormal gets that bound as its
// clamp. The name records the scales, e.g. "chat×p2×o0.5".
func (m Mix) Scale(prompt, output float64, maxModelLen int) (Mix, error) {
	if !(prompt > 0) || math.IsInf(prompt, 0) || !(output > 0) || math.IsInf(output, 0) {
		return Mix{}, fmt.Errorf("mix %s: scales must be finite and > 0, got prompt ×%g, output ×%g", m.Name, prompt, output)
	}
	s := Mix{Name: m.Name + scaleSuffix(prompt, output), Prompt: m.Prompt.scale(prompt), Output: m.Output.scale(output)}
	if maxModelLen > 0 {
		s.Output = s.Output.capAt(maxModelLen - s.Prompt.low())
		s.Prompt = s.Prompt.capAt(maxModelLen - s.Output.high(maxModelLen))
	}
	if err := s.Validate(); err != nil {
		return Mix{}, fmt.Errorf("mix %s scaled by prompt ×%g, output ×%g within max_model_len %d: %w", m.Name, prompt, output, maxModelLen, err)
	}
	return s, nil
}

func scaleSuffix(prompt, output float64) string {
	s := ""
	if prompt != 1 {
		s += fmt.Sprintf("×p%g", prompt)
	}
	if output != 1 {
		s += fmt.Sprintf("×o%g", output)
	}
	return s
}

// scale multiplies every length of d by f, keeping each at least 1 token.
func (d Dist) scale(f float64) Dist {
	n := func(v int) int {
		if v == 0 {
			return 0 // unset stays unset
		}
		return max(int(math.Round(float64(v)*f)), 1)
	}
	switch d.Kind {
	case KindFixed:
		d.Value = n(d.Value)
	case KindUniform:
		d.Min, d.Max = n(d.Min), n(d.Max)
	case KindLognormal:
		d.Median = max(d.Median*f, 1)
		d.Min, d.Max = n(d.Min), n(d.Max)
	}
	return d
}

// low is the shortest length d draws.
func (d Dist) low() int {
	switch d.Kind {
	case KindFixed:
		return d.Value
	case KindUniform:
		return d.Min
	}
	return max(d.Min, 1)
}

// high is the longest length d draws, limit for an unbounded lognormal.
func (d Dist) high(limit int) int {
	switch d.Kind {
	case KindFixed:
		return d.Value
	case KindUniform:
		return d.Max
	}
	if d.Max == 0 {
		return limit
	}
	return d.Max
}

// capAt lowers d's longest length to limit (at least 1 token), moving the
// other bounds down with it where they would cross.
func (d Dist) capAt(limit int) Dist {
	limit = max(limit, 1)
	switch d.Kind {
	case KindFixed:
		d.Value = min(d.Value, limit)
	case KindUniform:
		d.Max = min(d.Max, limit)
		d.Min = min(d.Min, d.Max)
	case KindLognormal:
		if d.Max == 0 || d.Max > limit {
			d.Max = limit
		}
		d.Min = min(d.Min, d.Max)
		d.Median = min(d.Median, float64(d.Max))
	}
	return d
}

// Scaled returns a generator like g (same seed, or the same trace order)
// whose prompt and output lengths are scaled as Mix.Scale scales them. A
// trace's records are each scaled and capped at maxModelLen (when > 0),
// the prompt keeping at least 1 token and the output what is left, and at
// MaxRequestTokens.
func (g *Generator) Scaled(prompt, output float64, maxModelLen int) (*Generator, error) {
	if g.mix != nil {
		m, err := g.mix.Scale(prompt, output, maxModelLen)
		if err != nil {
			return nil, err
		}
		s, err := NewMixGenerator(m, g.info.Source+scaleSuffix(prompt, output), g.seed)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	if !(prompt > 0) || math.IsInf(prompt, 0) || !(output > 0) || math.IsInf(output, 0) {
		return nil, fmt.Errorf("trace %s: scales must be finite and > 0, got prompt ×%g, output ×%g", g.info.Source, prompt, output)
	}
	t := Trace{Source: g.info.Source + scaleSuffix(prompt, output), Records: make([]Record, len(g.trace.Records)), Timed: g.trace.Timed}
	// Scaled lengths stay within MaxRequestTokens, clamped before they are
	// converted: a float past the largest int converts to garbage.
	length := func(tokens int, scale float64) int {
		return max(int(min(math.Round(float64(tokens)*scale), MaxRequestTokens)), 1)
	}
	for i, r := range g.trace.Records {
		p := length(r.PromptTokens, prompt)
		o := length(max(r.OutputTokens, 1), output)
		if maxModelLen > 0 {
			p = min(p, maxModelLen-1)
			o = min(o, maxModelLen-p)
		}
		r.PromptTokens, r.OutputTokens = p, o
		t.Records[i] = r
	}
	return NewTraceGenerator(t)
}
