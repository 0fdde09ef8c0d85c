package knee

// ReplicasNeeded is how many replicas serve an offered load of goodput with
// the target headroom kept in reserve:
//
//	offered ÷ (knee goodput per replica × (1 − target headroom))
//
// It is fractional; round up to provision. ok is false, and the value
// unknown, when offered is unknown or negative, the knee goodput is not
// > 0, or the target headroom is outside [0,1).
func ReplicasNeeded(offeredGoodput, kneeGoodputPerReplica, targetHeadroom float64) (float64, bool) {
	if !nonNegative(offeredGoodput) || !Known(kneeGoodputPerReplica) || kneeGoodputPerReplica <= 0 ||
		!Known(targetHeadroom) || targetHeadroom < 0 || targetHeadroom >= 1 {
		return Unknown(), false
	}
	return offeredGoodput / (kneeGoodputPerReplica * (1 - targetHeadroom)), true
}

// Fleet summarizes the replicas serving one model.
type Fleet struct {
	Replicas  int // replicas evaluated, OK or not
	Available int // replicas whose evaluation is OK

	// OfferedTokensPerSecond is the output tokens/s the available replicas
	// serve, standing in for the offered goodput. It undercounts demand
	// that is still queued, so when Headroom < 0 ReplicasNeeded is a
	// lower bound.
	OfferedTokensPerSecond float64
	// KneeGoodputPerReplica is the mean knee goodput of the available
	// replicas (their profiles may differ, e.g. mixed GPU types).
	KneeGoodputPerReplica float64
	// ReplicasNeeded is ReplicasNeeded(OfferedTokensPerSecond,
	// KneeGoodputPerReplica, target headroom); unknown when any input is,
	// including when an available replica's output tokens/s is unknown.
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
	var load, kneeConcurrency, offered, kneeGoodput float64
	offeredKnown := true
	for i := range results {
		r := &results[i]
		if !r.OK {
			continue
		}
		f.Available++
		load += r.Load
		kneeConcurrency += r.Knee.Concurrency
		kneeGoodput += r.Knee.GoodputTokensPerSecond
		if Known(r.OutputTokensPerSecond) {
			offered += r.OutputTokensPerSecond
		} else {
			offeredKnown = false
		}
	}
	f.OfferedTokensPerSecond, f.KneeGoodputPerReplica, f.ReplicasNeeded, f.Headroom = Unknown(), Unknown(), Unknown(), Unknown()
	if f.Available == 0 {
		return f
	}
	f.Headroom = 1 - load/kneeConcurrency
	f.KneeGoodputPerReplica = kneeGoodput / float64(f.Available)
	if offeredKnown {
		f.OfferedTokensPerSecond = offered
		f.ReplicasNeeded, _ = ReplicasNeeded(offered, f.KneeGoodputPerReplica, targetHeadroom)
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
