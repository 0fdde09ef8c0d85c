package rules

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kneewatch/kneewatch/config"
)

// drawHelmOptions draws options the chart's template follows: every
// templated parameter anywhere in its valid range (with the checks between
// them), written with one to six decimals, durations of 0 where allowed,
// the axes' values now and then; the refused values never.
func drawHelmOptions(r *rand.Rand) Options {
	o := DefaultOptions()
	o.HeadroomExhausted.SustainWindows = append([]time.Duration(nil), o.HeadroomExhausted.SustainWindows...)
	decimals := func(v float64) float64 {
		p := math.Pow(10, float64(1+r.IntN(6)))
		return math.Round(v*p) / p
	}
	between := func(lo, hi float64) float64 { // lo < v < hi, after rounding
		for {
			if v := decimals(lo + r.Float64()*(hi-lo)); v > lo && v < hi {
				return v
			}
		}
	}
	duration := func(zero bool) time.Duration {
		switch r.IntN(6) {
		case 0:
			if zero {
				return 0
			}
			return time.Millisecond * time.Duration(1+r.IntN(999))
		case 1:
			return time.Duration(1+r.IntN(7)) * 24 * time.Hour * 7 // whole weeks
		case 2:
			// Whole seconds: the PromQL parser reads a long range with
			// milliseconds back a millisecond off, which Generate refuses.
			return time.Duration(r.Int64N(int64(400*24*time.Hour/time.Second))) * time.Second
		default:
			return time.Duration(1+r.IntN(3600)) * time.Second
		}
	}
	o.HeadroomLow.Below = between(0, 1)
	o.HeadroomExhausted.Below = 0
	if r.IntN(2) == 0 {
		o.HeadroomExhausted.Below = between(0, o.HeadroomLow.Below)
	}
	o.PastKnee.Below = o.HeadroomExhausted.Below
	if r.IntN(4) > 0 {
		o.PastKnee.Below = between(-1, o.HeadroomExhausted.Below)
	}
	o.HeadroomExhausted.RecoveredAbove = between(o.HeadroomExhausted.Below, 1)
	o.HeadroomExhausted.PredictBelow = between(o.HeadroomExhausted.Below, 1)
	o.SLO.Objective = between(0.931, 1)
	o.KVCache.Margin = 0
	if r.IntN(4) > 0 {
		o.KVCache.Margin = between(0, 1)
	}
	o.KVCache.PreemptionsPerSecond = math.Pow(10, -7+r.Float64()*10)
	if r.IntN(2) == 0 {
		o.KVCache.PreemptionsPerSecond = decimals(o.KVCache.PreemptionsPerSecond) + 1
	}
	o.Probes.SuccessBelow = between(0, 1)
	o.Fleet.TargetHeadroom = 0
	if r.IntN(4) > 0 {
		o.Fleet.TargetHeadroom = between(0, 1)
	}
	o.HeadroomExhausted.SustainRequests = 1 + r.IntN(2000000)
	o.HeadroomLow.For = duration(true)
	o.HeadroomExhausted.For = duration(true)
	if r.IntN(2) == 0 {
		o.HeadroomExhausted.For = 0
	}
	o.HeadroomExhausted.BelowHold = duration(false)
	o.HeadroomExhausted.KeepFiringFor = duration(true)
	o.HeadroomExhausted.PredictConfirm = time.Duration(r.IntN(300)) * time.Second
	o.PastKnee.For = duration(true)
	o.PastKnee.KeepFiringFor = duration(true)
	o.KVCache.For = duration(true)
	o.Probes.SuccessFor = duration(true)
	o.Probes.FailingWindow = duration(false)
	if r.IntN(3) == 0 {
		o.Probes.FailingWindow = o.Probes.SuccessWindow
	}
	o.Fleet.For = duration(true)
	o.Ruler.Window = duration(false)
	o.HeadroomExhausted.SustainBaseWindow = o.Ruler.Window
	return o
}

// TestHelmTemplateRendersAsGenerate renders the chart's template in Go for
// drawn options and compares it with the rules Generate prints for them:
// the same rules, PromQL equal as parsed expressions.
func TestHelmTemplateRendersAsGenerate(t *testing.T) {
	ir, err := buildHelmIR(DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	n := 300
	if testing.Short() {
		n = 30
	}
	r := rand.New(rand.NewPCG(16, 2026))
	for i := range n {
		o := drawHelmOptions(r)
		for _, p := range ir.params {
			if p.refused(o) {
				t.Fatalf("draw %d: %s is a value the template refuses", i, p.path)
			}
		}
		if err := ir.matches(o); err != nil {
			t.Fatalf("draw %d: %v", i, err)
		}
	}
}

// TestHelmTemplateRefusalsAreNeeded checks each value the chart refuses is
// one its template would get wrong: the rules generated for it differ from
// the template rendered for it.
func TestHelmTemplateRefusalsAreNeeded(t *testing.T) {
	ir, err := buildHelmIR(DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ir.params {
		if p.refuse == nil {
			continue
		}
		t.Run(p.path+" "+p.refuse.reason, func(t *testing.T) {
			o := DefaultOptions()
			v := 0.0
			if !p.refuse.zero {
				v = 7 * 60 * 1000 // 7m
			}
			setParam(p, &o, v)
			if !p.refused(o) {
				t.Fatalf("%v is not refused", v)
			}
			if err := ir.matches(o); err == nil {
				t.Errorf("the template follows %s = %v, so refusing it is not needed", p.path, v)
			}
		})
	}
}

// TestHelmTemplateSlots checks every templated parameter has a slot in the
// template, so none is silently printed at its default, and that the
// template keeps the Prometheus templates of the annotations as text.
func TestHelmTemplateSlots(t *testing.T) {
	b, err := helmTemplate(DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	_, text, ok := strings.Cut(string(b), `{{- define "kneewatch.rules.spec" -}}`)
	if !ok {
		t.Fatal("the template has no kneewatch.rules.spec")
	}
	for _, p := range helmParams() {
		used := strings.Contains(text, "$p."+p.id+".")
		wantUsed := p.refuse == nil || p.refuse.zero
		switch p.id {
		case "headroom_exhausted_predict_confirm", "headroom_exhausted_predict_guard", "target_headroom", "slo_objective":
			// Only with the trend arm (refused) the first two; the others
			// through what is derived from them (and the objective's
			// percentage).
			wantUsed = p.id == "slo_objective"
		}
		if used != wantUsed {
			t.Errorf("%s: used in the template %v, want %v", p.path, used, wantUsed)
		}
	}
	if !strings.Contains(text, "{{`{{ $labels.replica }}`}}") {
		t.Errorf("the annotations' Prometheus templates are not kept as text")
	}
}

// TestHelmParamsCoverTheAlertsSection checks every key of the config's
// alerts section is a parameter of the chart's template or one the chart's
// own template applies, so a new key cannot be silently ignored by the
// chart, and that every parameter names a real key.
func TestHelmParamsCoverTheAlertsSection(t *testing.T) {
	appliedByTheChart := []string{"labels", "disabled", "runbook_base_url", "dashboard_base_url"}
	var keys func(prefix string, typ reflect.Type) []string
	keys = func(prefix string, typ reflect.Type) []string {
		var out []string
		for i := range typ.NumField() {
			f := typ.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if f.Type.Kind() == reflect.Struct {
				out = append(out, keys(prefix+name+".", f.Type)...)
				continue
			}
			out = append(out, prefix+name)
		}
		return out
	}
	alerts := keys("", reflect.TypeOf(config.Alerts{}))
	var paths []string
	for _, p := range helmParams() {
		if key, ok := strings.CutPrefix(p.path, "config.alerts."); ok {
			paths = append(paths, key)
			if !slices.Contains(alerts, key) {
				t.Errorf("parameter %s names no key of the alerts section", p.path)
			}
		}
	}
	for _, key := range alerts {
		if !slices.Contains(paths, key) && !slices.Contains(appliedByTheChart, key) {
			t.Errorf("alerts.%s is neither a parameter of the chart's rule template (helmParams) nor applied by the chart", key)
		}
	}
}
