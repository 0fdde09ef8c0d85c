package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/kneewatch/kneewatch/config"
	"github.com/kneewatch/kneewatch/internal/testtools"
	"github.com/kneewatch/kneewatch/rules"
)

// kubePrometheusStackAlertmanager is the Alertmanager config the
// kube-prometheus-stack chart ships (values.yaml alertmanager.config: its
// route and its default inhibit rules), with only the root receiver
// pointed at the test's pager, as a user sets it. group_by [namespace] is
// what makes a kneewatch page reach the team owning the model: the alert
// must carry the served replica's namespace.
func kubePrometheusStackAlertmanager(webhookURL string) string {
	return fmt.Sprintf(`global:
  resolve_timeout: 5m
inhibit_rules:
  - source_matchers:
      - 'severity = critical'
    target_matchers:
      - 'severity =~ warning|info'
    equal:
      - 'namespace'
      - 'alertname'
  - source_matchers:
      - 'severity = warning'
    target_matchers:
      - 'severity = info'
    equal:
      - 'namespace'
      - 'alertname'
  - source_matchers:
      - 'alertname = InfoInhibitor'
    target_matchers:
      - 'severity = info'
    equal:
      - 'namespace'
  - target_matchers:
      - 'alertname = InfoInhibitor'
route:
  group_by: ['namespace']
  group_wait: 30s
  group_interval: 5m
  repeat_interval: 12h
  receiver: pager
  routes:
    - receiver: 'null'
      matchers:
        - alertname = "Watchdog"
receivers:
  - name: 'null'
  - name: pager
    webhook_configs:
      - url: %s
        send_resolved: true
`, webhookURL)
}

// engineFixture serves the vLLM fixture as one replica's engine: calm (10
// requests in flight, 2% KV cache, far under the 112-request knee of
// knee/testdata/valid.yaml) until overload is set, then 150 running at 60%
// KV cache, far past it. Requests finish at fixtureRequestRate throughout,
// and the TTFT and TPOT histograms count them: calm, each within the
// profile's SLO (500 ms, 50 ms); overloaded, each past it. So kneewatch's
// request counters grow, and the SLO burn-rate alerts have an error ratio
// to read.
type engineFixture struct {
	srv      *httptest.Server
	overload atomic.Bool

	mu        sync.Mutex
	last      time.Time
	good, bad float64 // requests finished within and past the SLO
}

// The fixture's finished requests: how many a second, and the TTFT and
// TPOT each one took, within the SLO and past it.
const (
	fixtureRequestRate = 20.0
	fixtureGoodTTFT    = 0.05
	fixtureBadTTFT     = 2.0
	fixtureGoodTPOT    = 0.01
	fixtureBadTPOT     = 0.2
)

// withGauges sets every sample of the named gauges in a text exposition to
// the given value.
func withGauges(t *testing.T, body string, values map[string]string) string {
	t.Helper()
	lines := strings.Split(body, "\n")
	set := map[string]bool{}
	for i, l := range lines {
		name, _, ok := strings.Cut(l, "{")
		if v, want := values[name]; ok && want {
			j := strings.LastIndex(l, " ")
			lines[i] = l[:j+1] + v
			set[name] = true
		}
	}
	for name := range values {
		if !set[name] {
			t.Fatalf("the vLLM fixture has no %s samples to set", name)
		}
	}
	return strings.Join(lines, "\n")
}

// withHistogram rewrites every series of the histogram family in a text
// exposition as holding good observations of value goodV and bad ones of
// value badV: its buckets, _count and _sum.
func withHistogram(body, family string, good, bad, goodV, badV float64) (string, error) {
	lines := strings.Split(body, "\n")
	set := false
	for i, l := range lines {
		name, rest, ok := strings.Cut(l, "{")
		if !ok {
			continue
		}
		var v float64
		switch name {
		case family + "_bucket":
			_, after, ok := strings.Cut(rest, `le="`)
			if !ok {
				return "", fmt.Errorf("%s: a bucket without le: %s", family, l)
			}
			le, _, _ := strings.Cut(after, `"`)
			edge, err := strconv.ParseFloat(le, 64)
			if err != nil {
				return "", fmt.Errorf("%s: le %q: %w", family, le, err)
			}
			if goodV <= edge {
				v += good
			}
			if badV <= edge {
				v += bad
			}
		case family + "_count":
			v = good + bad
		case family + "_sum":
			v = good*goodV + bad*badV
		default:
			continue
		}
		j := strings.LastIndex(l, " ")
		lines[i] = l[:j+1] + strconv.FormatFloat(v, 'g', -1, 64)
		set = true
	}
	if !set {
		return "", fmt.Errorf("the vLLM fixture has no %s histogram", family)
	}
	return strings.Join(lines, "\n"), nil
}

