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
)

// agreementTolerance is the largest relative difference allowed between the
// ruler group's headroom and the Go inference's 1 − load ratio (issue 6).
const agreementTolerance = 0.01

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
// scrape of every replica, the ruler's headroom must be within 1% of
// 1 − the Go load ratio, and its in-flight mean equal to the Go load.
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
	headroomExpr, inflightExpr := rulerExpressions(t, opts)

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
		p := &knee.Profile{
			APIVersion: knee.APIVersion, Kind: knee.Kind,
			Metadata: knee.Metadata{Name: fmt.Sprintf("llama-8b-h100-k%g", h.knee)},
			Match:    knee.Match{Model: model, Engine: "vllm"},
			SLO:      slo,
			Knee:     knee.Knee{Concurrency: h.knee, OutputTokensPerSecond: 40 * h.knee, GoodputTokensPerSecond: 39 * h.knee, KVCacheUsage: 0.3, LimitingResource: knee.ResourceCompute},
		}
		states[i] = &replicaState{rulerReplica: h, profile: p, window: w, generated: make([]float64, h.engines)}
	}

	// What kneewatch exports after each round, read through its own
	// exporter and registry, as Prometheus scrapes it.
	var round *collector.Round
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector.NewExporter(func() *collector.Round { return round }))

	type goResult struct {
		at       time.Time
		load     float64
		headroom float64 // 1 − the load ratio
	}
	results := map[string][]goResult{}

	start := time.Unix(1_800_000_000, 0).UTC()
	at := start
	for i := range scrapes {
		// Rounds are about a second apart; replicas are scraped a few
		// milliseconds apart within a round.
		at = at.Add(time.Duration(900+rng.IntN(200)) * time.Millisecond)
		var evals []collector.ReplicaEval
		for r, s := range states {
			scrapedAt := at.Add(time.Duration(r*37) * time.Millisecond)
			running, waiting, kv := make([]float64, s.engines), make([]float64, s.engines), make([]float64, s.engines)
			for e := range s.engines {
				running[e], waiting[e] = s.load(i, e, rng)
				kv[e] = math.Min(1, 0.01*(running[e]+waiting[e]))
				s.generated[e] += 30 * running[e]
			}
			eval := collector.ReplicaEval{Replica: s.name, Model: model, Profile: s.profile.Metadata.Name, SLO: &s.profile.SLO, Knee: &s.profile.Knee}
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
			results[s.name] = append(results[s.name], goResult{at: scrapedAt, load: res.Load, headroom: 1 - res.Ratios[knee.DimensionLoad]})
			eval.EngineUp, eval.Observation, eval.Result = true, obs, res
			evals = append(evals, eval)

			// The Prometheus side: the same scrape, with the engine scrape
			// job's target labels; replica is added by relabeling (the
			// ruler's join convention).
			store.addScrape(families, scrapedAt, map[string]string{
				"job": "vllm", "instance": fmt.Sprintf("10.0.0.%d:8000", r+7), "replica": s.name,
			})
		}
		round = &collector.Round{At: at, Replicas: evals, Evaluations: uint64(i + 1)}
		gathered, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		store.addScrape(familyMap(gathered), at.Add(500*time.Millisecond), map[string]string{"job": "kneewatch", "instance": "127.0.0.1:9847"})
	}

	ng := newEngine(t)
	var compared int
	var worst float64
	var worstAt string
	for _, s := range states {
		for _, g := range results[s.name] {
			// Rules run against what Prometheus holds at evaluation time:
			// the knee series from kneewatch's previous scrape, looked back.
			h := vectorValue(t, instantQuery(t, ng, store, headroomExpr, g.at), s.name)
			in := vectorValue(t, instantQuery(t, ng, store, inflightExpr, g.at), s.name)
			if math.IsNaN(h) || math.IsNaN(in) {
				// Before kneewatch's first scrape there is no knee series.
				if g.at.Sub(start) > 2*time.Second {
					t.Errorf("%s at %s: the ruler has no value (headroom %v, in-flight %v)", s.name, g.at.Sub(start), h, in)
				}
				continue
			}
			compared++
			if math.Abs(in-g.load) > 1e-9*math.Max(1, g.load) {
				t.Errorf("%s at %s: ruler in-flight %v, Go load %v", s.name, g.at.Sub(start), in, g.load)
			}
			rel := math.Abs(h-g.headroom) / math.Max(math.Abs(g.headroom), 1e-9)
			if h == g.headroom {
				rel = 0
			}
			if rel > worst {
				worst, worstAt = rel, fmt.Sprintf("%s at %s (ruler %v, Go %v)", s.name, g.at.Sub(start), h, g.headroom)
			}
			if rel > agreementTolerance {
				t.Errorf("%s at %s: ruler headroom %v, Go 1 − load ratio %v: %.3g%% apart", s.name, g.at.Sub(start), h, g.headroom, rel*100)
			}
		}
	}
	want := len(states)*scrapes - 4 - len(states)*3 // the missed scrapes, and the first rounds before a knee series
	if compared < want {
		t.Errorf("compared %d values, want at least %d", compared, want)
	}
	t.Logf("window %s: compared %d ruler headrooms with the Go inference; largest relative difference %.3g (%s)", window, compared, worst, worstAt)
}

// rulerExpressions returns the expressions of the ruler group's headroom
// and in-flight recording rules, as `kneewatch rules` prints them.
func rulerExpressions(t *testing.T, o rules.Options) (headroom, inflight string) {
	t.Helper()
	groups, err := rules.Generate(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		if g.Name != "kneewatch-ruler" {
			continue
		}
		for _, r := range g.Rules {
			switch {
			case strings.HasPrefix(r.Record, "kneewatch:replica_headroom_ratio:"):
				headroom = r.Expr
			case strings.HasPrefix(r.Record, "kneewatch:replica_inflight_requests:"):
				inflight = r.Expr
			}
		}
	}
	if headroom == "" || inflight == "" {
		t.Fatal("the generated rules have no kneewatch-ruler headroom and in-flight records")
	}
	return headroom, inflight
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
