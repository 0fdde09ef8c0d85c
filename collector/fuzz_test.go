package collector

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kneewatch/kneewatch/knee"
)

// The exposition path fuzzed from the bytes an upstream serves to the
// observation the evaluation reads: parse, normalize with one adapter, fold
// two scrapes into a window and observe it. The stream scanner a scrape
// runs must read whatever the reference parser reads, and read it the
// same. Seeds are the fixtures, under testdata/fuzz/<FuzzName>/; `go test`
// runs them, `make fuzz` explores.
// Whatever the bytes, nothing panics, and what is accepted is sane enough
// for the evaluation to take: histograms sorted and ending at +Inf, and
// every value the evaluation would export finite or absent.

func FuzzVLLM(f *testing.F)   { fuzzEngine(f, "vllm") }
func FuzzSGLang(f *testing.F) { fuzzEngine(f, "sglang") }
func FuzzTGI(f *testing.F)    { fuzzEngine(f, "tgi") }
func FuzzTRTLLM(f *testing.F) { fuzzEngine(f, "trtllm") }

// fuzzSLO has thresholds inside vLLM's TTFT and TPOT buckets, so the
// attainment path interpolates as well as reading edges.
var fuzzSLO = knee.SLO{TTFT: knee.Duration(230 * time.Millisecond), TPOT: knee.Duration(23 * time.Millisecond), Quantile: 0.99}

func fuzzEngine(f *testing.F, engine string) {
	f.Fuzz(func(t *testing.T, body []byte) {
		defer watchdog(body)()
		_ = countSampleLines(body)
		// The scrape's own path: the stream scanner, keeping only what the
		// adapters read (textscan.go), then the adapter.
		stream, streamErr := streamSnapshot(body, textFormat, Options{Engine: engine})
		if streamErr == nil {
			checkHistograms(t, stream.Histograms)
		}
		families, err := ParseText(bytes.NewReader(body))
		if err != nil {
			return // the stream path may read it: it skips families no adapter reads
		}
		// Auto-detection must not panic either, whatever it decides.
		_, _ = Normalize(families, Options{})
		snap, err := Normalize(families, Options{Engine: engine})
		if err != nil {
			return
		}
		if snap.Engine != engine {
			t.Fatalf("snapshot engine %q, want %q", snap.Engine, engine)
		}
		// What the reference path reads, the scrape's path reads the same.
		if streamErr != nil {
			t.Fatalf("the stream path fails where the reference path reads: %v", streamErr)
		}
		if d := cmp.Diff(snap, stream, snapshotCmp); d != "" {
			t.Fatalf("the stream path reads otherwise than the reference path (-reference +stream):\n%s", d)
		}
		checkHistograms(t, snap.Histograms)
		observeTwice(t, snap)
	})
}

// FuzzDCGM fuzzes dcgm-exporter's exposition through GPU selection and
// the snapshot's GPU aggregates.
func FuzzDCGM(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		defer watchdog(body)()
		families, err := ParseText(bytes.NewReader(body))
		if err != nil {
			return
		}
		d, err := NormalizeDCGM(families)
		if err != nil {
			return
		}
		for _, g := range d.GPUs {
			sel := GPUSelector{UUID: g.Labels.UUID}
			if g.Labels.UUID != "" && len(d.Select(sel)) == 0 {
				t.Fatalf("GPU %q is not selected by its own UUID", g.Labels.UUID)
			}
		}
		snap := NewSnapshot("vllm")
		snap.AttachGPUs(d.GPUs)
		observeTwice(t, snap)
	})
}

// watchdog crashes the fuzz worker when one input takes longer than a
// scrape may (a slow input is a hung watcher), so the fuzzer saves the
// input as a crasher; the fuzzer itself has no per-input timeout. It
// returns the function that disarms it.
func watchdog(input []byte) func() {
	t := time.AfterFunc(fuzzInputLimit, func() {
		panic(fmt.Sprintf("one input took over %s: %q", fuzzInputLimit, input))
	})
	return func() { t.Stop() }
}

// fuzzInputLimit is generous: the machine running the fuzzer may be busy.
const fuzzInputLimit = 10 * time.Second

func checkHistograms(t *testing.T, hs map[Signal]Histogram) {
	t.Helper()
	for sig, h := range hs {
		if len(h.Buckets) == 0 || !math.IsInf(h.Buckets[len(h.Buckets)-1].UpperBound, +1) {
			t.Fatalf("%s: accepted a histogram without a +Inf bucket: %+v", sig, h.Buckets)
		}
		for i := 1; i < len(h.Buckets); i++ {
			if h.Buckets[i].UpperBound <= h.Buckets[i-1].UpperBound {
				t.Fatalf("%s: bucket bounds not increasing: %+v", sig, h.Buckets)
			}
		}
	}
}

