package rules

import (
	"strings"
	"testing"
	"time"
)

// pageExpr generates the rules with o and returns the page's expression.
func pageExpr(t *testing.T, o Options) string {
	t.Helper()
	return alertExpr(t, o, AlertHeadroomExhausted)
}

// alertExpr generates the rules with o and returns the named alert's
// expression.
func alertExpr(t *testing.T, o Options, alert string) string {
	t.Helper()
	groups, err := Generate(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Alert == alert {
				return r.Expr
			}
		}
	}
	t.Fatalf("no %s in the generated rules", alert)
	return ""
}

func TestTheSLOHeldSignalReadsThePagesHeadroomAndTurnsOff(t *testing.T) {
	o := DefaultOptions()
	expr := alertExpr(t, o, AlertKneeProfileDrift)
	for _, want := range []string{signalSLOHeld, RecordSustainedHeadroom, "increase(kneewatch_replica_slo_good_requests_total[30m])"} {
		if !strings.Contains(expr, want) {
			t.Errorf("the drift alert does not read %s:\n%s", want, expr)
		}
	}
	o.HeadroomExhausted.SustainRequests, o.HeadroomExhausted.QuickRequests = 0, 0
	if expr := alertExpr(t, o, AlertKneeProfileDrift); strings.Contains(expr, RecordSustainedHeadroom) || !strings.Contains(expr, "kneewatch_replica_headroom_ratio") {
		t.Errorf("with a page on the exported headroom the signal still reads the sustained one:\n%s", expr)
	}
	o = DefaultOptions()
	o.ProfileDrift.SLOHeldWindow = 0
	if expr := alertExpr(t, o, AlertKneeProfileDrift); strings.Contains(expr, signalSLOHeld) {
		t.Errorf("SLOHeldWindow 0 left the signal in:\n%s", expr)
	}
	if ps := RunbookParameters(o)[AlertKneeProfileDrift]; len(ps) != 3 {
		t.Errorf("with the signal off the runbook states %v, want only the other signals' numbers", ps)
	}
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
// knee for 30s, or averaged over 50 requests, 25% past it for 30s, each
// while the last window's is under 20%, with no trend arm, for a replica
// whose requests kneewatch has counted for 2m (see DefaultOptions).
func TestTheShippedPageIsTheSustainedHeadroomPastTheKnee(t *testing.T) {
	expr := strings.Join(strings.Fields(pageExpr(t, DefaultOptions())), " ")
	by := "(replica, model, profile, namespace, pod, cluster)"
	recovered := " and on " + by + " (max by " + by + " (kneewatch_replica_headroom_ratio) < 0.2)"
	if want := "( ( (max_over_time(kneewatch:replica_headroom_ratio:sustained[30s]) < 0)" + recovered + " ) or " +
		"( (max_over_time(kneewatch:replica_headroom_ratio:quick[30s]) < -0.25)" + recovered + " ) )" +
		" and on " + by + " max by " + by + " ( kneewatch_replica_requests_total offset 2m )"; expr != want {
		t.Errorf("the shipped page is\n%s\nwant %s", expr, want)
	}
}

// The quick arm reads its own average, over the same windows as the
// sustained one but fewer requests, held as the level arm is; it goes with
// either count at 0.
func TestTheQuickArmReadsFewerRequests(t *testing.T) {
	withQuick := func() Options {
		o := DefaultOptions()
		o.HeadroomExhausted.QuickRequests, o.HeadroomExhausted.QuickBelow = 30, -0.4
		return o
	}
	groups, err := Generate(withQuick())
	if err != nil {
		t.Fatal(err)
	}
	var quick string
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Record == RecordQuickHeadroom {
				quick = strings.Join(strings.Fields(r.Expr), " ")
			}
		}
	}
	if !strings.Contains(quick, ">= 30") || strings.Contains(quick, ">= 100") {
		t.Errorf("the quick average does not ask for 30 requests:\n%s", quick)
	}
	// The shipped quick average starts at 2 minutes: from the last minute
	// it was the last minute's headroom alone at 0.5 requests/s and more.
	if strings.Contains(quick, "kneewatch_replica_requests_total[1m]") || !strings.Contains(quick, "kneewatch_replica_requests_total[2m]") {
		t.Errorf("the quick average reads the last minute, or not 2 minutes:\n%s", quick)
	}
	if expr := pageExpr(t, withQuick()); !strings.Contains(expr, "max_over_time(kneewatch:replica_headroom_ratio:quick[30s]) < -0.4") {
		t.Errorf("the page has no quick arm held 30s:\n%s", expr)
	}
	for _, off := range []func(*Options){
		func(o *Options) { o.HeadroomExhausted.QuickRequests = 0 },
		func(o *Options) { o.HeadroomExhausted.SustainRequests = 0 },
	} {
		o := withQuick()
		off(&o)
		if expr := pageExpr(t, o); strings.Contains(expr, "quick") || strings.Contains(expr, "-0.4") {
			t.Errorf("the quick arm stays on:\n%s", expr)
		}
	}
}

// Without WatchedFor the page has no watched gate; with it, the gate reads
// the requests counter that far back, so a series younger than that
// matches nothing.
func TestWatchedForGatesThePageOnTheRequestsCounterThatOld(t *testing.T) {
	o := DefaultOptions()
	o.HeadroomExhausted.WatchedFor = 0
	if expr := pageExpr(t, o); strings.Contains(expr, "offset") {
		t.Errorf("WatchedFor 0 still gates the page:\n%s", expr)
	}
	o.HeadroomExhausted.WatchedFor = 3 * time.Minute
	if expr := pageExpr(t, o); !strings.Contains(expr, "kneewatch_replica_requests_total offset 3m") {
		t.Errorf("WatchedFor 3m does not read the requests counter 3m back:\n%s", expr)
	}
}
