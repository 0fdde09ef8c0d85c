package dashboards

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

const gridColumns = 24

func TestEveryPanelHasAUnitADescriptionAStableIDAndItsOwnPlace(t *testing.T) {
	for _, d := range builtDashboards(t, DefaultOptions()) {
		uid := *d.Uid
		ps := panels(t, d)
		if len(ps) == 0 {
			t.Fatalf("%s has no panels", uid)
		}
		ids := map[uint32]string{}
		titles := map[string]bool{}
		for _, p := range ps {
			title := "(untitled)"
			if p.Title != nil && *p.Title != "" {
				title = *p.Title
			} else {
				t.Errorf("%s: a panel has no title", uid)
			}
			where := fmt.Sprintf("%s panel %q", uid, title)
			if titles[title] {
				t.Errorf("%s: title used twice (the README lists panels by title)", where)
			}
			titles[title] = true
			switch {
			case p.Id == nil || *p.Id == 0:
				t.Errorf("%s: no ID set", where)
			case ids[*p.Id] != "":
				t.Errorf("%s: ID %d already used by %q", where, *p.Id, ids[*p.Id])
			default:
				ids[*p.Id] = title
			}
			if p.Description == nil || *p.Description == "" {
				t.Errorf("%s: no description", where)
			}
			if p.FieldConfig == nil || p.FieldConfig.Defaults.Unit == nil || *p.FieldConfig.Defaults.Unit == "" {
				t.Errorf("%s: no unit", where)
			}
			if len(p.Targets) == 0 {
				t.Errorf("%s: no query", where)
			}
			if p.Datasource == nil || p.Datasource.Uid == nil || *p.Datasource.Uid != "${datasource}" {
				t.Errorf("%s: data source is %v, want the ${datasource} variable", where, p.Datasource)
			}
			g := p.GridPos
			switch {
			case g == nil:
				t.Errorf("%s: no grid position", where)
			case g.W == 0 || g.H == 0:
				t.Errorf("%s: empty grid position %+v", where, *g)
			case g.X+g.W > gridColumns:
				t.Errorf("%s: x %d + w %d runs past the %d-column grid", where, g.X, g.W, gridColumns)
			}
		}
		for i := range ps {
			for j := i + 1; j < len(ps); j++ {
				a, b := ps[i], ps[j]
				if a.GridPos != nil && b.GridPos != nil && overlap(*a.GridPos, *b.GridPos) {
					t.Errorf("%s: %q %+v overlaps %q %+v", uid, *a.Title, *a.GridPos, *b.Title, *b.GridPos)
				}
			}
		}
	}
}

func overlap(a, b dashboard.GridPos) bool {
	return a.X < b.X+b.W && b.X < a.X+a.W && a.Y < b.Y+b.H && b.Y < a.Y+a.H
}

func TestOverlapSpotsSharedCellsOnly(t *testing.T) {
	base := dashboard.GridPos{X: 0, Y: 0, W: 12, H: 8}
	for _, tc := range []struct {
		name  string
		other dashboard.GridPos
		want  bool
	}{
		{"side by side do not overlap", dashboard.GridPos{X: 12, Y: 0, W: 12, H: 8}, false},
		{"stacked do not overlap", dashboard.GridPos{X: 0, Y: 8, W: 12, H: 8}, false},
		{"one column shared overlaps", dashboard.GridPos{X: 11, Y: 0, W: 12, H: 8}, true},
		{"one row shared overlaps", dashboard.GridPos{X: 0, Y: 7, W: 4, H: 2}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := overlap(base, tc.other); got != tc.want {
				t.Errorf("overlap(%+v, %+v) = %v, want %v", base, tc.other, got, tc.want)
			}
		})
	}
}

// Panel IDs and places are part of the dashboards' interface: links to a
// panel (viewPanel=ID) and people's habits depend on them.
func TestPanelIDsAndPlacesDoNotDependOnOptions(t *testing.T) {
	type placed struct {
		ID    uint32
		Title string
		Pos   dashboard.GridPos
	}
	layout := func(o Options) map[string][]placed {
		out := map[string][]placed{}
		for _, d := range builtDashboards(t, o) {
			for _, p := range panels(t, d) {
				out[*d.Uid] = append(out[*d.Uid], placed{*p.Id, *p.Title, *p.GridPos})
			}
		}
		return out
	}
	other := Options{TitlePrefix: "LLM", PageHeadroom: 0.1, WarningHeadroom: 0.3, SLOQuantile: "0.95", DatasourceVariable: "prom"}
	if diff := cmp.Diff(layout(DefaultOptions()), layout(other)); diff != "" {
		t.Errorf("layout changed with the options (-default +other):\n%s", diff)
	}
}

func TestDashboardsHaveStableUIDsAndLinkToEachOther(t *testing.T) {
	ds := builtDashboards(t, DefaultOptions())
	want := map[string]string{FleetUID: "/d/" + ReplicaUID, ReplicaUID: "/d/" + FleetUID}
	if len(ds) != len(want) {
		t.Fatalf("got %d dashboards, want %d", len(ds), len(want))
	}
	for _, d := range ds {
		url, ok := want[*d.Uid]
		if !ok {
			t.Errorf("unexpected dashboard UID %q", *d.Uid)
			continue
		}
		if len(d.Links) != 3 {
			t.Fatalf("%s has %d links, want 3 (the other kneewatch dashboard, vLLM's, DCGM's)", *d.Uid, len(d.Links))
		}
		l := d.Links[0]
		if l.Url == nil || *l.Url != url || !l.IncludeVars || !l.KeepTime || l.Placement != nil {
			t.Errorf("%s link = %+v, want %s carrying variables and time, shown beside the title", *d.Uid, l, url)
		}
		for i, tag := range []string{DefaultVLLMDashboardTag, DefaultDCGMDashboardTag} {
			l := d.Links[i+1]
			if l.Type != dashboard.DashboardLinkTypeDashboards || !slices.Equal(l.Tags, []string{tag}) || !l.KeepTime || l.IncludeVars || l.Placement != nil {
				t.Errorf("%s link %d = %+v, want the dashboards tagged %q, keeping time but not variables, beside the title", *d.Uid, i+1, l, tag)
			}
		}
	}
}
