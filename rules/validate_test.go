package rules

import (
	"strings"
	"testing"
	"time"
)

func TestDefaultOptionsAreValid(t *testing.T) {
	if err := DefaultOptions().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestInvalidOptionsAreRejectedNamingTheField(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*Options)
		want   string
	}{
		{"a headroom threshold above 1", func(o *Options) { o.HeadroomLow.Below = 1.5 },
			"HeadroomLow.Below: 1.5 is outside (0, 1]"},
		{"a page threshold above the warning threshold", func(o *Options) { o.HeadroomExhausted.Below = 0.25 },
			"HeadroomExhausted.Below: 0.25 must be under HeadroomLow.Below (0.2): the page is the more urgent alert"},
		{"a prediction guard under the page threshold", func(o *Options) { o.HeadroomExhausted.Below, o.HeadroomExhausted.PredictBelow = 0.05, 0.01 },
			"HeadroomExhausted.PredictBelow: 0.01 must be above HeadroomExhausted.Below (0.05) and at most 1"},
		{"a negative prediction horizon", func(o *Options) { o.HeadroomExhausted.PredictHorizon = -time.Minute },
			"HeadroomExhausted.PredictHorizon"},
		{"a negative hold of the trend arm", func(o *Options) { o.HeadroomExhausted.PredictHold = -time.Minute },
			"HeadroomExhausted.PredictHold"},
		{"a negative watched-for time", func(o *Options) { o.HeadroomExhausted.WatchedFor = -time.Minute },
			"HeadroomExhausted.WatchedFor: must not be negative, got -1m0s"},
		{"a trend confirmation as long as the trend", func(o *Options) { o.HeadroomExhausted.PredictConfirm = o.HeadroomExhausted.PredictLookback },
			"HeadroomExhausted.PredictConfirm: 5m must be shorter than HeadroomExhausted.PredictLookback (5m): it confirms the most recent part of the trend"},
		{"an overload threshold before the knee", func(o *Options) { o.HeadroomExhausted.OverloadBelow = 0.1 },
			"HeadroomExhausted.OverloadBelow: 0.1 must be below 0 (past the knee), or 0 to turn the overload arm off"},
		{"a negative sustained request count", func(o *Options) { o.HeadroomExhausted.SustainRequests = -1 },
			"HeadroomExhausted.SustainRequests: -1 must not be negative (0 reads the exported headroom as it is)"},
		{"a negative quick request count", func(o *Options) { o.HeadroomExhausted.QuickRequests = -3 },
			"HeadroomExhausted.QuickRequests: -3 must not be negative (0 turns the quick arm off)"},
		{"a quick arm over more requests than the sustained one", func(o *Options) { o.HeadroomExhausted.QuickRequests = 150 },
			"HeadroomExhausted.QuickRequests: 150 must be below HeadroomExhausted.SustainRequests (100), or 0 (off)"},
		{"a quick arm that reads less past the knee than the level arm", func(o *Options) { o.HeadroomExhausted.QuickRequests, o.HeadroomExhausted.QuickBelow = 30, 0 },
			"HeadroomExhausted.QuickBelow: 0 must be below HeadroomExhausted.Below (0): fewer requests need a clearer reading"},
		{"quick windows with the exported headroom's", func(o *Options) {
			o.HeadroomExhausted.QuickWindows = []time.Duration{0, 2 * time.Minute}
		}, "HeadroomExhausted.QuickWindows: [0s 2m0s] must be ascending, above 0 and at least two, or none (SustainWindows)"},
		{"sustained windows out of order", func(o *Options) {
			o.HeadroomExhausted.SustainRequests = 100
			o.HeadroomExhausted.SustainWindows = []time.Duration{0, 5 * time.Minute, 2 * time.Minute}
		}, "HeadroomExhausted.SustainWindows: [0s 5m0s 2m0s] must be ascending and not negative"},
		{"one sustained window", func(o *Options) {
			o.HeadroomExhausted.SustainRequests = 100
			o.HeadroomExhausted.SustainWindows = []time.Duration{2 * time.Minute}
		}, "HeadroomExhausted.SustainWindows: needs at least two windows to choose from, got [2m0s]"},
		{"an SLO-held window with no requests to judge it", func(o *Options) { o.ProfileDrift.SLOHeldMinRequests = 0 },
			"ProfileDrift.SLOHeldMinRequests: must be at least 1 with SLOHeldWindow set, got 0"},
		{"a negative SLO-held window", func(o *Options) { o.ProfileDrift.SLOHeldWindow = -time.Minute },
			"ProfileDrift.SLOHeldWindow: must not be negative, got -1m0s"},
		{"a negative for duration", func(o *Options) { o.Fleet.For = -time.Minute },
			"Fleet.For: must not be negative, got -1m0s"},
		{"a sub-millisecond duration", func(o *Options) { o.TargetDown.For = time.Microsecond },
			"TargetDown.For: must be whole milliseconds, got 1µs"},
		{"an objective of 1", func(o *Options) { o.SLO.Objective = 1 },
			"SLO.Objective: 1 is outside (0, 1)"},
		{"an objective whose fast burn could never fire", func(o *Options) { o.SLO.Objective = 0.9 },
			"SLO.Page[0].Factor: 14.4 × the error budget 0.1 is 1.44, an error ratio above 1, so the alert could never fire (raise SLO.Objective or lower the factor)"},
		{"a burn window whose short window is the longer", func(o *Options) { o.SLO.Ticket[1].Short = 96 * time.Hour },
			"SLO.Ticket[1]: needs 0 < Short < Long, got Short 96h0m0s, Long 72h0m0s"},
		{"no page burn windows", func(o *Options) { o.SLO.Page = nil },
			"SLO.Page: needs at least one burn window"},
		{"a selector that does not parse", func(o *Options) { o.Selector = `{job="kneewatch"` },
			`Selector: "{job=\"kneewatch\"" is not a label selector like {job="kneewatch"}`},
		{"a selector naming a metric", func(o *Options) { o.Selector = `up{job="kneewatch"}` },
			`Selector: "up{job=\"kneewatch\"}" must not name a metric, only labels`},
		{"an absent selector without a metric", func(o *Options) { o.Absent.Selector = `{job="kneewatch"}` },
			`Absent.Selector: "{job=\"kneewatch\"}" must name a metric, e.g. up{job="kneewatch"}`},
		{"an extra label the rules set themselves", func(o *Options) { o.ExtraLabels = map[string]string{"severity": "page"} },
			`ExtraLabels: "severity" is set by the rules themselves or by Prometheus`},
		{"an extra label with an invalid name", func(o *Options) { o.ExtraLabels = map[string]string{"team-name": "llm"} },
			`ExtraLabels: "team-name" is not a valid label name (want [a-zA-Z_][a-zA-Z0-9_]*)`},
		{"a group-by label kept already", func(o *Options) { o.GroupBy = []string{"region", "model"} },
			`GroupBy[1]: "model" is already kept by every aggregation`},
		{"a runbook URL that is not absolute", func(o *Options) { o.RunbookBaseURL = "docs/runbooks" },
			`RunbookBaseURL: "docs/runbooks" is not an absolute http(s) URL`},
		{"a dashboard URL without a replica dashboard UID", func(o *Options) { o.ReplicaDashboardUID = "" },
			"ReplicaDashboardUID: must be set"},
		{"a ruler join label that is not a label name", func(o *Options) { o.Ruler.JoinLabel = "pod name" },
			`Ruler.JoinLabel: "pod name" is not a valid label name (want [a-zA-Z_][a-zA-Z0-9_]*)`},
		{"a ruler metric that is not a metric name", func(o *Options) { o.Ruler.RunningMetric = "vllm num running" },
			`Ruler.RunningMetric: "vllm num running" is not a valid metric name`},
		{"a PrometheusRule name with capitals", func(o *Options) { o.PrometheusRule.Name = "Kneewatch" },
			`PrometheusRule.Name: "Kneewatch" is not a Kubernetes object name (lowercase letters, digits, '-' and '.')`},
		{"a release label value with a space", func(o *Options) { o.PrometheusRule.Release = "kube prometheus" },
			`PrometheusRule.Release: label release: "kube prometheus" is not a Kubernetes label value (at most 63 letters, digits, '-', '_' or '.')`},
		{"an empty profile-missing reason", func(o *Options) { o.ProfileMissing.Reason = "" },
			`ProfileMissing.Reason: must be a non-empty UTF-8 label value, got ""`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := DefaultOptions()
			tc.modify(&o)
			err := o.Validate()
			if err == nil {
				t.Fatalf("Validate accepted the options, want an error containing %q", tc.want)
			}
			if !strings.HasPrefix(err.Error(), "rules: options: ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %q, want it to start with \"rules: options: \" and contain %q", err, tc.want)
			}
			if _, genErr := Generate(o); genErr == nil {
				t.Error("Generate accepted options that Validate rejects")
			}
		})
	}
}

