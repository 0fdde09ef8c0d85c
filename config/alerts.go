package config

import (
	"math"
	"time"

	"github.com/kneewatch/kneewatch/strictyaml"
)

// Alerts holds the thresholds and conventions of the generated alert rules
// (`kneewatch rules`). Headroom is 1 − load ÷ knee: 0.2 means 20% below the
// knee, negative means past it.
type Alerts struct {
	// HeadroomLow is the warning: headroom under Below for For.
	// Default below 0.2 for 10m.
	HeadroomLow HeadroomLow `yaml:"headroom_low"`
	// HeadroomExhausted is the page: headroom, averaged over at least
	// SustainRequests finished requests, under Below for Hold (and For);
	// and, when PredictWindow is above 0, headroom predicted to reach 0
	// within PredictWindow (by its trend over 5m, and over the last
	// PredictConfirm when set) while under PredictGuard. Default under 0
	// (past the knee) for 30s over at least 100 requests while the last
	// window's headroom is under 0.2, no trend arm (see
	// rules.DefaultOptions for why).
	HeadroomExhausted HeadroomExhausted `yaml:"headroom_exhausted"`
	// PastKnee is the page for abrupt overload: headroom under Below while
	// a latency SLO percentile is over its threshold, for For. Default
	// below 0, at once (for 0s; see rules.DefaultOptions for why).
	PastKnee PastKnee `yaml:"past_knee"`
	// SLOObjective is the share of requests that must meet the SLO, the base
	// of the multi-window burn-rate alerts. At least 0.931, since the fast
	// 14.4× burn page must be reachable. Default 0.99.
	SLOObjective float64 `yaml:"slo_objective"`
	// KVPressure warns when KV-cache usage is above the knee's by more than
	// Margin, or preemptions exceed PreemptionsPerSecond, for For.
	// Default margin 0.05, 0.1 preemptions/s, for 10m.
	KVPressure KVPressure `yaml:"kv_pressure"`
	// ProbesFailing pages when every probe of a replica fails for
	// AllFailingFor, and warns when the success ratio is under
	// SuccessWarning for For. Default all failing for 5m; under 0.9 for 10m.
	ProbesFailing ProbesFailing `yaml:"probes_failing"`
	// FleetCapacity warns when the replicas needed exceed those available
	// for For. Default 15m.
	FleetCapacity FleetCapacity `yaml:"fleet_capacity"`
	// RunbookBaseURL is joined with "<alert>.md" for each alert's runbook_url
	// annotation. Default the runbooks in kneewatch's repository.
	RunbookBaseURL string `yaml:"runbook_base_url"`
	// DashboardBaseURL is the Grafana base URL (https://grafana.example.com)
	// for each alert's dashboard link. Empty: the links are relative to
	// Grafana's root (/d/kneewatch-replica?…).
	DashboardBaseURL string `yaml:"dashboard_base_url,omitempty"`
	// Labels are added to every generated rule (e.g. team: ml-platform).
	Labels map[string]string `yaml:"labels,omitempty"`
	// Disabled names generated alerts to leave out (e.g.
	// KneewatchProbeSuccessLow); the rules package rejects a name it does
	// not generate. The recording rules stay.
	Disabled []string `yaml:"disabled,omitempty"`
}

// HeadroomLow is the headroom warning threshold.
type HeadroomLow struct {
	Below float64  `yaml:"below"`
	For   Duration `yaml:"for"`
}

// HeadroomExhausted is the headroom page threshold.
type HeadroomExhausted struct {
	Below float64  `yaml:"below"`
	For   Duration `yaml:"for"`
	// Hold is how long the headroom must have stayed under Below: the
	// level arm's own hold inside the alert (0: the current value alone).
	Hold Duration `yaml:"hold"`
	// SustainRequests is how many finished requests the headroom the page
	// reads is averaged over, at least (0: the exported headroom, a mean
	// over serve's evaluation window).
	SustainRequests int `yaml:"sustain_requests"`
	// QuickRequests and QuickBelow are the page's quick arm: headroom
	// averaged over at least QuickRequests finished requests, in a window
	// of 2 minutes or more, under QuickBelow for Hold, so a step far past
	// the knee at a few requests a minute pages before the average over
	// SustainRequests takes it in (off when either count is 0).
	QuickRequests int     `yaml:"quick_requests"`
	QuickBelow    float64 `yaml:"quick_below"`
	// RecoveredAbove keeps the page quiet while the headroom of serve's
	// last evaluation window is at or above it, however long the average
	// over SustainRequests still remembers a surge (0: off).
	RecoveredAbove float64 `yaml:"recovered_above"`
	// PredictWindow is how far ahead the trend arm projects; 0 turns it off.
	PredictWindow Duration `yaml:"predict_window"`
	// PredictConfirm is the most recent span whose trend must also reach
	// the knee in time, so a settled step does not read as a fall; 0 turns
	// the confirmation off.
	PredictConfirm Duration `yaml:"predict_confirm"`
	PredictGuard   float64  `yaml:"predict_guard"`
	// KeepFiringFor is the page's keep_firing_for: a condition that lapses
	// for less than this and returns stays one page (0: resolve at once).
	KeepFiringFor Duration `yaml:"keep_firing_for"`
	// WatchedFor keeps the page quiet until kneewatch has counted a
	// replica's requests for this long: a replica that starts serving at
	// full rate overshoots while its batch fills (0: no wait).
	WatchedFor Duration `yaml:"watched_for"`
}

