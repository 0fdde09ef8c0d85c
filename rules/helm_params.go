package rules

import (
	"strconv"
	"time"
)

// This file lists the parameters the chart's rule template (FormatHelm)
// reads from the chart's values: every config.alerts key the rules' PromQL,
// for, keep_firing_for or annotation text depend on, the config's
// global.target_headroom (fleet sizing) and the chart's evaluationWindow
// (serve's --evaluation.window, the ruler group's window).

// paramKind is how a parameter is written into the rules.
type paramKind int

const (
	// ratioParam is a number: a PromQL literal (form "num"), a percentage
	// ("pct") or a number in text ("text").
	ratioParam paramKind = iota
	// countParam is a whole number ("int"), in PromQL and in text alike.
	countParam
	// durationParam is a duration as Prometheus writes it ("dur"), in a
	// rule's for, a PromQL range, a recording rule's name or text.
	durationParam
)

// helmParam is one parameter of the chart's rule template.
type helmParam struct {
	// id is its key in the template's $p.
	id string
	// path is where the chart's values set it, dotted from .Values; empty
	// for a parameter derived from another (of).
	path string
	kind paramKind
	// get returns a pointer to the option it sets: a *float64 for a ratio,
	// an *int for a count, a *time.Duration for a duration. Derived
	// parameters have none.
	get func(*Options) any
	// of names the parameter this one is 1 − of (the error budget of the
	// objective, the spare share of the target headroom).
	of string
	// sentinels are two values of the parameter that keep every other
	// sentinel valid and the rules' structure that of the defaults (as the
	// axes and refusals describe it), and whose printed forms occur nowhere
	// else in the rules: the template is cut where they print.
	sentinels [2]float64
	// refuse, when set, is a value the template cannot follow because it
	// changes which rules, arms or groups are generated: the chart stops
	// with the reason and directions.
	refuse *refusal
}

// refusal is a parameter value the chart's template does not follow.
type refusal struct {
	// zero: the template is refused when the value is 0 (else when it
	// is not).
	zero   bool
	reason string
}

// refused reports whether o's value of p is one the template refuses.
func (p helmParam) refused(o Options) bool {
	if p.refuse == nil {
		return false
	}
	return (p.value(o) == 0) == p.refuse.zero
}

func ratio(f func(*Options) *float64) func(*Options) any {
	return func(o *Options) any { return f(o) }
}

func count(f func(*Options) *int) func(*Options) any {
	return func(o *Options) any { return f(o) }
}

func duration(f func(*Options) *time.Duration) func(*Options) any {
	return func(o *Options) any { return f(o) }
}

