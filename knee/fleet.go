package knee

// ReplicasNeeded is how many replicas carry a fleet's load with the target
// headroom kept in reserve:
//
//	knee load ÷ (1 − target headroom)
//
// where the knee load is the sum of the replicas' knee load ratios, each
// 1 − its headroom: a replica at its knee carries 1, an idle one 0. That is
// the scale headroom is read on, so a fleet whose every replica keeps more
// than the target headroom needs fewer replicas than it has, and one whose
// every replica keeps less needs more.
//
// Sizing by output tokens/s ÷ knee goodput, as this once did, contradicted
// headroom: throughput is concave in load, so a replica at 0.665 of its
// knee concurrency (headroom 0.335) already makes ~85% of the knee's
// tokens/s, and ÷ 0.8 read 1.06 replicas needed for one with more than the
// target headroom.
//
// It is fractional; round up to provision. ok is false, and the value
// unknown, when the knee load is unknown or negative, or the target
// headroom is outside [0,1).
func ReplicasNeeded(kneeLoad, targetHeadroom float64) (float64, bool) {
	if !nonNegative(kneeLoad) || !Known(targetHeadroom) || targetHeadroom < 0 || targetHeadroom >= 1 {
		return Unknown(), false
	}
	return kneeLoad / (1 - targetHeadroom), true
}

// Fleet summarizes the replicas serving one model.
type Fleet struct {
	Replicas  int // replicas evaluated, OK or not
	Available int // replicas whose evaluation is OK

	// OfferedTokensPerSecond is the output tokens/s the available replicas
	// serve; unknown when any of theirs is. For reading only: sizing does
	// not use it (see ReplicasNeeded).
	OfferedTokensPerSecond float64
	// KneeLoad is Σ (1 − headroom) over the available replicas: how many
	// replicas' worth of knee the fleet's load fills, on headroom's scale.
	KneeLoad float64
	// ReplicasNeeded is ReplicasNeeded(KneeLoad, target headroom). Replicas
	// that are not available carry load that is not counted, and load past
	// a knee is counted only as far as the queue shows it, so it is a lower
	// bound then.
	ReplicasNeeded float64
	// Headroom is 1 − Σ load ÷ Σ knee concurrency over the available
	// replicas: the headroom the fleet would have if load were spread
	// evenly, which a load balancer approximates. Unknown when none is
	// available.
	Headroom float64
}

// SummarizeFleet summarizes one model's replica results against a target
// headroom (the share of knee capacity to keep in reserve, 0..1).
func SummarizeFleet(results []Result, targetHeadroom float64) Fleet {
	f := Fleet{Replicas: len(results)}
	var load, kneeConcurrency, offered, kneeLoad float64
	offeredKnown := true
	for i := range results {
		r := &results[i]
		if !r.OK {
			continue
		}
		f.Available++
		load += r.Load
		kneeConcurrency += r.Knee.Concurrency
		kneeLoad += 1 - r.Headroom
		if Known(r.OutputTokensPerSecond) {
			offered += r.OutputTokensPerSecond
		} else {
			offeredKnown = false
		}
	}
	f.OfferedTokensPerSecond, f.KneeLoad, f.ReplicasNeeded, f.Headroom = Unknown(), Unknown(), Unknown(), Unknown()
	if f.Available == 0 {
		return f
	}
	// Sums of replicas' finite values can still overflow (two loads of
	// 1e308 from broken gauges): an overflowed sum is unknown, not ±Inf.
	f.Headroom = knownOrUnknown(1 - load/kneeConcurrency)
	f.KneeLoad = knownOrUnknown(kneeLoad)
	if Known(f.KneeLoad) {
		f.ReplicasNeeded, _ = ReplicasNeeded(kneeLoad, targetHeadroom)
	}
	if offeredKnown {
		f.OfferedTokensPerSecond = knownOrUnknown(offered)
	}
	return f
}

// FleetSummary summarizes each model's replicas; results are keyed by model.
func FleetSummary(resultsByModel map[string][]Result, targetHeadroom float64) map[string]Fleet {
	out := make(map[string]Fleet, len(resultsByModel))
	for model, results := range resultsByModel {
		out[model] = SummarizeFleet(results, targetHeadroom)
	}
	return out
}
