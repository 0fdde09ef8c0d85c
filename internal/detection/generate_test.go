package detection

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kneewatch/kneewatch/internal/sim"
	"github.com/kneewatch/kneewatch/workload"
)

func mustSuite(t *testing.T, o SuiteOptions) Suite {
	t.Helper()
	s, err := GenerateSuite(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// scenarioKey is what makes two generated scenarios the same: family,
// deployment, mix target and description (which states every drawn value).
func scenarioKey(sc Scenario) string {
	return strings.Join([]string{sc.Family, deploymentName(sc.Deployment), sc.AltWorkload, sc.Description}, "|")
}

func TestGenerateSuiteCounts(t *testing.T) {
	s := mustSuite(t, SuiteOptions{})
	if len(s.Test) < minTestSize {
		t.Errorf("test half holds %d scenarios, want ≥ %d", len(s.Test), minTestSize)
	}
	near := 0
	for _, sc := range s.Test {
		if sc.NearKnee {
			near++
			if !sc.Safe {
				t.Errorf("%s holds near the knee but is not marked safe", sc.Name)
			}
		}
	}
	if near < minTestNearKnee {
		t.Errorf("test half holds %d safe scenarios near the knee, want ≥ %d", near, minTestNearKnee)
	}
	for _, half := range [][]Scenario{s.Test, s.Tune} {
		for _, sc := range half {
			if err := sc.validateShape(); err != nil {
				t.Error(err)
			}
		}
	}
}

func TestGenerateSuiteIsDeterministic(t *testing.T) {
	a, b := mustSuite(t, SuiteOptions{Seed: 7}), mustSuite(t, SuiteOptions{Seed: 7})
	c := mustSuite(t, SuiteOptions{Seed: 8})
	same := func(x, y []Scenario) bool {
		return slices.EqualFunc(x, y, func(p, q Scenario) bool { return scenarioKey(p) == scenarioKey(q) && p.Seed == q.Seed && p.ID == q.ID })
	}
	if !same(a.Test, b.Test) || !same(a.Tune, b.Tune) {
		t.Error("the same seed drew different suites")
	}
	if same(a.Test, c.Test) {
		t.Error("seeds 7 and 8 drew the same test half")
	}
}

func TestGenerateSuiteHalvesAreDisjoint(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		s := mustSuite(t, SuiteOptions{Seed: seed})
		keys, seeds := map[string]string{}, map[uint64]string{}
		for _, half := range []struct {
			name string
			scs  []Scenario
		}{{HalfTune, s.Tune}, {HalfTest, s.Test}} {
			for _, sc := range half.scs {
				if sc.Half != half.name {
					t.Errorf("seed %d: %s is in the %s half but marked %q", seed, sc.Name, half.name, sc.Half)
				}
				if other, dup := keys[scenarioKey(sc)]; dup {
					t.Errorf("seed %d: %s drawn twice (%s and %s)", seed, sc.Name, other, half.name)
				}
				keys[scenarioKey(sc)] = half.name
				if other, dup := seeds[sc.Seed]; dup {
					t.Errorf("seed %d: arrival seed %d used twice (%s and %s)", seed, sc.Seed, other, half.name)
				}
				seeds[sc.Seed] = half.name
				if odd := sc.Seed%2 == 1; odd != (half.name == HalfTest) {
					t.Errorf("seed %d: %s in %s has arrival seed %d", seed, sc.Name, half.name, sc.Seed)
				}
			}
		}
	}
}

func TestGenerateSuiteCoversFamiliesAndDeployments(t *testing.T) {
	s := mustSuite(t, SuiteOptions{})
	for _, half := range [][]Scenario{s.Test, s.Tune} {
		families, presets, workloads, targets, slos := map[string]int{}, map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
		for _, sc := range half {
			families[sc.Family]++
			presets[sc.Deployment.Preset] = true
			workloads[sc.Deployment.Workload] = true
			slos[sc.Deployment.Tightness] = true
			if sc.AltWorkload != "" {
				targets[sc.AltWorkload] = true
			}
		}
		for _, f := range suiteFamilies {
			if families[f.name] == 0 {
				t.Errorf("%s half: no %s scenario", half[0].Half, f.name)
			}
		}
		for _, p := range sim.PresetNames() {
			if !presets[p] {
				t.Errorf("%s half: no deployment on %s", half[0].Half, p)
			}
		}
		for _, w := range workload.PresetNames() {
			if !workloads[w] {
				t.Errorf("%s half: no %s deployment", half[0].Half, w)
			}
			if !targets[w] {
				t.Errorf("%s half: no mix shift toward %s", half[0].Half, w)
			}
		}
		if !slos[SLOTight] || !slos[SLOLoose] {
			t.Errorf("%s half: SLOs %v, want tight and loose", half[0].Half, slos)
		}
	}
}

func TestGenerateSuiteRejectsBadOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    SuiteOptions
		want string
	}{
		{"a test half under 120 scenarios", SuiteOptions{TestSize: 119}, "TestSize 119"},
		{"a tune half smaller than the families", SuiteOptions{TuneSize: 3}, "TuneSize 3"},
		{"an unknown preset", SuiteOptions{Presets: []string{"gpt-9-tpu"}}, `"gpt-9-tpu"`},
		{"an unknown workload", SuiteOptions{Workloads: []string{"chat", "poetry"}}, `"poetry"`},
		{"one workload only", SuiteOptions{Workloads: []string{"chat"}}, "Workloads [chat]"},
		{"a preset listed twice", SuiteOptions{Presets: []string{"llama-3.1-8b-h100", "llama-3.1-8b-h100"}}, "listed twice"},
		{"a workload name with a stray space", SuiteOptions{Workloads: []string{"chat", "rag "}}, `unknown workload "rag "`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := GenerateSuite(tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error naming %s", err, tc.want)
			}
		})
	}
}

func TestScenarioShapeRejectsBadSchedules(t *testing.T) {
	base := func() Scenario {
		return Scenario{ID: 1, Name: "x", Duration: 600e9, Load: constant(0.5),
			Deployment: Deployment{Preset: "llama-3.1-8b-h100", Workload: "chat", Tightness: SLOTight}}
	}
	for _, tc := range []struct {
		name string
		set  func(*Scenario)
		want string
	}{
		{"a plateau above 2× the knee", func(s *Scenario) { s.Load = step(0.3, 2.5, 60e9) }, "load at"},
		{"a negative duration", func(s *Scenario) { s.Duration = -1 }, "duration must be > 0"},
		{"an unknown alternative workload", func(s *Scenario) { s.AltWorkload, s.AltShare = "poetry", constant(0.2) }, `"poetry"`},
		{"an unknown SLO tightness", func(s *Scenario) { s.Deployment.Tightness = "snug" }, `"snug"`},
		{"a mix share over 1", func(s *Scenario) { s.AltWorkload, s.AltShare = "rag", constant(1.5) }, "share at"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := base()
			tc.set(&sc)
			err := sc.validateShape()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error naming %s", err, tc.want)
			}
		})
	}
}

func Example_familyQuotas() {
	q := familyQuotas(defaultSuiteSize)
	total := 0
	for _, n := range q {
		total += n
	}
	fmt.Println(total, q)
	// Output: 132 [11 8 8 8 8 11 11 8 7 6 18 14 14]
}