// PastKnee is the abrupt-overload page threshold.
type PastKnee struct {
	Below float64  `yaml:"below"`
	For   Duration `yaml:"for"`
	// KeepFiringFor is the alert's keep_firing_for (0: resolve at once).
	KeepFiringFor Duration `yaml:"keep_firing_for"`
}

// KVPressure is the KV-cache pressure warning threshold.
type KVPressure struct {
	Margin               float64  `yaml:"margin"`
	PreemptionsPerSecond float64  `yaml:"preemptions_per_second"`
	For                  Duration `yaml:"for"`
}

// ProbesFailing is the probe failure thresholds.
type ProbesFailing struct {
	SuccessWarning float64  `yaml:"success_warning"`
	For            Duration `yaml:"for"`
	AllFailingFor  Duration `yaml:"all_failing_for"`
}

// FleetCapacity is the fleet capacity warning threshold.
type FleetCapacity struct {
	For Duration `yaml:"for"`
}

// DefaultRunbookBaseURL points at the runbooks in kneewatch's repository.
const DefaultRunbookBaseURL = "https://github.com/kneewatch/kneewatch/blob/main/docs/runbooks/"

// fastBurnRate is the burn-rate multiple of the fastest SLO page (1h and 5m
// windows): at 14.4× a 30-day error budget lasts about two days.
const fastBurnRate = 14.4

// DefaultAlerts returns the alert defaults.
func DefaultAlerts() Alerts {
	return Alerts{
		HeadroomLow: HeadroomLow{Below: 0.2, For: Duration(10 * time.Minute)},
		HeadroomExhausted: HeadroomExhausted{
			Below:           0,
			For:             0,
			Hold:            Duration(30 * time.Second),
			SustainRequests: 100,
			QuickRequests:   50,
			QuickBelow:      -0.25,
			RecoveredAbove:  0.2,
			PredictWindow:   0,
			PredictConfirm:  0,
			PredictGuard:    0.6,
			KeepFiringFor:   Duration(5 * time.Minute),
			WatchedFor:      Duration(2 * time.Minute),
		},
		PastKnee:       PastKnee{Below: 0, For: 0, KeepFiringFor: Duration(5 * time.Minute)},
		SLOObjective:   0.99,
		KVPressure:     KVPressure{Margin: 0.05, PreemptionsPerSecond: 0.1, For: Duration(10 * time.Minute)},
		ProbesFailing:  ProbesFailing{SuccessWarning: 0.9, For: Duration(10 * time.Minute), AllFailingFor: Duration(5 * time.Minute)},
		FleetCapacity:  FleetCapacity{For: Duration(15 * time.Minute)},
		RunbookBaseURL: DefaultRunbookBaseURL,
	}
}

