package detection

import (
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/kneewatch/kneewatch/rules"
)

// Detector is one alerting signal the bench scores: it "pages" while any
// instance of any of its alerts fires.
type Detector struct {
	Key    string   // short identifier, stable across runs
	Name   string   // as the table shows it
	Alerts []string // the alerting rules whose firing counts
	// Shipped is true for kneewatch's own generated rules, false for the
	// baselines the bench writes itself.
	Shipped bool
	// Variant marks a what-if: a shipped rule generated with options other
	// than the defaults.
	Variant bool
	// Basis says in a few words what the rule reads.
	Basis string
}

// Detector keys, in table order.
const (
	DetectorKneewatchPage    = "kneewatch-page"
	DetectorKneewatchWarning = "kneewatch-warning"
	DetectorKneewatchBurn    = "kneewatch-burn"
	DetectorRawBurn          = "raw-burn"
	DetectorSaturation       = "saturation"
	DetectorGPUUtil          = "gpu-util"
)

// Detectors lists every detector, in table order.
func Detectors() []Detector {
	return []Detector{
		{Key: DetectorKneewatchPage, Name: "kneewatch page", Alerts: []string{rules.AlertHeadroomExhausted, rules.AlertPastKnee}, Shipped: true,
			Basis: "KneewatchHeadroomExhausted: " + pageText(rules.DefaultOptions().HeadroomExhausted) + "; or KneewatchPastKnee: " + pastKneeText(rules.DefaultOptions().PastKnee)},
		{Key: DetectorKneewatchWarning, Name: "kneewatch warning", Alerts: []string{rules.AlertHeadroomLow}, Shipped: true,
			Basis: "KneewatchHeadroomLow: headroom < 20% for 10m (a ticket, not a page)"},
		{Key: DetectorKneewatchBurn, Name: "burn rate (kneewatch counters)", Alerts: []string{rules.AlertGoodputSLOBurnFast}, Shipped: true,
			Basis: "KneewatchGoodputSLOBurnFast: 14.4× over 1h and 5m, or 6× over 6h and 30m, on kneewatch's good/total request counters; for 2m"},
		{Key: DetectorRawBurn, Name: "burn rate (raw histograms)", Alerts: []string{alertRawBurn},
			Basis: "sloth-style: TTFT or TPOT error ratio from vLLM's histograms over the SLO bucket, 14.4× over 1h and 5m, or 6× over 6h and 30m; no for"},
		{Key: DetectorSaturation, Name: "KV ≥ 0.8 or queue ≥ 5", Alerts: []string{alertSaturation},
			Basis: "vllm:kv_cache_usage_perc ≥ 0.8 or vllm:num_requests_waiting ≥ 5 (Gateway API inference extension / llm-d defaults); for 5m"},
		{Key: DetectorGPUUtil, Name: "GPU util ≥ 90%", Alerts: []string{alertGPUUtil},
			Basis: "DCGM_FI_DEV_GPU_UTIL ≥ 90; for 5m"},
	}
}

// PageVariant is kneewatch's page generated with other thresholds: a what-if
// that shows how the shipped alert would do configured differently
// (rules.Options.HeadroomExhausted is config, not code).
type PageVariant struct {
	Name    string
	Options rules.HeadroomExhaustedOptions
	// PastKnee, when set, also scores KneewatchPastKnee generated with it
	// as part of the variant's page.
	PastKnee *rules.PastKneeOptions
}

// DefaultPageVariants are the what-ifs the bench reports: the page's
// defaults before the bench set them (held 5 minutes, the trend armed from
// 30% headroom over 10 minutes), the defaults held 2 minutes, and the trend
// armed from 70% (the next step, which pages falsely on safe bursts).
func DefaultPageVariants() []PageVariant {
	with := func(set func(*rules.HeadroomExhaustedOptions)) rules.HeadroomExhaustedOptions {
		o := rules.DefaultOptions().HeadroomExhausted
		set(&o)
		return o
	}
	return []PageVariant{
		{Name: "previous default (for 1m)", Options: with(func(o *rules.HeadroomExhaustedOptions) { o.For = time.Minute })},
		{Name: "for 3m", Options: with(func(o *rules.HeadroomExhaustedOptions) { o.For = 3 * time.Minute })},
		{Name: "trend below 50%", Options: with(func(o *rules.HeadroomExhaustedOptions) { o.PredictBelow = 0.5 })},
		{Name: "trend over 10m", Options: with(func(o *rules.HeadroomExhaustedOptions) { o.PredictLookback = 10 * time.Minute })},
	}
}

