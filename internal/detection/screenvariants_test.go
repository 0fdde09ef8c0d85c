package detection

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/kneewatch/kneewatch/internal/sim"
	"github.com/kneewatch/kneewatch/measure"
	"github.com/kneewatch/kneewatch/workload"
)

// TestSweepScreenVariants is the diagnostic measure.DefaultEarly's
// screening settings were chosen with: on one half of make bench-sweep's
// deployments (KNEEWATCH_SCREEN_VARIANTS=A or B; the settings were chosen
// on A), the closed-loop search as the sweep runs it with the fixed
// 30-request window of before and with windows sized per worker at several
// margins, each row's knee and virtual time, and per variant the knees
// within ±10% of the truth and the total time. About 4 s.
func TestSweepScreenVariants(t *testing.T) {
	half := os.Getenv("KNEEWATCH_SCREEN_VARIANTS")
	if half == "" {
		t.Skip("set KNEEWATCH_SCREEN_VARIANTS=A or B to compare the screening settings on that half")
	}
	type variant struct {
		perWorker, min int
		margin         float64
	}
	variants := []variant{{0, 0, 0.5}, {1, 10, 0.5}, {2, 5, 0.5}, {2, 10, 0.5}, {4, 10, 0.5}, {2, 10, 0.7}, {2, 10, 0.8}, {2, 10, 0.9}}
	ctx := context.Background()
	all, _, err := suiteDeployments(sim.PresetNames(), workload.PresetNames())
	if err != nil {
		t.Fatal(err)
	}
	total := make([]time.Duration, len(variants))
	within := make([]int, len(variants))
	n := 0
	for _, d := range all {
		if sweepTimeHalf(d) != half {
			continue
		}
		dep, ok := loadSweepDeployment(t, ctx, d)
		if !ok {
			continue
		}
		n++
		for i, v := range variants {
			e := measure.DefaultEarly
			e.ScreenPerWorker, e.ScreenMinRequests, e.ScreenMargin = v.perWorker, v.min, v.margin
			r, err := emulateSweep(ctx, dep.preset, dep.gen, dep.slo, e)
			if err != nil {
				t.Fatal(err)
			}
			total[i] += r.elapsed
			if kneeErr(r.knee, dep.truth.Knee.Concurrency) <= 0.1 {
				within[i]++
			}
			t.Logf("%s/%s %s (true knee %v): per worker %d, at least %d, margin %.1f: knee %v in %v",
				d.Preset, d.Workload, d.Tightness, dep.truth.Knee.Concurrency, v.perWorker, v.min, v.margin, r.knee, r.elapsed.Round(time.Second))
		}
	}
	for i, v := range variants {
		t.Logf("half %s, per worker %d (0: a fixed 30), at least %d, margin %.1f: knee within ±10%% %d of %d, total %v",
			half, v.perWorker, v.min, v.margin, within[i], n, total[i].Round(time.Second))
	}
}
