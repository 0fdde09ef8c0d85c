package rules

import (
	"strings"
	"testing"
	"time"

	"github.com/kneewatch/kneewatch/config"
)

// TestDisabledAlertsAreLeftOut checks Options.Disabled drops exactly the
// named alerts, and that a name the generator does not know is an error
// naming it rather than a silently ignored typo.
func TestDisabledAlertsAreLeftOut(t *testing.T) {
	o := DefaultOptions()
	o.Disabled = []string{AlertProbeSuccessLow, AlertKVCachePressure}
	groups, err := Generate(o)
	if err != nil {
		t.Fatal(err)
	}
	var alerts []string
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				alerts = append(alerts, r.Alert)
			}
		}
	}
	if len(alerts) != len(Alerts())-2 {
		t.Errorf("%d alerts with 2 of %d disabled: %v", len(alerts), len(Alerts()), alerts)
	}
	for _, a := range alerts {
		if a == AlertProbeSuccessLow || a == AlertKVCachePressure {
			t.Errorf("disabled alert %s generated", a)
		}
	}

	a := config.DefaultAlerts()
	a.Disabled = []string{"KneewatchHeadroomLo"}
	if _, err := FromConfig(a, time.Minute); err == nil || !strings.HasPrefix(err.Error(), `alerts.disabled: "KneewatchHeadroomLo" is not a generated alert`) {
		t.Errorf("FromConfig with a misspelled disabled alert: err = %v, want it to name alerts.disabled", err)
	}

	o.Disabled = []string{"KneewatchHeadroomLo"}
	_, err = Generate(o)
	if err == nil || !strings.Contains(err.Error(), `Disabled: "KneewatchHeadroomLo" is not a generated alert`) {
		t.Errorf("unknown disabled alert: err = %v", err)
	}
}
