package rules

import (
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
	o.HeadroomExhausted.SustainBaseWindow = evaluationWindow
	o.PastKnee.Below = a.PastKnee.Below
	o.PastKnee.For = a.PastKnee.For.D()
	o.HeadroomExhausted.KeepFiringFor = a.HeadroomExhausted.KeepFiringFor.D()
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
		return Options{}, fmt.Errorf("alerts section: %w", err)
	}
	return o, nil
}