// helmParams are the template's parameters. Sentinel durations are in
// milliseconds.
func helmParams() []helmParam {
	h := func(h, m, s float64) float64 { return ((h*60+m)*60 + s) * 1000 }
	return []helmParam{
		{id: "headroom_low_below", path: "config.alerts.headroom_low.below", kind: ratioParam,
			get: ratio(func(o *Options) *float64 { return &o.HeadroomLow.Below }), sentinels: [2]float64{0.4137, 0.4173}},
		{id: "headroom_low_for", path: "config.alerts.headroom_low.for", kind: durationParam,
			get: duration(func(o *Options) *time.Duration { return &o.HeadroomLow.For }), sentinels: [2]float64{h(1, 7, 13), h(1, 7, 31)}},
		{id: "headroom_exhausted_below", path: "config.alerts.headroom_exhausted.below", kind: ratioParam,
			get: ratio(func(o *Options) *float64 { return &o.HeadroomExhausted.Below }), sentinels: [2]float64{0.0713, 0.0731}},
		{id: "headroom_exhausted_for", path: "config.alerts.headroom_exhausted.for", kind: durationParam,
			get: duration(func(o *Options) *time.Duration { return &o.HeadroomExhausted.For }), sentinels: [2]float64{h(2, 9, 17), h(2, 9, 41)}},
		{id: "headroom_exhausted_hold", path: "config.alerts.headroom_exhausted.hold", kind: durationParam,
			get: duration(func(o *Options) *time.Duration { return &o.HeadroomExhausted.BelowHold }), sentinels: [2]float64{h(3, 1, 19), h(3, 1, 23)},
			refuse: &refusal{zero: true, reason: "takes the hold out of the page's level arm"}},
		{id: "headroom_exhausted_sustain_requests", path: "config.alerts.headroom_exhausted.sustain_requests", kind: countParam,
			get: count(func(o *Options) *int { return &o.HeadroomExhausted.SustainRequests }), sentinels: [2]float64{1371, 1713},
			refuse: &refusal{zero: true, reason: "makes the page read the exported headroom and leaves the kneewatch-headroom group out"}},
		{id: "headroom_exhausted_quick_requests", path: "config.alerts.headroom_exhausted.quick_requests", kind: countParam,
			get: count(func(o *Options) *int { return &o.HeadroomExhausted.QuickRequests }), sentinels: [2]float64{917, 971},
			refuse: &refusal{zero: true, reason: "takes the quick arm out of the page and its recording rule out of the kneewatch-headroom group"}},
		{id: "headroom_exhausted_quick_below", path: "config.alerts.headroom_exhausted.quick_below", kind: ratioParam,
			get: ratio(func(o *Options) *float64 { return &o.HeadroomExhausted.QuickBelow }), sentinels: [2]float64{-0.5137, -0.5173}},
		{id: "headroom_exhausted_recovered_above", path: "config.alerts.headroom_exhausted.recovered_above", kind: ratioParam,
			get: ratio(func(o *Options) *float64 { return &o.HeadroomExhausted.RecoveredAbove }), sentinels: [2]float64{0.3317, 0.3371},
			refuse: &refusal{zero: true, reason: "takes the recovery guard out of the page's level arm"}},
		{id: "headroom_exhausted_predict_window", path: "config.alerts.headroom_exhausted.predict_window", kind: durationParam,
			get:    duration(func(o *Options) *time.Duration { return &o.HeadroomExhausted.PredictHorizon }),
			refuse: &refusal{zero: false, reason: "adds the trend arm to the page"}},
		{id: "headroom_exhausted_predict_confirm", path: "config.alerts.headroom_exhausted.predict_confirm", kind: durationParam,
			get: duration(func(o *Options) *time.Duration { return &o.HeadroomExhausted.PredictConfirm }), sentinels: [2]float64{h(0, 1, 11), h(0, 1, 17)}},
		{id: "headroom_exhausted_predict_guard", path: "config.alerts.headroom_exhausted.predict_guard", kind: ratioParam,
			get: ratio(func(o *Options) *float64 { return &o.HeadroomExhausted.PredictBelow }), sentinels: [2]float64{0.6137, 0.6173}},
		{id: "headroom_exhausted_keep_firing_for", path: "config.alerts.headroom_exhausted.keep_firing_for", kind: durationParam,
			get: duration(func(o *Options) *time.Duration { return &o.HeadroomExhausted.KeepFiringFor }), sentinels: [2]float64{h(4, 2, 29), h(4, 2, 37)}},
		{id: "headroom_exhausted_watched_for", path: "config.alerts.headroom_exhausted.watched_for", kind: durationParam,
			get: duration(func(o *Options) *time.Duration { return &o.HeadroomExhausted.WatchedFor }), sentinels: [2]float64{h(7, 5, 13), h(7, 5, 31)},
			refuse: &refusal{zero: true, reason: "takes the new-replica wait out of the page"}},
		{id: "past_knee_below", path: "config.alerts.past_knee.below", kind: ratioParam,
			get: ratio(func(o *Options) *float64 { return &o.PastKnee.Below }), sentinels: [2]float64{-0.0317, -0.0371}},
		{id: "past_knee_for", path: "config.alerts.past_knee.for", kind: durationParam,
			get: duration(func(o *Options) *time.Duration { return &o.PastKnee.For }), sentinels: [2]float64{h(5, 3, 43), h(5, 3, 47)}},
		{id: "past_knee_keep_firing_for", path: "config.alerts.past_knee.keep_firing_for", kind: durationParam,
			get: duration(func(o *Options) *time.Duration { return &o.PastKnee.KeepFiringFor }), sentinels: [2]float64{h(6, 4, 53), h(6, 4, 59)}},
		{id: "slo_objective", path: "config.alerts.slo_objective", kind: ratioParam,
			get: ratio(func(o *Options) *float64 { return &o.SLO.Objective }), sentinels: [2]float64{0.9713, 0.9731}},
		{id: "slo_budget", of: "slo_objective", kind: ratioParam},
		{id: "kv_pressure_margin", path: "config.alerts.kv_pressure.margin", kind: ratioParam,
			get: ratio(func(o *Options) *float64 { return &o.KVCache.Margin }), sentinels: [2]float64{0.0613, 0.0631}},
		{id: "kv_pressure_preemptions_per_second", path: "config.alerts.kv_pressure.preemptions_per_second", kind: ratioParam,
			get: ratio(func(o *Options) *float64 { return &o.KVCache.PreemptionsPerSecond }), sentinels: [2]float64{0.1913, 0.1931}},
		{id: "kv_pressure_for", path: "config.alerts.kv_pressure.for", kind: durationParam,
			get: duration(func(o *Options) *time.Duration { return &o.KVCache.For }), sentinels: [2]float64{h(7, 5, 11), h(7, 5, 19)}},
		{id: "probes_failing_success_warning", path: "config.alerts.probes_failing.success_warning", kind: ratioParam,
			get: ratio(func(o *Options) *float64 { return &o.Probes.SuccessBelow }), sentinels: [2]float64{0.8137, 0.8173}},
		{id: "probes_failing_for", path: "config.alerts.probes_failing.for", kind: durationParam,
			get: duration(func(o *Options) *time.Duration { return &o.Probes.SuccessFor }), sentinels: [2]float64{h(8, 6, 7), h(8, 6, 17)}},
		{id: "probes_failing_all_failing_for", path: "config.alerts.probes_failing.all_failing_for", kind: durationParam,
			get: duration(func(o *Options) *time.Duration { return &o.Probes.FailingWindow }), sentinels: [2]float64{h(0, 4, 23), h(0, 4, 29)}},
		{id: "fleet_capacity_for", path: "config.alerts.fleet_capacity.for", kind: durationParam,
			get: duration(func(o *Options) *time.Duration { return &o.Fleet.For }), sentinels: [2]float64{h(9, 8, 3), h(9, 8, 53)}},
		{id: "target_headroom", path: "config.global.target_headroom", kind: ratioParam,
			get: ratio(func(o *Options) *float64 { return &o.Fleet.TargetHeadroom }), sentinels: [2]float64{0.2713, 0.2731}},
		{id: "target_spare", of: "target_headroom", kind: ratioParam},
		{id: "evaluation_window", path: "evaluationWindow", kind: durationParam,
			get: duration(func(o *Options) *time.Duration { return &o.Ruler.Window }), sentinels: [2]float64{h(0, 1, 37), h(0, 1, 43)}},
	}
}

