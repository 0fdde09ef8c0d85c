package dashboards

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
)

// builtDashboards builds every dashboard with the given options.
func builtDashboards(t *testing.T, o Options) []dashboard.Dashboard {
	t.Helper()
	var out []dashboard.Dashboard
	for _, b := range builders {
		d, err := b.build(o)
		if err != nil {
			t.Fatalf("build %s: %v", b.uid, err)
		}
		out = append(out, d)
	}
	return out
}

// panels returns a dashboard's panels (kneewatch's dashboards have no rows).
func panels(t *testing.T, d dashboard.Dashboard) []dashboard.Panel {
	t.Helper()
	var out []dashboard.Panel
	for i, p := range d.Panels {
		if p.Panel == nil {
			t.Fatalf("%s: element %d is a row; the layout checks expect plain panels", *d.Uid, i)
		}
		out = append(out, *p.Panel)
	}
	return out
}

// promQuery is one PromQL expression of a dashboard and where it is.
type promQuery struct {
	where string
	expr  string
}

// labelValuesArg matches Grafana's label_values(<selector>, <label>), and
// queryResultArg its query_result(<expression>).
var (
	labelValuesArg = regexp.MustCompile(`^label_values\((.+), *(\w+)\)$`)
	queryResultArg = regexp.MustCompile(`^query_result\((.+)\)$`)
)

// queries lists every PromQL expression of a dashboard: panel targets and
// the selectors inside query variables' label_values().
func queries(t *testing.T, d dashboard.Dashboard) []promQuery {
	t.Helper()
	var out []promQuery
	for _, p := range panels(t, d) {
		for _, target := range p.Targets {
			q, ok := target.(prometheus.Dataquery)
			if !ok {
				t.Fatalf("%s panel %q: target is a %T, not a Prometheus query", *d.Uid, *p.Title, target)
			}
			out = append(out, promQuery{fmt.Sprintf("%s panel %q target %s", *d.Uid, *p.Title, *q.RefId), q.Expr})
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != dashboard.VariableTypeQuery {
			continue
		}
		if v.Query == nil || v.Query.String == nil {
			t.Fatalf("%s variable %s: no query string", *d.Uid, v.Name)
		}
		m := labelValuesArg.FindStringSubmatch(*v.Query.String)
		if m == nil {
			m = queryResultArg.FindStringSubmatch(*v.Query.String)
		}
		if m == nil {
			t.Fatalf("%s variable %s: %q is neither label_values(<selector>, <label>) nor query_result(<expression>)", *d.Uid, v.Name, *v.Query.String)
		}
		out = append(out, promQuery{fmt.Sprintf("%s variable %s", *d.Uid, v.Name), m[1]})
	}
	return out
}
