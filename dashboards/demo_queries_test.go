package dashboards

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"

	"github.com/kneewatch/kneewatch/internal/promstore"
)

// The demo's scrapes (testdata/demo, written by record.sh from a running
// `kneewatch demo`): kneewatch's /metrics and the simulated dcgm-exporter's,
// scraped together every 15 s.
const demoDir = "testdata/demo"

// demoReplica is the demo replica held at 0.9 of its knee: evaluated,
// probed (a replica past its knee is not) and with a mix to compare.
const demoReplica = "demo-2"

// Scrape targets as a kube-prometheus-stack Prometheus sees them through
// ServiceMonitors. kneewatch's honors its labels (the chart's does), so
// only job and instance are added; dcgm-exporter's chart does not, so its
// pod, namespace and container labels are renamed exported_* on conflict.
var (
	kneewatchTarget = map[string]string{"job": "kneewatch", "instance": "10.0.0.5:9847"}
	dcgmTarget      = map[string]string{
		"job": "nvidia-dcgm-exporter", "instance": "10.0.0.7:9400", "namespace": "gpu-operator",
		"pod": "nvidia-dcgm-exporter-x7k2q", "container": "nvidia-dcgm-exporter",
		"service": "nvidia-dcgm-exporter", "endpoint": "gpu-metrics",
	}
)

// demo is the demo's series in a store, the scrape times, and the name
// the demo replica has there.
type demo struct {
	store   *promstore.Store
	times   []time.Time
	replica string
	// inCluster: the series as kneewatch exports them in Kubernetes.
	inCluster bool
}

// In a cluster (the chart's deployment) kneewatch's discovery names the
// demo's replicas namespace/pod and labels their series with namespace and
// pod, and global.external_labels adds the cluster to every kneewatch
// series. The series Prometheus itself makes (up, ALERTS of KneewatchAbsent)
// and the ones it scrapes from dcgm-exporter carry no cluster label: in one
// cluster, Prometheus's own external_labels only label data leaving it.
const (
	clusterName      = "eu-1"
	clusterNamespace = "default" // the simulated dcgm-exporter's pods' namespace
)

// asInCluster rewrites kneewatch's recorded families as kneewatch exports
// them in a cluster (see clusterName).
func asInCluster(fams map[string]*dto.MetricFamily) {
	for _, mf := range fams {
		for _, m := range mf.GetMetric() {
			var replica string
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "replica" {
					replica = lp.GetValue()
					lp.Value = ptr(clusterNamespace + "/" + replica)
				}
			}
			m.Label = append(m.Label, &dto.LabelPair{Name: ptr("cluster"), Value: ptr(clusterName)})
			if replica != "" {
				m.Label = append(m.Label,
					&dto.LabelPair{Name: ptr("namespace"), Value: ptr(clusterNamespace)},
					&dto.LabelPair{Name: ptr("pod"), Value: ptr(replica)})
			}
		}
	}
}

func (d demo) last() time.Time { return d.times[len(d.times)-1] }

// loadDemo stores every recorded scrape as a Prometheus would have: each
// series with its target's labels, and an up series per target. With
// honorDCGM, dcgm-exporter's ServiceMonitor sets honorLabels: true.
func loadDemo(t *testing.T, honorDCGM bool) demo {
	t.Helper()
	return loadDemoAs(t, honorDCGM, false)
}

// loadDemoAs is loadDemo, with inCluster the series as kneewatch exports
// them in a cluster (asInCluster).
func loadDemoAs(t *testing.T, honorDCGM, inCluster bool) demo {
	t.Helper()
	stamps, err := filepath.Glob(filepath.Join(demoDir, "scrape-*.time"))
	if err != nil || len(stamps) < 2 {
		t.Fatalf("want at least two recorded demo scrapes in %s (sh %s/record.sh), found %d (%v)", demoDir, demoDir, len(stamps), err)
	}
	sort.Strings(stamps)
	d := demo{store: promstore.New(), replica: demoReplica, inCluster: inCluster}
	if inCluster {
		d.replica = clusterNamespace + "/" + demoReplica
	}
	for _, stamp := range stamps {
		base := strings.TrimSuffix(stamp, ".time")
		raw, err := os.ReadFile(stamp)
		if err != nil {
			t.Fatal(err)
		}
		sec, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
		if err != nil {
			t.Fatalf("%s: %v", stamp, err)
		}
		at := time.Unix(sec, 0)
		d.times = append(d.times, at)

		kw := parseExposition(t, base+".kneewatch.prom")
		if inCluster {
			asInCluster(kw)
		}
		if err := d.store.AddScrape(kw, at, kneewatchTarget); err != nil {
			t.Fatal(err)
		}
		dcgm := parseExposition(t, base+".dcgm.prom")
		target := dcgmTarget
		if honorDCGM {
			target = map[string]string{"job": dcgmTarget["job"], "instance": dcgmTarget["instance"]}
		} else {
			renameConflicts(dcgm, target)
		}
		if err := d.store.AddScrape(dcgm, at, target); err != nil {
			t.Fatal(err)
		}
		for _, tg := range []map[string]string{kneewatchTarget, target} {
			addUp(t, d.store, tg, at, 1)
		}
	}
	return d
}

