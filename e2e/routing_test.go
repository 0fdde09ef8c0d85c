package e2e

import (
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
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/model"

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

// engineFixture serves the vLLM fixture as one replica's engine: calm (20
// requests in flight, 2% KV cache, far under the 112-request knee of
// knee/testdata/valid.yaml) until overload is set, then 300 running at 60%
// KV cache, far past it.
type engineFixture struct {
	srv      *httptest.Server
	overload atomic.Bool
}

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
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		if f.overload.Load() {
			fmt.Fprint(w, over)
			return
		}
		fmt.Fprint(w, calm)
	}))
	t.Cleanup(f.srv.Close)
	return f
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

// pageGroup returns the namespace label of the group holding an active
// page for replica, or false.
func pageGroup(gs []amGroup, replica string) (amGroup, bool) {
	for _, g := range gs {
		for _, a := range g.Alerts {
			if a.Labels["alertname"] == rules.AlertHeadroomExhausted && a.Labels["replica"] == replica && a.Status.State == "active" {
				return g, true
			}
		}
	}
	return amGroup{}, false
}

// TestPagesRouteToTheNamespaceThatServesTheModel is issue 16's routing
// proof with every component real: `kneewatch serve` watches two vLLM
// replicas from its static config, one in namespace team-a and one in
// team-b; a real Prometheus scrapes kneewatch as a kube-prometheus-stack
// ServiceMonitor would (its own namespace and pod as target labels, with
// honor_labels so the served replica's namespace wins) and evaluates the
// generated rules; a real Alertmanager runs kube-prometheus-stack's shipped
// config (group_by [namespace], its inhibit rules). Both replicas are
// pushed past their knee: each page must sit in its own namespace's group
// in Alertmanager's API, and reach the pager in that group.
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
	engines := make([]*engineFixture, len(replicas))
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "global:\n  scrape_timeout: 800ms\n  external_labels: {cluster: e2e}\nprofiles:\n  - name: llama\n    file: %s\ntargets:\n", profile)
	for i, r := range replicas {
		engines[i] = newEngineFixture(t, string(fixture))
		fmt.Fprintf(&cfg, "  - replica: %s\n    namespace: %s\n    pod: %s\n    engine: vllm\n    metrics_url: %s/metrics\n    profile: llama\n",
			r.name, r.namespace, r.pod, engines[i].srv.URL)
	}
	fmt.Fprintf(&cfg, "alerts:\n  headroom_exhausted: {for: %s}\n", model.Duration(routePageFor))
	configPath := filepath.Join(dir, "kneewatch.yml")
	writeFile(t, configPath, cfg.String())
	kw, kwAddr, rulesPath := startKneewatch(t, dir, kneewatchBin, configPath)

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

	// Calm first: both replicas evaluated under their knee, no page.
	err = poll(60*time.Second, 250*time.Millisecond, func() (bool, error) {
		resp, err := http.Get("http://" + promAddr + "/api/v1/query?query=" + url.QueryEscape(`count(kneewatch_replica_headroom_ratio{namespace=~"team-a|team-b",cluster="e2e"} > 0)`))
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
		return r.Data.Result[0].Value[1] == "2", nil
	})
	if err != nil {
		t.Fatalf("Prometheus never held both replicas' headroom, calm, with namespace and cluster: %v\nheld: %s\nratios: %s\n%s", err, promQuery(t, promAddr, "kneewatch_replica_headroom_ratio"), promQuery(t, promAddr, "kneewatch_replica_knee_load_ratio"), logs())
	}
	if gs, err := alertGroups(ctx, amAddr); err != nil {
		t.Fatal(err)
	} else if _, paged := pageGroup(gs, replicas[0].name); paged {
		t.Fatalf("%s paged while calm: %v", replicas[0].name, gs)
	}

	// The breach: both replicas far past their knee.
	breach := time.Now()
	for _, e := range engines {
		e.overload.Store(true)
	}
	var groups []amGroup
	grouped := map[string]time.Duration{}
	err = poll(90*time.Second, 100*time.Millisecond, func() (bool, error) {
		gs, err := alertGroups(ctx, amAddr)
		if err != nil {
			return false, nil
		}
		groups = gs
		for _, r := range replicas {
			if _, ok := pageGroup(gs, r.name); ok && grouped[r.name] == 0 {
				grouped[r.name] = time.Since(breach)
			}
		}
		return len(grouped) == len(replicas), nil
	})
	if err != nil {
		t.Fatalf("no %s for both replicas in Alertmanager: %v\ngroups: %+v\n%s", rules.AlertHeadroomExhausted, err, groups, logs())
	}
	for _, r := range replicas {
		g, _ := pageGroup(groups, r.name)
		t.Logf("GROUPED: %s for %s in Alertmanager group %v (receiver %s) %.1f s after the breach",
			rules.AlertHeadroomExhausted, r.name, g.Labels, g.Receiver.Name, grouped[r.name].Seconds())
		if want := map[string]string{"namespace": r.namespace}; !maps.Equal(g.Labels, want) {
			t.Errorf("%s's page is in group %v, want %v", r.name, g.Labels, want)
		}
		if g.Receiver.Name != "pager" {
			t.Errorf("%s's page goes to receiver %q, want pager", r.name, g.Receiver.Name)
		}
		for _, a := range g.Alerts {
			if a.Labels["namespace"] != r.namespace {
				t.Errorf("group %v holds %s for namespace %q", g.Labels, a.Labels["alertname"], a.Labels["namespace"])
			}
			if a.Labels["alertname"] == rules.AlertHeadroomExhausted && a.Labels["replica"] == r.name {
				if a.Labels["pod"] != r.pod || a.Labels["cluster"] != "e2e" {
					t.Errorf("%s's page labels %v: want pod %s and cluster e2e", r.name, a.Labels, r.pod)
				}
			}
		}
	}
	for _, g := range groups {
		if ns := g.Labels["namespace"]; ns == "monitoring" || ns == "" {
			for _, a := range g.Alerts {
				if strings.HasPrefix(a.Labels["alertname"], "Kneewatch") && a.Labels["replica"] != "" {
					t.Errorf("replica alert %s for %s landed in group %v, not its replica's namespace", a.Labels["alertname"], a.Labels["replica"], g.Labels)
				}
			}
		}
	}

	// The page itself: after the route's group_wait (30 s) each namespace
	// gets its own notification.
	err = poll(90*time.Second, 250*time.Millisecond, func() (bool, error) {
		n := 0
		for _, r := range replicas {
			if _, ok := pager.first(func(n notification) bool {
				return n.Status == "firing" && n.Labels["alertname"] == rules.AlertHeadroomExhausted && n.Labels["replica"] == r.name
			}); ok {
				n++
			}
		}
		return n == len(replicas), nil
	})
	if err != nil {
		t.Fatalf("the pages never reached the pager: %v\nreceived: %v\n%s", err, pager.notifications(), logs())
	}
	for _, r := range replicas {
		n, _ := pager.first(func(n notification) bool {
			return n.Status == "firing" && n.Labels["alertname"] == rules.AlertHeadroomExhausted && n.Labels["replica"] == r.name
		})
		t.Logf("PAGED: %s for %s notified in group %v %.1f s after the breach", rules.AlertHeadroomExhausted, r.name, n.GroupLabels, n.Received.Sub(breach).Seconds())
		if want := map[string]string{"namespace": r.namespace}; !maps.Equal(n.GroupLabels, want) {
			t.Errorf("%s's page was notified in group %v, want %v", r.name, n.GroupLabels, want)
		}
	}
	var namespaces []string
	for _, n := range pager.notifications() {
		namespaces = append(namespaces, n.GroupLabels["namespace"])
	}
	slices.Sort(namespaces)
	t.Logf("SUMMARY: notified groups %v; whole test %.1f s", slices.Compact(namespaces), time.Since(testStart).Seconds())
}

// routePageFor is the page's for duration in the routing test's config.
const routePageFor = 5 * time.Second

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
