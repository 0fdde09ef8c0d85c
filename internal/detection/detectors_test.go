package detection

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/rules"
)

func TestEveryDetectorsAlertIsEvaluated(t *testing.T) {
	groups, err := detectorRules(chatDeployment, DefaultPageVariants())
	if err != nil {
		t.Fatal(err)
	}
	alerts, records := map[string]bool{}, map[string]bool{}
	p := parser.NewParser(parser.Options{})
	for _, g := range groups {
		for _, r := range g.Rules {
			if _, err := p.ParseExpr(r.Expr); err != nil {
				t.Errorf("%s%s: %v", r.Alert, r.Record, err)
			}
			alerts[r.Alert], records[r.Record] = true, true
		}
	}
	ds := Detectors()
	for _, v := range DefaultPageVariants() {
		ds = append(ds, variantDetector(v))
	}
	for _, d := range ds {
		for _, a := range d.Alerts {
			if !alerts[a] {
				t.Errorf("detector %s: alert %s is not among the evaluated rules", d.Name, a)
			}
		}
	}
	// Every recording rule an alert reads is evaluated before it.
	for _, name := range []string{"kneewatch:replica_slo_error_ratio:rate5m", "kneewatch:replica_slo_error_ratio:rate6h", "slo:sli_error:ratio_rate1h"} {
		if !records[name] {
			t.Errorf("recording rule %s is not evaluated", name)
		}
	}
}

func TestShippedRulesAreTheGeneratedOnes(t *testing.T) {
	groups, err := shippedRules()
	if err != nil {
		t.Fatal(err)
	}
	generated, err := rules.Generate(rules.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, g := range generated {
		for _, r := range g.Rules {
			want[r.Alert+r.Record] = r.Expr + "|" + r.For.String()
		}
	}
	n := 0
	for _, g := range groups {
		for _, r := range g.Rules {
			n++
			if got := r.Expr + "|" + r.For.String(); got != want[r.Alert+r.Record] {
				t.Errorf("%s%s differs from the generated rule:\n%s\nwant\n%s", r.Alert, r.Record, got, want[r.Alert+r.Record])
			}
		}
	}
	if n < 4 {
		t.Errorf("only %d shipped rules picked", n)
	}
}

func TestBaselineRulesAreWrittenAsTheirSourcesDo(t *testing.T) {
	g, err := baselineRules(chatDeployment)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]string{}
	for _, r := range g.Rules {
		byName[r.Alert+r.Record+r.Labels["sloth_slo"]] = r.Expr
	}
	for _, c := range []struct{ rule, want string }{
		{alertSaturation, `(vllm:kv_cache_usage_perc >= 0.8) or (vllm:num_requests_waiting >= 5)`},
		{alertGPUUtil, `DCGM_FI_DEV_GPU_UTIL >= 90`},
		{"slo:sli_error:ratio_rate5mttft", `(sum(rate(vllm:time_to_first_token_seconds_count[5m])) - sum(rate(vllm:time_to_first_token_seconds_bucket{le="1.0"}[5m]))) / sum(rate(vllm:time_to_first_token_seconds_count[5m]))`},
		{"slo:sli_error:ratio_rate6htpot", `le="0.025"`},
		{alertRawBurn, `max by (sloth_service, sloth_slo) (slo:sli_error:ratio_rate5m > (14.4 * 0.01))`},
	} {
		if got := byName[c.rule]; !strings.Contains(got, c.want) {
			t.Errorf("%s = %q, want it to contain %q", c.rule, got, c.want)
		}
	}
}

func TestABurnRateSLIRefusesAThresholdBetweenBuckets(t *testing.T) {
	dep := chatDeployment
	dep.SLO = knee.SLO{TTFT: knee.Duration(300 * time.Millisecond), TPOT: dep.SLO.TPOT, Quantile: 0.99}
	_, err := baselineRules(dep)
	if err == nil || !strings.Contains(err.Error(), "TTFT SLO threshold 0.3s is not one of vLLM's bucket edges") {
		t.Errorf("error = %v, want one naming the TTFT threshold", err)
	}
}

func TestScenariosAreValid(t *testing.T) {
	var ids []int
	for _, sc := range Scenarios() {
		if err := sc.validate(); err != nil {
			t.Error(err)
		}
		ids = append(ids, sc.ID)
	}
	if !slices.Equal(ids, []int{1, 2, 3, 4, 5, 6, 7}) {
		t.Errorf("scenario ids %v, want 1–7 in order", ids)
	}
}
