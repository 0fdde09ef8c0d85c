package collector

import (
	"bytes"
	"errors"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/common/expfmt"
)

// The stream path (textscan.go, parseOpenMetrics with wantedNames) must
// read every scrape exactly as the reference path does: expfmt's (or
// Prometheus's OpenMetrics) parser over the whole body into client_model
// families, then Normalize.

// referenceSnapshot is the reference path on a classic text body.
func referenceSnapshot(body []byte, opts Options) (Snapshot, error) {
	families, err := ParseText(bytes.NewReader(body))
	if err != nil {
		return Snapshot{}, err
	}
	return Normalize(families, opts)
}

// streamSnapshot is the stream path on a body of format, as Scrape runs it,
// the scanner's memory handed back after (so the next call reuses it).
func streamSnapshot(body []byte, format expfmt.Format, opts Options) (Snapshot, error) {
	in, err := parse(body, format, engineWanted)
	if err != nil {
		return Snapshot{}, err
	}
	defer in.release()
	return normalizeIndex(in.index(), opts)
}

var textFormat = expfmt.NewFormat(expfmt.TypeTextPlain)
var omFormat = expfmt.NewFormat(expfmt.TypeOpenMetrics)

// snapshotCmp compares snapshots with NaN equal to NaN (an absent _sum is
// NaN in a Histogram).
var snapshotCmp = cmpopts.EquateNaNs()