func (a Alerts) validate(p *strictyaml.List) {
	const path = "alerts"
	lowOK := a.HeadroomLow.Below > 0 && a.HeadroomLow.Below < 1
	if !lowOK {
		p.Add(path+".headroom_low.below", "%v is outside (0, 1)", a.HeadroomLow.Below)
	}
	e := a.HeadroomExhausted
	switch {
	case !(e.Below >= 0 && e.Below < 1):
		p.Add(path+".headroom_exhausted.below", "%v is outside [0, 1)", e.Below)
	case lowOK && e.Below >= a.HeadroomLow.Below:
		p.Add(path+".headroom_exhausted.below", "%v must be under headroom_low.below (%v): the page is the more urgent alert", e.Below, a.HeadroomLow.Below)
	}
	if e.RecoveredAbove != 0 && !(e.RecoveredAbove > e.Below && e.RecoveredAbove <= 1) {
		p.Add(path+".headroom_exhausted.recovered_above", "%v must be above headroom_exhausted.below (%v) and at most 1, or 0 (off)", e.RecoveredAbove, e.Below)
	}
	if e.SustainRequests < 0 {
		p.Add(path+".headroom_exhausted.sustain_requests", "%d must not be negative (0 reads the exported headroom as it is)", e.SustainRequests)
	}
	switch {
	case e.QuickRequests < 0:
		p.Add(path+".headroom_exhausted.quick_requests", "%d must not be negative (0 turns the quick arm off)", e.QuickRequests)
	case e.SustainRequests > 0 && e.QuickRequests >= e.SustainRequests:
		p.Add(path+".headroom_exhausted.quick_requests", "%d must be below headroom_exhausted.sustain_requests (%d), or 0 (off)", e.QuickRequests, e.SustainRequests)
	}
	if e.QuickRequests > 0 && e.SustainRequests > 0 && !(e.QuickBelow < e.Below) {
		p.Add(path+".headroom_exhausted.quick_below", "%v must be below headroom_exhausted.below (%v): fewer requests need a clearer reading", e.QuickBelow, e.Below)
	}
	if pk := a.PastKnee; (e.Below >= 0 && e.Below < 1) && !(pk.Below <= e.Below && pk.Below > -1) {
		p.Add(path+".past_knee.below", "%v must be in (-1, headroom_exhausted.below (%v)]: it pages on a replica at or past its knee", pk.Below, e.Below)
	}
	if !(e.PredictGuard > e.Below && e.PredictGuard <= 1) {
		p.Add(path+".headroom_exhausted.predict_guard", "%v must be above headroom_exhausted.below (%v) and at most 1", e.PredictGuard, e.Below)
	}
	switch minimum := 1 - 1/fastBurnRate; {
	case !(a.SLOObjective > 0 && a.SLOObjective < 1):
		p.Add(path+".slo_objective", "%v is outside (0, 1) (0.99 means 99%% of requests meet the SLO)", a.SLOObjective)
	case a.SLOObjective < minimum:
		p.Add(path+".slo_objective", "%v leaves an error budget of %.3g; the %.1f× fast-burn page would need an error ratio of %.3g, above 1, so it could never fire (use %.3f or more)",
			a.SLOObjective, 1-a.SLOObjective, fastBurnRate, fastBurnRate*(1-a.SLOObjective), math.Ceil(minimum*1000)/1000)
	}
	if !(a.KVPressure.Margin >= 0 && a.KVPressure.Margin < 1) {
		p.Add(path+".kv_pressure.margin", "%v is outside [0, 1)", a.KVPressure.Margin)
	}
	if !(a.KVPressure.PreemptionsPerSecond > 0) {
		p.Add(path+".kv_pressure.preemptions_per_second", "must be above 0, got %v", a.KVPressure.PreemptionsPerSecond)
	}
	if a.ProbesFailing.AllFailingFor <= 0 {
		p.Add(path+".probes_failing.all_failing_for", "must be above 0 (the span with no successful probe that pages), got %s", a.ProbesFailing.AllFailingFor)
	}
	if !(a.ProbesFailing.SuccessWarning > 0 && a.ProbesFailing.SuccessWarning <= 1) {
		p.Add(path+".probes_failing.success_warning", "%v is outside (0, 1]", a.ProbesFailing.SuccessWarning)
	}
	if a.RunbookBaseURL != "" {
		validateBaseURL(a.RunbookBaseURL, path+".runbook_base_url", p)
	}
	if a.DashboardBaseURL != "" {
		validateBaseURL(a.DashboardBaseURL, path+".dashboard_base_url", p)
	}
	validateLabelNames(a.Labels, reservedAlertLabels(), "is set by the generated rules or by Prometheus", path+".labels", p)
}

// reservedAlertLabels are labels the generated rules set or Prometheus owns:
// the alert's name and severity, the labels kneewatch's series carry into
// alerts (replica, model, profile, slo, source, signal), and the scrape
// target's job and instance. Keep in step with the rules package's list
// (rules/config_test.go checks every one of its names is rejected here).
func reservedAlertLabels() []string {
	return []string{"alertname", "severity", "replica", "model", "profile", "slo", "source", "signal", "job", "instance"}
}

// validateBaseURL checks a base URL used to build links.
func validateBaseURL(s, path string, p *strictyaml.List) {
	u, err := ParseURL(s)
	if err != nil {
		p.Add(path, "not a URL: %v", err)
		return
	}
	validateHTTPURL(u, path, p)
}
