package knee

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
)

// KVSaturation is the KV-cache usage at which a replica is treated as
// KV-bound: close enough to full that admission stalls and preemptions
// follow. vLLM preempts only when the cache is exhausted; at 0.9 the next
// burst of long prompts gets there.
const KVSaturation = 0.9

// LimitingResource says what limits a replica at an operating point: the KV
// cache when its usage is at least KVSaturation or any preemption happened,
// else compute.
func LimitingResource(pt Point) Resource {
	if pt.KVCacheUsage >= KVSaturation || pt.PreemptionsPerSecond > 0 {
		return ResourceKVCache
	}
	return ResourceCompute
}

// FindFromPoints finds the knee among sweep points: the point of highest
// concurrency such that it and every point below it meet the SLO.
//
// A point meets the SLO when the sweep said so (MeetsSLO: judged at the
// SLO's own quantile, and on errors) and, when the SLO quantile is 0.99 so
// the point records it, its p99 TTFT and p99 TPOT are within the
// thresholds too. A point that meets the
// SLO above one that broke it is not taken: it is noise or a transient in
// the sweep, and an optimistic knee would page late. Points may come in any
// order (a sweep runs them as 1, 2, 4, …, then bisects); duplicates are an
// error. The knee is a measured point: the sweeps refine by measuring
// between the last good and the first bad level, not by interpolating.
func FindFromPoints(points []Point, slo SLO) (Knee, error) {
	sorted, k, err := lastGood(points, slo)
	if err != nil {
		return Knee{}, err
	}
	return kneeAt(sorted[k]), nil
}

// lastGood sorts a copy of the points by concurrency and returns it with the
// index of the knee point.
func lastGood(points []Point, slo SLO) ([]Point, int, error) {
	if len(points) == 0 {
		return nil, 0, errors.New("finding the knee: no sweep points")
	}
	sorted := slices.SortedFunc(slices.Values(points), func(a, b Point) int {
		return cmp.Compare(a.Concurrency, b.Concurrency)
	})
	for i := 1; i < len(sorted); i++ {
		if sorted[i].Concurrency == sorted[i-1].Concurrency {
			return nil, 0, fmt.Errorf("finding the knee: two sweep points at concurrency %g", sorted[i].Concurrency)
		}
	}
	k := -1
	for i := range sorted {
		if !meetsSLO(&sorted[i], slo) {
			break
		}
		k = i
	}
	if k < 0 {
		return nil, 0, fmt.Errorf("finding the knee: the lowest concurrency swept (%g) already breaks the SLO, so there is no knee to report", sorted[0].Concurrency)
	}
	return sorted, k, nil
}

func kneeAt(pt Point) Knee {
	return Knee{
		Concurrency:            pt.Concurrency,
		OutputTokensPerSecond:  pt.OutputTokensPerSecond,
		GoodputTokensPerSecond: pt.GoodputTokensPerSecond,
		KVCacheUsage:           pt.KVCacheUsage,
		LimitingResource:       LimitingResource(pt),
	}
}

func meetsSLO(pt *Point, slo SLO) bool {
	if !pt.MeetsSLO {
		return false
	}
	if !isP99(slo.Quantile) {
		return true
	}
	return (slo.TTFT <= 0 || pt.TTFT.P99 <= slo.TTFT.Seconds()) &&
		(slo.TPOT <= 0 || pt.TPOT.P99 <= slo.TPOT.Seconds())
}

// isP99 reports whether q is the 0.99 quantile, the one points record.
func isP99(q float64) bool { return math.Abs(q-0.99) < 1e-9 }