func parseExposition(t *testing.T, path string) map[string]*dto.MetricFamily {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return fams
}

// renameConflicts does what Prometheus does to a scraped label that a
// target label also sets, without honor_labels: it keeps the scraped value
// as exported_<name>.
func renameConflicts(fams map[string]*dto.MetricFamily, target map[string]string) {
	for _, mf := range fams {
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if _, ok := target[lp.GetName()]; ok {
					lp.Name = ptr("exported_" + lp.GetName())
				}
			}
		}
	}
}

func ptr[T any](v T) *T { return &v }

func addUp(t *testing.T, s *promstore.Store, target map[string]string, at time.Time, v float64) {
	t.Helper()
	b := labels.NewBuilder(labels.FromStrings(labels.MetricName, "up"))
	for k, val := range target {
		b.Set(k, val)
	}
	if err := s.Add(b.Labels(), at.UnixMilli(), v); err != nil {
		t.Fatal(err)
	}
}

// instant evaluates a dashboard expression at at in Prometheus's engine.
func (d demo) instant(t *testing.T, expr string, at time.Time) promql.Vector {
	t.Helper()
	ng := promstore.NewEngine()
	defer ng.Close()
	v, err := promstore.Instant(ng, d.store, expr, at)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// labelValues is what Grafana's label_values(selector, label) lists.
func (d demo) labelValues(t *testing.T, selector, label string, at time.Time) []string {
	var out []string
	for _, s := range d.instant(t, selector, at) {
		if v := s.Metric.Get(label); v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

// resolveVariables sets the dashboards' variables the way Grafana would on
// the demo's series: each variable's own query, over the values of the
// variables before it, picks the first value or All (for the replica, the
// demo replica). It checks that every variable finds its values.
func (d demo) resolveVariables(t *testing.T) map[string]string {
	t.Helper()
	vars := map[string]string{"__rate_interval": "1m", "__interval": "15s", "__range": "3h"}
	var replica dashboard.Dashboard
	for _, db := range builtDashboards(t, DefaultOptions()) {
		if *db.Uid == ReplicaUID {
			replica = db // its variables are the fleet's and more
		}
	}
	at := d.last()
	for _, v := range replica.Templating.List {
		if v.Type != dashboard.VariableTypeQuery {
			continue
		}
		q := *v.Query.String
		var values []string
		if m := labelValuesArg.FindStringSubmatch(q); m != nil {
			sel, err := substituteWith(m[1], vars)
			if err != nil {
				t.Fatal(err)
			}
			values = d.labelValues(t, sel, m[2], at)
		} else if m := queryResultArg.FindStringSubmatch(q); m != nil {
			expr, err := substituteWith(m[1], vars)
			if err != nil {
				t.Fatal(err)
			}
			re := regexp.MustCompile(strings.Trim(*v.Regex, "/"))
			for _, s := range d.instant(t, expr, at) {
				// Grafana's query_result text: the series, value and time.
				line := s.Metric.String() + " " + strconv.FormatFloat(s.F, 'g', -1, 64)
				if sub := re.FindStringSubmatch(line); sub != nil {
					values = append(values, sub[1])
				}
			}
		} else {
			t.Fatalf("variable %s: unknown query %q", v.Name, q)
		}
		switch {
		case v.Name == "cluster" && d.inCluster:
			if !slices.Equal(values, []string{clusterName}) {
				t.Errorf("variable cluster found %v, want [%s]", values, clusterName)
			}
			vars["cluster"] = clusterName
		case v.Name == "cluster":
			// The demo has no cluster label: the hidden variable is empty,
			// which matches series without the label.
			if len(values) != 0 {
				t.Errorf("variable cluster found %v in a demo without cluster labels", values)
			}
			vars["cluster"] = ""
		case v.Name == "namespace" && d.inCluster:
			if !slices.Equal(values, []string{clusterNamespace}) {
				t.Errorf("variable namespace found %v, want [%s]", values, clusterNamespace)
			}
			vars["namespace"] = *v.AllValue
		case v.Name == "namespace":
			// The demo runs outside Kubernetes: no namespace, All.
			vars["namespace"] = *v.AllValue
		case v.Name == "pod" && d.inCluster:
			if !slices.Equal(values, []string{demoReplica}) {
				t.Errorf("variable pod found %v, want [%s], the replica's pod", values, demoReplica)
			}
			vars["pod"] = demoReplica
		case v.Name == "pod" && len(values) == 0:
			// Outside Kubernetes a replica has no pod: Grafana leaves the
			// variable empty and the GPU join falls back to the replica.
			vars["pod"] = ""
		case len(values) == 0:
			t.Errorf("variable %s finds no values on the demo's series: %s", v.Name, q)
			vars[v.Name] = "none"
		case v.Name == "replica":
			if !slices.Contains(values, d.replica) {
				t.Errorf("variable replica lists %v, not %s", values, d.replica)
			}
			vars["replica"] = d.replica
		case v.IncludeAll != nil && *v.IncludeAll && v.AllValue != nil:
			vars[v.Name] = *v.AllValue
		case v.IncludeAll != nil && *v.IncludeAll:
			// All without an all value: Grafana's regex of every value.
			vars[v.Name] = "(" + strings.Join(values, "|") + ")"
		default:
			vars[v.Name] = values[0]
		}
		t.Logf("variable %s = %q (found %v)", v.Name, vars[v.Name], values)
	}
	return vars
}

// demoEmpty are the panels that must be empty on the demo, a healthy fleet
// with no ruler: each lists problems, and the demo has none. The promtool
// semantics test shows them listing problems.
var demoEmpty = map[string]string{
	"Replicas not evaluated":         "every demo replica is evaluated",
	"Targets down":                   "every demo endpoint is up",
	"Firing kneewatch alerts":        "the demo runs no Prometheus ruler, so there is no ALERTS series",
	"Alerts firing for this replica": "the demo runs no Prometheus ruler, so there is no ALERTS series",
}

// demoEmptyTargets are single targets that must be empty on the demo:
// one of a pair of alternatives, the other of which answers.
var demoEmptyTargets = map[string]string{
	"Evaluation status/A": "the replica is evaluated: the not-ok reason query is empty, the ok one (B) answers",
}

// Must-show 3: every query of every dashboard runs in Prometheus's engine
// over the series the demo produced, and each returns data (the problem
// lists above return none, as they must on a healthy fleet). The GPU
// variable resolves with dcgm-exporter's chart defaults and with
// honorLabels.
func TestEveryDashboardQueryReturnsDataOnTheDemosSeries(t *testing.T) {
	for _, tc := range []struct{ honor, inCluster bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		name := fmt.Sprintf("dcgm honorLabels %v", tc.honor)
		if tc.inCluster {
			name += ", in a cluster"
		}
		honor := tc.honor
		t.Run(name, func(t *testing.T) {
			d := loadDemoAs(t, honor, tc.inCluster)
			vars := d.resolveVariables(t)
			if !honor && !tc.inCluster {
				// One check is enough for the panels; the GPU join is what
				// honorLabels changes, and resolveVariables checked it.
				return
			}
			var ran, withData, empty int
			for _, db := range builtDashboards(t, DefaultOptions()) {
				for _, p := range panels(t, db) {
					for _, target := range p.Targets {
						q := target.(prometheus.Dataquery)
						where := fmt.Sprintf("%s panel %q target %s", *db.Uid, *p.Title, *q.RefId)
						expr, err := substituteWith(q.Expr, vars)
						if err != nil {
							t.Fatalf("%s: %v", where, err)
						}
						v := d.instant(t, expr, d.last())
						ran++
						reason, mustBeEmpty := demoEmpty[*p.Title]
						if r, ok := demoEmptyTargets[*p.Title+"/"+*q.RefId]; ok {
							reason, mustBeEmpty = r, true
						}
						switch {
						case mustBeEmpty && len(v) > 0:
							t.Errorf("%s returns %v on the demo, where %s", where, v, reason)
						case mustBeEmpty:
							empty++
						case len(v) == 0:
							t.Errorf("%s returns no data on the demo's series:\n%s", where, expr)
						default:
							withData++
						}
					}
				}
			}
			t.Logf("%d panel queries run: %d returned data, %d empty as they must be (problem lists, an alternative)", ran, withData, empty)
		})
	}
}

// Must-show 3, kneewatch stopped: every stat panel's queries return
// nothing, and the panel says so with its noValue text in a colour that is
// not a threshold's, never a 0. Stopped twice: its scrapes failing (up is
// 0, its series marked stale) and its target gone (up stale too).
func TestWithKneewatchStoppedEveryStatPanelShowsItsNoValueText(t *testing.T) {
	for _, tc := range []struct{ gone, inCluster bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		gone := tc.gone
		name := "scrapes failing"
		if gone {
			name = "target gone"
		}
		if tc.inCluster {
			name += ", in a cluster"
		}
		t.Run(name, func(t *testing.T) {
			d := loadDemoAs(t, true, tc.inCluster)
			vars := d.resolveVariables(t)
			stop := d.last().Add(15 * time.Second)
			d.store.MarkStale(stop, func(l labels.Labels) bool {
				return l.Get("job") == kneewatchTarget["job"] && (gone || l.Get(labels.MetricName) != "up")
			})
			if !gone {
				addUp(t, d.store, kneewatchTarget, stop, 0)
				addUp(t, d.store, kneewatchTarget, stop.Add(15*time.Second), 0)
			}
			at := stop.Add(15 * time.Second)
			stats := 0
			for _, db := range builtDashboards(t, DefaultOptions()) {
				for _, p := range panels(t, db) {
					if p.Type != "stat" {
						continue
					}
					stats++
					where := fmt.Sprintf("%s panel %q", *db.Uid, *p.Title)
					noValue := ""
					if p.FieldConfig != nil && p.FieldConfig.Defaults.NoValue != nil {
						noValue = *p.FieldConfig.Defaults.NoValue
					}
					if noValue == "" {
						t.Errorf("%s: no noValue text", where)
					}
					if c := nullColor(p); c == "" || c == "green" {
						t.Errorf("%s: a missing value is coloured %q; want a set colour that is not green", where, c)
					}
					var results []promql.Vector
					for _, target := range p.Targets {
						expr, err := substituteWith(target.(prometheus.Dataquery).Expr, vars)
						if err != nil {
							t.Fatal(err)
						}
						if v := d.instant(t, expr, at); len(v) > 0 {
							results = append(results, v)
						}
					}
					switch {
					case len(results) == 0:
						t.Logf("%s shows %q", where, noValue)
					case !gone && *p.Title == "kneewatch up" && len(results) == 1 && len(results[0]) == 1 && results[0][0].F == 0:
						// A failing scrape is up == 0, which the panel maps to "down".
						if text := valueText(p, "0"); text != "down" {
							t.Errorf("%s: up == 0 shows %q, want down", where, text)
						}
						t.Logf("%s shows %q (up == 0)", where, valueText(p, "0"))
					default:
						t.Errorf("%s shows %v with kneewatch stopped, not its noValue %q", where, results, noValue)
					}
				}
			}
			if stats < 10 {
				t.Errorf("checked %d stat panels; the walk is broken or panels are gone", stats)
			}
		})
	}
}

// nullColor is the colour a stat panel gives a missing value.
func nullColor(p dashboard.Panel) string {
	if p.FieldConfig == nil {
		return ""
	}
	for _, m := range p.FieldConfig.Defaults.Mappings {
		if sv := m.SpecialValueMap; sv != nil && sv.Options.Match == dashboard.SpecialValueMatchNullAndNan && sv.Options.Result.Color != nil {
			return *sv.Options.Result.Color
		}
	}
	return ""
}

// valueText is the text a value mapping gives value, or "".
func valueText(p dashboard.Panel, value string) string {
	for _, m := range p.FieldConfig.Defaults.Mappings {
		if vm := m.ValueMap; vm != nil {
			if r, ok := vm.Options[value]; ok && r.Text != nil {
				return *r.Text
			}
		}
	}
	return ""
}
