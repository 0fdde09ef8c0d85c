package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/workload"
)

// validationSLO is an SLO an operator might set for a preset and mix,
// derived from one request alone (so it follows the presets' calibration):
// p99 TTFT within 8× and p99 TPOT within 3× of concurrency 1's, TTFT at
// least 1 s. The detection bench's chat SLO on the 8B/H100 is of that kind.
func validationSLO(t *testing.T, p Preset, g *workload.Generator) knee.SLO {
	t.Helper()
	lv, err := RunLevel(context.Background(), LevelConfig{Engine: Config{Preset: p}, Workload: g, Concurrency: 1,
		SLO: knee.SLO{TTFT: knee.Duration(time.Hour), TPOT: knee.Duration(time.Hour), Quantile: 0.99}, WindowRequests: 300})
	if err != nil {
		t.Fatal(err)
	}
	ttft := max(time.Second, time.Duration(8*lv.Point.TTFT.P99*float64(time.Second))).Round(100 * time.Millisecond)
	tpot := time.Duration(3 * lv.Point.TPOT.P99 * float64(time.Second)).Round(time.Millisecond)
	return knee.SLO{TTFT: knee.Duration(ttft), TPOT: knee.Duration(tpot), Quantile: 0.99}
}

// blendTrace draws records from primary, and a share of them from alt: a
// mix that is not a scaled copy of either (two humps, not one stretched).
func blendTrace(primary, alt string, share float64, seed uint64) (*workload.Generator, error) {
	pm, _ := workload.Preset(primary)
	am, _ := workload.Preset(alt)
	return workload.NewTraceGenerator(workload.Blend(pm, am, share, 8000, seed))
}

// heldOutMix is a mix the mix model was not fitted to.
type heldOutMix struct {
	name string
	gen  func(base *workload.Generator, p Preset, wl string) (*workload.Generator, error)
	// minority: a blend whose other workload is a tenth of the traffic.
	minority bool
	// A blend's other workload (alt, or fallback where the deployment
	// serves alt) and its share of the traffic; empty for a scaled mix.
	alt, fallback string
	share         float64
}

// other is the workload a blend draws its share from when the deployment
// serves wl.
func (h heldOutMix) other(wl string) string {
	if h.alt == wl {
		return h.fallback
	}
	return h.alt
}

func scaledMix(prompt, output float64) heldOutMix {
	return heldOutMix{name: fmt.Sprintf("prompt×%g output×%g", prompt, output), gen: func(base *workload.Generator, p Preset, _ string) (*workload.Generator, error) {
		return base.Scaled(prompt, output, p.MaxModelLen)
	}}
}

// blendMix blends a share of alt into the workload, or of fallback when
// the workload is alt; the row names the blend drawn (its trace's source).
func blendMix(alt, fallback string, share float64) heldOutMix {
	h := heldOutMix{name: fmt.Sprintf("+%.0f%% %s", 100*share, alt), alt: alt, fallback: fallback, share: share}
	h.gen = func(_ *workload.Generator, _ Preset, wl string) (*workload.Generator, error) {
		return blendTrace(wl, h.other(wl), share, 1)
	}
	return h
}

// minorityMix is blendMix at a tenth of the traffic.
func minorityMix(alt, fallback string) heldOutMix {
	h := blendMix(alt, fallback, 0.1)
	h.minority = true
	return h
}

// heldOutMixes: longer outputs, longer prompts, both, shorter outputs (all
// between the measured scales), blends toward other workload presets,
// mixes lighter than the lightest measured (prompts, or prompts and
// outputs, at a quarter; most of the traffic turned chat), and a tenth of
// the traffic from another workload (code, or summarize for a code
// deployment; RAG, or summarize for a RAG one).
var heldOutMixes = []heldOutMix{
	scaledMix(1, 3), scaledMix(3, 1), scaledMix(1.5, 1.5), scaledMix(1, 0.7),
	blendMix("summarize", "rag", 0.2), blendMix("code", "chat", 0.5),
	scaledMix(0.25, 1), scaledMix(0.25, 0.25), blendMix("chat", "code", 0.8),
	minorityMix("code", "summarize"), minorityMix("rag", "summarize"),
}

// Kinds of held-out mix, each summarized apart: scaled mixes and blends
// within the measured range, and mixes lighter than any measured (by the
// means drawn, whatever the mix's name).
const (
	kindScaled = iota
	kindBlend
	kindLighter
	kindMinority
	mixKinds
)

var mixKindNames = [mixKinds]string{"scaled mixes", "blends", "lighter mixes", "minorities"}