// setParam sets a parameter (not a derived one) in o: a ratio or count as
// it is, a duration in milliseconds. The evaluation window sets both
// places the rules read it.
func setParam(p helmParam, o *Options, v float64) {
	switch ptr := p.get(o).(type) {
	case *float64:
		*ptr = v
	case *int:
		*ptr = int(v)
	case *time.Duration:
		*ptr = time.Duration(int64(v)) * time.Millisecond
	}
	if p.id == "evaluation_window" {
		o.HeadroomExhausted.SustainBaseWindow = o.Ruler.Window
	}
}

// value is p's value in o: a ratio or count as it is, a duration in
// milliseconds, a derived parameter as 1 − the one it derives from.
func (p helmParam) value(o Options) float64 {
	if p.of != "" {
		for _, q := range helmParams() {
			if q.id == p.of {
				return complement(q.value(o))
			}
		}
		panic("rules: helm parameter " + p.id + " derives from an unknown " + p.of)
	}
	switch ptr := p.get(&o).(type) {
	case *float64:
		return *ptr
	case *int:
		return float64(*ptr)
	case *time.Duration:
		return float64(*ptr / time.Millisecond) // exact below 2⁵³ ms
	}
	panic("rules: helm parameter " + p.id + " has no value")
}

// forms are the ways a parameter of p's kind is printed, by form name.
func (p helmParam) forms(v float64) map[string]string {
	switch p.kind {
	case ratioParam:
		return map[string]string{
			"num":  strconv.FormatFloat(v, 'f', -1, 64), // as the PromQL printer writes a number
			"pct":  pct(v),
			"text": numText(v),
		}
	case countParam:
		return map[string]string{"int": strconv.FormatInt(int64(v), 10)}
	default:
		return map[string]string{"dur": dur(time.Duration(int64(v)) * time.Millisecond)}
	}
}

// place is where in a rule a string sits, which decides the forms a
// parameter takes there.
type place int

const (
	inPromQL place = iota // an expr
	inName                // a recording rule's name
	inFor                 // a for or keep_firing_for
	inText                // annotations and group comments
)

// formsIn are the form names a parameter of kind k may take in place c.
func formsIn(k paramKind, c place) []string {
	switch k {
	case ratioParam:
		switch c {
		case inPromQL:
			return []string{"num"}
		case inText:
			return []string{"pct", "text"}
		}
	case countParam:
		if c == inPromQL || c == inText {
			return []string{"int"}
		}
	case durationParam:
		return []string{"dur"}
	}
	return nil
}
