package rules

import (
	"fmt"
	"slices"
	"time"
)

// RunbookParameters lists, per alert, every number the alert's runbook
// states about when it fires, formatted as the runbooks write them (2m,
// 20%, 14.4×, 0.1 requests/s, 5 points), from o. The runbooks and their
// index must state these numbers and no others, so a doc and a rule cannot
// disagree (TestRunbooksStateTheRulesNumbers); rendering them from o keeps
// the list next to the code that builds the rule.
func RunbookParameters(o Options) map[string][]string {
	burn := func(windows []BurnWindow, forDur time.Duration) []string {
		budget := complement(o.SLO.Objective)
		ps := []string{dur(forDur), pct(o.SLO.Objective)}
		for _, w := range windows {
			ps = append(ps, numText(w.Factor)+"×", dur(w.Long), dur(w.Short), pct(round12(w.Factor*budget)))
		}
		return ps
	}
	h := o.HeadroomExhausted
	out := map[string][]string{
		AlertHeadroomLow:        {pct(o.HeadroomLow.Below), dur(o.HeadroomLow.For)},
		AlertHeadroomExhausted:  headroomExhaustedParameters(h),
		AlertPastKnee:           append([]string{dur(o.PastKnee.For), dur(o.HeadroomExhausted.SustainBaseWindow), pct(complement(o.SLO.Objective))}, keepFiringParameter(o.PastKnee.KeepFiringFor)...),
		AlertGoodputSLOBurnFast: burn(o.SLO.Page, o.SLO.PageFor),
		AlertGoodputSLOBurnSlow: burn(o.SLO.Ticket, o.SLO.TicketFor),
		AlertModelSLOBurnFast:   burn(o.SLO.Page, o.SLO.PageFor),
		AlertModelSLOBurnSlow:   burn(o.SLO.Ticket, o.SLO.TicketFor),
		AlertKVCachePressure: {dur(o.KVCache.For), numText(o.KVCache.Margin*100) + " points", pct(o.KVCache.MinUsage),
			numText(o.KVCache.PreemptionsPerSecond) + " requests/s"},
		AlertProbesFailing:      {dur(o.Probes.FailingWindow), dur(o.Probes.FailingFor)},
		AlertProbeSuccessLow:    {pct(o.Probes.SuccessBelow), dur(o.Probes.SuccessWindow), dur(o.Probes.SuccessFor)},
		AlertFleetCapacityLow:   {dur(o.Fleet.For)},
		AlertKneeProfileMissing: {dur(o.ProfileMissing.For)},
		AlertKneeProfileDrift:   profileDriftParameters(o),
		AlertTargetDown:         {dur(o.TargetDown.For)},
		AlertAbsent:             {dur(o.Absent.For)},
	}
	for name, ps := range out {
		slices.Sort(ps)
		out[name] = slices.Compact(ps)
	}
	if len(out) != len(Alerts()) {
		panic(fmt.Sprintf("rules: RunbookParameters covers %d alerts, Alerts() lists %d", len(out), len(Alerts())))
	}
	return out
}

// headroomExhaustedParameters are the numbers of the page's armed
// conditions: the level arm's threshold, hold and request count, the
// alert's for when it has one, and the trend arm's when it is on.
func headroomExhaustedParameters(h HeadroomExhaustedOptions) []string {
	ps := []string{pct(h.Below)}
	if h.BelowHold > 0 {
		ps = append(ps, dur(h.BelowHold))
	}
	if h.For > 0 {
		ps = append(ps, dur(h.For))
	}
	if h.SustainRequests > 0 {
		ps = append(ps, fmt.Sprintf("%d requests", h.SustainRequests))
		if floor := h.SustainFloorRequests; floor > 0 {
			// The longest window, and the fewest requests its average stands on.
			ps = append(ps, fmt.Sprintf("%d requests", floor), dur(h.SustainWindows[len(h.SustainWindows)-1]))
		}
		if h.RecoveredAbove > 0 {
			ps = append(ps, pct(h.RecoveredAbove))
		}
	}
	if h.quickArm() {
		// The quick arm's threshold is stated as how far past the knee.
		ps = append(ps, fmt.Sprintf("%d requests", h.QuickRequests), pct(-h.QuickBelow))
		if ws := h.quickWindows(); ws[0] > 0 {
			ps = append(ps, dur(ws[0])) // its shortest window, when not the exported headroom's
		}
	}
	if h.PredictHorizon > 0 {
		ps = append(ps, pct(h.PredictBelow), dur(h.PredictLookback), dur(h.PredictHorizon))
	}
	if h.WatchedFor > 0 {
		ps = append(ps, dur(h.WatchedFor))
	}
	return append(ps, keepFiringParameter(h.KeepFiringFor)...)
}

// keepFiringParameter is an alert's keep_firing_for, when it has one.
func keepFiringParameter(d time.Duration) []string {
	if d <= 0 {
		return nil
	}
	return []string{dur(d)}
}

// profileDriftParameters are KneewatchKneeProfileDrift's numbers: its
// three signals' thresholds and its for.
func profileDriftParameters(o Options) []string {
	d := o.ProfileDrift
	ps := []string{dur(d.For), pct(d.MixDriftAbove), pct(d.EfficiencyBelow)}
	if d.SLOHeldWindow > 0 {
		ps = append(ps, dur(d.SLOHeldWindow), fmt.Sprintf("%d requests", d.SLOHeldMinRequests), pct(o.SLO.Objective))
	}
	return ps
}