// toOpenMetrics renders a classic text exposition as OpenMetrics with
// client_golang's encoder, as prometheus_client serves an engine's
// metrics when OpenMetrics is asked for.
func toOpenMetrics(t testing.TB, body []byte) []byte {
	t.Helper()
	families, err := ParseText(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, omFormat)
	for _, name := range slices.Sorted(maps.Keys(families)) {
		if err := enc.Encode(families[name]); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if c, ok := enc.(expfmt.Closer); ok {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func fixtureNames(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "*.prom"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	var names []string
	for _, p := range paths {
		names = append(names, filepath.Base(p))
	}
	return names
}

// TestTheStreamPathReadsEveryFixtureAsTheReferenceDoes covers every
// captured exposition under testdata (the shared fixtures are copies of
// four of them), in the classic format and rendered as OpenMetrics, with
// the engine detected and with each engine named; and the DCGM path.
func TestTheStreamPathReadsEveryFixtureAsTheReferenceDoes(t *testing.T) {
	for _, name := range fixtureNames(t) {
		body := []byte(readFixture(t, name))
		t.Run(name, func(t *testing.T) {
			if _, err := scanText(body, engineWanted); err != nil {
				t.Errorf("the scanner fell back to expfmt on a captured exposition: %v", err)
			}
			om := toOpenMetrics(t, body)
			for _, opts := range append([]Options{{}}, engineOptions()...) {
				want, wantErr := referenceSnapshot(body, opts)
				got, gotErr := streamSnapshot(body, textFormat, opts)
				compareOutcome(t, "text "+opts.Engine, want, wantErr, got, gotErr)

				families, err := ParseOpenMetrics(om)
				if err != nil {
					t.Fatal(err)
				}
				wantOM, wantOMErr := Normalize(families, opts)
				gotOM, gotOMErr := streamSnapshot(om, omFormat, opts)
				compareOutcome(t, "OpenMetrics "+opts.Engine, wantOM, wantOMErr, gotOM, gotOMErr)
			}
			families, err := ParseText(bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			want, wantErr := NormalizeDCGM(families)
			in, err := parse(body, textFormat, dcgmWanted)
			if err != nil {
				t.Fatal(err)
			}
			got, gotErr := normalizeDCGM(in.families, len(in.skipped) > 0)
			if (wantErr == nil) != (gotErr == nil) {
				t.Fatalf("DCGM: reference error %v, stream error %v", wantErr, gotErr)
			}
			if diff := cmp.Diff(want, got, snapshotCmp); diff != "" {
				t.Errorf("DCGM (-reference +stream):\n%s", diff)
			}
		})
	}
}

func engineOptions() []Options {
	var out []Options
	for _, e := range Engines() {
		out = append(out, Options{Engine: e})
	}
	return out
}

func compareOutcome(t *testing.T, what string, want Snapshot, wantErr error, got Snapshot, gotErr error) {
	t.Helper()
	if (wantErr == nil) != (gotErr == nil) || (wantErr != nil && wantErr.Error() != gotErr.Error()) {
		t.Errorf("%s: reference error %v, stream error %v", what, wantErr, gotErr)
		return
	}
	if diff := cmp.Diff(want, got, snapshotCmp); diff != "" {
		t.Errorf("%s (-reference +stream):\n%s", what, diff)
	}
}

// TestASnapshotOutlivesItsScannersReuse reads every fixture in turn on
// one scanner, handing its memory back after each, and then holds each
// snapshot read to what a fresh read of its fixture gives: the scanner
// zeroes and reuses its families' messages and buckets, and a snapshot
// (kept by a window for a minute) must share none of them.
func TestASnapshotOutlivesItsScannersReuse(t *testing.T) {
	names := fixtureNames(t)
	var got []Snapshot
	for range 2 {
		for _, name := range names {
			s, err := streamSnapshot([]byte(readFixture(t, name)), textFormat, Options{})
			if err != nil {
				s = Snapshot{}
			}
			got = append(got, s)
		}
	}
	for i, s := range got {
		name := names[i%len(names)]
		want, err := referenceSnapshot([]byte(readFixture(t, name)), Options{})
		if err != nil {
			want = Snapshot{}
		}
		if diff := cmp.Diff(want, s, snapshotCmp); diff != "" {
			t.Errorf("%s, read %d: the snapshot changed after its scanner was reused (-fresh +kept):\n%s", name, i/len(names)+1, diff)
		}
	}
}

// TestNoWantedNameEndsInAHistogramSuffix holds what wantedNames.relevant
// relies on: a kept line's family is decided by kept families alone, which
// is so only while no name an adapter reads ends in _bucket, _count or
// _sum (a family "x_count" would then depend on whether an unread "x" is
// a histogram). Nor may one end in _created, which familyIndex drops.
func TestNoWantedNameEndsInAHistogramSuffix(t *testing.T) {
	for _, w := range []*wantedNames{engineWanted, dcgmWanted} {
		for name := range w.names {
			for _, s := range append(histogramSuffixes, "_created", "_gcount", "_gsum") {
				if strings.HasSuffix(name, s) {
					t.Errorf("wanted name %q ends in %s", name, s)
				}
			}
		}
	}
	if len(engineWanted.prefixes)+len(dcgmWanted.prefixes) > 64 {
		t.Error("more watched prefixes than the scanner's bit set holds")
	}
}

// TestTheStreamPathOnEdgeCases runs bodies chosen to hit each rule the
// scanner copies from expfmt, and each case it leaves to expfmt, through
// both paths.
func TestTheStreamPathOnEdgeCases(t *testing.T) {
	const head = "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} 3\n" +
		"# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name=\"m\"} 1\n"
	const ttft = "# TYPE vllm:time_to_first_token_seconds histogram\n"
	tests := []struct {
		name, body string
		// fallback says the scanner must hand the body to expfmt.
		fallback bool
	}{
		{name: "a plain scrape", body: head},
		{name: "a histogram whose lines interleave and repeat label sets (merged, as expfmt merges them)", body: head + ttft +
			"vllm:time_to_first_token_seconds_bucket{le=\"0.1\",model_name=\"m\"} 1\n" +
			"vllm:time_to_first_token_seconds_count{model_name=\"m\"} 4\n" +
			"vllm:time_to_first_token_seconds_bucket{model_name=\"m\",le=\"+Inf\"} 4\n" +
			"vllm:time_to_first_token_seconds_sum{model_name=\"m\"} 0.7\n"},
		{name: "float bucket counts (normalized as expfmt does)", body: head + ttft +
			"vllm:time_to_first_token_seconds_bucket{le=\"0.1\",model_name=\"m\"} 1.5\n" +
			"vllm:time_to_first_token_seconds_bucket{le=\"+Inf\",model_name=\"m\"} 4\n" +
			"vllm:time_to_first_token_seconds_count{model_name=\"m\"} 4\n"},
		{name: "a histogram line without le", body: head + ttft +
			"vllm:time_to_first_token_seconds_bucket{model_name=\"m\"} 1\n" +
			"vllm:time_to_first_token_seconds_bucket{le=\"+Inf\",model_name=\"m\"} 4\n"},
		{name: "le=NaN is no bucket", body: head + ttft +
			"vllm:time_to_first_token_seconds_bucket{le=\"NaN\",model_name=\"m\"} 1\n" +
			"vllm:time_to_first_token_seconds_bucket{le=\"+Inf\",model_name=\"m\"} 4\n"},
		{name: "bucket lines that differ only in le, before and after other labels, and one that differs elsewhere", body: head + ttft +
			"vllm:time_to_first_token_seconds_bucket{le=\"0.1\",model_name=\"m\",engine=\"0\"} 1\n" +
			"vllm:time_to_first_token_seconds_bucket{le=\"0.25\",model_name=\"m\",engine=\"0\"} 2\n" +
			"vllm:time_to_first_token_seconds_bucket{le=\"+Inf\",model_name=\"m\",engine=\"0\"} 3\n" +
			"vllm:time_to_first_token_seconds_bucket{le=\"0.1\",model_name=\"m\",engine=\"1\"} 1\n" +
			"vllm:time_to_first_token_seconds_bucket{le=\"+Inf\",model_name=\"m\",engine=\"1\"} 5\n" +
			"vllm:time_to_first_token_seconds_bucket{model_name=\"le=\\\"x\",le=\"0.1\"} 1\n" +
			"vllm:time_to_first_token_seconds_bucket{model_name=\"le=\\\"x\",le=\"+Inf\"} 2\n"},
		{name: "a _count gauge declared on its own stays its own family", body: head +
			"# TYPE vllm:time_to_first_token_seconds_count gauge\nvllm:time_to_first_token_seconds_count 3\n" + ttft +
			"vllm:time_to_first_token_seconds_bucket{le=\"+Inf\"} 4\nvllm:time_to_first_token_seconds_count 9\n"},
		{name: "escaped label values, blanks and tabs between tokens, a timestamp", body: head +
			"# TYPE vllm:num_preemptions counter\n  vllm:num_preemptions_total { model_name = \"m\" , note=\"a\\\"b\\\\c\\nd\" , }\t7 1700000000000\n"},
		{name: "comments, empty lines and a HELP with escapes", body: "# hello\n\n#\n# HELP vllm:num_requests_running a \\\\ b \\n c\n" + head},
		{name: "TYPE in lower and mixed case", body: "# TYPE vllm:num_requests_running GaUgE\nvllm:num_requests_running 2\n# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting 1\n"},
		{name: "a counter with and without _total, colon and underscore spellings", body: head +
			"# TYPE vllm_generation_tokens_total counter\nvllm_generation_tokens_total 5\n# TYPE vllm:generation_tokens counter\nvllm:generation_tokens 6\n"},
		{name: "a summary with quantiles", body: head + "# TYPE vllm:e2e_request_latency_seconds summary\n" +
			"vllm:e2e_request_latency_seconds{quantile=\"0.5\"} 1\nvllm:e2e_request_latency_seconds_sum 10\nvllm:e2e_request_latency_seconds_count 5\n"},
		{name: "TGI token histograms read through _sum", body: "# TYPE tgi_queue_size gauge\ntgi_queue_size 2\n# TYPE tgi_batch_current_size gauge\ntgi_batch_current_size 7\n" +
			"# TYPE tgi_request_generated_tokens histogram\ntgi_request_generated_tokens_bucket{le=\"+Inf\"} 5\ntgi_request_generated_tokens_sum 50\ntgi_request_generated_tokens_count 5\n"},
		{name: "only unread families of an engine (still detected)", body: "# TYPE vllm:something_else gauge\nvllm:something_else 1\n"},
		{name: "an unread _created family counts for nothing", body: "vllm:x_created 1\n# TYPE up gauge\nup 1\n"},
		{name: "a TYPE line with no type", body: "# TYPE vllm:num_requests_running\n" + head[len("# TYPE vllm:num_requests_running gauge\n"):]},
		{name: "a last line without its newline", body: head + "vllm:num_requests_running 1", fallback: true},
		{name: "a quoted UTF-8 metric name", body: head + "{\"vllm:num_requests_running\",model_name=\"x\"} 1\n", fallback: true},
		{name: "a second TYPE line", body: head + "# TYPE vllm:num_requests_running gauge\n", fallback: true},
		{name: "TYPE after samples", body: "vllm:num_requests_running 1\n# TYPE vllm:num_requests_running gauge\n", fallback: true},
		{name: "a malformed read line", body: head + "vllm:num_requests_waiting{model_name=\"m\" 1\n", fallback: true},
		{name: "trailing blanks after a value", body: head + "vllm:num_requests_waiting 1 \n", fallback: true},
		{name: "duplicate label names", body: head + "vllm:num_requests_waiting{a=\"1\",a=\"2\"} 1\n", fallback: true},
		{name: "a hexadecimal float", body: head + "vllm:num_requests_waiting 0x1p3\n", fallback: true},
		{name: "an HTML page", body: "<html>oops</html>\n", fallback: true},
		{name: "a skipped line that may be a _created histogram's", body: head + "# TYPE vllm:x_created histogram\nvllm:x_created_count 1\n", fallback: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := []byte(tt.body)
			_, err := scanText(body, engineWanted)
			if fell := errors.Is(err, errScanFallback); fell != tt.fallback {
				t.Errorf("fell back to expfmt: %v, want %v (err %v)", fell, tt.fallback, err)
			}
			for _, opts := range append([]Options{{}}, engineOptions()...) {
				want, wantErr := referenceSnapshot(body, opts)
				got, gotErr := streamSnapshot(body, textFormat, opts)
				compareOutcome(t, "engine "+opts.Engine, want, wantErr, got, gotErr)
			}
		})
	}
}

// TestAMalformedLineOfAnUnreadFamilyNoLongerFailsTheScrape is the stream
// path's one deliberate difference: a family no adapter reads is not
// parsed, so its broken line cannot blind the watcher to the replica.
// A body that is not an exposition at all still fails.
func TestAMalformedLineOfAnUnreadFamilyNoLongerFailsTheScrape(t *testing.T) {
	body := []byte("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 3\n" +
		"# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting 1\n" +
		"python_gc_objects_collected_total{generation=\"0\" 12\n")
	if _, err := referenceSnapshot(body, Options{}); err == nil {
		t.Fatal("expfmt accepts the broken line; the test needs one it rejects")
	}
	got, err := streamSnapshot(body, textFormat, Options{})
	if err != nil {
		t.Fatalf("stream path: %v", err)
	}
	if v, ok := got.Gauge(SignalRunning); !ok || v != 3 {
		t.Errorf("running = %v, %v; want 3", v, ok)
	}
	_, err = streamSnapshot([]byte("vllm:num_requests_running 1\n<html>oops</html>\n"), textFormat, Options{})
	if err == nil || !strings.Contains(err.Error(), "text format parsing error in line 2") {
		t.Errorf("garbage body: err = %v, want expfmt's error naming line 2", err)
	}
}

// TestOpenMetricsWithExemplarsReadsAsTheReference checks the OpenMetrics
// stream path on what engines serve when asked for OpenMetrics: counters
// declared without _total, _created lines, exemplars, info, # EOF.
func TestOpenMetricsWithExemplarsReadsAsTheReference(t *testing.T) {
	body := []byte(`# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} 3
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name="m"} 1
# TYPE vllm:generation_tokens counter
vllm:generation_tokens_total{model_name="m"} 100
vllm:generation_tokens_created{model_name="m"} 1.7e9
# TYPE vllm:cache_config info
vllm:cache_config_info{model_name="m",num_gpu_blocks="100",block_size="16"} 1
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{le="0.1",model_name="m"} 1 # {trace_id="abc"} 0.05 1.7e9
vllm:time_to_first_token_seconds_bucket{le="+Inf",model_name="m"} 4
vllm:time_to_first_token_seconds_count{model_name="m"} 4
vllm:time_to_first_token_seconds_sum{model_name="m"} 0.7
vllm:time_to_first_token_seconds_created{model_name="m"} 1.7e9
# TYPE python_info info
python_info{version="3.12"} 1
# TYPE unrelated_total_requests counter
unrelated_total_requests_total 5
# EOF
`)
	families, err := ParseOpenMetrics(body)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Normalize(families, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := streamSnapshot(body, omFormat, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got, snapshotCmp); diff != "" {
		t.Errorf("(-reference +stream):\n%s", diff)
	}
	if v, ok := got.Gauge(SignalKVCapacityTokens); !ok || v != 1600 {
		t.Errorf("KV capacity from the info family = %v, %v; want 1600", v, ok)
	}
	if _, err := streamSnapshot(bytes.TrimSuffix(body, []byte("# EOF\n")), omFormat, Options{}); err == nil {
		t.Error("OpenMetrics without # EOF accepted")
	}
}

// FuzzStreamAgreesWithTheReference fuzzes the two paths against each
// other from the fixtures (testdata/fuzz/FuzzStreamAgreesWithTheReference
// may hold saved inputs): whenever both accept a body they read the same
// snapshot; the stream path never rejects what expfmt accepts; and where
// it accepts what expfmt rejects, the rejected line is one it does not
// read: the body cut down to the lines of read families is accepted by
// expfmt and reads the same.
func FuzzStreamAgreesWithTheReference(f *testing.F) {
	entries, err := os.ReadDir("testdata")
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".prom") {
			b, err := os.ReadFile(filepath.Join("testdata", e.Name()))
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		defer watchdog(body)()
		checkAgreement(t, body)
	})
}

// TestTheStreamPathAgreesOnMutatedFixtures is the fuzz property on a fixed
// set of mutations of the small fixtures (3,000, or 300 under -short, or
// KNEEWATCH_MUTATIONS): bytes deleted and inserted from the
// format's punctuation, lines duplicated, swapped and dropped. (The Go
// fuzzer makes no progress from these seeds on a loaded 2-core machine.)
func TestTheStreamPathAgreesOnMutatedFixtures(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 300
	}
	if v, err := strconv.Atoi(os.Getenv("KNEEWATCH_MUTATIONS")); err == nil && v > 0 {
		n = v // a longer exploration, by hand
	}
	rng := rand.New(rand.NewPCG(15, 15))
	var seeds [][]byte
	for _, name := range []string{"vllm-design-metrics-doc-example.prom", "trtllm-tensorrtllm_backend-readme.prom", "vllm-v0-synthetic.prom", "tgi-synthetic.prom"} {
		seeds = append(seeds, []byte(readFixture(t, name)))
	}
	for i := range n {
		body := mutate(rng, seeds[i%len(seeds)])
		checkAgreement(t, body)
		if t.Failed() {
			return
		}
	}
}

const mutationBytes = " \t\n{}\",=#_:\\.-+eE0123456789abcNnIfy"

func mutate(rng *rand.Rand, seed []byte) []byte {
	lines := bytes.SplitAfter(bytes.Clone(seed), []byte("\n"))
	for range 1 + rng.IntN(3) {
		i := rng.IntN(len(lines))
		switch rng.IntN(6) {
		case 0: // delete a byte
			if l := lines[i]; len(l) > 0 {
				j := rng.IntN(len(l))
				lines[i] = append(bytes.Clone(l[:j]), l[j+1:]...)
			}
		case 1, 2: // insert a byte
			l := lines[i]
			j := rng.IntN(len(l) + 1)
			c := mutationBytes[rng.IntN(len(mutationBytes))]
			lines[i] = append(append(bytes.Clone(l[:j]), c), l[j:]...)
		case 3: // duplicate a line
			lines = slices.Insert(lines, i, lines[i])
		case 4: // swap two lines
			j := rng.IntN(len(lines))
			lines[i], lines[j] = lines[j], lines[i]
		case 5: // drop a line
			lines = slices.Delete(lines, i, i+1)
			if len(lines) == 0 {
				lines = [][]byte{{}}
			}
		}
	}
	return bytes.Join(lines, nil)
}

// checkAgreement is the fuzz property on one body.
func checkAgreement(t *testing.T, body []byte) {
	t.Helper()
	for _, opts := range []Options{{}, {Engine: "vllm"}, {Engine: "tgi"}} {
		want, wantErr := referenceSnapshot(body, opts)
		got, gotErr := streamSnapshot(body, textFormat, opts)
		switch {
		case wantErr == nil && gotErr == nil:
			if diff := cmp.Diff(want, got, snapshotCmp); diff != "" {
				t.Fatalf("%q engine %q (-reference +stream):\n%s", body, opts.Engine, diff)
			}
		case wantErr == nil:
			t.Fatalf("%q: the stream path rejects what expfmt accepts: %v", body, gotErr)
		case isParseError(wantErr) && (gotErr == nil || !isParseError(gotErr)):
			// Accepted what expfmt rejects: the rejected line must be one
			// the stream path does not read.
			kept := keptLines(body)
			want, err := referenceSnapshot(kept, opts)
			if err != nil && isParseError(err) {
				t.Fatalf("%q: accepted although a read line is malformed (%v)", body, err)
			}
			if (err == nil) != (gotErr == nil) || (err != nil && err.Error() != gotErr.Error()) {
				t.Fatalf("%q: reference on read lines %v, stream %v", body, err, gotErr)
			}
			if diff := cmp.Diff(want, got, snapshotCmp); diff != "" {
				t.Fatalf("%q engine %q (-reference on read lines +stream):\n%s", body, opts.Engine, diff)
			}
		case gotErr == nil:
			t.Fatalf("%q: reference %v, stream accepted", body, wantErr)
		case wantErr.Error() != gotErr.Error():
			t.Fatalf("%q: reference error %v, stream error %v", body, wantErr, gotErr)
		}
	}
}

func isParseError(err error) bool { return strings.Contains(err.Error(), "parsing text exposition") }

// keptLines is body without the sample and metadata lines of families the
// stream path skips.
func keptLines(body []byte) []byte {
	var out []byte
	for _, line := range bytes.SplitAfter(body, []byte("\n")) {
		l := trimBlank(line)
		name := l
		if len(l) > 0 && l[0] == '#' {
			f := bytes.Fields(l[1:])
			if len(f) >= 2 && (string(f[0]) == "HELP" || string(f[0]) == "TYPE") {
				name = f[1]
			} else {
				name = nil
			}
		}
		if n, _, ok := splitMetricName(name); ok && !engineWanted.relevant(n) {
			continue
		}
		out = append(out, line...)
	}
	return out
}

// TestPlainDecimalsParseAsStrconvParsesThem checks the scanner's fast
// path for sample values bit for bit against strconv.ParseFloat, on the
// values engines write and on random decimals up to its 15-digit limit,
// and that it leaves everything else to strconv.
func TestPlainDecimalsParseAsStrconvParsesThem(t *testing.T) {
	cases := []string{"0", "-0", "+0", "1", "12.0", "440.0", "0.4171", "-1.0", "103.335895", "1.", ".5", "-.5",
		"999999999999999", "0.000000000000001", "123456789.012345", "007", "1e3", "+Inf", "NaN", "1_000", "0x1p3", ".", "-", "1.2.3", "1234567890123456"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		digits := 1 + rng.IntN(15)
		b := make([]byte, 0, 18)
		if rng.IntN(4) == 0 {
			b = append(b, '-')
		}
		point := rng.IntN(digits + 1)
		for i := range digits {
			if i == point && rng.IntN(3) > 0 {
				b = append(b, '.')
			}
			b = append(b, byte('0'+rng.IntN(10)))
		}
		cases = append(cases, string(b))
	}
	for _, c := range cases {
		got, ok := plainDecimal([]byte(c))
		want, err := strconv.ParseFloat(c, 64)
		if !ok {
			if len(c) > 0 && !strings.ContainsAny(c, "eEIiNn_xp") && strings.Count(c, ".") <= 1 && err == nil && len(strings.Trim(c, "+-.")) <= 15 && strings.Trim(c, "+-.") != "" {
				t.Errorf("%q: left to strconv, though plain", c)
			}
			continue
		}
		if err != nil || math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("%q: fast path %v (bits %x), strconv %v (bits %x), %v", c, got, math.Float64bits(got), want, math.Float64bits(want), err)
		}
	}
}
