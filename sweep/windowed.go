package sweep

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kneewatch/kneewatch/knee"
)

// latencyEvents are a trial's TTFT events, stamped when each verdict was
// known (knee.TTFTByDeadline: the first token, or the arrival + the TTFT
// threshold for a request that missed it, including one cut off at end
// before its first token), and TPOT events, stamped at each successful end,
// both in time order as knee.WindowedQuantile needs them.
func latencyEvents(reqs []*sentRequest, slo knee.SLO, end time.Time) (ttft, tpot []knee.LatencyEvent) {
	var waiting []time.Time
	for _, r := range reqs {
		res := r.res
		switch {
		case res.TTFT > 0:
			ttft = append(ttft, knee.LatencyEvent{At: res.Start.Add(res.TTFT), Seconds: res.TTFT.Seconds()})
		case r.cancelled:
			// Cut off at the trial's end before its first token.
			waiting = append(waiting, r.sent)
		}
		if d, ok := res.TPOT(); ok {
			tpot = append(tpot, knee.LatencyEvent{At: res.Start.Add(res.E2E), Seconds: d.Seconds()})
		}
	}
	slices.SortStableFunc(tpot, func(a, b knee.LatencyEvent) int { return a.At.Compare(b.At) })
	return knee.TTFTByDeadline(ttft, waiting, end, slo.TTFT.D()), tpot
}

// windowedVerdict is a trial's windowed SLO walked tick by tick
// (knee.WalkSLO), for its verdict and for saying why it failed.
type windowedVerdict struct {
	ticks, judged int
	breached      bool
	at            time.Time
	ttft, tpot    float64 // the windowed percentiles at the first breach
}

// windowedSLO walks a trial's windows. They reach back as far as they must
// to hold knee.MinWindowRequests requests (no stretch bound): a trial is
// sized to hold enough requests, so at a low rate every tick is judged
// rather than left unknown and waved through.
func windowedSLO(ttft, tpot []knee.LatencyEvent, slo knee.SLO, width time.Duration, from, to time.Time, step time.Duration) windowedVerdict {
	w := knee.WalkSLO(ttft, tpot, slo, width, -1, from, to, step)
	return windowedVerdict{ticks: w.Ticks, judged: w.Judged, breached: w.Breached, at: w.At, ttft: w.TTFT, tpot: w.TPOT}
}

// describe says which percentile broke first, and when in the steady part.
func (v windowedVerdict) describe(q string, slo knee.SLO, from time.Time) string {
	var why []string
	if knee.Known(v.ttft) && v.ttft > slo.TTFT.Seconds() {
		why = append(why, fmt.Sprintf("%s TTFT %s > %s", q, seconds(v.ttft), slo.TTFT))
	}
	if knee.Known(v.tpot) && v.tpot > slo.TPOT.Seconds() {
		why = append(why, fmt.Sprintf("%s TPOT %s > %s", q, seconds(v.tpot), slo.TPOT))
	}
	return cmp.Or(strings.Join(why, " and "), "windowed SLO breached") +
		fmt.Sprintf(" at %s into the steady part", v.at.Sub(from).Round(time.Millisecond))
}
