package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"

	"github.com/kneewatch/kneewatch/internal/detection"
)

// drawsRun is what --suite-seeds runs: one half of the suite drawn with
// each seed, reported across draws.
type drawsRun struct {
	half, seeds, checked, out string
	seed                      uint64
	truthSeeds, limit         int
}

// runDraws runs the draws together and writes the report across them.
func runDraws(ctx context.Context, d drawsRun, args []string, stdout, stderr io.Writer) error {
	if d.half == "regressions" {
		return errors.New("--suite-seeds draws a half of the generated suite: give --suite test or tune")
	}
	seeds, err := parseSeedList("--suite-seeds", d.seeds)
	if err != nil {
		return err
	}
	checked, err := parseSeedList("--checked-seeds", d.checked)
	if err != nil {
		return err
	}
	draws := map[uint64][]detection.Scenario{}
	for _, s := range seeds {
		if _, dup := draws[s]; dup {
			return fmt.Errorf("--suite-seeds: seed %d is given twice", s)
		}
		if draws[s], err = suiteHalf(d.half, s, d.limit); err != nil {
			return fmt.Errorf("the draw with suite seed %d: %w", s, err)
		}
	}
	checked = slices.DeleteFunc(checked, func(s uint64) bool { return !slices.Contains(seeds, s) })
	rep, err := detection.RunDraws(ctx, detection.Options{
		Seed:           d.seed,
		TruthGridSeeds: d.truthSeeds,
		Logger:         slog.New(slog.NewTextHandler(stderr, nil)),
	}, d.half, draws, checked)
	if err != nil {
		return err
	}
	command := commandLine(args)
	if d.out == "" {
		return rep.Markdown(stdout, command)
	}
	return writeAtomically(d.out, func(w io.Writer) error { return rep.Markdown(w, command) })
}