func TestValidateReportsEveryProblemAtOnce(t *testing.T) {
	o := DefaultOptions()
	o.HeadroomLow.Below = 2
	o.Probes.SuccessBelow = 0
	o.KVCache.PreemptionsPerSecond = 0
	err := o.Validate()
	if err == nil {
		t.Fatal("Validate accepted three bad options")
	}
	for _, field := range []string{"HeadroomLow.Below", "Probes.SuccessBelow", "KVCache.PreemptionsPerSecond"} {
		if !strings.Contains(err.Error(), field+":") {
			t.Errorf("Validate() = %q, want it to name %s", err, field)
		}
	}
}

// With SustainRequests set, the page reads a recorded average and the
// recording rule that makes it is generated (and parses).
func TestSustainedHeadroomIsRecordedWhenThePageReadsIt(t *testing.T) {
	o := DefaultOptions()
	o.HeadroomExhausted.SustainRequests = 100
	groups, err := Generate(o)
	if err != nil {
		t.Fatal(err)
	}
	recorded, read := false, false
	for _, g := range groups {
		for _, r := range g.Rules {
			// The pretty printer may break ">= 100" over lines.
			if r.Record == RecordSustainedHeadroom && strings.Contains(strings.Join(strings.Fields(r.Expr), " "), ">= 100") {
				recorded = true
			}
			if r.Alert == AlertHeadroomExhausted && strings.Contains(r.Expr, RecordSustainedHeadroom) {
				read = true
			}
		}
	}
	if !recorded || !read {
		t.Errorf("sustained headroom recorded %v, read by the page %v; want both", recorded, read)
	}
}
