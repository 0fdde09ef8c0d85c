package detection

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/kneewatch/kneewatch/knee"
)

// suiteDetectors are the detectors the suite tables compare: kneewatch's
// page, the oracle, and every baseline (no what-ifs: the suite runs none).
func (r *Report) suiteDetectors() []Detector {
	ds := r.detectors(false)
	// The oracle right after kneewatch's page, so the two read side by side.
	// The what-ifs' pages, when they ran, come after them.
	after := []string{DetectorOracle, DetectorResweepPage, DetectorWithoutModelsPage}
	out := make([]Detector, 0, len(ds))
	for _, d := range ds {
		if slices.Contains(after, d.Key) {
			continue
		}
		out = append(out, d)
		if d.Key == DetectorKneewatchPage {
			for _, key := range after {
				for _, o := range ds {
					if o.Key == key {
						out = append(out, o)
					}
				}
			}
		}
	}
	return out
}

// suiteMarkdown writes the generated suite's sections.
func (r *Report) suiteMarkdown(p func(string, ...any), half string, seed uint64) {
	res := r.Results
	p("## The %s half of the generated suite\n\n", half)
	p("%d scenarios drawn by `detection.GenerateSuite` (seed %d of the suite; see Method), %s of simulated traffic,\n",
		len(res), seed, human(r.simulated()))
	p("run in %s of wall time on %d workers. Every deployment is a simulator preset serving one workload preset, with a\n", human(r.Elapsed.Round(time.Second)), r.Options.Workers)
	p("tight or a loose SLO; loads are multiples of the deployment's true knee rate.\n\n")
	r.suiteGoals(p)
	r.suiteDetectorTable(p)
	r.suiteFamilyTable(p)
	r.suiteDeploymentTable(p)
	r.suiteResweepTables(p)
	r.suiteWithoutModelsTables(p)
	r.suiteScenarioTable(p)
}

func pct(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return fmt.Sprintf("%.0f%%", 100*v)
}