// observeTwice puts the snapshot in a window twice, 5 s apart (a rate
// needs two), observes it and evaluates it against a small profile.
func observeTwice(t *testing.T, snap Snapshot) {
	t.Helper()
	w, err := NewWindow(time.Minute, 16)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_800_000_000, 0)
	for i := range 2 {
		s := snap
		s.Time = t0.Add(time.Duration(i) * 5 * time.Second)
		_ = w.Add(s) // a rejected snapshot is fine; a panic is not
	}
	at := t0.Add(5 * time.Second)
	o := Observe(w, at, &fuzzSLO)
	for _, a := range []float64{o.TTFTAttainment, o.TPOTAttainment} {
		if knee.Known(a) && (a < 0 || a > 1) {
			t.Fatalf("attainment %v outside [0, 1]", a)
		}
	}
	for _, p := range fuzzProfiles(t) {
		r := knee.Evaluate(o, p, knee.Options{})
		if r.OK && !knee.Known(r.Headroom) {
			t.Fatalf("evaluation ok with headroom %v (observation %+v)", r.Headroom, o)
		}
		if inf := infiniteFloats(reflect.ValueOf(r), "Result"); len(inf) > 0 {
			t.Fatalf("the evaluation exports infinite %v (observation %+v)", inf, o)
		}
	}
}

// fuzzProfiles are a small hand-made profile and one with every model the
// evaluation reads (knee's FuzzEvaluate profile), loaded once.
func fuzzProfiles(t *testing.T) []*knee.Profile {
	t.Helper()
	modelsOnce.Do(func() { modelsProfile, modelsErr = knee.Load("../knee/testdata/evaluate-models.yaml") })
	if modelsErr != nil {
		t.Fatal(modelsErr)
	}
	return []*knee.Profile{fuzzProfile(), modelsProfile}
}

var (
	modelsOnce    sync.Once
	modelsProfile *knee.Profile
	modelsErr     error
)

// infiniteFloats lists the float64 fields, at any depth, that hold ±Inf.
func infiniteFloats(v reflect.Value, path string) []string {
	var out []string
	switch v.Kind() {
	case reflect.Float64:
		if math.IsInf(v.Float(), 0) {
			out = append(out, path)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			out = append(out, infiniteFloats(v.Field(i), path+"."+v.Type().Field(i).Name)...)
		}
	case reflect.Array:
		for i := range v.Len() {
			out = append(out, infiniteFloats(v.Index(i), fmt.Sprintf("%s[%d]", path, i))...)
		}
	}
	return out
}

func fuzzProfile() *knee.Profile {
	pt := func(c, out float64, ok bool) knee.Point {
		return knee.Point{Concurrency: c, Requests: 100, RequestsPerSecond: out / 200, OutputTokensPerSecond: out,
			GoodputTokensPerSecond: out, TTFT: knee.Quantiles{P50: 0.05, P99: 0.1}, TPOT: knee.Quantiles{P50: 0.01, P99: 0.02}, MeetsSLO: ok}
	}
	return &knee.Profile{
		APIVersion: knee.APIVersion, Kind: knee.Kind, Match: knee.Match{Model: "m"}, SLO: fuzzSLO,
		Workload: knee.WorkloadInfo{MeanPromptTokens: 200, MeanOutputTokens: 200},
		Points:   []knee.Point{pt(1, 100, true), pt(10, 900, true), pt(20, 1500, false)},
		Knee:     knee.Knee{Concurrency: 10, OutputTokensPerSecond: 900, GoodputTokensPerSecond: 900, LimitingResource: knee.ResourceCompute},
	}
}

// TestATokenHistogramWithoutItsSumIsAProblemNotACrash is the fuzzer's first
// find (testdata/fuzz/FuzzTGI/d924d469334f7a5c): TGI's token counts are read
// from its token-length histograms' _sum, and one exposed without _sum made
// the adapter read through a nil summary and crash the watcher. Now the
// signal is unknown, with a problem naming the family.
func TestATokenHistogramWithoutItsSumIsAProblemNotACrash(t *testing.T) {
	snap := normalizeText(t, `# TYPE tgi_queue_size gauge
tgi_queue_size 2
# TYPE tgi_batch_current_size gauge
tgi_batch_current_size 7
# TYPE tgi_request_generated_tokens histogram
tgi_request_generated_tokens_bucket{le="100"} 3
tgi_request_generated_tokens_bucket{le="+Inf"} 5
tgi_request_generated_tokens_count 5
`, Options{Engine: "tgi"})
	if _, ok := snap.Counter(SignalGenerationTokens); ok {
		t.Error("generation tokens read from a histogram without _sum")
	}
	found := false
	for _, p := range snap.Problems {
		found = found || (p.Metric == "tgi_request_generated_tokens" && strings.Contains(p.Reason, "no _sum"))
	}
	if !found {
		t.Errorf("no problem names tgi_request_generated_tokens: %+v", snap.Problems)
	}
	if v, ok := snap.Gauge(SignalWaiting); !ok || v != 2 {
		t.Errorf("the rest of the scrape is lost: waiting %v, %v", v, ok)
	}
}
