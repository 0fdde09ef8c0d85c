package rules

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/kneewatch/kneewatch/config"
)

// FromConfig maps the config file's alerts section onto the rule options.
// evaluationWindow is `kneewatch serve`'s --evaluation.window: the ruler
// group averages the raw engine series over the same span, so both compute
// the same mean. Everything the config does not set keeps DefaultOptions'
// value (the KV-cache MinUsage, the burn-rate windows, the prediction
// lookback, …). The result is validated; an error names the option.
func FromConfig(a config.Alerts, evaluationWindow time.Duration) (Options, error) {
	o := DefaultOptions()

	o.HeadroomLow.Below = a.HeadroomLow.Below
	o.HeadroomLow.For = a.HeadroomLow.For.D()

	o.HeadroomExhausted.Below = a.HeadroomExhausted.Below
	o.HeadroomExhausted.For = a.HeadroomExhausted.For.D()
	o.HeadroomExhausted.PredictHorizon = a.HeadroomExhausted.PredictWindow.D()
	o.HeadroomExhausted.PredictBelow = a.HeadroomExhausted.PredictGuard
	o.HeadroomExhausted.PredictConfirm = a.HeadroomExhausted.PredictConfirm.D()
	o.HeadroomExhausted.BelowHold = a.HeadroomExhausted.Hold.D()
	o.HeadroomExhausted.SustainRequests = a.HeadroomExhausted.SustainRequests
	o.HeadroomExhausted.RecoveredAbove = a.HeadroomExhausted.RecoveredAbove
	o.HeadroomExhausted.QuickRequests = a.HeadroomExhausted.QuickRequests
	o.HeadroomExhausted.QuickBelow = a.HeadroomExhausted.QuickBelow
	o.HeadroomExhausted.SustainBaseWindow = evaluationWindow
	o.PastKnee.Below = a.PastKnee.Below
	o.PastKnee.For = a.PastKnee.For.D()
	o.HeadroomExhausted.KeepFiringFor = a.HeadroomExhausted.KeepFiringFor.D()
	o.HeadroomExhausted.WatchedFor = a.HeadroomExhausted.WatchedFor.D()
	o.PastKnee.KeepFiringFor = a.PastKnee.KeepFiringFor.D()

	o.SLO.Objective = a.SLOObjective

	o.KVCache.Margin = a.KVPressure.Margin
	o.KVCache.PreemptionsPerSecond = a.KVPressure.PreemptionsPerSecond
	o.KVCache.For = a.KVPressure.For.D()

	// "All probes failing for 5m" is a window with no success in it; the
	// rule's own for stays short, so the page follows soon after.
	o.Probes.FailingWindow = a.ProbesFailing.AllFailingFor.D()
	o.Probes.SuccessBelow = a.ProbesFailing.SuccessWarning
	o.Probes.SuccessFor = a.ProbesFailing.For.D()

	o.Fleet.For = a.FleetCapacity.For.D()

	// Links are <base>/<path>; a trailing slash in the config is optional.
	if a.RunbookBaseURL != "" {
		o.RunbookBaseURL = strings.TrimSuffix(a.RunbookBaseURL, "/")
	}
	// Empty keeps dashboard links relative to Grafana's root.
	o.DashboardBaseURL = strings.TrimSuffix(a.DashboardBaseURL, "/")
	o.ExtraLabels = maps.Clone(a.Labels)
	o.Disabled = slices.Clone(a.Disabled)
	for _, name := range a.Disabled {
		if !slices.Contains(Alerts(), name) {
			return Options{}, fmt.Errorf("alerts.disabled: %q is not a generated alert (want one of %s)", name, strings.Join(Alerts(), ", "))
		}
	}

	o.Ruler.Window = evaluationWindow

	if err := o.Validate(); err != nil {
		// One line per problem, each naming its config key; two options
		// read from one flag make one line.
		var lines []string
		var joined interface{ Unwrap() []error }
		if errors.As(err, &joined) {
			for _, e := range joined.Unwrap() {
				if line := configNames.Replace(e.Error()); !slices.Contains(lines, line) {
					lines = append(lines, line)
				}
			}
		} else {
			lines = []string{configNames.Replace(err.Error())}
		}
		return Options{}, fmt.Errorf("alerts section: %s", strings.Join(lines, "\n"))
	}
	return o, nil
}

// configNames rewrites the option names in a validation error into the
// config keys the options came from, so an error from `kneewatch serve
// --config.check` names what to edit in the file. Longer names come first:
// the replacer tries its pairs in order at each position, and
// HeadroomExhausted.Below is a prefix of HeadroomExhausted.BelowHold.
var configNames = func() *strings.Replacer {
	pairs := [][2]string{
		{"HeadroomExhausted.PredictLookback", "the trend's lookback"},
		{"HeadroomExhausted.SustainBaseWindow", "--evaluation.window"},
		{"HeadroomExhausted.SustainRequests", "alerts.headroom_exhausted.sustain_requests"},
		{"HeadroomExhausted.RecoveredAbove", "alerts.headroom_exhausted.recovered_above"},
		{"HeadroomExhausted.QuickRequests", "alerts.headroom_exhausted.quick_requests"},
		{"HeadroomExhausted.QuickBelow", "alerts.headroom_exhausted.quick_below"},
		{"HeadroomExhausted.PredictConfirm", "alerts.headroom_exhausted.predict_confirm"},
		{"HeadroomExhausted.PredictHorizon", "alerts.headroom_exhausted.predict_window"},
		{"HeadroomExhausted.KeepFiringFor", "alerts.headroom_exhausted.keep_firing_for"},
		{"HeadroomExhausted.WatchedFor", "alerts.headroom_exhausted.watched_for"},
		{"HeadroomExhausted.PredictBelow", "alerts.headroom_exhausted.predict_guard"},
		{"HeadroomExhausted.BelowHold", "alerts.headroom_exhausted.hold"},
		{"HeadroomExhausted.Below", "alerts.headroom_exhausted.below"},
		{"HeadroomExhausted.For", "alerts.headroom_exhausted.for"},
		{"KVCache.PreemptionsPerSecond", "alerts.kv_pressure.preemptions_per_second"},
		{"PastKnee.KeepFiringFor", "alerts.past_knee.keep_firing_for"},
		{"Probes.FailingWindow", "alerts.probes_failing.all_failing_for"},
		{"Probes.SuccessBelow", "alerts.probes_failing.success_warning"},
		{"HeadroomLow.Below", "alerts.headroom_low.below"},
		{"Probes.SuccessFor", "alerts.probes_failing.for"},
		{"DashboardBaseURL", "alerts.dashboard_base_url"},
		{"KVCache.Margin", "alerts.kv_pressure.margin"},
		{"HeadroomLow.For", "alerts.headroom_low.for"},
		{"RunbookBaseURL", "alerts.runbook_base_url"},
		{"PastKnee.Below", "alerts.past_knee.below"},
		{"SLO.Objective", "alerts.slo_objective"},
		{"Fleet.For", "alerts.fleet_capacity.for"},
		{"KVCache.For", "alerts.kv_pressure.for"},
		{"PastKnee.For", "alerts.past_knee.for"},
		{"ExtraLabels", "alerts.labels"},
		{"Ruler.Window", "--evaluation.window"},
		{"Disabled", "alerts.disabled"},
	}
	var args []string
	for _, p := range pairs {
		args = append(args, p[0], p[1])
	}
	return strings.NewReplacer(args...)
}()