func newEngineFixture(t *testing.T, fixture string) *engineFixture {
	t.Helper()
	f := &engineFixture{}
	calm := withGauges(t, fixture, map[string]string{
		"vllm:num_requests_running": "10", "vllm:num_requests_waiting": "0",
		"vllm:kv_cache_usage_perc": "0.02", "vllm:gpu_cache_usage_perc": "0.02",
	})
	over := withGauges(t, fixture, map[string]string{
		"vllm:num_requests_running": "150", "vllm:num_requests_waiting": "0",
		"vllm:kv_cache_usage_perc": "0.6", "vllm:gpu_cache_usage_perc": "0.6",
	})
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		body, err := f.body(calm, over)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprint(w, body)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// body counts the requests finished since the last scrape, good while
// calm and bad while overloaded, and returns the exposition.
func (f *engineFixture) body(calm, over string) (string, error) {
	f.mu.Lock()
	now := time.Now()
	overloaded := f.overload.Load()
	if !f.last.IsZero() {
		n := fixtureRequestRate * now.Sub(f.last).Seconds()
		if overloaded {
			f.bad += n
		} else {
			f.good += n
		}
	}
	f.last = now
	good, bad := f.good, f.bad
	f.mu.Unlock()
	body := calm
	if overloaded {
		body = over
	}
	body, err := withHistogram(body, "vllm:time_to_first_token_seconds", good, bad, fixtureGoodTTFT, fixtureBadTTFT)
	if err != nil {
		return "", err
	}
	return withHistogram(body, "vllm:request_time_per_output_token_seconds", good, bad, fixtureGoodTPOT, fixtureBadTPOT)
}

// amGroup is one group of Alertmanager's /api/v2/alerts/groups.
type amGroup struct {
	Labels   map[string]string `json:"labels"`
	Receiver struct {
		Name string `json:"name"`
	} `json:"receiver"`
	Alerts []struct {
		Labels map[string]string `json:"labels"`
		Status struct {
			State string `json:"state"`
		} `json:"status"`
	} `json:"alerts"`
}

func alertGroups(ctx context.Context, amAddr string) ([]amGroup, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+amAddr+"/api/v2/alerts/groups", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/api/v2/alerts/groups: %s", resp.Status)
	}
	var gs []amGroup
	return gs, json.NewDecoder(resp.Body).Decode(&gs)
}

// routedAlert is one alert the routing test follows to its team: which
// alert, about which replica or model, and the routing labels it must
// carry.
type routedAlert struct {
	alertname string
	// replica is the replica a per-replica alert names; empty for a
	// per-model alert, which names the namespace's model.
	replica   string
	namespace string
	pod       string // empty for a per-model alert
}

func (r routedAlert) String() string {
	if r.replica == "" {
		return fmt.Sprintf("%s for the model in %s", r.alertname, r.namespace)
	}
	return fmt.Sprintf("%s for %s", r.alertname, r.replica)
}

// matches reports whether an alert's labels are about r: its name, and its
// replica, or for a per-model alert its namespace (the model's fleet is
// its replicas in one namespace of one cluster).
func (r routedAlert) matches(l map[string]string) bool {
	if l["alertname"] != r.alertname {
		return false
	}
	if r.replica != "" {
		return l["replica"] == r.replica
	}
	return l["namespace"] == r.namespace
}

// activeGroup returns the group holding r's active alert, and its labels.
func activeGroup(gs []amGroup, r routedAlert) (amGroup, map[string]string, bool) {
	for _, g := range gs {
		for _, a := range g.Alerts {
			if r.matches(a.Labels) && a.Status.State == "active" {
				return g, a.Labels, true
			}
		}
	}
	return amGroup{}, nil, false
}