// pageText describes the page's thresholds.
func pageText(o rules.HeadroomExhaustedOptions) string {
	return fmt.Sprintf("headroom < %g, or < %g and predicted (%s lookback) to reach 0 within %s; for %s",
		o.Below, o.PredictBelow, model.Duration(o.PredictLookback), model.Duration(o.PredictHorizon), model.Duration(o.For))
}

// variantAlert names a variant's copy of the page alert.
func variantAlert(v PageVariant) string { return rules.AlertHeadroomExhausted + " [" + v.Name + "]" }

// variantPastKneeAlert names the past-knee alert of a page variant.
func variantPastKneeAlert(v PageVariant) string { return rules.AlertPastKnee + " [" + v.Name + "]" }

// pastKneeText describes KneewatchPastKnee's settings.
func pastKneeText(o rules.PastKneeOptions) string {
	return fmt.Sprintf("headroom < %g and a latency SLO percentile over its threshold; for %s", o.Below, model.Duration(o.For))
}

// variantDetector is the detector of a page variant.
func variantDetector(v PageVariant) Detector {
	o := v.Options
	d := Detector{
		Key: "kneewatch-page-" + v.Name, Name: "kneewatch page, " + v.Name, Alerts: []string{variantAlert(v)}, Shipped: true, Variant: true,
		Basis: "KneewatchHeadroomExhausted generated with " + pageText(o),
	}
	if v.PastKnee != nil {
		d.Alerts = append(d.Alerts, variantPastKneeAlert(v))
		d.Basis += "; or KneewatchPastKnee: " + pastKneeText(*v.PastKnee)
	}
	return d
}

// DetectorResweepPage is kneewatch's shipped page in the resweep what-if
// (Options.ResweepSeed): kneewatch given an independent sweep's profile.
const DetectorResweepPage = "kneewatch-page-resweep"

// DetectorWithoutModelsPage is kneewatch's shipped page in the
// without-models what-if (Options.WithoutModelsWhatIf): kneewatch given the
// profile a default `kneewatch sweep` writes, with no mix or speed model.
const DetectorWithoutModelsPage = "kneewatch-page-without-models"

// withoutModelsDetector is the page d as the without-models what-if scores
// it.
func withoutModelsDetector(d Detector) Detector {
	d.Key = DetectorWithoutModelsPage
	d.Name = "kneewatch page, given a profile without mix and speed models"
	d.Basis += "; kneewatch given the deployment's profile without its mix and speed models (a default sweep's)"
	return d
}

// resweepDetector is the page d as the resweep what-if scores it.
func resweepDetector(d Detector, o Options) Detector {
	d.Key = DetectorResweepPage
	d.Name = "kneewatch page, given an independent sweep (" + resweepSeeds(o) + ")"
	d.Basis += "; kneewatch given the deployment's profile swept again with " + resweepSeeds(o)
	return d
}

// resweepSeeds names the resweep what-if's sweeps: "seed 2", or "seeds 2
// and 3 averaged"; "kneewatch sweep's trials, seed 2" when they ran as the
// sweep runs its own (Options.ResweepLikeSweep).
func resweepSeeds(o Options) string {
	trials := ""
	if o.ResweepLikeSweep {
		trials = "kneewatch sweep's trials, "
	}
	if len(o.ResweepAverageSeeds) == 0 {
		return fmt.Sprintf("%sseed %d", trials, o.ResweepSeed)
	}
	seeds := []string{fmt.Sprint(o.ResweepSeed)}
	for _, s := range o.ResweepAverageSeeds {
		seeds = append(seeds, fmt.Sprint(s))
	}
	how := " averaged"
	if o.ResweepMedian {
		how = ", the median one"
	}
	return trials + "seeds " + strings.Join(seeds[:len(seeds)-1], ", ") + " and " + seeds[len(seeds)-1] + how
}