func (r *Report) suiteGoals(p func(string, ...any)) {
	kw := tallyOf(r.Results, DetectorKneewatchPage)
	or := tallyOf(r.Results, DetectorOracle)
	p("### Goals (test half)\n\n")
	var paged []string
	for _, res := range r.Results {
		if s := res.score(DetectorKneewatchPage); res.Scenario.Safe && s.FalsePages > 0 {
			paged = append(paged, fmt.Sprintf("%d: %d", res.Scenario.ID, s.FalsePages))
		}
	}
	p("- **No false page in any safe scenario: %s.** kneewatch paged falsely in %d of %d safe scenarios (%d false pages",
		mark(kw.safePaged == 0), kw.safePaged, kw.safe, kw.safeFalse)
	if len(paged) > 0 {
		p(": %s", strings.Join(paged, ", "))
	}
	p("); the oracle in %d (%d pages). Over all %d scenarios: %.2f false pages per scenario-hour (oracle %.2f).\n",
		or.safePaged, or.safeFalse, kw.scenarios, float64(kw.falsePages)/kw.hours, float64(or.falsePages)/or.hours)
	ea := share(kw.early, kw.earlyPossible)
	p("- **Early-possible breaches (true headroom below 0 for ≥ %s before the breach) paged ≥ %s ahead in ≥ %.0f%%: %s.**\n",
		human(earlyPossibleAhead), human(leadGoal), 100*earlyGoalShare, mark(ea >= earlyGoalShare))
	p("  %d of %d (%s); the oracle %d of %d (%s).\n", kw.early, kw.earlyPossible, pct(ea), or.early, or.earlyPossible, pct(share(or.early, or.earlyPossible)))
	ab := share(kw.onTime, kw.abrupt)
	p("- **Abrupt onsets paged ≤ %s after the breach began and no later than the raw burn rate in ≥ %.0f%%: %s.**\n",
		human(abruptGrace), 100*abruptGoalShare, mark(ab >= abruptGoalShare))
	p("  %d of %d (%s); the oracle %d of %d (%s).\n", kw.onTime, kw.abrupt, pct(ab), or.onTime, or.abrupt, pct(share(or.onTime, or.abrupt)))
	over := familiesOverGoal(r.Results)
	all := pooledErrors(r.Results)
	p("- **Headroom error p95 ≤ %.1f in every family: %s.** Over the half: mean %.3f, p95 %.3f, max %.3f",
		headroomGoal, mark(len(over) == 0), all.mean, all.p95, all.max)
	if len(over) > 0 {
		p("; over the goal in %s", strings.Join(over, ", "))
	}
	p(".\n")
	if r.Options.ResweepSeed != 0 {
		var rover []string
		for _, f := range suiteFamilies {
			if e := pooledResweepErrors(r.familyResults(f.name)); e.n > 0 && e.p95 > headroomGoal {
				rover = append(rover, f.name)
			}
		}
		re := pooledResweepErrors(r.Results)
		p("  Given a profile of its own (an independent sweep, %s) rather than the truth's: mean %.3f, p95 %.3f, max %.3f;\n",
			resweepSeeds(r.Options), re.mean, re.p95, re.max)
		p("  over the goal in %d of %d families (see \"kneewatch given its own sweep\").\n", len(rover), len(suiteFamilies))
	}
	if r.Options.WithoutModelsWhatIf {
		var wover []string
		for _, f := range suiteFamilies {
			if e := pooledWithoutModelsErrors(r.familyResults(f.name)); e.n > 0 && e.p95 > headroomGoal {
				wover = append(wover, fmt.Sprintf("%s %.3f", f.name, e.p95))
			}
		}
		we := pooledWithoutModelsErrors(r.Results)
		labels := r.withoutModelsLabels()
		p("  Given the profile %s writes (%s): mean %.3f, p95 %.3f, max %.3f",
			labels.sweep, labels.carries, we.mean, we.p95, we.max)
		if len(wover) > 0 {
			p("; over the goal in %s", strings.Join(wover, ", "))
		}
		p(" (see \"%s\").\n", labels.title)
	}
	p("- **The truth judged every moment:** %d of %d scrapes (%.2f%%) were unknown, all at the start of a run before %d\n",
		kw.unknownTicks, kw.ticks, 100*float64(kw.unknownTicks)/float64(max(kw.ticks, 1)), knee.MinWindowRequests)
	p("  requests had finished. %d of %d safe scenarios breached the SLO anyway (their pages are scored against those breaches).\n\n",
		kw.safeBreached, kw.safe)
}

func (r *Report) suiteDetectorTable(p func(string, ...any)) {
	p("### Every detector side by side (test half)\n\n")
	p("\"Early\": early-possible breaches paged ≥ %s ahead; \"on time\": abrupt onsets paged ≤ %s after they began and no\n", human(leadGoal), human(abruptGrace))
	p("later than the raw burn-rate page; \"missed\": breaches with no page from %s before to their end.\n\n", human(leadHorizon))
	p("| detector | safe scenarios paged | false pages in safe scenarios | false pages per scenario-hour | early | on time | missed |\n")
	p("|---|---|---|---|---|---|---|\n")
	for _, d := range r.suiteDetectors() {
		t := tallyOf(r.Results, d.Key)
		p("| %s | %d of %d | %d | %.2f | %d of %d (%s) | %d of %d (%s) | %d |\n", d.Name, t.safePaged, t.safe, t.safeFalse,
			float64(t.falsePages)/t.hours, t.early, t.earlyPossible, pct(share(t.early, t.earlyPossible)),
			t.onTime, t.abrupt, pct(share(t.onTime, t.abrupt)), t.missed)
	}
	p("\n")
}

// familiesOverGoal names the families whose headroom error p95 over
// results is over headroomGoal, each with its p95 ("mix-ramp 0.142").
func familiesOverGoal(results []*ScenarioResult) []string {
	var over []string
	for _, f := range suiteFamilies {
		if e := pooledErrors(familyOf(results, f.name)); e.n > 0 && e.p95 > headroomGoal {
			over = append(over, fmt.Sprintf("%s %.3f", f.name, e.p95))
		}
	}
	return over
}

// familyResults are the results of one family.
func (r *Report) familyResults(name string) []*ScenarioResult {
	return familyOf(r.Results, name)
}

func (r *Report) suiteFamilyTable(p func(string, ...any)) {
	p("### By family (test half)\n\n")
	p("Breaches split into early-possible / abrupt. kneewatch and the oracle: false pages, early-possible breaches paged\n")
	p("≥ %s ahead, abrupt onsets paged on time. Headroom error: |kneewatch − truth| pooled over the family's scrapes.\n\n", human(leadGoal))
	p("| family | scenarios | hours | breaches (early-possible / abrupt) | kneewatch: false, early, on time | oracle: false, early, on time | headroom error mean / p95 / max |\n")
	p("|---|---|---|---|---|---|---|\n")
	for _, f := range suiteFamilies {
		rs := r.familyResults(f.name)
		if len(rs) == 0 {
			continue
		}
		kw, or := tallyOf(rs, DetectorKneewatchPage), tallyOf(rs, DetectorOracle)
		e := pooledErrors(rs)
		name := f.name
		if f.safe {
			name += " (safe)"
		}
		p("| %s | %d | %.1f | %d / %d | %d, %d/%d, %d/%d | %d, %d/%d, %d/%d | %.3f / %.3f / %.3f |\n", name, len(rs), kw.hours,
			kw.earlyPossible, kw.abrupt, kw.falsePages, kw.early, kw.earlyPossible, kw.onTime, kw.abrupt,
			or.falsePages, or.early, or.earlyPossible, or.onTime, or.abrupt, e.mean, e.p95, e.max)
	}
	p("\n")
	r.suiteDirectionTable(p)
}

// suiteDirectionTable says which way each family's large headroom errors
// lean and where they fall: the goal pools every scrape alike, and an error
// reading a replica far from its knee as nearer is not one that pages late.
func (r *Report) suiteDirectionTable(p func(string, ...any)) {
	p("Which way the errors over %.1f lean: the share of them that read headroom lower than the truth (a safe-side\n", headroomGoal)
	p("error), the share at a true headroom above %.1f (far from the knee, where no page is decided), and the error where the\n", nearKnee)
	p("true headroom is at most %.1f, all of it and where kneewatch read higher than the truth (the late-page side).\n\n", nearKnee)
	p("| family | scrapes | errors over %.1f | of them: read low | at true headroom > %.1f | error at true headroom ≤ %.1f: scrapes, mean / p95 / max | of those, read high: scrapes, p95 |\n", headroomGoal, nearKnee, nearKnee)
	p("|---|---|---|---|---|---|---|\n")
	for _, f := range suiteFamilies {
		rs := r.familyResults(f.name)
		if len(rs) == 0 {
			continue
		}
		d := directionOf(rs)
		near, high := "—", "—"
		if d.near.n > 0 {
			near = fmt.Sprintf("%d, %.3f / %.3f / %.3f", d.near.n, d.near.mean, d.near.p95, d.near.max)
		}
		if d.nearHigh.n > 0 {
			high = fmt.Sprintf("%d, %.3f", d.nearHigh.n, d.nearHigh.p95)
		}
		p("| %s | %d | %d (%s) | %s | %s | %s | %s |\n", f.name, d.n, d.over, pct(share(d.over, d.n)),
			pct(share(d.overLow, d.over)), pct(share(d.overFar, d.over)), near, high)
	}
	p("\n")
}

func (r *Report) suiteDeploymentTable(p func(string, ...any)) {
	p("### Headroom error by deployment (test half)\n\n")
	p("| deployment | SLO | true knee: in flight (req/s) | scenarios | scrapes | mean | p95 | max |\n|---|---|---|---|---|---|---|---|\n")
	for _, g := range r.byDeployment() {
		e := pooledErrors(g.rs)
		p("| %s | %s | %.1f (%.3g) | %d | %d | %.3f | %.3f | %.3f |\n", g.name, sloText(g.first.Scenario.Deployment.SLO),
			g.first.Profile.Knee.Concurrency, g.first.KneeRate, len(g.rs), e.n, e.mean, e.p95, e.max)
	}
	p("\n")
}

// deploymentGroup is the results of one deployment, first the one that
// came first.
type deploymentGroup struct {
	name  string
	first *ScenarioResult
	rs    []*ScenarioResult
}

// byDeployment groups the results by deployment, in the order each
// deployment first appears.
func (r *Report) byDeployment() []*deploymentGroup {
	var order []*deploymentGroup
	groups := map[string]*deploymentGroup{}
	for _, res := range r.Results {
		k := deploymentName(res.Scenario.Deployment)
		if groups[k] == nil {
			groups[k] = &deploymentGroup{name: k, first: res}
			order = append(order, groups[k])
		}
		groups[k].rs = append(groups[k].rs, res)
	}
	return order
}

func (r *Report) suiteScenarioTable(p func(string, ...any)) {
	p("### Every scenario (test half)\n\n")
	p("Cells as in the regressions' summary: lead of the page before each breach (+ before, − after it began), missed\n")
	p("breaches, false pages. Breach kinds: E early-possible, A abrupt.\n\n")
	p("| # | scenario | what happens | SLO | breaches | kneewatch page | oracle | raw burn rate | headroom error mean / p95 | unknown scrapes |\n")
	p("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, res := range r.Results {
		var bs []string
		for i, b := range res.Breaches {
			kind := "A"
			if res.earlyPossible(i) {
				kind = "E"
			}
			bs = append(bs, clock(b.Start)+" "+kind)
		}
		p("| %d | %s | %s | %s | %s | %s | %s | %s | %.3f / %.3f | %d |\n", res.Scenario.ID, res.Scenario.Name, res.Scenario.Description,
			sloText(res.Scenario.Deployment.SLO), orDash(strings.Join(bs, ", ")), cell(res.score(DetectorKneewatchPage)),
			cell(res.score(DetectorOracle)), cell(res.score(DetectorRawBurn)), res.Headroom.Mean, res.Headroom.P95, res.UnknownTicks)
	}
	p("\n")
}

