package detection

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/kneewatch/kneewatch/internal/sim"
	"github.com/kneewatch/kneewatch/workload"
)

// The suite's halves. Defaults are chosen on tune only; the report shows test.
const (
	HalfTune = "tune"
	HalfTest = "test"
)

// Minimums the issue holds the test half to.
const (
	minTestSize     = 120
	minTestNearKnee = 40
)

// SuiteOptions say what GenerateSuite draws. A zero field takes its default.
type SuiteOptions struct {
	// Seed picks every draw (default 1).
	Seed uint64
	// TestSize and TuneSize are the scenarios in each half (default 132 each).
	TestSize, TuneSize int
	// Presets and Workloads are the simulator presets and workload presets
	// deployments are drawn from (default: all of them).
	Presets, Workloads []string
}

// Suite is a generated scenario suite, split in two disjoint halves.
type Suite struct {
	Options    SuiteOptions
	Tune, Test []Scenario
	// Skipped lists the preset/workload pairs no deployment was made of, and why.
	Skipped []string
}

// Half returns the named half.
func (s Suite) Half(name string) ([]Scenario, error) {
	switch name {
	case HalfTune:
		return s.Tune, nil
	case HalfTest:
		return s.Test, nil
	}
	return nil, fmt.Errorf("unknown suite half %q (known: %s, %s)", name, HalfTune, HalfTest)
}

// defaultSuiteSize is each half's default size: 132 leaves room above the
// 120 the test half must hold, and is a multiple of the family weights' sum
// (see suiteFamilies) so every family gets a whole share.
const defaultSuiteSize = 132

func (o SuiteOptions) withDefaults() SuiteOptions {
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.TestSize == 0 {
		o.TestSize = defaultSuiteSize
	}
	if o.TuneSize == 0 {
		o.TuneSize = defaultSuiteSize
	}
	if o.Presets == nil {
		o.Presets = sim.PresetNames()
	}
	if o.Workloads == nil {
		o.Workloads = workload.PresetNames()
	}
	return o
}

// validate names the first bad option.
func (o SuiteOptions) validate() error {
	switch {
	case o.TestSize < minTestSize:
		return fmt.Errorf("suite: TestSize %d is under the %d scenarios the test half must hold", o.TestSize, minTestSize)
	case o.TuneSize < len(suiteFamilies):
		return fmt.Errorf("suite: TuneSize %d is under the %d families (each needs one scenario)", o.TuneSize, len(suiteFamilies))
	case len(o.Presets) == 0:
		return fmt.Errorf("suite: Presets is empty")
	case len(o.Workloads) < 2:
		return fmt.Errorf("suite: Workloads %v: mix shifts need at least two", o.Workloads)
	}
	for _, p := range o.Presets {
		if _, err := sim.LoadPreset(p); err != nil {
			return fmt.Errorf("suite: Presets: %w", err)
		}
	}
	for _, w := range o.Workloads {
		if _, ok := workload.Preset(w); !ok {
			return fmt.Errorf("suite: Workloads: unknown workload %q (known: %v)", w, workload.PresetNames())
		}
	}
	for _, list := range [][]string{o.Presets, o.Workloads} {
		s := slices.Clone(list)
		slices.Sort(s)
		for i := 1; i < len(s); i++ {
			if s[i] == s[i-1] {
				return fmt.Errorf("suite: %q is listed twice", s[i])
			}
		}
	}
	return nil
}

// Scenario IDs: the regressions are 1–7, the test half from testIDBase and
// the tune half from tuneIDBase, so an ID says where a scenario came from.
const (
	testIDBase = 101
	tuneIDBase = 1001
)