// routingRules renders the rules `kneewatch rules --config.file` wrote to
// rulesPath, in Go from the same config and evaluation window, and checks
// they are the same bytes. It then returns them with the page's burn
// windows shortened to 20 s and 5 s and its for to 2 s, so a burn can fire
// within the test: the config file has no key for burn windows, so this is
// the one option the test sets past it. Only those windows and for change:
// the by clauses, labels and every other rule are the generator's.
func routingRules(t *testing.T, configPath, rulesPath string) []byte {
	t.Helper()
	cfg, err := config.Load(configPath)
	if err != nil {
		t.Fatal(err)
	}
	o, err := rules.FromConfig(cfg.Alerts, evalWindow)
	if err != nil {
		t.Fatal(err)
	}
	o.Fleet.TargetHeadroom = cfg.Global.TargetHeadroom
	var fromGo bytes.Buffer
	if err := rules.Render(&fromGo, o, rules.FormatRules); err != nil {
		t.Fatal(err)
	}
	fromBinary, err := os.ReadFile(rulesPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fromGo.Bytes(), fromBinary) {
		t.Fatalf("the rules rendered in Go from %s differ from kneewatch rules' %s: the test would not shorten the rules kneewatch ships", configPath, rulesPath)
	}
	o.SLO.Page = []rules.BurnWindow{{Long: routeBurnLong, Short: routeBurnShort, Factor: o.SLO.Page[0].Factor}}
	o.SLO.PageFor = routeBurnFor
	var short bytes.Buffer
	if err := rules.Render(&short, o, rules.FormatRules); err != nil {
		t.Fatal(err)
	}
	return short.Bytes()
}

// The routing test's page burn window and for (see routingRules).
const (
	routeBurnLong  = 20 * time.Second
	routeBurnShort = 5 * time.Second
	routeBurnFor   = 2 * time.Second
)