// suiteMethod says how the suite is drawn, judged and split.
func (r *Report) suiteMethod(p func(string, ...any)) {
	p("## Method of the generated suite\n\n")
	p("- **Families.** ")
	var fs []string
	for _, f := range suiteFamilies {
		fs = append(fs, fmt.Sprintf("%s (%d of %d per half)", f.name, familyQuotas(defaultSuiteSize)[slicesIndex(f.name)], defaultSuiteSize))
	}
	p("%s. The scenarios' own descriptions give every drawn value. Breaching families run %s quietly first; safe ones\n", strings.Join(fs, ", "), human(genCalm))
	p("  (plateaus at 0.5–0.95× held 30–40 min, square waves up to 0.6–0.9×, diurnal peaks of 0.5–0.9×) are the ones that hold\n")
	p("  near the knee; any page in them is false. Mix shifts keep the request rate and move a share of it to another\n")
	p("  workload preset, each preset in turn; throttles slow the GPU down (`Slowdown`).\n")
	p("- **Deployments.** Every simulator preset × every workload preset its KV cache can hold at least %d requests of\n", minKVRequests)
	p("  (skipped: long-context on the 8B L4, where ~2.6 requests fit and the knee's ~0.02 requests/s would take over an hour\n")
	p("  to produce the 100 a p99 needs), each with a tight and a loose SLO. The SLO is set from the replica's own p99 TTFT\n")
	p("  and TPOT at concurrency 1: TTFT ×%g (tight) or ×%g (loose), TPOT ×%g or ×%g (×%g or ×%g for prompt-heavy\n",
		sloMultiples[SLOTight].ttft, sloMultiples[SLOLoose].ttft, sloMultiples[SLOTight].tpot, sloMultiples[SLOLoose].tpot,
		sloMultiples[SLOTight].tpotPrefillHeavy, sloMultiples[SLOLoose].tpotPrefillHeavy)
	p("  mixes, whose prefills share steps with decodes), each rounded up to a vLLM bucket edge; so the SLOs follow the\n")
	p("  presets' calibration.\n")
	p("- **Two disjoint halves.** One seeded stream (`math/rand/v2` PCG) draws candidates: a family, a deployment, the\n")
	p("  family's parameters quantized (levels to 0.01×, times to 30 s). A hash of that draw decides its half, so the same\n")
	p("  draw can never land in both; a repeated draw is dropped. Test scenarios get odd arrival seeds, tune ones even.\n")
	p("  `go test ./internal/detection -run GenerateSuite` checks disjointness, determinism, counts and coverage. Defaults may be\n")
	p("  tuned on `kneewatch-bench --suite tune` only.\n")
	p("- **Oracle.** kneewatch's shipped rules, exactly as the page is evaluated, on a copy of kneewatch's `/metrics` in a\n")
	p("  store of its own where the headroom series (same labels) is the true headroom of each scrape.\n")
	p("- **Breach kinds.** A breach is early-possible when the true headroom was below 0 for the whole %s before it\n", human(earlyPossibleAhead))
	p("  began (physics, not the rule: a page ahead of it was possible); otherwise its onset is abrupt.\n")
	p("- **Speed.** Scenarios run %d at a time; each true knee (per deployment, mix share and slowdown) is measured once\n", r.Suite.Options.Workers)
	p("  per run, on a grid of mix shares 0.1–1 and slowdowns every 0.2; the regressions and the suite half run side by\n")
	p("  side.\n")
	p("- **The truth's own noise.** A true knee is a Poisson rate search, and with only its seed changed a knee moves:\n")
	p("  its mean in flight far more than its request rate (`KNEEWATCH_KNEE_SPREAD=1 go test -run TestPoissonKneeSeedSpread\n")
	p("  ./internal/detection` prints both for every deployment). kneewatch is given the truth's own knee at nominal\n")
	p("  conditions, so the noise is counted only where a slowdown or a mix share has a knee of its own: in the throttle\n")
	p("  and mix families' headroom error.")
	if n := r.Suite.Options.TruthGridSeeds; n > 1 {
		p(" There, on this half, the true knee is the median of %d searches with different seeds\n", n)
		p("  (`kneewatch-bench --truth-grid-seeds`), so one unlucky search does not stand for the truth.")
	}
	p(" An operator's profile is a sweep of its own, with its own noise: the\n")
	p("  \"kneewatch given its own sweep\" tables run a second kneewatch on the same scrapes with the deployment's profile\n")
	p("  swept again at another seed (`kneewatch-bench --resweep-seed`, `Options.ResweepSeed`), its trials run as\n")
	p("  `kneewatch sweep` runs its own unless `--resweep-trials truth`; its error against the truth holds both sweeps' noise.\n\n")
}

func slicesIndex(name string) int {
	for i, f := range suiteFamilies {
		if f.name == name {
			return i
		}
	}
	return -1
}