// GenerateSuite draws the suite. Every scenario is drawn from one seeded
// stream of candidates; a candidate's half is a function of its drawn
// parameters (a hash of its family, deployment and quantized parameters, so
// identical draws always land in the same half) and it is kept when that
// half still needs its family, and when no earlier candidate drew the same
// parameters. The halves are therefore disjoint in their parameter draws,
// and also by seed: test scenarios get odd arrival seeds, tune ones even.
func GenerateSuite(o SuiteOptions) (Suite, error) {
	o = o.withDefaults()
	if err := o.validate(); err != nil {
		return Suite{}, err
	}
	deps, skipped, err := suiteDeployments(o.Presets, o.Workloads)
	if err != nil {
		return Suite{}, err
	}
	s := Suite{Options: o, Skipped: skipped}
	quota := map[string][]int{HalfTest: familyQuotas(o.TestSize), HalfTune: familyQuotas(o.TuneSize)}
	halves := map[string]*[]Scenario{HalfTest: &s.Test, HalfTune: &s.Tune}
	seen := map[string]bool{}
	rng := rand.New(rand.NewPCG(o.Seed, 0x6b6e65657761746b)) // "kneewatk"
	g := &drawer{rng: rng, deps: deps, workloads: o.Workloads}
	// A family's quota is met after a few times its size in candidates;
	// the bound only stops a generator bug from looping forever.
	for tries := 0; tries < 1000*(o.TestSize+o.TuneSize); tries++ {
		fi := pendingFamily(quota)
		if fi < 0 {
			break
		}
		f := suiteFamilies[fi]
		sc, key := g.draw(f)
		if seen[key] {
			continue
		}
		half := halfOf(key)
		if quota[half][fi] == 0 {
			continue
		}
		seen[key] = true
		quota[half][fi]--
		list := halves[half]
		sc.Seed = 2 * (rng.Uint64N(1<<40) + 1) // even: tune
		sc.ID = tuneIDBase + len(*list)
		if half == HalfTest {
			sc.Seed++
			sc.ID = testIDBase + len(*list)
		}
		sc.Half = half
		sc.Name = fmt.Sprintf("%s %s", f.name, deploymentName(sc.Deployment))
		if err := sc.validateShape(); err != nil {
			return Suite{}, fmt.Errorf("suite: family %s drew a bad scenario: %w", f.name, err)
		}
		*list = append(*list, sc)
	}
	if pendingFamily(quota) >= 0 {
		return Suite{}, fmt.Errorf("suite: could not draw enough distinct scenarios (family %s) from %d deployments",
			suiteFamilies[pendingFamily(quota)].name, len(deps))
	}
	return s, nil
}

// pendingFamily is the index of a family some half still needs, the one
// with the most left (so the stream interleaves families), or −1.
func pendingFamily(quota map[string][]int) int {
	best, left := -1, 0
	for i := range suiteFamilies {
		if n := quota[HalfTest][i] + quota[HalfTune][i]; n > left {
			best, left = i, n
		}
	}
	return best
}

// halfOf is the half a candidate with this parameter key belongs to.
func halfOf(key string) string {
	h := fnv.New64a()
	h.Write([]byte(key))
	if h.Sum64()%2 == 0 {
		return HalfTune
	}
	return HalfTest
}

// familyQuotas shares size out over the families: one each, the rest by
// weight, what rounding leaves over to the first families.
func familyQuotas(size int) []int {
	total := 0
	for _, f := range suiteFamilies {
		total += f.weight
	}
	out := make([]int, len(suiteFamilies))
	rest := size - len(out)
	given := 0
	for i, f := range suiteFamilies {
		out[i] = 1 + rest*f.weight/total
		given += out[i]
	}
	for i := 0; given < size; i = (i + 1) % len(out) {
		out[i]++
		given++
	}
	return out
}

// deploymentName is a deployment as tables show it: "8b-h100 chat tight".
func deploymentName(d Deployment) string {
	p := strings.TrimPrefix(d.Preset, "llama-")
	p = strings.TrimPrefix(strings.TrimPrefix(p, "3.1-"), "3.3-")
	s := p + " " + d.Workload
	if d.Tightness != "" {
		s += " " + d.Tightness
	}
	return s
}
