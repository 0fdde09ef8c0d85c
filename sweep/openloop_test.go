package sweep

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kneewatch/kneewatch/knee"
)

func TestTheSweepsOpenLoopSettingsTakeTheSweepsDefaults(t *testing.T) {
	o := OpenLoopConfig{PoissonSearch: knee.PoissonSearch{Steady: 3 * time.Minute}, MaxOutstanding: 7}
	if err := o.defaults(); err != nil {
		t.Fatal(err)
	}
	want := OpenLoopConfig{PoissonSearch: knee.PoissonSearch{Warmup: DefaultOpenLoopWarmup, Steady: 3 * time.Minute,
		Tick: DefaultOpenLoopTick, SLOWindow: knee.DefaultSLOWindow, Low: DefaultOpenLoopLow, Steps: DefaultOpenLoopSteps}, MaxOutstanding: 7,
		Requests: DefaultOpenLoopRequests, ThresholdShare: DefaultThresholdShare, Searches: 1}
	if diff := cmp.Diff(want, o); diff != "" {
		t.Errorf("settings (-want +got):\n%s", diff)
	}
}

func TestTheSweepRejectsBadOpenLoopSettings(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    OpenLoopConfig
		want string
	}{
		{"a negative outstanding cap", OpenLoopConfig{MaxOutstanding: -1}, "sweep: open loop: the outstanding cap must be ≥ 0 (0 = default), got -1"},
		{"negative requests per trial", OpenLoopConfig{Requests: -3}, "sweep: open loop: the requests per trial must be ≥ 0 (0 = default), got -3"},
		{"a low above the knee's rate", OpenLoopConfig{PoissonSearch: knee.PoissonSearch{Low: 1.5}},
			"sweep: open loop: low must be in (0,1) as a multiple of the rate the search starts from (0 = default), got 1.5"},
		{"a threshold share over 1", OpenLoopConfig{ThresholdShare: 1.2},
			"sweep: open loop: the threshold share must be in (0, 1] (0 = default 0.9), got 1.2"},
		{"a negative threshold share", OpenLoopConfig{ThresholdShare: -0.1},
			"sweep: open loop: the threshold share must be in (0, 1] (0 = default 0.9), got -0.1"},
		{"a tick longer than the steady part", OpenLoopConfig{PoissonSearch: knee.PoissonSearch{Steady: time.Second}},
			"sweep: open loop: tick 5s is longer than the steady part 1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.o.defaults(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

func TestATrialIsSizedByTheRequestsItNeeds(t *testing.T) {
	o := OpenLoopConfig{}
	if err := o.defaults(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		rate float64
		want time.Duration
	}{
		{50, DefaultOpenLoopSteady}, // a fast deployment: the floor, one SLO window
		{1, 150 * time.Second},      // 150 requests at 1/s
		{0.1, 1500 * time.Second},   // a slow one runs until it can be judged
		{0.75, 200 * time.Second},   // 150 ÷ 0.75
	} {
		if got := o.SteadyFor(tc.rate); got != tc.want {
			t.Errorf("steady part at %g requests/s: %s, want %s", tc.rate, got, tc.want)
		}
	}
}