// suiteResweepTables compare kneewatch given the truth's own sweep with
// kneewatch given an independent one (Options.ResweepSeed), when it ran.
func (r *Report) suiteResweepTables(p func(string, ...any)) {
	if r.Options.ResweepSeed == 0 || len(r.Results) == 0 {
		return
	}
	without := 0
	for _, res := range r.Results {
		if res.Resweep == nil {
			without++
		}
	}
	p("### kneewatch given its own sweep (test half)\n\n")
	p("Everywhere above, kneewatch is given the very sweep the truth is measured with, so at nominal conditions its knee\n")
	p("is the truth's exactly. An operator's profile is a sweep of its own: here a second kneewatch, fed the same scrapes and judged\n")
	if r.Options.ResweepLikeSweep {
		p("against the same truth, is given the deployment's profile swept again with seed %d as `kneewatch sweep` sweeps: its\n", r.Options.ResweepSeed)
		p("Poisson trials a 1-minute warm-up and a steady part of 150 requests (at least 2 minutes), 4 halvings from 0.2 of the\n")
		p("start, each judged at 90%% of the thresholds and not kept where its queue ran away (the truth's: 5-minute warm-ups,\n")
		p("20-minute steady parts at the thresholds), its mix and speed models searched the same way, on other arrivals and\n")
		p("request lengths (the trials start from the closed-loop knee's rate, where the sweep starts from its first broken\n")
		p("level's). What differs is the sweep's own noise and bias in where the knee lies.\n")
	} else {
		p("against the same truth, is given the deployment's profile swept again with %s (the same search, mix model\n", resweepSeeds(r.Options))
		p("included, on other arrivals and request lengths). What differs is one Poisson search's noise in where the knee lies.\n")
	}
	if without > 0 {
		p("%d of %d scenarios ran without it: that sweep found no knee for their deployment, and its rows count only the rest.\n",
			without, len(r.Results))
	}
	p("\n")
	kw, rs := tallyOf(r.Results, DetectorKneewatchPage), tallyOf(r.Results, DetectorResweepPage)
	e, re := pooledErrors(r.Results), pooledResweepErrors(r.Results)
	givenTable(p, []givenRow{{"the truth's sweep (seed " + fmt.Sprint(r.Options.Seed) + ")", kw, e},
		{"an independent sweep (" + resweepSeeds(r.Options) + ")", rs, re}})
	p("\n| family | headroom error p95: the truth's sweep | an independent sweep |\n|---|---|---|\n")
	for _, f := range suiteFamilies {
		fs := r.familyResults(f.name)
		if len(fs) == 0 {
			continue
		}
		p("| %s | %.3f | %.3f |\n", f.name, pooledErrors(fs).p95, pooledResweepErrors(fs).p95)
	}
	p("\nThe two sweeps' knees, by deployment (in flight at the knee's request rate):\n\n")
	p("| deployment | the truth's sweep: in flight (req/s) | independent sweep: in flight (req/s) | in flight, independent ÷ truth's | headroom error p95: truth's / independent |\n|---|---|---|---|---|\n")
	for _, g := range r.byDeployment() {
		a := g.first.Profile.Knee
		if g.first.Resweep == nil {
			p("| %s | %.1f (%.3g) | no knee | — | %.3f / — |\n", g.name, a.Concurrency, a.RequestsPerSecond, pooledErrors(g.rs).p95)
			continue
		}
		b := g.first.Resweep.Profile.Knee
		p("| %s | %.1f (%.3g) | %.1f (%.3g) | %.2f | %.3f / %.3f |\n", g.name, a.Concurrency, a.RequestsPerSecond,
			b.Concurrency, b.RequestsPerSecond, b.Concurrency/a.Concurrency, pooledErrors(g.rs).p95, pooledResweepErrors(g.rs).p95)
	}
	p("\n")
}

// suiteWithoutModelsTables compare kneewatch given the deployment's profile
// with its mix and speed models and without them (Options.
// WithoutModelsWhatIf), when that ran: what `kneewatch sweep` without
// --mix-scales and --speed-model, its default, leaves out.
func (r *Report) suiteWithoutModelsTables(p func(string, ...any)) {
	if !r.Options.WithoutModelsWhatIf || len(r.Results) == 0 {
		return
	}
	labels := r.withoutModelsLabels()
	p("### %s (test half)\n\n", labels.title)
	p("Everywhere above, kneewatch's profile carries a mix model (`--mix-scales default`) and a speed model\n")
	p("(`--speed-model default`), each measured with more knee searches. `kneewatch sweep` measures neither unless asked.\n")
	p("Here a second kneewatch, fed the same scrapes and judged against the same truth, is given the same profile\n")
	if len(r.Options.WithoutModelsMixScales) > 0 {
		p("as %s writes it: a mix model fitted to the truth's knees at those scales and its own mix only\n", labels.sweep)
		p("(after leaving out a mix whose knee rate rises above a lighter one's, as the sweep does), no speed model,\n")
		p("and with the curve cut to the closed loop's doubling up to its first\n")
	} else {
		p("as a default sweep writes it: without them, and with the curve cut to the closed loop's doubling up to its first\n")
	}
	p("break, its closed-loop knee interpolated in that bracket (a sweep with Poisson arrivals does not refine it).\n")
	if len(r.Options.WithoutModelsMixScales) > 0 {
		p("Without the speed model it reads a slower GPU's knee off the profile's curve, at that interpolated knee.\n\n")
	} else {
		p("Without the mix model it does not move the knee with the mix, and the KV cache, read against the\n")
		p("knee's own usage, is what sees longer contexts; without the speed model it reads a slower GPU's knee off the\n")
		p("profile's curve, at that interpolated knee.\n\n")
	}
	kw, wm := tallyOf(r.Results, DetectorKneewatchPage), tallyOf(r.Results, DetectorWithoutModelsPage)
	e, we := pooledErrors(r.Results), pooledWithoutModelsErrors(r.Results)
	givenTable(p, []givenRow{{"the profile with its models", kw, e}, {labels.name, wm, we}})
	p("\n| family | headroom error p95: with the models | %s | kneewatch page, with: false, early, on time | %s |\n|---|---|---|---|---|\n", labels.column, labels.column)
	for _, f := range suiteFamilies {
		fs := r.familyResults(f.name)
		if len(fs) == 0 {
			continue
		}
		a, b := tallyOf(fs, DetectorKneewatchPage), tallyOf(fs, DetectorWithoutModelsPage)
		p("| %s | %.3f | %.3f | %d, %d/%d, %d/%d | %d, %d/%d, %d/%d |\n", f.name, pooledErrors(fs).p95, pooledWithoutModelsErrors(fs).p95,
			a.falsePages, a.early, a.earlyPossible, a.onTime, a.abrupt, b.falsePages, b.early, b.earlyPossible, b.onTime, b.abrupt)
	}
	p("\n")
}

// givenRow is one kneewatch of a what-if comparison: what it was given,
// its page's tally and its headroom errors.
type givenRow struct {
	name string
	t    tally
	e    errorStats
}

// givenTable writes the what-if tables' comparison of kneewatch given one
// profile against another.
func givenTable(p func(string, ...any), rows []givenRow) {
	p("| kneewatch given | safe scenarios paged | false pages per scenario-hour | early | on time | missed | headroom error mean / p95 / max |\n")
	p("|---|---|---|---|---|---|---|\n")
	for _, row := range rows {
		t := row.t
		p("| %s | %d of %d | %.2f | %d of %d (%s) | %d of %d (%s) | %d | %.3f / %.3f / %.3f |\n", row.name, t.safePaged, t.safe,
			float64(t.falsePages)/t.hours, t.early, t.earlyPossible, pct(share(t.early, t.earlyPossible)),
			t.onTime, t.abrupt, pct(share(t.onTime, t.abrupt)), t.missed, row.e.mean, row.e.p95, row.e.max)
	}
}

// withoutModelsLabels names the without-models what-if in the report:
// the profile without models, or with only the mix model fitted at
// Options.WithoutModelsMixScales.
type withoutModelsLabels struct {
	title   string // the section's heading
	name    string // its row in the tables
	column  string // its columns in the family table
	sweep   string // the sweep that writes that profile
	carries string // which models that profile carries
}

func (r *Report) withoutModelsLabels() withoutModelsLabels {
	scales := r.Options.WithoutModelsMixScales
	if len(scales) == 0 {
		return withoutModelsLabels{title: "kneewatch given a profile without models", name: "the profile without models",
			column: "without", sweep: "a default `kneewatch sweep`", carries: "no mix or speed model"}
	}
	at := knee.FormatMixScales(scales)
	return withoutModelsLabels{title: "kneewatch given a profile with a mix model at " + at + " only",
		name: "the profile with the mix model at " + at + " only", column: "with the mix model at " + at + " only",
		sweep: "`kneewatch sweep --mix-scales " + at + "`", carries: "that mix model, no speed model"}
}
