package rules

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// problems collects every invalid option, each naming its field, so one run
// reports them all.
type problems []error

func (p *problems) add(field, format string, args ...any) {
	*p = append(*p, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
}

// Validate reports every invalid option, naming its field.
func (o Options) Validate() error {
	var p problems
	if o.Interval < 0 {
		p.add("Interval", "must not be negative, got %s", o.Interval)
	}
	pp := parser.NewParser(parser.Options{})
	checkLabelSelector(&p, pp, "Selector", o.Selector)
	checkGroupBy(&p, o.GroupBy)
	checkExtraLabels(&p, o.ExtraLabels)
	for _, name := range o.Disabled {
		if !slices.Contains(Alerts(), name) {
			p.add("Disabled", "%q is not a generated alert (want one of %s)", name, strings.Join(Alerts(), ", "))
		}
	}
	notEmpty(&p, "PageSeverity", o.PageSeverity)
	notEmpty(&p, "TicketSeverity", o.TicketSeverity)
	checkBaseURL(&p, "RunbookBaseURL", o.RunbookBaseURL, true)
	checkBaseURL(&p, "DashboardBaseURL", o.DashboardBaseURL, false)
	notEmpty(&p, "ReplicaDashboardUID", o.ReplicaDashboardUID)
	notEmpty(&p, "FleetDashboardUID", o.FleetDashboardUID)

	low, ex := o.HeadroomLow, o.HeadroomExhausted
	ratioIn(&p, "HeadroomLow.Below", low.Below, false, true)
	notNegative(&p, "HeadroomLow.For", low.For)
	ratioIn(&p, "HeadroomExhausted.Below", ex.Below, true, false)
	if ex.Below >= low.Below {
		p.add("HeadroomExhausted.Below", "%v must be under HeadroomLow.Below (%v): the page is the more urgent alert", ex.Below, low.Below)
	}
	if !(ex.PredictBelow > ex.Below && ex.PredictBelow <= 1) {
		p.add("HeadroomExhausted.PredictBelow", "%v must be above HeadroomExhausted.Below (%v) and at most 1", ex.PredictBelow, ex.Below)
	}
	positive(&p, "HeadroomExhausted.PredictLookback", ex.PredictLookback)
	// A zero horizon turns the trend arm off.
	notNegative(&p, "HeadroomExhausted.PredictHorizon", ex.PredictHorizon)
	notNegative(&p, "HeadroomExhausted.For", ex.For)
	notNegative(&p, "HeadroomExhausted.KeepFiringFor", ex.KeepFiringFor)
	notNegative(&p, "HeadroomExhausted.WatchedFor", ex.WatchedFor)
	notNegative(&p, "HeadroomExhausted.BelowHold", ex.BelowHold)
	notNegative(&p, "HeadroomExhausted.PredictHold", ex.PredictHold)
	if pk := o.PastKnee; !(pk.Below <= ex.Below) {
		p.add("PastKnee.Below", "%v must be at most HeadroomExhausted.Below (%v): it pages on a replica already at or past its knee", pk.Below, ex.Below)
	}
	notNegative(&p, "PastKnee.For", o.PastKnee.For)
	notNegative(&p, "PastKnee.KeepFiringFor", o.PastKnee.KeepFiringFor)
	notNegative(&p, "HeadroomExhausted.PredictConfirm", ex.PredictConfirm)
	if ex.PredictConfirm >= ex.PredictLookback && ex.PredictConfirm > 0 {
		p.add("HeadroomExhausted.PredictConfirm", "%s must be shorter than HeadroomExhausted.PredictLookback (%s): it confirms the most recent part of the trend",
			dur(ex.PredictConfirm), dur(ex.PredictLookback))
	}
	if ex.OverloadBelow > 0 || math.IsNaN(ex.OverloadBelow) {
		p.add("HeadroomExhausted.OverloadBelow", "%v must be below 0 (past the knee), or 0 to turn the overload arm off", ex.OverloadBelow)
	}
	if ex.SustainRequests < 0 {
		p.add("HeadroomExhausted.SustainRequests", "%d must not be negative (0 reads the exported headroom as it is)", ex.SustainRequests)
	}
	if ex.SustainFloorRequests < 0 {
		p.add("HeadroomExhausted.SustainFloorRequests", "%d must not be negative (0: the longest window's average stands on any count)", ex.SustainFloorRequests)
	}
	switch {
	case ex.QuickRequests < 0:
		p.add("HeadroomExhausted.QuickRequests", "%d must not be negative (0 turns the quick arm off)", ex.QuickRequests)
	case ex.SustainRequests > 0 && ex.QuickRequests >= ex.SustainRequests:
		p.add("HeadroomExhausted.QuickRequests", "%d must be below HeadroomExhausted.SustainRequests (%d), or 0 (off)", ex.QuickRequests, ex.SustainRequests)
	}
	if qw := ex.QuickWindows; len(qw) == 1 || (len(qw) > 0 && (qw[0] <= 0 || !strictlyAscending(qw))) {
		p.add("HeadroomExhausted.QuickWindows", "%v must be ascending, above 0 and at least two, or none (SustainWindows)", ex.QuickWindows)
	}
	if ex.quickArm() && !(ex.QuickBelow < ex.Below) {
		p.add("HeadroomExhausted.QuickBelow", "%v must be below HeadroomExhausted.Below (%v): fewer requests need a clearer reading", ex.QuickBelow, ex.Below)
	}
	if ex.RecoveredAbove != 0 && !(ex.RecoveredAbove > ex.Below && ex.RecoveredAbove <= 1) {
		p.add("HeadroomExhausted.RecoveredAbove", "%v must be above HeadroomExhausted.Below (%v) and at most 1, or 0 (off)", ex.RecoveredAbove, ex.Below)
	}
	if ex.SustainRequests > 0 {
		if len(ex.SustainWindows) < 2 {
			p.add("HeadroomExhausted.SustainWindows", "needs at least two windows to choose from, got %v", ex.SustainWindows)
		}
		if len(ex.SustainWindows) > 0 && (ex.SustainWindows[0] < 0 || !strictlyAscending(ex.SustainWindows)) {
			p.add("HeadroomExhausted.SustainWindows", "%v must be ascending and not negative", ex.SustainWindows)
		}
		if len(ex.SustainWindows) > 0 && ex.SustainWindows[0] == 0 {
			positive(&p, "HeadroomExhausted.SustainBaseWindow", ex.SustainBaseWindow)
		}
	}

	o.SLO.validate(&p)

	kv := o.KVCache
	ratioIn(&p, "KVCache.Margin", kv.Margin, true, false)
	ratioIn(&p, "KVCache.MinUsage", kv.MinUsage, true, true)
	if !(kv.PreemptionsPerSecond > 0) {
		p.add("KVCache.PreemptionsPerSecond", "must be above 0, got %v", kv.PreemptionsPerSecond)
	}
	notNegative(&p, "KVCache.For", kv.For)

	pr := o.Probes
	positive(&p, "Probes.FailingWindow", pr.FailingWindow)
	notNegative(&p, "Probes.FailingFor", pr.FailingFor)
	positive(&p, "Probes.SuccessWindow", pr.SuccessWindow)
	ratioIn(&p, "Probes.SuccessBelow", pr.SuccessBelow, false, true)
	notNegative(&p, "Probes.SuccessFor", pr.SuccessFor)

	notNegative(&p, "Fleet.For", o.Fleet.For)
	if !(o.Fleet.TargetHeadroom >= 0 && o.Fleet.TargetHeadroom < 1) {
		p.add("Fleet.TargetHeadroom", "%v is outside [0, 1) (the config's global.target_headroom)", o.Fleet.TargetHeadroom)
	}
	labelValue(&p, "ProfileMissing.Reason", o.ProfileMissing.Reason)
	notNegative(&p, "ProfileMissing.For", o.ProfileMissing.For)

	d := o.ProfileDrift
	if !(d.MixDriftAbove > 0) {
		p.add("ProfileDrift.MixDriftAbove", "must be above 0, got %v", d.MixDriftAbove)
	}
	ratioIn(&p, "ProfileDrift.EfficiencyBelow", d.EfficiencyBelow, false, false)
	labelValue(&p, "ProfileDrift.LoadDimension", d.LoadDimension)
	labelValue(&p, "ProfileDrift.EffectiveLoadDimension", d.EffectiveLoadDimension)
	notNegative(&p, "ProfileDrift.For", d.For)
	notNegative(&p, "ProfileDrift.SLOHeldWindow", d.SLOHeldWindow)
	if d.SLOHeldWindow > 0 && d.SLOHeldMinRequests < 1 {
		p.add("ProfileDrift.SLOHeldMinRequests", "must be at least 1 with SLOHeldWindow set, got %d", d.SLOHeldMinRequests)
	}

	notNegative(&p, "TargetDown.For", o.TargetDown.For)
	checkAbsentSelector(&p, pp, o.Absent.Selector)
	notNegative(&p, "Absent.For", o.Absent.For)

	if r := o.Ruler; r.Enabled {
		positive(&p, "Ruler.Window", r.Window)
		checkLabelSelector(&p, pp, "Ruler.Selector", r.Selector)
		labelName(&p, "Ruler.JoinLabel", r.JoinLabel)
		metricName(&p, "Ruler.RunningMetric", r.RunningMetric)
		metricName(&p, "Ruler.WaitingMetric", r.WaitingMetric)
		if r.KVUsageMetric != "" {
			metricName(&p, "Ruler.KVUsageMetric", r.KVUsageMetric)
		}
	}
	o.PrometheusRule.validate(&p)

	if len(p) == 0 {
		return nil
	}
	return fmt.Errorf("rules: options: %w", errors.Join(p...))
}

func (s SLOOptions) validate(p *problems) {
	ratioIn(p, "SLO.Objective", s.Objective, false, false)
	budget := 1 - s.Objective
	for _, set := range []struct {
		kind    string
		windows []BurnWindow
	}{{"SLO.Page", s.Page}, {"SLO.Ticket", s.Ticket}} {
		kind, windows := set.kind, set.windows
		if len(windows) == 0 {
			p.add(kind, "needs at least one burn window")
		}
		for i, w := range windows {
			field := fmt.Sprintf("%s[%d]", kind, i)
			if !(w.Short > 0 && w.Long > w.Short) {
				p.add(field, "needs 0 < Short < Long, got Short %s, Long %s", w.Short, w.Long)
			}
			switch {
			case !(w.Factor > 0):
				p.add(field+".Factor", "must be above 0, got %v", w.Factor)
			case s.Objective > 0 && s.Objective < 1 && w.Factor*budget >= 1:
				p.add(field+".Factor", "%v × the error budget %.3g is %.3g, an error ratio above 1, so the alert could never fire (raise SLO.Objective or lower the factor)",
					w.Factor, budget, w.Factor*budget)
			}
		}
	}
	notNegative(p, "SLO.PageFor", s.PageFor)
	notNegative(p, "SLO.TicketFor", s.TicketFor)
	if s.BudgetWindow < budgetRateWindow {
		p.add("SLO.BudgetWindow", "%s is shorter than the %s rates it sums (30d is the usual SLO window)", dur(s.BudgetWindow), dur(budgetRateWindow))
	}
}

// Kubernetes object names and label syntax (RFC 1123 and the label rules).
var (
	dnsSubdomain  = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	dnsLabel      = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	k8sLabelName  = regexp.MustCompile(`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)
	k8sLabelValue = regexp.MustCompile(`^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$`)
)

func (r PrometheusRuleOptions) validate(p *problems) {
	if !(dnsSubdomain.MatchString(r.Name) && len(r.Name) <= 253) {
		p.add("PrometheusRule.Name", "%q is not a Kubernetes object name (lowercase letters, digits, '-' and '.')", r.Name)
	}
	if r.Namespace != "" && !(dnsLabel.MatchString(r.Namespace) && len(r.Namespace) <= 63) {
		p.add("PrometheusRule.Namespace", "%q is not a Kubernetes namespace name", r.Namespace)
	}
	for _, k := range sortedKeys(r.Labels) {
		checkK8sLabel(p, "PrometheusRule.Labels", k, r.Labels[k])
	}
	if r.Release != "" {
		checkK8sLabel(p, "PrometheusRule.Release", "release", r.Release)
	}
}

func checkK8sLabel(p *problems, field, k, v string) {
	if !k8sLabelName.MatchString(k) || len(k) > 317 {
		p.add(field, "%q is not a Kubernetes label name", k)
	}
	if !k8sLabelValue.MatchString(v) || len(v) > 63 {
		p.add(field, "label %s: %q is not a Kubernetes label value (at most 63 letters, digits, '-', '_' or '.')", k, v)
	}
}

// reservedAlertLabels are set by the rules or by Prometheus; extra labels may
// not override them.
var reservedAlertLabels = []string{"alertname", "severity", "replica", "model", "profile", "slo", "source", "signal", "job", "instance"}

func checkExtraLabels(p *problems, ls map[string]string) {
	for _, k := range sortedKeys(ls) {
		labelName(p, "ExtraLabels", k)
		if slices.Contains(reservedAlertLabels, k) {
			p.add("ExtraLabels", "%q is set by the rules themselves or by Prometheus", k)
		}
		if !utf8.ValidString(ls[k]) {
			p.add("ExtraLabels", "label %s: value is not valid UTF-8", k)
		}
	}
}

func checkGroupBy(p *problems, names []string) {
	for i, n := range names {
		field := fmt.Sprintf("GroupBy[%d]", i)
		labelName(p, field, n)
		if slices.Contains(keptLabels, n) {
			p.add(field, "%q is already kept by every aggregation", n)
		}
		if slices.Contains(names[:i], n) {
			p.add(field, "%q is listed twice", n)
		}
	}
}

func checkLabelSelector(p *problems, pp parser.Parser, field, s string) {
	if s == "" {
		return
	}
	ms, err := pp.ParseMetricSelector(s)
	if err != nil {
		p.add(field, "%q is not a label selector like {job=\"kneewatch\"}: %v", s, err)
		return
	}
	for _, m := range ms {
		if m.Name == labels.MetricName {
			p.add(field, "%q must not name a metric, only labels", s)
		}
	}
}

func checkAbsentSelector(p *problems, pp parser.Parser, s string) {
	ms, err := pp.ParseMetricSelector(s)
	if err != nil {
		p.add("Absent.Selector", "%q is not a series selector like up{job=\"kneewatch\"}: %v", s, err)
		return
	}
	for _, m := range ms {
		if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
			return
		}
	}
	p.add("Absent.Selector", "%q must name a metric, e.g. up{job=\"kneewatch\"}", s)
}

func checkBaseURL(p *problems, field, s string, required bool) {
	if s == "" {
		if required {
			p.add(field, "must be set")
		}
		return
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.add(field, "%q is not an absolute http(s) URL", s)
	}
}

func ratioIn(p *problems, field string, v float64, zeroOK, oneOK bool) {
	lo, hi := "(0", "1)"
	if zeroOK {
		lo = "[0"
	}
	if oneOK {
		hi = "1]"
	}
	okLo := v > 0 || (zeroOK && v == 0)
	okHi := v < 1 || (oneOK && v == 1)
	if !okLo || !okHi {
		p.add(field, "%v is outside %s, %s", v, lo, hi)
	}
}

func positive(p *problems, field string, d time.Duration) {
	if d <= 0 {
		p.add(field, "must be above 0, got %s", d)
	} else if d%time.Millisecond != 0 {
		p.add(field, "must be whole milliseconds, got %s", d)
	}
}

func notNegative(p *problems, field string, d time.Duration) {
	if d < 0 {
		p.add(field, "must not be negative, got %s", d)
	} else if d%time.Millisecond != 0 {
		p.add(field, "must be whole milliseconds, got %s", d)
	}
}

func notEmpty(p *problems, field, s string) {
	if s == "" {
		p.add(field, "must be set")
	}
}

func labelName(p *problems, field, s string) {
	if !model.LegacyValidation.IsValidLabelName(s) {
		p.add(field, "%q is not a valid label name (want [a-zA-Z_][a-zA-Z0-9_]*)", s)
	}
}

func labelValue(p *problems, field, s string) {
	if s == "" || !utf8.ValidString(s) {
		p.add(field, "must be a non-empty UTF-8 label value, got %q", s)
	}
}

func metricName(p *problems, field, s string) {
	if !model.LegacyValidation.IsValidMetricName(s) {
		p.add(field, "%q is not a valid metric name", s)
	}
}

// strictlyAscending reports whether every window is longer than the one
// before it.
func strictlyAscending(ws []time.Duration) bool {
	for i := 1; i < len(ws); i++ {
		if ws[i] <= ws[i-1] {
			return false
		}
	}
	return true
}
