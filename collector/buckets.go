package collector

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/kneewatch/kneewatch/knee"
)

// An engine's latency histogram says how many requests fell in each bucket,
// not where inside it. An SLO threshold between two bucket edges cannot be
// judged exactly: kneewatch counts a request as meeting it when the bucket
// edge just above the threshold does (see Attainment.Upper), an upper bound
// on the true share that never pages for requests the buckets cannot place.
// A threshold on an edge is exact. So every entry point that knows the SLO
// warns when a threshold is not an edge, naming the edges around it:
// serve's --config.check and start, `kneewatch rules`, the sweep, and the
// watcher once per replica when a scrape's own edges are seen.

// latencyBuckets are one engine's default TTFT and TPOT bucket edges in
// seconds, and the histograms they belong to, from docs/upstream-metrics.md.
// Engines can be configured with other edges (SGLang's are overridable); the
// watcher checks the edges it actually scrapes as well.
type latencyBuckets struct {
	ttftMetric, tpotMetric string
	ttft, tpot             []float64
}

// vllmTPOTBuckets are vLLM's request_time_per_output_token_seconds and
// inter_token_latency_seconds edges (the same list).
var vllmTPOTBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}

var defaultLatencyBuckets = map[string]latencyBuckets{
	"vllm": {
		ttftMetric: "vllm:time_to_first_token_seconds",
		tpotMetric: "vllm:request_time_per_output_token_seconds",
		ttft:       []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0},
		tpot:       vllmTPOTBuckets,
	},
	"sglang": {
		ttftMetric: "sglang:time_to_first_token_seconds",
		tpotMetric: "sglang:inter_token_latency_seconds",
		ttft:       []float64{0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400},
		tpot:       []float64{0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060, 0.080, 0.100, 0.200, 0.400, 0.600, 0.800, 1.0, 2.0, 4.0, 6.0, 8.0},
	},
	// TGI has no TTFT histogram; every *duration histogram gets
	// 0.0001 × 1.5^k, k = 1..35.
	"tgi": {
		tpotMetric: "tgi_request_mean_time_per_token_duration",
		tpot: func() []float64 {
			var out []float64
			for k := 1; k <= 35; k++ {
				out = append(out, 0.0001*math.Pow(1.5, float64(k)))
			}
			return out
		}(),
	},
	// Triton's TensorRT-LLM backend exports no TTFT or TPOT histogram that
	// kneewatch reads, so there is nothing to check.
}

// DefaultLatencyBuckets returns the TTFT and TPOT bucket edges engine exports
// by default (ok is false for an engine without known defaults). Callers
// must not modify the slices.
func DefaultLatencyBuckets(engine string) (ttft, tpot []float64, ok bool) {
	b, ok := defaultLatencyBuckets[engine]
	return b.ttft, b.tpot, ok
}

// EdgeWarning says an SLO threshold falls between two bucket edges of the
// histogram kneewatch judges it by.
type EdgeWarning struct {
	SLO       string  // "ttft" or "tpot"
	Threshold float64 // seconds
	Engine    string
	Metric    string // the engine's histogram
	// Below and Above are the edges around the threshold: Below is 0 under
	// the first edge, Above +Inf over the highest finite edge.
	Below, Above float64
	// Scraped is true when the edges are the ones a replica exposed, false
	// for the engine's defaults.
	Scraped bool
}

// String is the warning as the user reads it.
func (w EdgeWarning) String() string {
	which := "default buckets"
	if w.Scraped {
		which = "buckets as scraped"
	}
	if math.IsInf(w.Above, +1) {
		return fmt.Sprintf("%s SLO %s is above the highest finite bucket edge of %s (%s %s, %s): "+
			"no requests over %s can be told apart from ones within the SLO, so attainment counts every request as meeting it; "+
			"give the engine a bucket at %s or lower the threshold to %s",
			w.SLO, seconds(w.Threshold), w.Metric, w.Engine, which, seconds(w.Below), seconds(w.Below), seconds(w.Threshold), seconds(w.Below))
	}
	return fmt.Sprintf("%s SLO %s is not a bucket edge of %s (%s %s): it falls between %s and %s, "+
		"so attainment counts requests up to %s as meeting it (an upper bound on the true share; exact only on an edge); "+
		"set the threshold to %s or %s, or give the engine a bucket at %s",
		w.SLO, seconds(w.Threshold), w.Metric, w.Engine, which, seconds(w.Below), seconds(w.Above),
		seconds(w.Above), seconds(w.Below), seconds(w.Above), seconds(w.Threshold))
}

