package sim

import (
	"math"
	"time"
)

// cost is the roofline model of one step: tokens is the number of tokens
// computed (prefill chunks plus decodes), kvTokens the context length summed
// over the batch (the KV entries attention reads). It returns the compute and
// memory terms and the step duration overhead + max(compute, memory), all
// scaled by slowdown ÷ speed.
func (e *Engine) cost(tokens, kvTokens int) (compute, memory, total time.Duration) {
	c := &e.roofline
	computeSec := c.flopsPerToken * float64(tokens) / c.flops
	memorySec := (c.weightBytes + float64(kvTokens)*c.kvBytesPerToken) / c.bandwidth
	scale := e.slowdown / e.speed
	totalSec := c.overheadSec + max(computeSec, memorySec)
	return seconds(computeSec * scale), seconds(memorySec * scale), seconds(totalSec * scale)
}

// roofline holds the preset's terms of cost, worked out once per engine:
// cost runs on every step, and in a CPU profile of the detection bench it
// was 5.7% of the samples, a fifth of them copying the preset to read its
// terms. Each term is the same floating-point expression
// cost evaluated before, so step durations are unchanged to the nanosecond.
type roofline struct {
	flopsPerToken   float64 // 2 × parameters
	flops           float64 // peak FLOPS × compute efficiency
	weightBytes     float64
	kvBytesPerToken float64
	bandwidth       float64 // HBM bandwidth × memory efficiency
	overheadSec     float64
}

func rooflineOf(p *Preset) roofline {
	return roofline{
		flopsPerToken:   2 * p.Parameters,
		flops:           p.PeakFLOPS * p.ComputeEfficiency,
		weightBytes:     p.WeightBytes,
		kvBytesPerToken: p.KVCacheBytesPerToken(),
		bandwidth:       p.HBMBandwidth * p.MemoryEfficiency,
		overheadSec:     p.StepOverhead.Seconds(),
	}
}

// seconds converts float seconds to a Duration, rounding to the nanosecond.
func seconds(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }
