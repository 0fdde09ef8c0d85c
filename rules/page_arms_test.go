package rules

import (
	"strings"
	"testing"
	"time"
)

// pageExpr generates the rules with o and returns the page's expression.
func pageExpr(t *testing.T, o Options) string {
	t.Helper()
	groups, err := Generate(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Alert == AlertHeadroomExhausted {
				return r.Expr
			}
		}
	}
	t.Fatalf("no %s in the generated rules", AlertHeadroomExhausted)
	return ""
}

func TestPageArmsHoldForTheirOwnTime(t *testing.T) {
	o := DefaultOptions()
	o.HeadroomExhausted.SustainRequests = 0
	o.HeadroomExhausted.Below, o.HeadroomExhausted.BelowHold = 0.05, 45*time.Second
	o.HeadroomExhausted.PredictHorizon, o.HeadroomExhausted.PredictHold = 15*time.Minute, 3*time.Minute
	expr := pageExpr(t, o)
	for _, want := range []string{
		"max_over_time(kneewatch_replica_headroom_ratio[45s]) < 0.05",
		"max_over_time(predict_linear(kneewatch_replica_headroom_ratio[5m], 900)[3m:]) <= 0",
	} {
		if !strings.Contains(expr, want) {
			t.Errorf("page expression lacks %q:\n%s", want, expr)
		}
	}
}

func TestAZeroHorizonTurnsTheTrendArmOff(t *testing.T) {
	o := DefaultOptions()
	o.HeadroomExhausted.PredictHorizon = 0
	expr := pageExpr(t, o)
	if strings.Contains(expr, "predict_linear") {
		t.Errorf("a zero horizon still predicts:\n%s", expr)
	}
	if !strings.Contains(expr, "max_over_time(kneewatch:replica_headroom_ratio:sustained[30s]) < 0") {
		t.Errorf("the level arm is gone too:\n%s", expr)
	}
}

// The shipped page reads the headroom averaged over 100 requests, past the
// knee for 30s while the last window's is under 20%, with no trend arm
// (see DefaultOptions).
func TestTheShippedPageIsTheSustainedHeadroomPastTheKnee(t *testing.T) {
	expr := strings.Join(strings.Fields(pageExpr(t, DefaultOptions())), " ")
	if want := "(max_over_time(kneewatch:replica_headroom_ratio:sustained[30s]) < 0) and on (replica, model, profile, namespace, pod, cluster) " +
		"(max by (replica, model, profile, namespace, pod, cluster) (kneewatch_replica_headroom_ratio) < 0.2)"; expr != want {
		t.Errorf("the shipped page is\n%s\nwant %s", expr, want)
	}
}