// seconds formats a bucket edge or threshold as a duration ("23ms", "0s").
func seconds(v float64) string {
	return time.Duration(math.Round(v * 1e9)).String()
}

// CheckSLOEdges checks the SLO's thresholds against an engine's default
// bucket edges. An empty engine (auto-detected at the first scrape) checks
// every engine kneewatch knows the defaults of; an engine with none known
// (trtllm) gives nothing.
func CheckSLOEdges(engine string, slo knee.SLO) []EdgeWarning {
	engines := []string{engine}
	if engine == "" {
		engines = Engines()
	}
	var out []EdgeWarning
	for _, e := range engines {
		b, ok := defaultLatencyBuckets[e]
		if !ok {
			continue
		}
		if w, bad := edgeWarning("ttft", slo.TTFT.Seconds(), b.ttft); bad && b.ttftMetric != "" {
			w.Engine, w.Metric = e, b.ttftMetric
			out = append(out, w)
		}
		if w, bad := edgeWarning("tpot", slo.TPOT.Seconds(), b.tpot); bad && b.tpotMetric != "" {
			w.Engine, w.Metric = e, b.tpotMetric
			out = append(out, w)
		}
	}
	return out
}

// LogSLOEdges logs each warning of CheckSLOEdges at warn level, naming what
// the SLO belongs to (a profile, a target); it returns how many it logged.
func LogSLOEdges(logger *slog.Logger, engine string, slo knee.SLO, attrs ...any) int {
	ws := CheckSLOEdges(engine, slo)
	for _, w := range ws {
		logger.Warn(w.String(), append(slices.Clip(attrs), "slo", w.SLO, "engine", w.Engine)...)
	}
	return len(ws)
}

// edgeWarning reports whether threshold (> 0) is not one of the finite
// edges, and the edges around it.
func edgeWarning(slo string, threshold float64, edges []float64) (EdgeWarning, bool) {
	if !(threshold > 0) || len(edges) == 0 {
		return EdgeWarning{}, false
	}
	w := EdgeWarning{SLO: slo, Threshold: threshold, Above: math.Inf(+1)}
	for _, e := range edges {
		if math.IsInf(e, 0) || math.IsNaN(e) {
			continue
		}
		if isEdge(threshold, e) {
			return EdgeWarning{}, false
		}
		if e < threshold {
			w.Below = max(w.Below, e)
		} else {
			w.Above = min(w.Above, e)
		}
	}
	return w, true
}

// isEdge treats a threshold within a billionth of an edge as on it: edges
// computed in floating point upstream (TGI's 1.5^k) are printed rounded.
func isEdge(threshold, edge float64) bool {
	return math.Abs(threshold-edge) <= 1e-9*math.Max(math.Abs(edge), 1e-9)
}

// scrapedEdgeWarnings checks the SLO against the bucket edges a scrape
// actually carries, for the histograms attainment reads.
func scrapedEdgeWarnings(snap Snapshot, slo *knee.SLO) []EdgeWarning {
	if slo == nil {
		return nil
	}
	var out []EdgeWarning
	check := func(name string, threshold float64, sig Signal) {
		h, ok := snap.Histogram(sig)
		if !ok {
			return
		}
		// On the stack for usual layouts: this runs every evaluation.
		var buf [64]float64
		edges := buf[:0]
		for _, b := range h.Buckets {
			edges = append(edges, b.UpperBound)
		}
		if w, bad := edgeWarning(name, threshold, edges); bad {
			w.Engine, w.Metric, w.Scraped = snap.Engine, metricName(snap.Engine, name, sig), true
			out = append(out, w)
		}
	}
	check("ttft", slo.TTFT.Seconds(), SignalTTFT)
	tpot := SignalTPOT
	if _, ok := snap.Histogram(tpot); !ok {
		tpot = SignalITL
	}
	check("tpot", slo.TPOT.Seconds(), tpot)
	return out
}

// metricName names the engine histogram behind a signal, for warnings.
func metricName(engine, slo string, sig Signal) string {
	if b, ok := defaultLatencyBuckets[engine]; ok {
		switch {
		case slo == "ttft" && b.ttftMetric != "":
			return b.ttftMetric
		case slo == "tpot" && sig == SignalTPOT && b.tpotMetric != "":
			return b.tpotMetric
		case slo == "tpot" && engine == "vllm":
			return "vllm:inter_token_latency_seconds"
		case slo == "tpot" && b.tpotMetric != "":
			return b.tpotMetric
		}
	}
	return engine + " " + sig.String() + " histogram"
}

// EdgeWarner logs a replica's scraped-edge warnings once per distinct set,
// so a layout or SLO change is logged again and a steady one never repeats.
// The zero EdgeWarner is ready to use; one is kept per replica.
type EdgeWarner struct {
	last string
	// seen is what the last check read (engine, SLO and bucket edges):
	// the same again has the same warnings, so they are not rebuilt on
	// every evaluation. spare is the other buffer.
	seen, spare edgeInputs
	checked     bool
}

type edgeInputs struct {
	engine     string
	slo        knee.SLO
	hasSLO     bool
	ttft, tpot []float64
}

// inputsOf records what scrapedEdgeWarnings reads of snap, reusing into's
// slices.
func inputsOf(into edgeInputs, snap Snapshot, slo *knee.SLO) edgeInputs {
	in := edgeInputs{engine: snap.Engine, hasSLO: slo != nil, ttft: into.ttft[:0], tpot: into.tpot[:0]}
	if slo != nil {
		in.slo = *slo
	}
	if h, ok := snap.Histogram(SignalTTFT); ok {
		for _, b := range h.Buckets {
			in.ttft = append(in.ttft, b.UpperBound)
		}
	}
	tpot, ok := snap.Histogram(SignalTPOT)
	if !ok {
		tpot, _ = snap.Histogram(SignalITL)
		in.tpot = append(in.tpot, math.NaN()) // marks the ITL fallback
	}
	for _, b := range tpot.Buckets {
		in.tpot = append(in.tpot, b.UpperBound)
	}
	return in
}

func (a edgeInputs) equal(b edgeInputs) bool {
	same := func(x, y []float64) bool {
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if x[i] != y[i] && !(math.IsNaN(x[i]) && math.IsNaN(y[i])) {
				return false
			}
		}
		return true
	}
	return a.engine == b.engine && a.hasSLO == b.hasSLO && a.slo == b.slo && same(a.ttft, b.ttft) && same(a.tpot, b.tpot)
}

// EdgeLog is the scraped-edge warnings already logged for any replica,
// shared by the replicas of one watcher: a fleet of a hundred replicas of
// one engine and SLO has one set of warnings, not a hundred (the demo's
// four replicas logged the same two warnings four times each). A replica
// whose warning was logged for another logs it at debug level. Safe for
// concurrent use; the zero EdgeLog is ready.
type EdgeLog struct {
	mu     sync.Mutex
	logged map[string]bool
}

// first reports whether text is logged here for the first time, and
// remembers it.
func (l *EdgeLog) first(text string) bool {
	if l == nil {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.logged[text] {
		return false
	}
	if l.logged == nil {
		l.logged = map[string]bool{}
	}
	l.logged[text] = true
	return true
}

// Check logs the SLO thresholds that fall between snap's bucket edges,
// unless the same warnings were logged last time, at warning level the
// first time shared has seen each (nil: every time), else at debug level.
func (e *EdgeWarner) Check(logger *slog.Logger, shared *EdgeLog, replica string, snap Snapshot, slo *knee.SLO) {
	// Two buffers swap, so neither is reallocated once grown.
	in := inputsOf(e.spare, snap, slo)
	if e.checked && in.equal(e.seen) {
		e.spare = in
		return
	}
	e.seen, e.spare, e.checked = in, e.seen, true
	ws := scrapedEdgeWarnings(snap, slo)
	key := ""
	for _, w := range ws {
		key += w.String() + "\n"
	}
	if key == e.last {
		return
	}
	e.last = key
	for _, w := range ws {
		text := w.String()
		level := slog.LevelDebug
		if shared.first(text) {
			level = slog.LevelWarn
		}
		logger.Log(context.Background(), level, text, "replica", replica, "slo", w.SLO, "engine", w.Engine)
	}
}