// mixRow is one line of the validation table.
type mixRow struct {
	preset, workload, mix string
	// The knee's concurrency and request rate, true and modelled; the
	// errors are model ÷ true − 1.
	trueC, modelC, errC float64
	trueR, modelR, errR float64
	// The errors of the profile's own knee, not moved: what the model is for.
	stillC, stillR float64
	// The errors as kneewatch reads the mix live (see liveReading), and
	// as it did before it read the prompt tail over the replica's history.
	liveC, liveR     float64
	windowC, windowR float64
	// The errors of the knee held at the lightest measured mix's (the rule
	// before lighter mixes raised it), for a mix lighter than any measured.
	heldC, heldR float64
	// For a blend: the true knee of the deployment's own mix scaled to the
	// blend's means, against the blend's (meansC, meansR: the most a model
	// of the means could get right), and the model against it (fitC, fitR:
	// how well the model reads the means). Unknown (NaN) for other mixes,
	// and where the scaled mix has no knee.
	meansC, meansR, fitC, fitR float64
	kind                       int
	note                       string
}

// TestMixModelPredictsKneesAtMixesItWasNotFittedTo measures, for every
// simulator preset and workload preset, the Poisson knee with a mix model
// (knee.DefaultMixScales), then the true knee at mixes the model was not
// fitted to, and compares it with the knee Evaluate moves to for traffic
// with those mixes' mean prompt and output. It prints the table and
// asserts the error bounds measured when the model was chosen. For every
// blend it also finds the knee of the deployment's own mix scaled to the
// blend's means (kneeAtTheMeans), which splits the model's error into
// what the means cannot say about a blend and how the model reads them.
func TestMixModelPredictsKneesAtMixesItWasNotFittedTo(t *testing.T) {
	if testing.Short() {
		t.Skip("a Poisson knee search for every preset, workload and mix (about 1.5 min on 2 cores)")
	}
	// On a busy machine it takes up to 9 minutes: under go test's default
	// 10-minute timeout it would take the whole package down with it.
	if d, ok := t.Deadline(); ok && time.Until(d) < mixValidationNeeds {
		t.Skipf("needs up to %s; run it with: go test -run %s -timeout 30m ./internal/sim", mixValidationNeeds, t.Name())
	}
	var (
		mu   sync.Mutex
		rows []mixRow
	)
	forEachPresetAndWorkload(func(preset, wl string) {
		r := validateMixModel(t, preset, wl)
		mu.Lock()
		rows = append(rows, r...)
		mu.Unlock()
	})
	slices.SortStableFunc(rows, func(a, b mixRow) int {
		return strings.Compare(a.preset+"/"+a.workload, b.preset+"/"+b.workload)
	})

	var b strings.Builder
	fmt.Fprintf(&b, "\n%-22s %-12s %-22s %20s %7s %24s %7s\n", "preset", "workload", "held-out mix",
		"knee in flight", "", "knee requests/s", "")
	fmt.Fprintf(&b, "%-22s %-12s %-22s %9s %10s %7s %11s %12s %7s\n", "", "", "", "true", "model", "error", "true", "model", "error")
	var errs, still, held, live, window, means, fit [mixKinds][2][]float64 // [kind][concurrency, rate]
	var readHigh, readHighLive, readHighWindow [mixKinds]int               // rates read 30% or more over the true knee's
	high := 0                                                              // lighter mixes whose modelled knee in flight is over 1.3× the true one
	for _, r := range rows {
		if r.note != "" {
			fmt.Fprintf(&b, "%-22s %-12s %-22s %s\n", r.preset, r.workload, r.mix, r.note)
			continue
		}
		fmt.Fprintf(&b, "%-22s %-12s %-22s %9.1f %10.1f %+6.0f%% %11.3g %12.3g %+6.0f%%",
			r.preset, r.workload, r.mix, r.trueC, r.modelC, 100*r.errC, r.trueR, r.modelR, 100*r.errR)
		if math.Abs(r.liveR-r.errR) >= 0.005 || math.Abs(r.liveC-r.errC) >= 0.005 {
			fmt.Fprintf(&b, "   read live: %+.0f%%, %+.0f%%", 100*r.liveC, 100*r.liveR)
			if r.windowC != r.liveC || r.windowR != r.liveR {
				fmt.Fprintf(&b, " (without the history's tail: %+.0f%%, %+.0f%%)", 100*r.windowC, 100*r.windowR)
			}
		}
		if !math.IsNaN(r.meansC) {
			fmt.Fprintf(&b, "   a scaled mix at its means: %+.0f%%, %+.0f%%", 100*r.meansC, 100*r.meansR)
			means[r.kind][0] = append(means[r.kind][0], math.Abs(r.meansC))
			means[r.kind][1] = append(means[r.kind][1], math.Abs(r.meansR))
			fit[r.kind][0] = append(fit[r.kind][0], math.Abs(r.fitC))
			fit[r.kind][1] = append(fit[r.kind][1], math.Abs(r.fitR))
		}
		if r.kind == kindLighter {
			fmt.Fprintf(&b, "   lighter than measured; held at the lightest: %+.0f%%, %+.0f%%", 100*r.heldC, 100*r.heldR)
			held[r.kind][0] = append(held[r.kind][0], math.Abs(r.heldC))
			held[r.kind][1] = append(held[r.kind][1], math.Abs(r.heldR))
			if r.errC > 0.3 {
				high++
			}
		}
		b.WriteString("\n")
		errs[r.kind][0] = append(errs[r.kind][0], math.Abs(r.errC))
		errs[r.kind][1] = append(errs[r.kind][1], math.Abs(r.errR))
		live[r.kind][0] = append(live[r.kind][0], math.Abs(r.liveC))
		live[r.kind][1] = append(live[r.kind][1], math.Abs(r.liveR))
		if r.errR >= 0.3 {
			readHigh[r.kind]++
		}
		window[r.kind][0] = append(window[r.kind][0], math.Abs(r.windowC))
		window[r.kind][1] = append(window[r.kind][1], math.Abs(r.windowR))
		if r.liveR >= 0.3 {
			readHighLive[r.kind]++
		}
		if r.windowR >= 0.3 {
			readHighWindow[r.kind]++
		}
		still[r.kind][0] = append(still[r.kind][0], math.Abs(r.stillC))
		still[r.kind][1] = append(still[r.kind][1], math.Abs(r.stillR))
	}
	for kind, name := range mixKindNames {
		for q, what := range []string{"knee in flight", "knee rate"} {
			m, p, x := summary(errs[kind][q])
			sm, sp, sx := summary(still[kind][q])
			fmt.Fprintf(&b, "%-13s %-14s n=%d: median |error| %.0f%%, p90 %.0f%%, max %.0f%% (the profile's knee, not moved: %.0f%%, %.0f%%, %.0f%%",
				name, what, len(errs[kind][q]), 100*m, 100*p, 100*x, 100*sm, 100*sp, 100*sx)
			if kind == kindLighter {
				hm, hp, hx := summary(held[kind][q])
				fmt.Fprintf(&b, "; held at the lightest measured: %.0f%%, %.0f%%, %.0f%%", 100*hm, 100*hp, 100*hx)
			}
			lm, lp, lx := summary(live[kind][q])
			wm, wp, wx := summary(window[kind][q])
			fmt.Fprintf(&b, "; read live: %.0f%%, %.0f%%, %.0f%%; live without the history's tail: %.0f%%, %.0f%%, %.0f%%)\n",
				100*lm, 100*lp, 100*lx, 100*wm, 100*wp, 100*wx)
		}
		fmt.Fprintf(&b, "%-13s rates read 30%% or more high: %d of %d from the means, %d read live, %d without the history's tail\n",
			name, readHigh[kind], len(errs[kind][1]), readHighLive[kind], readHighWindow[kind])
		if len(means[kind][0]) > 0 {
			mc, pc, _ := summary(means[kind][0])
			mr, pr, _ := summary(means[kind][1])
			fc, gc, _ := summary(fit[kind][0])
			fr, gr, _ := summary(fit[kind][1])
			fmt.Fprintf(&b, "%-13s the deployment's own mix scaled to each of %d blends' means, against the blend: median / p90 |error| %.0f%% / %.0f%% in flight, %.0f%% / %.0f%% rate (what the means can say); the model against that scaled mix %.0f%% / %.0f%%, %.0f%% / %.0f%% (how it reads them)\n",
				name, len(means[kind][0]), 100*mc, 100*pc, 100*mr, 100*pr, 100*fc, 100*gc, 100*fr, 100*gr)
		}
	}
	fmt.Fprintf(&b, "lighter mixes whose modelled knee is over 1.3× the true one: %d of %d\n", high, len(errs[kindLighter][0]))
	t.Log(b.String())

	// The model reads a blend's means about as well as they can be read
	// (2026-12-07: its knee rate against the scaled mix's, median / p90
	// 9% / 24% on blends, 10% / 31% on minorities); a blend's error beyond
	// that is the means' own (see docs/simulator.md).
	for _, kind := range []int{kindBlend, kindMinority} {
		if m, p, _ := summary(fit[kind][1]); len(fit[kind][1]) < 10 || m > 0.2 || p > 0.5 {
			t.Errorf("%s: the model's knee rate against a scaled mix at the same means: median |error| %.2f (bound 0.20), p90 %.2f (bound 0.50), over %d",
				mixKindNames[kind], m, p, len(fit[kind][1]))
		}
	}
	// Bounds measured when the model was chosen (see knee.MixModel), with
	// room for the presets' calibration to move.
	for kind, name := range mixKindNames {
		if n := len(errs[kind][0]); n < 10 {
			t.Errorf("%s: only %d compared", name, n)
		}
		for q, bound := range mixErrorBounds[kind] {
			if m, p, _ := summary(errs[kind][q]); m > bound[0] || p > bound[1] {
				t.Errorf("%s, %s: median |error| %.2f (bound %.2f), p90 %.2f (bound %.2f)",
					name, []string{"knee in flight", "knee rate"}[q], m, bound[0], p, bound[1])
			}
		}
	}
}

// mixValidationNeeds is the time TestMixModelPredictsKneesAtMixesItWasNotFittedTo
// asks of the test binary's deadline.
const mixValidationNeeds = 15 * time.Minute

// Error bounds of the mix model at held-out mixes, relative, as {median,
// p90} of |model ÷ true − 1|, indexed [kind of mix][knee in
// flight, knee rate]: the figures TestMixModelPredictsKneesAtMixesItWasNotFittedTo
// printed when the model was chosen, with room for the presets'
// calibration to move them. Lighter mixes (2026-12-04): in flight a median
// of 25% and p90 62% (the lightest measured mix's knee), the rate 20% and
// 44% (see knee.lighterRise). Minorities (2026-12-06): in flight 21% and
// 88%, the rate 16% and 58%, and 19 of the 28 rates read high (8 by 30%
// or more): a tenth of heavier requests takes the blend's p99 into their
// tail, and the means alone do not show it (see docs/simulator.md).
var mixErrorBounds = [mixKinds][2][2]float64{
	{{0.3, 1.0}, {0.2, 0.45}},
	{{0.45, 1.2}, {0.25, 0.6}},
	{{0.35, 0.8}, {0.3, 0.6}},
	{{0.35, 1.2}, {0.25, 0.75}},
}

// summary is the median, 90th percentile and max of xs.
func summary(xs []float64) (median, p90, maxv float64) {
	if len(xs) == 0 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	s := slices.Sorted(slices.Values(xs))
	return s[len(s)/2], s[min(len(s)-1, int(math.Ceil(0.9*float64(len(s))))-1)], s[len(s)-1]
}

// validateMixModel is one preset and workload's rows.
func validateMixModel(t *testing.T, presetName, wl string) []mixRow {
	p, base, cfg, ok := validationSetup(t, presetName, wl)
	if !ok {
		return nil
	}
	row := func(mix, note string) mixRow { return mixRow{preset: presetName, workload: wl, mix: mix, note: note} }
	prof, err := FindKnee(context.Background(), cfg)
	switch {
	case errors.Is(err, ErrMixModel):
		return []mixRow{row("(model)", "no mix model: "+err.Error())}
	case err != nil:
		return []mixRow{row("(profile)", "no knee: "+err.Error())}
	}
	var rows []mixRow
	for _, h := range heldOutMixes {
		gen, err := h.gen(base, p, wl)
		if err != nil {
			rows = append(rows, row(h.name, "cannot build: "+err.Error()))
			continue
		}
		q, err := trueKneeAt(cfg, gen)
		if err != nil {
			rows = append(rows, row(h.name, "no true knee (SLO unreachable at this mix)"))
			continue
		}
		obs := knee.NewObservation()
		obs.InFlight = q.Knee.Concurrency
		obs.MeanPromptTokens, obs.MeanOutputTokens = q.Workload.MeanPromptTokens, q.Workload.MeanOutputTokens
		res := knee.Evaluate(obs, &prof, knee.Options{})
		live, err := liveReading(obs, &prof, h, base, p, wl, q.Knee.RequestsPerSecond, true)
		if err != nil {
			rows = append(rows, row(h.name, "cannot draw its prompts: "+err.Error()))
			continue
		}
		windowOnly, err := liveReading(obs, &prof, h, base, p, wl, q.Knee.RequestsPerSecond, false)
		if err != nil {
			rows = append(rows, row(h.name, "cannot draw its prompts: "+err.Error()))
			continue
		}
		name := h.name
		if info := gen.Info(); info.TraceRecords > 0 {
			name = "+" + strings.TrimPrefix(info.Source, wl+"+") // e.g. "+20%summarize"
		}
		r := row(name, "")
		r.trueC, r.modelC = q.Knee.Concurrency, res.Knee.Concurrency
		r.trueR, r.modelR = q.Knee.RequestsPerSecond, res.Knee.RequestsPerSecond
		r.errC, r.errR = r.modelC/r.trueC-1, r.modelR/r.trueR-1
		r.stillC, r.stillR = prof.Knee.Concurrency/r.trueC-1, prof.Knee.RequestsPerSecond/r.trueR-1
		r.liveC, r.liveR = live.Knee.Concurrency/r.trueC-1, live.Knee.RequestsPerSecond/r.trueR-1
		r.windowC, r.windowR = windowOnly.Knee.Concurrency/r.trueC-1, windowOnly.Knee.RequestsPerSecond/r.trueR-1
		r.kind = h.kind(prof.MixModel, prof.Workload, q.Workload)
		r.meansC, r.meansR, r.fitC, r.fitR = math.NaN(), math.NaN(), math.NaN(), math.NaN()
		if h.share > 0 {
			if at, ok := kneeAtTheMeans(cfg, base, p, prof.Workload, q.Workload); ok {
				r.meansC, r.meansR = at.Concurrency/r.trueC-1, at.RequestsPerSecond/r.trueR-1
				r.fitC, r.fitR = r.modelC/at.Concurrency-1, r.modelR/at.RequestsPerSecond-1
			}
		}
		if r.kind == kindLighter {
			c, rate, _ := heldAtLightest(prof.MixModel, prof.Workload, q.Workload)
			r.heldC, r.heldR = c/r.trueC-1, rate/r.trueR-1
		}
		rows = append(rows, r)
	}
	return rows
}

// kneeAtTheMeans is the true knee of the deployment's own mix (base)
// scaled to mix's means, as the profile's own served means (own) compare
// with them: the knee a model that read the means perfectly would give a
// blend. ok is false where that mix has no knee.
func kneeAtTheMeans(cfg KneeConfig, base *workload.Generator, p Preset, own, mix knee.WorkloadInfo) (knee.Knee, bool) {
	scaled, err := base.Scaled(mix.MeanPromptTokens/own.MeanPromptTokens, mix.MeanOutputTokens/own.MeanOutputTokens, p.MaxModelLen)
	if err != nil {
		return knee.Knee{}, false
	}
	q, err := trueKneeAt(cfg, scaled)
	if err != nil {
		return knee.Knee{}, false
	}
	return q.Knee, true
}

// liveReading is the knee Evaluate moves to for obs (a mix's means) as
// kneewatch reads a replica live at the mix's true knee rate: beside the
// means, the prompt p99 at the engine's bucket edge below it, over the
// 1-minute window's requests (unknown under 100) and over the replica's
// history (up to 10 minutes, at most 1000 requests; see
// collector.PromptTailHistory), each with the count it was read over. The
// p99 is the mix's own over 8000 draws, not a window's sample of it.
// Without history, only the window's tail is read.
func liveReading(obs knee.Observation, prof *knee.Profile, h heldOutMix, base *workload.Generator, p Preset, wl string, rate float64, history bool) (knee.Result, error) {
	gen, err := h.gen(base, p, wl)
	if err != nil {
		return knee.Result{}, err
	}
	prompts := make([]float64, 8000)
	for i := range prompts {
		prompts[i] = float64(gen.Next().PromptTokens)
	}
	slices.Sort(prompts)
	q := knee.SampleQuantile(prompts, 0.99)
	floor := knee.Unknown()
	for _, b := range TokenBuckets(p.MaxModelLen) {
		if b < q {
			floor = b
		}
	}
	window := rate * time.Minute.Seconds()
	obs.MixRequests = max(window, knee.MinMixRequests)
	if window >= 100 {
		obs.PromptTokensP99 = floor
	}
	if n := min(rate*(10*time.Minute).Seconds(), 1000); history && n >= 100 {
		obs.SpanPromptTokensP99, obs.SpanPromptRequests = floor, n
	}
	return knee.Evaluate(obs, prof, knee.Options{}), nil
}

// heldAtLightest is the knee the mix model gave a mix lighter than any
// measured before lighter mixes raised it: the model at the means held
// within the measured range, and its knee held within the measured knees.
// lighter is false when mix is not lighter than every measured one in
// prompt or output.
func heldAtLightest(m *knee.MixModel, own, mix knee.WorkloadInfo) (concurrency, rate float64, lighter bool) {
	pLo, oLo := math.Inf(1), math.Inf(1)
	cLo, cHi, rLo, rHi := math.Inf(1), 0.0, math.Inf(1), 0.0
	for _, pt := range m.Points {
		pLo, oLo = min(pLo, pt.MeanPromptTokens), min(oLo, pt.MeanOutputTokens)
		cLo, cHi = min(cLo, pt.Concurrency), max(cHi, pt.Concurrency)
		rLo, rHi = min(rLo, pt.RequestsPerSecond), max(rHi, pt.RequestsPerSecond)
	}
	if mix.MeanPromptTokens >= pLo && mix.MeanOutputTokens >= oLo {
		return 0, 0, false
	}
	x := math.Log(max(mix.MeanPromptTokens, pLo) / own.MeanPromptTokens)
	z := math.Log(max(mix.MeanOutputTokens, oLo) / own.MeanOutputTokens)
	return min(max(m.Concurrency.At(x, z), cLo), cHi), min(max(m.RequestsPerSecond.At(x, z), rLo), rHi), true
}

// forEachPresetAndWorkload calls fn for every simulator preset and
// workload preset, two at a time, and returns when all have returned.
func forEachPresetAndWorkload(fn func(preset, wl string)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for _, p := range PresetNames() {
		for _, wl := range workload.PresetNames() {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				fn(p, wl)
			})
		}
	}
	wg.Wait()
}

// validationSetup is a preset and workload as the mix model's validation
// measures them: the preset, the workload drawn with seed 1, and the knee
// search (with the default mix scales) under validationSLO; false, with
// the error reported on t, when either does not resolve.
func validationSetup(t *testing.T, presetName, wl string) (Preset, *workload.Generator, KneeConfig, bool) {
	p, err := LoadPreset(presetName)
	if err != nil {
		t.Error(err)
		return Preset{}, nil, KneeConfig{}, false
	}
	base, err := workload.Resolve(wl, 1)
	if err != nil {
		t.Error(err)
		return Preset{}, nil, KneeConfig{}, false
	}
	slo := validationSLO(t, p, base)
	// Trials shorter than the defaults (5m + 20m) keep the test within
	// minutes; the model and the truth are measured alike.
	cfg := KneeConfig{Engine: Config{Preset: p}, Workload: base, SLO: slo, MaxConcurrency: p.MaxNumSeqs, Seed: 1,
		Clock: fixedClock, Arrivals: knee.ArrivalsPoisson, MixScales: validationMixScales(t),
		OpenLoop: OpenLoopConfig{Warmup: time.Minute, Steady: 5 * time.Minute}}
	return p, base, cfg, true
}

// validationMixScales are the mixes the validated model is fitted to:
// knee.DefaultMixScales, or KNEEWATCH_MIX_VALIDATION_SCALES (as
// --mix-scales takes them, e.g. quick) to measure another grid's error at
// the same held-out mixes. The error bounds are the default grid's.
func validationMixScales(t *testing.T) []knee.MixScale {
	v := os.Getenv("KNEEWATCH_MIX_VALIDATION_SCALES")
	if v == "" {
		return knee.DefaultMixScales
	}
	scales, err := knee.ParseMixScales(v)
	if err != nil {
		t.Errorf("KNEEWATCH_MIX_VALIDATION_SCALES: %v", err)
	}
	return scales
}

// trueKneeAt is the knee search of cfg run on gen's mix, without a mix
// model: the true knee the model is compared with.
func trueKneeAt(cfg KneeConfig, gen *workload.Generator) (knee.Profile, error) {
	cfg.Workload, cfg.MixScales = gen, nil
	return FindKnee(context.Background(), cfg)
}

// kind is the summary a held-out mix is counted under: lighter than any
// measured when its means (mix) are, by heldAtLightest, else a minority,
// a blend or a scaled mix.
func (h heldOutMix) kind(m *knee.MixModel, own, mix knee.WorkloadInfo) int {
	if _, _, lighter := heldAtLightest(m, own, mix); lighter {
		return kindLighter
	}
	switch {
	case h.minority:
		return kindMinority
	case h.share > 0:
		return kindBlend
	}
	return kindScaled
}
