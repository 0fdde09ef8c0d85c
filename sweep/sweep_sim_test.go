package sweep

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kneewatch/kneewatch/knee"
)

// TestInterruptedSweepWritesAPartialProfile cancels a sweep after its
// third level and checks the levels measured come back as a valid profile
// marked partial, with the error saying it was interrupted.
func TestInterruptedSweepWritesAPartialProfile(t *testing.T) {
	if testing.Short() {
		t.Skip("drives the simulator for a few seconds")
	}
	st := startSim(t, "llama-3.1-8b-h100", 100)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	prog := &cancelAfter{levels: 4, cancel: cancel}
	out, err := Run(ctx, Config{
		Client: st.client(16), Workload: resolveChat(), Seed: 1, MinRequests: 100,
		SLO:      knee.SLO{TTFT: knee.Duration(time.Second), TPOT: knee.Duration(time.Second), Quantile: 0.99},
		Progress: prog,
	})
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("error %v, want ErrInterrupted", err)
	}
	if out == nil || out.Profile == nil {
		t.Fatal("no profile came back")
	}
	if !out.Profile.Metadata.Partial {
		t.Error("the profile is not marked partial")
	}
	if got := out.Profile.Sweep.Levels; len(got) != 3 || got[2] != 4 {
		t.Errorf("levels %v, want the three completed before the cancel: [1 2 4]", got)
	}
	if err := out.Profile.Validate(); err != nil {
		t.Errorf("the partial profile does not validate: %v", err)
	}
	if !strings.Contains(out.Reason, "interrupted during concurrency 8") {
		t.Errorf("reason %q", out.Reason)
	}
}

// cancelAfter cancels the sweep as its n-th level starts running requests.
type cancelAfter struct {
	noProgress
	levels int
	cancel context.CancelFunc
	index  int
}

func (c *cancelAfter) StartLevel(index, _, _ int) { c.index = index }
func (c *cancelAfter) Update(done int) {
	if c.index == c.levels && done == 5 {
		c.cancel()
	}
}
func (c *cancelAfter) EndLevel() {}
