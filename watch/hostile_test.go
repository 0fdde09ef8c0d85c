package watch

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/kneewatch/kneewatch/collector"
	"github.com/kneewatch/kneewatch/config"
	"github.com/kneewatch/kneewatch/internal/testtools"
	"github.com/kneewatch/kneewatch/knee"
)

// hostileStart anchors the fake upstream's counters: they grow with the
// wall clock, so every replica reads the same rates whenever it is scraped.
var hostileStart = time.Now()

// vllmText is a vLLM exposition of a replica at 26 in flight making 3000
// output tokens/s, with edits applied to its lines.
func vllmText(model string, edit func(string) string) string {
	el := time.Since(hostileStart).Seconds() + 100
	reqs := 10 * el
	var b strings.Builder
	fmt.Fprintf(&b, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=%q} 24\n", model)
	fmt.Fprintf(&b, "# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name=%q} 2\n", model)
	fmt.Fprintf(&b, "# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{model_name=%q} 0.1\n", model)
	fmt.Fprintf(&b, "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{model_name=%q} %g\n", model, 3000*el)
	fmt.Fprintf(&b, "# TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total{model_name=%q} %g\n", model, 6000*el)
	fmt.Fprintf(&b, "# TYPE vllm:request_success_total counter\nvllm:request_success_total{finished_reason=\"stop\",model_name=%q} %g\n", model, reqs)
	b.WriteString("# TYPE vllm:time_to_first_token_seconds histogram\n")
	for _, le := range []struct {
		le    string
		share float64
	}{{"0.1", 0.5}, {"0.25", 0.9}, {"1", 0.99}, {"+Inf", 1}} {
		fmt.Fprintf(&b, "vllm:time_to_first_token_seconds_bucket{le=%q,model_name=%q} %g\n", le.le, model, math.Floor(reqs*le.share))
	}
	fmt.Fprintf(&b, "vllm:time_to_first_token_seconds_sum{model_name=%q} %g\n", model, reqs*0.12)
	fmt.Fprintf(&b, "vllm:time_to_first_token_seconds_count{model_name=%q} %g\n", model, math.Floor(reqs))
	s := b.String()
	if edit != nil {
		s = edit(s)
	}
	return s
}

const hostileModel = "meta-llama/Llama-3.1-8B-Instruct"

func replaceLine(prefix, with string) func(string) string {
	return func(s string) string {
		var out []string
		for _, l := range strings.Split(s, "\n") {
			if strings.HasPrefix(l, prefix) {
				if with == "" {
					continue
				}
				l = with
			}
			out = append(out, l)
		}
		return strings.Join(out, "\n")
	}
}

// hostileCase is one misbehaving upstream and what kneewatch must make of it.
type hostileCase struct {
	name    string
	handler http.HandlerFunc
	tls     bool
	up      bool
	// reason is evaluation_ok's reason label ("" when ok).
	reason string
	// problem, when set, must be counted in kneewatch_target_scrape_problems_total.
	problem string
	// dcgm, when set, serves the replica's DCGM endpoint (its engine is
	// sane), and dcgmUp is what kneewatch_target_up{source="dcgm"} must say.
	dcgm   http.HandlerFunc
	dcgmUp bool
}

// dcgmUUID is the GPU of the DCGM fixture a hostile case's replica selects.
const dcgmUUID = "GPU-a8394b51-c086-568a-9f1a-c1e1c934c44c"

func textHandler(body func() string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte(body()))
	}
}

const hostileBodyLimit = 4 << 20

func hostileCases() []hostileCase {
	sane := func(edit func(string) string) http.HandlerFunc {
		return textHandler(func() string { return vllmText(hostileModel, edit) })
	}
	var nanSumScrapes sync.Map
	dcgmFixture, err := os.ReadFile(filepath.Join(testtools.ModuleRoot(), "collector", "testdata", "dcgm-lke-ai-conformance-gpu-operator-k8s.prom"))
	if err != nil {
		panic(err)
	}
	return []hostileCase{
		{name: "sane", handler: sane(nil), up: true},
		{name: "kv usage NaN and the generation counter +Inf", up: true, reason: ReasonUnusableSignal, problem: collector.ProblemNonFinite,
			handler: sane(func(s string) string {
				s = replaceLine("vllm:kv_cache_usage_perc{", `vllm:kv_cache_usage_perc{model_name="`+hostileModel+`"} NaN`)(s)
				return replaceLine("vllm:generation_tokens_total{", `vllm:generation_tokens_total{model_name="`+hostileModel+`"} +Inf`)(s)
			})},
		{name: "duplicate series in one scrape", up: true, reason: ReasonUnusableSignal, problem: collector.ProblemDuplicateSeries,
			handler: sane(func(s string) string {
				return strings.Replace(s, "# TYPE vllm:num_requests_running gauge\n",
					"# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\""+hostileModel+"\"} 24\n", 1)
			})},
		{name: "a NaN TTFT _sum for a while", up: true, problem: collector.ProblemNonFinite,
			handler: func(w http.ResponseWriter, r *http.Request) {
				n, _ := nanSumScrapes.LoadOrStore("n", new(int))
				*n.(*int)++
				edit := func(s string) string { return s }
				if *n.(*int)%4 == 2 {
					edit = replaceLine("vllm:time_to_first_token_seconds_sum", `vllm:time_to_first_token_seconds_sum{model_name="`+hostileModel+`"} NaN`)
				}
				sane(edit)(w, r)
			}},
		{name: "a histogram without its +Inf bucket", up: true, problem: collector.ProblemPartialHisto,
			handler: sane(replaceLine(`vllm:time_to_first_token_seconds_bucket{le="+Inf"`, ""))},
		{name: "a histogram whose buckets are not monotonic", up: true, problem: collector.ProblemNonMonotonic,
			handler: sane(replaceLine(`vllm:time_to_first_token_seconds_bucket{le="0.25"`, `vllm:time_to_first_token_seconds_bucket{le="0.25",model_name="`+hostileModel+`"} 1`))},
		{name: "a 150 KB model_name label", up: true, problem: collector.ProblemLabelTooLong,
			handler: textHandler(func() string { return vllmText(strings.Repeat("m", 150<<10), nil) })},
		{name: "OpenMetrics with exemplars", up: true,
			handler: func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/openmetrics-text; version=1.0.0; charset=utf-8")
				s := vllmText(hostileModel, nil)
				s = strings.ReplaceAll(s, "# TYPE vllm:generation_tokens_total counter", "# TYPE vllm:generation_tokens counter")
				s = strings.ReplaceAll(s, "# TYPE vllm:prompt_tokens_total counter", "# TYPE vllm:prompt_tokens counter")
				s = strings.ReplaceAll(s, "# TYPE vllm:request_success_total counter", "# TYPE vllm:request_success counter")
				s = strings.Replace(s, `le="0.25",model_name="`+hostileModel+`"} `, `le="0.25",model_name="`+hostileModel+`"} `, 1)
				var out []string
				for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
					if strings.HasPrefix(l, "vllm:time_to_first_token_seconds_bucket") {
						l += ` # {trace_id="abc"} 0.2 1.7e9`
					}
					out = append(out, l)
				}
				_, _ = w.Write([]byte(strings.Join(out, "\n") + "\n# EOF\n"))
			}},
		{name: "a body over the size limit", up: false, reason: ReasonEngineDown,
			handler: sane(func(s string) string { return s + strings.Repeat("# padding\n", hostileBodyLimit/10+1) })},
		{name: "more series than the limit", up: false, reason: ReasonEngineDown,
			handler: sane(func(s string) string {
				var b strings.Builder
				for i := range 2000 {
					fmt.Fprintf(&b, "other_series{i=\"%d\"} 1\n", i)
				}
				return s + b.String()
			})},
		{name: "an upstream that hangs", up: false, reason: ReasonEngineDown,
			handler: func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }},
		{name: "an upstream that trickles its body", up: false, reason: ReasonEngineDown,
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/plain; version=0.0.4")
				for {
					if _, err := w.Write([]byte("#")); err != nil {
						return
					}
					w.(http.Flusher).Flush()
					select {
					case <-r.Context().Done():
						return
					case <-time.After(20 * time.Millisecond):
					}
				}
			}},
		{name: "a redirect loop", up: false, reason: ReasonEngineDown,
			handler: func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, r.URL.Path, http.StatusFound) }},
		{name: "HTTP 500", up: false, reason: ReasonEngineDown,
			handler: func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "boom", http.StatusInternalServerError) }},
		{name: "a certificate no one trusts (TLS fails closed)", up: false, reason: ReasonEngineDown, tls: true, handler: sane(nil)},
		// A DCGM exporter fails alone: the engine's headroom stands.
		{name: "a sane DCGM exporter", up: true, handler: sane(nil), dcgmUp: true,
			dcgm: textHandler(func() string { return string(dcgmFixture) })},
		{name: "a DCGM exporter that hangs", up: true, handler: sane(nil), dcgmUp: false,
			dcgm: func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }},
		{name: "a DCGM exporter serving a malformed body", up: true, handler: sane(nil), dcgmUp: false,
			dcgm: textHandler(func() string { return string(dcgmFixture[:len(dcgmFixture)/2]) + "\n<html>502 Bad Gateway</html>\n" })},
	}
}

