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
	p := e.p
	computeSec := 2 * p.Parameters * float64(tokens) / (p.PeakFLOPS * p.ComputeEfficiency)
	memorySec := (p.WeightBytes + float64(kvTokens)*p.KVCacheBytesPerToken()) / (p.HBMBandwidth * p.MemoryEfficiency)
	scale := e.slowdown / e.speed
	totalSec := p.StepOverhead.Seconds() + max(computeSec, memorySec)
	return seconds(computeSec * scale), seconds(memorySec * scale), seconds(totalSec * scale)
}

// seconds converts float seconds to a Duration, rounding to the nanosecond.
func seconds(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }
