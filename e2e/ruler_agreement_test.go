package e2e

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/promql"

	"github.com/kneewatch/kneewatch/collector"
	"github.com/kneewatch/kneewatch/knee"
	"github.com/kneewatch/kneewatch/rules"
	"github.com/kneewatch/kneewatch/watch"
)

// agreementTolerance is the largest relative difference allowed between the
// ruler group's ratios and headroom and the Go inference's: the same
// arithmetic in another order, so only rounding apart (issue 6).
const agreementTolerance = 1e-9

// rulerReplica is one replica of the fixed scrape history: its knee, its
// data-parallel engines, and the in-flight load each engine has at scrape i.
type rulerReplica struct {
	name    string
	knee    float64
	engines int
	// load returns running and waiting requests of one engine at scrape i.
	load func(i, engine int, rng *rand.Rand) (running, waiting float64)
	// missed lists scrapes that failed (no sample on either side).
	missed map[int]bool
	// kvPerRequest is each in-flight request's share of the KV cache
	// (0.01 when zero), and kvBound a knee the KV cache limited, at
	// kvAtKnee usage.
	kvPerRequest float64
	kvBound      bool
	kvAtKnee     float64
}

// rulerHistory is the fixed input: three replicas scraped about every
// second for four minutes. One ramps through its knee and well past it,
// one is data-parallel with two engines and bursts, one sits on small
// integer loads around a knee of 8 (exactly at it, too) and misses scrapes.
func rulerHistory() []rulerReplica {
	return []rulerReplica{
		{name: "vllm-0", knee: 24, engines: 1, load: func(i, _ int, rng *rand.Rand) (float64, float64) {
			target := 2 + 34*float64(i)/240 // 2 → 36 in-flight
			running := math.Min(math.Round(target+rng.NormFloat64()), 28)
			waiting := math.Max(0, math.Round(target-28+rng.NormFloat64()))
			return math.Max(running, 0), waiting
		}},
		{name: "vllm-1", knee: 40, engines: 2, load: func(i, engine int, rng *rand.Rand) (float64, float64) {
			base := 6.0
			if (i/20)%2 == 1 { // 20 s bursts
				base = 17
			}
			return math.Max(0, math.Round(base+float64(engine)+2*rng.NormFloat64())), float64(rng.IntN(3))
		}},
		{name: "vllm-2", knee: 8, engines: 1, load: func(i, _ int, rng *rand.Rand) (float64, float64) {
			return float64(4 + (i/15)%6), float64(rng.IntN(2) * ((i / 15) % 2))
		}, missed: map[int]bool{30: true, 31: true, 100: true, 177: true}},
		// A KV-bound knee (long contexts): the KV cache fills faster than
		// concurrency rises, so the kv_cache dimension sets the headroom
		// for most of the ramp.
		{name: "vllm-3", knee: 30, engines: 2, kvPerRequest: 0.04, kvBound: true, kvAtKnee: 0.6,
			load: func(i, _ int, rng *rand.Rand) (float64, float64) {
				return math.Max(0, math.Round(2+8*float64(i)/240+rng.NormFloat64())), float64(rng.IntN(2))
			}},
	}
}

// vllmExposition writes one vLLM V1 scrape with a series per engine.
func vllmExposition(model string, running, waiting, kv, generated []float64) string {
	var b strings.Builder
	family := func(name, typ string, values []float64) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", name, name, name, typ)
		for e, v := range values {
			fmt.Fprintf(&b, "%s{engine=%q,model_name=%q} %s\n", name, strconv.Itoa(e), model, formatFloat(v))
		}
	}
	family("vllm:num_requests_running", "gauge", running)
	family("vllm:num_requests_waiting", "gauge", waiting)
	family("vllm:kv_cache_usage_perc", "gauge", kv)
	family("vllm:generation_tokens_total", "counter", generated)
	return b.String()
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// TestRulerGroupAgreesWithTheGoInference feeds one fixed sequence of vLLM
// scrapes both to the Go path (adapter → Window → Observe → knee.Evaluate,
// as the watcher does each round) and, as the series a Prometheus server
// would hold (the raw vLLM gauges with the scrape job's replica label, and
// the knee series kneewatch's exporter publishes), to the ruler group's
// recording rules evaluated by Prometheus's own PromQL engine. At every
// scrape of every replica, for each dimension the group covers (load and
// kv_cache), the ruler's knee ratio must be within a relative 1e-9 of the
// Go ratio, its in-flight and KV means equal to the Go observation's, and
// its headroom within 1e-9 of 1 − the larger of the two Go ratios, and of
// the Go headroom itself whenever a covered dimension set it.
func TestRulerGroupAgreesWithTheGoInference(t *testing.T) {
	for _, window := range []time.Duration{10 * time.Second, time.Minute} {
		t.Run("window "+window.String(), func(t *testing.T) {
			checkRulerAgreement(t, window)
		})
	}
}

func checkRulerAgreement(t *testing.T, window time.Duration) {
	opts := rules.DefaultOptions()
	opts.Ruler.Window = window
	exprs := rulerExpressions(t, opts)

	const scrapes = 240
	const model = "meta-llama/Llama-3.1-8B-Instruct"
	slo := knee.SLO{TTFT: knee.Duration(time.Second), TPOT: knee.Duration(100 * time.Millisecond), Quantile: 0.99}
	history := rulerHistory()
	rng := rand.New(rand.NewPCG(6, 6))
	store := newSeriesStore()

	type replicaState struct {
		rulerReplica
		profile   *knee.Profile
		window    *collector.Window
		generated []float64
	}
	states := make([]*replicaState, len(history))
	for i, h := range history {
		w, err := collector.NewWindow(window, int(window/time.Second)+8)
		if err != nil {
			t.Fatal(err)
		}
		k := knee.Knee{Concurrency: h.knee, OutputTokensPerSecond: 40 * h.knee, GoodputTokensPerSecond: 39 * h.knee, KVCacheUsage: 0.3, LimitingResource: knee.ResourceCompute}
		if h.kvBound {
			k.KVCacheUsage, k.LimitingResource = h.kvAtKnee, knee.ResourceKVCache
		}
		p := &knee.Profile{
			APIVersion: knee.APIVersion, Kind: knee.Kind,
			Metadata: knee.Metadata{Name: fmt.Sprintf("llama-8b-h100-k%g", h.knee)},
			Match:    knee.Match{Model: model, Engine: "vllm"},
			SLO:      slo,
			Knee:     k,
		}
		states[i] = &replicaState{rulerReplica: h, profile: p, window: w, generated: make([]float64, h.engines)}
	}

	// What kneewatch exports after each round, read through its own
	// exporter and registry, as Prometheus scrapes it.
	var round *watch.Round
	reg := prometheus.NewRegistry()
	reg.MustRegister(watch.NewExporter(func() *watch.Round { return round }))

	type goResult struct {
		at        time.Time
		load, kv  float64 // the observation's means
		ratios    knee.Ratios
		headroom  float64 // kneewatch's own
		dimension knee.Dimension
		covered   float64 // 1 − the larger of the load and kv_cache ratios
	}
	results := map[string][]goResult{}

	start := time.Unix(1_800_000_000, 0).UTC()
	at := start
	for i := range scrapes {
		// Rounds are about a second apart; replicas are scraped a few
		// milliseconds apart within a round.
		at = at.Add(time.Duration(900+rng.IntN(200)) * time.Millisecond)
		var evals []watch.ReplicaEval
		for r, s := range states {
			scrapedAt := at.Add(time.Duration(r*37) * time.Millisecond)
			running, waiting, kv := make([]float64, s.engines), make([]float64, s.engines), make([]float64, s.engines)
			perRequest := s.kvPerRequest
			if perRequest == 0 {
				perRequest = 0.01
			}
			for e := range s.engines {
				running[e], waiting[e] = s.load(i, e, rng)
				// Engines of one replica fill their caches unevenly.
				kv[e] = math.Min(1, perRequest*(running[e]+waiting[e])+0.01*float64(e))
				s.generated[e] += 30 * running[e]
			}
			eval := watch.ReplicaEval{Replica: s.name, Model: model, Profile: s.profile.Metadata.Name, SLO: &s.profile.SLO, Knee: &s.profile.Knee}
			if s.missed[i] {
				eval.Observation, eval.Result = knee.NewObservation(), knee.Evaluate(knee.NewObservation(), nil, knee.Options{})
				evals = append(evals, eval)
				continue
			}
			text := vllmExposition(model, running, waiting, kv, s.generated)
			families, err := collector.ParseText(strings.NewReader(text))
			if err != nil {
				t.Fatal(err)
			}
			// The Go path, exactly as the watcher assesses a scrape.
			snap, err := collector.Normalize(families, collector.Options{Engine: "vllm"})
			if err != nil {
				t.Fatal(err)
			}
			snap.Time = scrapedAt
			if err := s.window.Add(snap); err != nil {
				t.Fatal(err)
			}
			obs := collector.Observe(s.window, scrapedAt, &s.profile.SLO)
			res := knee.Evaluate(obs, s.profile, knee.Options{})
			if !res.OK {
				t.Fatalf("%s at scrape %d: evaluation not ok: %s", s.name, i, res.Reason)
			}
			covered := res.Ratios[knee.DimensionLoad]
			if knee.Known(res.Ratios[knee.DimensionKVCache]) {
				covered = math.Max(covered, res.Ratios[knee.DimensionKVCache])
			}
			results[s.name] = append(results[s.name], goResult{at: scrapedAt, load: res.Load, kv: obs.KVCacheUsage,
				ratios: res.Ratios, headroom: res.Headroom, dimension: res.Dimension, covered: 1 - covered})
			eval.EngineUp, eval.Observation, eval.Result = true, obs, res
			evals = append(evals, eval)

			// The Prometheus side: the same scrape, with the engine scrape
			// job's target labels; replica is added by relabeling (the
			// ruler's join convention).
			store.addScrape(families, scrapedAt, map[string]string{
				"job": "vllm", "instance": fmt.Sprintf("10.0.0.%d:8000", r+7), "replica": s.name,
			})
		}
		round = &watch.Round{At: at, Replicas: evals, Evaluations: uint64(i + 1)}
		gathered, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		store.addScrape(familyMap(gathered), at.Add(500*time.Millisecond), map[string]string{"job": "kneewatch", "instance": "127.0.0.1:9847"})
	}

	ng := newEngine(t)
	var compared, setByKV, setByCovered int
	worst := map[string]float64{}
	worstAt := map[string]string{}
	check := func(what, name string, at time.Duration, ruler, goValue float64) {
		rel := math.Abs(ruler-goValue) / math.Max(math.Abs(goValue), 1e-9)
		if ruler == goValue {
			rel = 0
		}
		if rel > worst[what] {
			worst[what], worstAt[what] = rel, fmt.Sprintf("%s at %s (ruler %v, Go %v)", name, at, ruler, goValue)
		}
		if rel > agreementTolerance {
			t.Errorf("%s at %s: ruler %s %v, Go %v: %.3g%% apart", name, at, what, ruler, goValue, rel*100)
		}
	}
	for _, s := range states {
		for _, g := range results[s.name] {
			since := g.at.Sub(start)
			// Rules run against what Prometheus holds at evaluation time:
			// the knee series from kneewatch's previous scrape, looked back.
			h := vectorValue(t, instantQuery(t, ng, store, exprs["headroom"], g.at), s.name)
			in := vectorValue(t, instantQuery(t, ng, store, exprs["inflight"], g.at), s.name)
			kv := vectorValue(t, instantQuery(t, ng, store, exprs["kv"], g.at), s.name)
			ratios := instantQuery(t, ng, store, exprs["ratio"], g.at)
			load := dimensionValue(t, ratios, s.name, "load")
			kvRatio := dimensionValue(t, ratios, s.name, "kv_cache")
			if math.IsNaN(h) || math.IsNaN(in) || math.IsNaN(load) || math.IsNaN(kvRatio) {
				// Before kneewatch's first scrape there is no knee series.
				if since > 2*time.Second {
					t.Errorf("%s at %s: the ruler has no value (headroom %v, in-flight %v, load ratio %v, kv_cache ratio %v)", s.name, since, h, in, load, kvRatio)
				}
				continue
			}
			compared++
			if math.Abs(in-g.load) > 1e-9*math.Max(1, g.load) {
				t.Errorf("%s at %s: ruler in-flight %v, Go load %v", s.name, since, in, g.load)
			}
			if math.Abs(kv-g.kv) > 1e-9 {
				t.Errorf("%s at %s: ruler KV usage %v, Go %v", s.name, since, kv, g.kv)
			}
			check("load ratio", s.name, since, load, g.ratios[knee.DimensionLoad])
			check("kv_cache ratio", s.name, since, kvRatio, g.ratios[knee.DimensionKVCache])
			check("headroom", s.name, since, h, g.covered)
			if g.dimension == knee.DimensionLoad || g.dimension == knee.DimensionKVCache {
				setByCovered++
				check("headroom (kneewatch's)", s.name, since, h, g.headroom)
			}
			if g.dimension == knee.DimensionKVCache {
				setByKV++
			}
		}
	}
	want := len(states)*scrapes - 4 - len(states)*3 // the missed scrapes, and the first rounds before a knee series
	if compared < want {
		t.Errorf("compared %d values, want at least %d", compared, want)
	}
	if setByKV < scrapes/2 {
		t.Errorf("the kv_cache dimension set kneewatch's headroom %d times, want at least %d: the test no longer shows the ruler follows it", setByKV, scrapes/2)
	}
	t.Logf("window %s: compared %d evaluations (%d set by load or kv_cache, %d by kv_cache); largest relative differences: %v at %v",
		window, compared, setByCovered, setByKV, worst, worstAt)
}

// dimensionValue is the ruler's knee ratio of replica for one dimension,
// or NaN when there is none.
func dimensionValue(t *testing.T, v promql.Vector, replica, dimension string) float64 {
	t.Helper()
	var only promql.Vector
	for _, s := range v {
		if s.Metric.Get("dimension") == dimension {
			only = append(only, s)
		}
	}
	return vectorValue(t, only, replica)
}

// rulerExpressions returns the expressions of the ruler group's records,
// as `kneewatch rules` prints them: "headroom", "ratio" (every covered
// dimension's knee ratio), "inflight" and "kv" (the raw means).
func rulerExpressions(t *testing.T, o rules.Options) map[string]string {
	t.Helper()
	groups, err := rules.Generate(o)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, g := range groups {
		if g.Name != "kneewatch-ruler" {
			continue
		}
		for _, r := range g.Rules {
			switch {
			case strings.HasPrefix(r.Record, "kneewatch:replica_headroom_ratio:"):
				out["headroom"] = r.Expr
			case strings.HasPrefix(r.Record, "kneewatch:replica_knee_ratio:"):
				out["ratio"] = r.Expr
			case strings.HasPrefix(r.Record, "kneewatch:replica_inflight_requests:"):
				out["inflight"] = r.Expr
			case strings.HasPrefix(r.Record, "kneewatch:replica_kv_cache_usage_ratio:"):
				out["kv"] = r.Expr
			}
		}
	}
	for _, k := range []string{"headroom", "ratio", "inflight", "kv"} {
		if out[k] == "" {
			t.Fatalf("the generated rules have no kneewatch-ruler %s record", k)
		}
	}
	return out
}

// vectorValue is the sample of replica in v, or NaN when there is none; a
// replica with two samples is an error (the join lost a label).
func vectorValue(t *testing.T, v promql.Vector, replica string) float64 {
	t.Helper()
	out := math.NaN()
	for _, s := range v {
		if s.Metric.Get("replica") != replica {
			continue
		}
		if !math.IsNaN(out) {
			t.Fatalf("two samples for replica %s: %v", replica, v)
		}
		out = s.F
	}
	return out
}

func familyMap(fams []*dto.MetricFamily) map[string]*dto.MetricFamily {
	out := make(map[string]*dto.MetricFamily, len(fams))
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}
