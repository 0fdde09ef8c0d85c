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
		Tick: DefaultOpenLoopTick, SLOWindow: knee.DefaultSLOWindow, Low: DefaultOpenLoopLow, Steps: DefaultOpenLoopSteps}, MaxOutstanding: 7}
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
		{"a low above the knee's rate", OpenLoopConfig{PoissonSearch: knee.PoissonSearch{Low: 1.5}},
			"sweep: open loop: low must be in (0,1) as a multiple of the closed-loop knee's rate (0 = default), got 1.5"},
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
