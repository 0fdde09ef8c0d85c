package sim

import (
	"time"
)

// activityWindow is the sliding window DCGM utilisation figures average
// over, like NVML's sample period of about a second.
const activityWindow = time.Second

// activity remembers the engine steps of the last activityWindow, in wall
// time, and cumulative busy times, so the DCGM endpoint can report how busy
// the simulated GPU was. Guarded by Replica.mu.
type activity struct {
	steps []stepSpan
	// Cumulative over the replica's life (a restart does not reset the GPU).
	kernel, compute time.Duration
	started         time.Time
}

// stepSpan is one step on the wall clock, with the share of it the tensor
// cores and HBM were busy.
type stepSpan struct {
	start, end      time.Time
	kernel, compute float64 // shares of the step, 0..1
	memory          float64
}

func (a *activity) record(res *StepResult) {
	if res.Duration <= 0 {
		return
	}
	d := float64(res.Duration)
	span := stepSpan{
		start:   res.Start,
		end:     res.End,
		kernel:  float64(max(res.ComputeTime, res.MemoryTime)) / d,
		compute: float64(res.ComputeTime) / d,
		memory:  float64(res.MemoryTime) / d,
	}
	a.kernel += max(res.ComputeTime, res.MemoryTime)
	a.compute += res.ComputeTime
	// Forget steps that ended before the window.
	cut := res.Start.Add(-activityWindow)
	i := 0
	for i < len(a.steps) && a.steps[i].end.Before(cut) {
		i++
	}
	a.steps = a.steps[i:]
	// At a high --speed steps last microseconds; merge back-to-back ones
	// into spans of up to mergeSpan so the window holds at most a few
	// hundred entries whatever the step rate.
	if n := len(a.steps); n > 0 {
		last := &a.steps[n-1]
		if lastLen := last.end.Sub(last.start); !span.start.After(last.end) && lastLen < mergeSpan {
			w1, w2 := float64(lastLen), d
			mix := func(x, y float64) float64 { return (x*w1 + y*w2) / (w1 + w2) }
			last.kernel, last.compute, last.memory = mix(last.kernel, span.kernel), mix(last.compute, span.compute), mix(last.memory, span.memory)
			last.end = span.end
			return
		}
	}
	a.steps = append(a.steps, span)
}

// mergeSpan is the longest span back-to-back steps are merged into.
const mergeSpan = 10 * time.Millisecond

// gpuActivity is the simulated GPU's activity over the last window.
type gpuActivity struct {
	// busy is the share of time a step was running (any kernel: DCGM_FI_DEV_GPU_UTIL).
	busy float64
	// kernel is the share of time the GPU computed or moved memory, without
	// the step's fixed CPU-side overhead (DCGM_FI_PROF_GR_ENGINE_ACTIVE).
	kernel float64
	// compute and memory are the tensor-core and HBM busy shares.
	compute, memory float64
	// Cumulative busy times since start.
	totalKernel, totalCompute time.Duration
	uptime                    time.Duration
}

func (a *activity) sample(now time.Time) gpuActivity {
	from := now.Add(-activityWindow)
	var out gpuActivity
	for _, s := range a.steps {
		lo, hi := s.start, s.end
		if lo.Before(from) {
			lo = from
		}
		if hi.After(now) {
			hi = now
		}
		if !hi.After(lo) {
			continue
		}
		share := float64(hi.Sub(lo)) / float64(activityWindow)
		out.busy += share
		out.kernel += share * s.kernel
		out.compute += share * s.compute
		out.memory += share * s.memory
	}
	out.busy, out.kernel = min(out.busy, 1), min(out.kernel, 1)
	out.compute, out.memory = min(out.compute, 1), min(out.memory, 1)
	out.totalKernel, out.totalCompute = a.kernel, a.compute
	if !a.started.IsZero() {
		out.uptime = now.Sub(a.started)
	}
	return out
}

// gpuSample is what the DCGM endpoint reads from a replica.
type gpuSample struct {
	activity gpuActivity
	slowdown float64
	preset   Preset
}

func (r *Replica) gpuSample(now time.Time) gpuSample {
	r.mu.Lock()
	defer r.mu.Unlock()
	return gpuSample{activity: r.act.sample(now), slowdown: r.faults.slowdown, preset: r.preset}
}
