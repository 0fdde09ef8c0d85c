package detection

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// SuiteDraw is one draw of a generated suite's half: the seed the suite
// was drawn with and kneewatch's results on that half.
type SuiteDraw struct {
	Seed   uint64
	Report *Report
}

// DrawsReport is one half of the generated suite drawn with several seeds
// and run together (RunDraws). One draw's figures are one sample of the
// families: on the test half, the mix families' headroom error p95 read
// 0.11–0.14 on the draw the defaults were checked against and 0.20–0.27
// on the next two, so a figure that is to say how kneewatch does on
// traffic it has not seen is read over draws nothing was checked on.
type DrawsReport struct {
	Half  string
	Draws []SuiteDraw
	// Checked are the seeds of draws defaults were checked against before
	// (the committed report's draw); the others are fresh.
	Checked []uint64
	// Elapsed is the run's wall time.
	Elapsed time.Duration
}

// RunDraws runs every draw's scenarios in one Run, so the draws share the
// true knees (every draw's deployments are the same 28, measured once) and
// the workers stay busy across draws, then splits the results by draw.
// o.Scenarios is ignored.
func RunDraws(ctx context.Context, o Options, half string, draws map[uint64][]Scenario, checked []uint64) (*DrawsReport, error) {
	if len(draws) == 0 {
		return nil, errors.New("no draws to run")
	}
	seeds := make([]uint64, 0, len(draws))
	for seed := range draws {
		seeds = append(seeds, seed)
	}
	slices.Sort(seeds)
	o.Scenarios = nil
	for _, seed := range seeds {
		if len(draws[seed]) == 0 {
			return nil, fmt.Errorf("the draw with suite seed %d has no scenarios", seed)
		}
		o.Scenarios = append(o.Scenarios, draws[seed]...)
	}
	all, err := Run(ctx, o)
	if err != nil {
		return nil, err
	}
	rep := &DrawsReport{Half: half, Checked: checked, Elapsed: all.Elapsed}
	at := 0
	for _, seed := range seeds {
		n := len(draws[seed])
		rep.Draws = append(rep.Draws, SuiteDraw{Seed: seed, Report: &Report{Options: all.Options, Results: all.Results[at : at+n], Elapsed: all.Elapsed}})
		at += n
	}
	return rep, nil
}

// fresh are the draws not in Checked.
func (d *DrawsReport) fresh() []SuiteDraw {
	var out []SuiteDraw
	for _, dr := range d.Draws {
		if !slices.Contains(d.Checked, dr.Seed) {
			out = append(out, dr)
		}
	}
	return out
}

// pooledResults are the results of every draw given, in order.
func pooledResults(draws []SuiteDraw) []*ScenarioResult {
	var out []*ScenarioResult
	for _, dr := range draws {
		out = append(out, dr.Report.Results...)
	}
	return out
}
