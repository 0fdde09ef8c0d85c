package watch

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kneewatch/kneewatch/collector"
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
}

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
		targets = append(targets, Target{Replica: fmt.Sprintf("r%02d", i), Profile: prof, ProfileName: "valid", MetricsURL: path})
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	for i := range targets {
		if strings.HasPrefix(targets[i].MetricsURL, "/") {
			targets[i].MetricsURL = srv.URL + targets[i].MetricsURL
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
			t.Logf("up %v reason %q headroom %v problems %v", up, e.Result.Reason, fmtPtr(h), e.Problems)
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

// metricOf returns a collector of the single series of name with the given labels (0 when absent).
func metricOf(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "found"})
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
			g.Set(m.GetGauge().GetValue())
		}
	}
	return g
}