func validProfile(t *testing.T) *knee.Profile {
	t.Helper()
	p, err := knee.Load(filepath.Join(testtools.ModuleRoot(), "knee", "testdata", "valid.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestHostileUpstreamsAreUpOrDownWithAReasonAndNeverAWrongHeadroom(t *testing.T) {
	cases := hostileCases()
	mux := http.NewServeMux()
	var targets []Target
	prof := validProfile(t)
	var tlsSrv *httptest.Server
	for i, c := range cases {
		path := fmt.Sprintf("/case/%d/metrics", i)
		if c.tls {
			tlsSrv = httptest.NewUnstartedServer(c.handler)
			tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0)
			tlsSrv.StartTLS()
			t.Cleanup(tlsSrv.Close)
			// The default client trusts no test certificate: it must fail
			// closed, not skip verification.
			targets = append(targets, Target{Replica: fmt.Sprintf("r%02d", i), MetricsURL: tlsSrv.URL + "/metrics", Profile: prof, ProfileName: "valid"})
			continue
		}
		mux.Handle(path, c.handler)
		tg := Target{Replica: fmt.Sprintf("r%02d", i), Profile: prof, ProfileName: "valid", MetricsURL: path}
		if c.dcgm != nil {
			dpath := fmt.Sprintf("/case/%d/dcgm", i)
			mux.Handle(dpath, c.dcgm)
			tg.DCGM = &DCGMTarget{URL: dpath, Selectors: []collector.GPUSelector{{UUID: dcgmUUID}}}
		}
		targets = append(targets, tg)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	for i := range targets {
		if strings.HasPrefix(targets[i].MetricsURL, "/") {
			targets[i].MetricsURL = srv.URL + targets[i].MetricsURL
		}
		if d := targets[i].DCGM; d != nil {
			d.URL = srv.URL + d.URL
		}
	}
	w := NewWatcher(WatcherOptions{
		Interval: time.Second, Window: 4 * time.Second,
		Limits: collector.ScrapeLimits{Timeout: 750 * time.Millisecond, MaxBodyBytes: hostileBodyLimit, MaxSeries: 500},
	})
	if err := w.SetTargets(targets); err != nil {
		t.Fatal(err)
	}
	var r *Round
	for range 8 {
		r = w.EvaluateOnce(context.Background())
		time.Sleep(100 * time.Millisecond)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewExporter(func() *Round { return r }))

	byReplica := map[string]ReplicaEval{}
	for _, e := range r.Replicas {
		byReplica[e.Replica] = e
	}
	sane := byReplica["r00"]
	if !sane.Result.OK || !knee.Known(sane.Result.Headroom) {
		t.Fatalf("the sane replica is not ok: %q", sane.Result.Reason)
	}
	t.Logf("sane headroom %.3f (dimension %s)", sane.Result.Headroom, sane.Result.Dimension)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			replica := fmt.Sprintf("r%02d", i)
			e, ok := byReplica[replica]
			if !ok {
				t.Fatalf("%s not evaluated", replica)
			}
			up := testutil.ToFloat64(metricOf(t, reg, "kneewatch_target_up", map[string]string{"replica": replica, "source": "engine"}))
			if (up == 1) != c.up {
				t.Errorf("kneewatch_target_up = %v, want up %v (error %q)", up, c.up, e.EngineError)
			}
			if e.Result.Reason != c.reason {
				t.Errorf("evaluation_ok reason %q, want %q", e.Result.Reason, c.reason)
			}
			okv := testutil.ToFloat64(metricOf(t, reg, "kneewatch_replica_evaluation_ok", map[string]string{"replica": replica, "reason": c.reason}))
			if (okv == 1) != (c.reason == "") {
				t.Errorf("kneewatch_replica_evaluation_ok{reason=%q} = %v", c.reason, okv)
			}
			h := exportedValue(t, reg, "kneewatch_replica_headroom_ratio", replica)
			switch {
			case c.reason != "" && h != nil:
				t.Errorf("headroom %v exported with reason %q, want absent", *h, c.reason)
			case c.reason == "" && h == nil:
				t.Error("headroom absent for an ok evaluation")
			case h != nil && math.Abs(*h-sane.Result.Headroom) > 0.05:
				t.Errorf("headroom %.3f, sane %.3f: more than 0.05 apart", *h, sane.Result.Headroom)
			}
			dcgmUp := "none"
			if c.dcgm != nil {
				v := testutil.ToFloat64(metricOf(t, reg, "kneewatch_target_up", map[string]string{"replica": replica, "source": "dcgm"}))
				if n := countSeries(t, reg, "kneewatch_target_up", map[string]string{"replica": replica, "source": "dcgm"}); n != 1 || (v == 1) != c.dcgmUp {
					t.Errorf("kneewatch_target_up{source=\"dcgm\"} = %v (%d series), want up %v (error %q)", v, n, c.dcgmUp, e.DCGMError)
				}
				dcgmUp = fmt.Sprint(v)
				if c.dcgmUp && !knee.Known(e.Observation.GPUUtilization) {
					t.Error("GPU utilization unknown with a sane DCGM exporter")
				}
			}
			if c.problem != "" && e.Problems[ProblemKey{"engine", c.problem}] == 0 {
				t.Errorf("problem %s not counted (counted %v)", c.problem, e.Problems)
			}
			if len(e.Model) > collector.MaxLabelValueBytes {
				t.Errorf("model label of %d bytes exported", len(e.Model))
			}
			if v := exportedValue(t, reg, "kneewatch_replica_ttft_seconds_sum", replica); v != nil && math.IsNaN(*v) {
				t.Error("the TTFT sum is NaN")
			}
			if c.problem == collector.ProblemPartialHisto || c.problem == collector.ProblemNonMonotonic {
				if v := exportedValue(t, reg, "kneewatch_replica_requests_total", replica); v != nil {
					t.Errorf("requests_total exported as %v with no usable TTFT histogram, want absent", *v)
				}
			}
			t.Logf("up %v dcgm up %s reason %q headroom %v problems %v", up, dcgmUp, e.Result.Reason, fmtPtr(h), e.Problems)
			if e.DCGMError != "" {
				t.Logf("dcgm error: %s", capText(e.DCGMError))
			}
		})
	}
	var buf bytes.Buffer
	if n, err := testutil.GatherAndCount(reg); err == nil {
		fmt.Fprintf(&buf, "%d series", n)
	}
	t.Log(buf.String())
}

func fmtPtr(p *float64) string {
	if p == nil {
		return "absent"
	}
	return fmt.Sprintf("%.3f", *p)
}

// exportedValue returns the value of the family's series for replica, or nil.
func exportedValue(t *testing.T, reg *prometheus.Registry, name, replica string) *float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	base, suffix := name, ""
	if b, ok := strings.CutSuffix(name, "_sum"); ok {
		base, suffix = b, "_sum"
	}
	for _, mf := range mfs {
		if mf.GetName() != base {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "replica" && lp.GetValue() == replica {
					var v float64
					switch {
					case suffix == "_sum":
						v = m.GetSummary().GetSampleSum()
					case m.Gauge != nil:
						v = m.GetGauge().GetValue()
					default:
						v = m.GetCounter().GetValue()
					}
					return &v
				}
			}
		}
	}
	return nil
}

// seriesOf returns the series of name that carry the given labels.
func seriesOf(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) []*dto.Metric {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []*dto.Metric
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue next
				}
			}
			out = append(out, m)
		}
	}
	return out
}

// countSeries counts the series of name with the given labels.
func countSeries(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) int {
	t.Helper()
	return len(seriesOf(t, reg, name, labels))
}

// metricOf returns a collector of the single series of name with the given labels (0 when absent).
func metricOf(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) prometheus.Collector {
	t.Helper()
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "found"})
	for _, m := range seriesOf(t, reg, name, labels) {
		g.Set(m.GetGauge().GetValue())
	}
	return g
}

// TestHostileUpstreamFailuresAreLoggedOnceWithTokensRedacted: an engine
// and a DCGM exporter that fail every scrape are each logged once when
// they start failing (then at most once a minute) and once when they
// recover, and a token passed in a URL's query string never reaches the
// log, whether the error comes from the HTTP client (connection refused)
// or from kneewatch (a bad status).
func TestHostileUpstreamFailuresAreLoggedOnceWithTokensRedacted(t *testing.T) {
	const token = "s3cret-t0ken"
	var failing atomic.Bool
	failing.Store(true)
	mux := http.NewServeMux()
	mux.Handle("/engine", textHandler(func() string { return vllmText(hostileModel, nil) }))
	flaky := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if failing.Load() {
				http.Error(w, "upstream sick", http.StatusBadGateway)
				return
			}
			h(w, r)
		}
	}
	mux.Handle("/flaky-engine", flaky(textHandler(func() string { return vllmText(hostileModel, nil) })))
	dcgmFixture, err := os.ReadFile(filepath.Join(testtools.ModuleRoot(), "collector", "testdata", "dcgm-lke-ai-conformance-gpu-operator-k8s.prom"))
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle("/flaky-dcgm", flaky(textHandler(func() string { return string(dcgmFixture) })))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	refused := freeLoopbackURL(t)

	var logs testtools.SyncBuffer
	w := NewWatcher(WatcherOptions{Interval: time.Second, Window: 4 * time.Second,
		Limits: collector.ScrapeLimits{Timeout: time.Second},
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	targets := []Target{
		{Replica: "engine-failing", MetricsURL: srv.URL + "/flaky-engine?token=" + token},
		{Replica: "engine-refused", MetricsURL: refused + "/metrics?token=" + token},
		{Replica: "dcgm-failing", MetricsURL: srv.URL + "/engine",
			DCGM: &DCGMTarget{URL: srv.URL + "/flaky-dcgm?api_key=" + token, Selectors: []collector.GPUSelector{{UUID: dcgmUUID}}}},
	}
	if err := w.SetTargets(targets); err != nil {
		t.Fatal(err)
	}
	const rounds = 5
	for range rounds {
		w.EvaluateOnce(context.Background())
	}
	failing.Store(false)
	for range 2 {
		w.EvaluateOnce(context.Background())
	}
	out := logs.String()
	t.Logf("log after %d failing rounds and 2 recovered:\n%s", rounds, out)
	if strings.Contains(out, token) {
		t.Errorf("the token is in the log")
	}
	for _, c := range []struct {
		msg, replica string
		want         int
	}{
		{`msg="engine scrape failed"`, "engine-failing", 1},
		{`msg="engine scrape failed: recovered"`, "engine-failing", 1},
		{`msg="engine scrape failed"`, "engine-refused", 1},
		{`msg="DCGM scrape failed"`, "dcgm-failing", 1},
		{`msg="DCGM scrape failed: recovered"`, "dcgm-failing", 1},
		{`msg="engine scrape failed"`, "dcgm-failing", 0},
	} {
		n := 0
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, c.msg+" ") && strings.Contains(l, "replica="+c.replica+" ") {
				n++
				if strings.Contains(l, "failed\"") && !strings.Contains(l, "=xxxxx") {
					t.Errorf("the failure line does not show the redacted query: %s", l)
				}
			}
		}
		if n != c.want {
			t.Errorf("%d lines %s for %s over %d failing rounds, want %d", n, c.msg, c.replica, rounds, c.want)
		}
	}
}

// freeLoopbackURL is the URL of a loopback port nothing listens on.
func freeLoopbackURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// TestZeroLimitsInTheConfigMeanNoLimit: series_limit: 0 and
// body_size_limit: 0, as documented, leave a scrape unlimited from the
// config file to the scrape: a target serving 60,000 series in 18 MiB,
// above the collector's own defaults (50,000 series, 16 MiB), is scraped.
func TestZeroLimitsInTheConfigMeanNoLimit(t *testing.T) {
	var b strings.Builder
	b.WriteString(vllmText(hostileModel, nil))
	for i := range 60_000 {
		fmt.Fprintf(&b, "padding_series{pod=\"vllm-llama-8b-7d9f8c6b5-x2k4q\",container=\"vllm\",endpoint=\"metrics\",path=\"%0240d\"} 1\n", i)
	}
	body := b.String()
	if len(body) <= collector.DefaultMaxBodyBytes {
		t.Fatalf("body of %d bytes, want it over %d", len(body), collector.DefaultMaxBodyBytes)
	}
	srv := httptest.NewServer(textHandler(func() string { return body }))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	file := filepath.Join(dir, "kneewatch.yml")
	cfgText := "global:\n  scrape_timeout: 20s\n  series_limit: 0\n  body_size_limit: 0\ntargets:\n  - replica: big\n    metrics_url: " + srv.URL + "/metrics\n"
	if err := os.WriteFile(file, []byte(cfgText), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	targets, err := StaticTargets(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	limits := ScrapeLimits(cfg)
	w := NewWatcher(WatcherOptions{Interval: time.Second, Limits: limits})
	if err := w.SetTargets(targets); err != nil {
		t.Fatal(err)
	}
	e := w.EvaluateOnce(context.Background()).Replicas[0]
	t.Logf("config %q → limits: body %d, series %d; a body of %.1f MiB with %d sample lines: up %v %s",
		"series_limit: 0, body_size_limit: 0", limits.MaxBodyBytes, limits.MaxSeries, float64(len(body))/(1<<20), strings.Count(body, "\n")-strings.Count(body, "# "), e.EngineUp, e.EngineError)
	if !e.EngineUp {
		t.Errorf("not scraped: %s", e.EngineError)
	}
}