// TestPagesRouteToTheNamespaceThatServesTheModel is issue 16's routing
// proof with every component real: `kneewatch serve` watches two vLLM
// replicas from its static config, one in namespace team-a and one in
// team-b; a real Prometheus scrapes kneewatch as a kube-prometheus-stack
// ServiceMonitor would (its own namespace and pod as target labels, with
// honor_labels so the served replica's namespace wins) and evaluates the
// generated rules; a real Alertmanager runs kube-prometheus-stack's shipped
// config (group_by [namespace], its inhibit rules). Both replicas are
// pushed past their knee, and every request they finish from then on
// misses the SLO. Three pages per replica must each sit in the replica's
// namespace's group in Alertmanager's API and reach the pager in that
// group: the headroom page and the per-replica SLO burn (carrying
// namespace, pod and cluster), and the per-model SLO burn of the model's
// replicas in that namespace (carrying namespace and cluster).
func TestPagesRouteToTheNamespaceThatServesTheModel(t *testing.T) {
	if testing.Short() {
		t.Skip("runs kneewatch, Prometheus and Alertmanager in real time for about a minute")
	}
	prometheusBin := testtools.Path(t, "prometheus")
	alertmanagerBin := testtools.Path(t, "alertmanager")
	testStart := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	kneewatchBin := buildKneewatch(t, dir)

	fixture, err := os.ReadFile(filepath.Join(testtools.ModuleRoot(), "collector", "testdata", "vllm-v1-full-synthetic.prom"))
	if err != nil {
		t.Fatal(err)
	}
	profile := filepath.Join(testtools.ModuleRoot(), "knee", "testdata", "valid.yaml")
	replicas := []struct{ name, namespace, pod string }{
		{"llama-a", "team-a", "llama-a-7d9f-0"},
		{"llama-b", "team-b", "llama-b-5c4e-0"},
	}
	var pages []routedAlert
	for _, r := range replicas {
		pages = append(pages,
			routedAlert{alertname: rules.AlertHeadroomExhausted, replica: r.name, namespace: r.namespace, pod: r.pod},
			routedAlert{alertname: rules.AlertGoodputSLOBurnFast, replica: r.name, namespace: r.namespace, pod: r.pod},
			routedAlert{alertname: rules.AlertModelSLOBurnFast, namespace: r.namespace},
		)
	}
	engines := make([]*engineFixture, len(replicas))
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "global:\n  scrape_timeout: 800ms\n  external_labels: {cluster: e2e}\nprofiles:\n  - name: llama\n    file: %s\ntargets:\n", profile)
	for i, r := range replicas {
		engines[i] = newEngineFixture(t, string(fixture))
		fmt.Fprintf(&cfg, "  - replica: %s\n    namespace: %s\n    pod: %s\n    engine: vllm\n    metrics_url: %s/metrics\n    profile: llama\n",
			r.name, r.namespace, r.pod, engines[i].srv.URL)
	}
	// The headroom page's hold and for are short enough for it to fire
	// within the 30 s group_wait after the SLO burns open its namespace's
	// group (about 5 s after the breach): an alert joining a group after
	// its first notification waits for group_interval (5 m). Its wait for
	// a replica just watched is as short, or the replicas of this minute-long
	// test would not be paged at all.
	fmt.Fprintf(&cfg, "alerts:\n  headroom_exhausted: {hold: %s, for: %s, watched_for: %s}\n",
		model.Duration(routePageHold), model.Duration(routePageFor), model.Duration(routePageHold))
	configPath := filepath.Join(dir, "kneewatch.yml")
	writeFile(t, configPath, cfg.String())
	kw, kwAddr, rulesPath := startKneewatch(t, dir, kneewatchBin, configPath)
	writeFile(t, rulesPath, string(routingRules(t, configPath, rulesPath)))

	pager := newWebhook(t)
	am, amAddr := startAlertmanager(t, dir, alertmanagerBin, kubePrometheusStackAlertmanager(pager.URL()))

	// The scrape job a ServiceMonitor for kneewatch in namespace monitoring
	// generates carries namespace and pod target labels of kneewatch's own
	// pod; honor_labels (the ServiceMonitor's honorLabels: true) keeps the
	// served replica's instead of renaming them exported_namespace.
	prom, promAddr := startPrometheus(t, dir, prometheusBin, fmt.Sprintf(`global:
  scrape_interval: %[1]s
  scrape_timeout: 800ms
  evaluation_interval: %[1]s
rule_files: [%[2]s]
alerting:
  alertmanagers:
    - static_configs:
        - targets: [%[3]s]
scrape_configs:
  - job_name: kneewatch
    honor_labels: true
    static_configs:
      - targets: [%[4]s]
        labels: {namespace: monitoring, pod: kneewatch-6b8d-0}
`, model.Duration(evalInterval), rulesPath, amAddr, kwAddr))
	logs := func() string {
		return fmt.Sprintf("--- kneewatch ---\n%s\n--- prometheus ---\n%s\n--- alertmanager ---\n%s", kw.tail(), prom.tail(), am.tail())
	}

	// Calm first: both replicas evaluated under their knee, finishing
	// requests within the SLO (a zero error ratio over the long burn
	// window), no page.
	calmQuery := fmt.Sprintf(`count(kneewatch_replica_headroom_ratio{namespace=~"team-a|team-b",cluster="e2e"} > 0)
  + count(kneewatch:replica_slo_error_ratio:rate%s{namespace=~"team-a|team-b",cluster="e2e"} < 0.001)`, model.Duration(routeBurnLong))
	err = poll(60*time.Second, 250*time.Millisecond, func() (bool, error) {
		resp, err := http.Get("http://" + promAddr + "/api/v1/query?query=" + url.QueryEscape(calmQuery))
		if err != nil {
			return false, nil
		}
		defer resp.Body.Close()
		var r struct {
			Data struct {
				Result []struct {
					Value [2]any `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		if json.NewDecoder(resp.Body).Decode(&r) != nil || len(r.Data.Result) != 1 {
			return false, nil
		}
		// Two replicas' headroom, and each one's ttft and tpot error ratio.
		return r.Data.Result[0].Value[1] == "6", nil
	})
	if err != nil {
		t.Fatalf("Prometheus never held both replicas' headroom and zero error ratios, calm, with namespace and cluster: %v\nheld: %s\nerror ratios: %s\nratios: %s\n%s", err,
			promQuery(t, promAddr, "kneewatch_replica_headroom_ratio"), promQuery(t, promAddr, "kneewatch:replica_slo_error_ratio:rate"+model.Duration(routeBurnLong).String()),
			promQuery(t, promAddr, "kneewatch_replica_knee_load_ratio"), logs())
	}
	if gs, err := alertGroups(ctx, amAddr); err != nil {
		t.Fatal(err)
	} else {
		for _, p := range pages {
			if _, _, paged := activeGroup(gs, p); paged {
				t.Fatalf("%s while calm: %v", p, gs)
			}
		}
	}

	// The breach: both replicas far past their knee, every request they
	// finish past the SLO.
	breach := time.Now()
	for _, e := range engines {
		e.overload.Store(true)
	}
	var groups []amGroup
	grouped := map[routedAlert]time.Duration{}
	err = poll(90*time.Second, 100*time.Millisecond, func() (bool, error) {
		gs, err := alertGroups(ctx, amAddr)
		if err != nil {
			return false, nil
		}
		groups = gs
		for _, p := range pages {
			if _, _, ok := activeGroup(gs, p); ok && grouped[p] == 0 {
				grouped[p] = time.Since(breach)
			}
		}
		return len(grouped) == len(pages), nil
	})
	if err != nil {
		var missing []string
		for _, p := range pages {
			if grouped[p] == 0 {
				missing = append(missing, p.String())
			}
		}
		t.Fatalf("not in Alertmanager: %s: %v\ngroups: %+v\n%s", strings.Join(missing, "; "), err, groups, logs())
	}
	for _, p := range pages {
		g, labels, _ := activeGroup(groups, p)
		t.Logf("GROUPED: %s in Alertmanager group %v (receiver %s) %.1f s after the breach, labels namespace=%q pod=%q cluster=%q slo=%q",
			p, g.Labels, g.Receiver.Name, grouped[p].Seconds(), labels["namespace"], labels["pod"], labels["cluster"], labels["slo"])
		if want := map[string]string{"namespace": p.namespace}; !maps.Equal(g.Labels, want) {
			t.Errorf("%s is in group %v, want %v", p, g.Labels, want)
		}
		if g.Receiver.Name != "pager" {
			t.Errorf("%s goes to receiver %q, want pager", p, g.Receiver.Name)
		}
		if labels["namespace"] != p.namespace || labels["pod"] != p.pod || labels["cluster"] != "e2e" {
			t.Errorf("%s labels %v: want namespace %s, pod %q and cluster e2e", p, labels, p.namespace, p.pod)
		}
		for _, a := range g.Alerts {
			if a.Labels["namespace"] != p.namespace {
				t.Errorf("group %v holds %s for namespace %q", g.Labels, a.Labels["alertname"], a.Labels["namespace"])
			}
		}
	}
	for _, g := range groups {
		if ns := g.Labels["namespace"]; ns == "monitoring" || ns == "" {
			for _, a := range g.Alerts {
				if strings.HasPrefix(a.Labels["alertname"], "Kneewatch") && (a.Labels["replica"] != "" || a.Labels["model"] != "") {
					t.Errorf("alert %s for replica %q, model %q landed in group %v, not its namespace's", a.Labels["alertname"], a.Labels["replica"], a.Labels["model"], g.Labels)
				}
			}
		}
	}

	// The pages themselves: after the route's group_wait (30 s) each
	// namespace gets its own notification.
	isPage := func(p routedAlert) func(notification) bool {
		return func(n notification) bool { return n.Status == "firing" && p.matches(n.Labels) }
	}
	err = poll(90*time.Second, 250*time.Millisecond, func() (bool, error) {
		for _, p := range pages {
			if _, ok := pager.first(isPage(p)); !ok {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the pages never all reached the pager: %v\nreceived: %v\n%s", err, pager.notifications(), logs())
	}
	for _, p := range pages {
		n, _ := pager.first(isPage(p))
		t.Logf("PAGED: %s notified in group %v %.1f s after the breach", p, n.GroupLabels, n.Received.Sub(breach).Seconds())
		if want := map[string]string{"namespace": p.namespace}; !maps.Equal(n.GroupLabels, want) {
			t.Errorf("%s was notified in group %v, want %v", p, n.GroupLabels, want)
		}
	}
	var namespaces []string
	for _, n := range pager.notifications() {
		namespaces = append(namespaces, n.GroupLabels["namespace"])
	}
	slices.Sort(namespaces)
	t.Logf("SUMMARY: notified groups %v; whole test %.1f s", slices.Compact(namespaces), time.Since(testStart).Seconds())
}

// routePageHold and routePageFor are the headroom page's hold and for in
// the routing test's config.
const (
	routePageHold = 5 * time.Second
	routePageFor  = 5 * time.Second
)

// promQuery returns Prometheus's JSON answer to an instant query, for
// failure messages.
func promQuery(t *testing.T, promAddr, q string) string {
	t.Helper()
	resp, err := http.Get("http://" + promAddr + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
