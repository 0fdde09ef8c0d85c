package dashboards

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"go.yaml.in/yaml/v3"
)

func TestRenderingTwiceGivesTheSameBytes(t *testing.T) {
	for _, format := range Formats() {
		a, err := Render(DefaultOptions(), format)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Render(DefaultOptions(), format)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(a, b, cmp.AllowUnexported(File{})); diff != "" {
			t.Errorf("%s output is not deterministic:\n%s", format, diff)
		}
	}
}

func TestJSONOutputIsADashboardGrafanaCanRead(t *testing.T) {
	files, err := Render(DefaultOptions(), FormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		var d dashboard.Dashboard
		if err := strictUnmarshal(&d, f.Data); err != nil {
			t.Errorf("%s: the SDK's strict schema rejects it: %v", f.Name, err)
			continue
		}
		if d.Uid == nil || *d.Uid+".json" != f.Name {
			t.Errorf("%s: uid %v does not name the file", f.Name, d.Uid)
		}
		if !json.Valid(f.Data) || !bytes.HasSuffix(f.Data, []byte("}\n")) {
			t.Errorf("%s: not one JSON document ending in a newline", f.Name)
		}
	}
}

// strictUnmarshal decodes a dashboard with the SDK's strict schema check.
// The SDK returns an empty cog.BuildErrors as a non-nil error on success.
func strictUnmarshal(d *dashboard.Dashboard, data []byte) error {
	err := d.UnmarshalJSONStrict(data)
	var be cog.BuildErrors
	if errors.As(err, &be) && len(be) == 0 {
		return nil
	}
	return err
}

func TestTheStrictSchemaCheckRejectsAnUnknownField(t *testing.T) {
	var d dashboard.Dashboard
	err := strictUnmarshal(&d, []byte(`{"title": "x", "schemaVersion": 42, "panelz": []}`))
	if err == nil || !strings.Contains(err.Error(), "panelz") {
		t.Errorf("strict decode of an unknown field: err = %v, want one naming panelz", err)
	}
}

func TestJSONKeysAreSorted(t *testing.T) {
	files, err := Render(DefaultOptions(), FormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	// The top-level keys of a dashboard, in the order they are written.
	dec := json.NewDecoder(bytes.NewReader(files[0].Data))
	if _, err := dec.Token(); err != nil { // {
		t.Fatal(err)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i < len(keys); i++ {
		if keys[i-1] > keys[i] {
			t.Errorf("key %q is written before %q", keys[i-1], keys[i])
		}
	}
	if len(keys) < 5 {
		t.Errorf("only %d top-level keys: %v", len(keys), keys)
	}
}

func TestConfigMapsCarryTheSidecarLabelFolderAndTheSameJSON(t *testing.T) {
	opts := Options{Folder: "LLM serving"}
	jsonFiles, err := Render(opts, FormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	cmFiles, err := Render(opts, FormatConfigMap)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range cmFiles {
		var cm configMap
		dec := yaml.NewDecoder(bytes.NewReader(f.Data))
		dec.KnownFields(true)
		if err := dec.Decode(&cm); err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		uid := strings.TrimSuffix(f.Name, ".yaml")
		want := configMap{
			APIVersion: "v1",
			Kind:       "ConfigMap",
			Metadata: objectMeta{
				Name: uid + "-dashboard",
				Labels: map[string]string{
					"grafana_dashboard":           "1",
					"app.kubernetes.io/name":      "kneewatch",
					"app.kubernetes.io/component": "dashboards",
				},
				Annotations: map[string]string{"grafana_folder": "LLM serving"},
			},
			Data: map[string]string{uid + ".json": string(jsonFiles[i].Data)},
		}
		if diff := cmp.Diff(want, cm, cmp.AllowUnexported(configMap{}, objectMeta{})); diff != "" {
			t.Errorf("%s (-want +got):\n%s", f.Name, diff)
		}
		// The sidecar matches the label value as a string: "1", not 1.
		if !bytes.Contains(f.Data, []byte(`grafana_dashboard: "1"`)) {
			t.Errorf("%s: the sidecar label is not the string \"1\":\n%s", f.Name, f.Data[:200])
		}
	}
}

func TestBadOptionsAndFormatsGetAnErrorNamingThem(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   Options
		format Format
		want   string
	}{
		{"page threshold above the warning one", Options{PageHeadroom: 0.3, WarningHeadroom: 0.2}, FormatJSON, "option page headroom: 0.3 must be below the warning headroom 0.2"},
		{"headroom of one or more", Options{WarningHeadroom: 1.5}, FormatJSON, "option warning headroom: 1.5 is not a headroom ratio"},
		{"quantile that is not a number", Options{SLOQuantile: "p99"}, FormatJSON, `option SLO quantile: "p99" is not a quantile label value`},
		{"quantile of one", Options{SLOQuantile: "1"}, FormatJSON, `option SLO quantile: "1"`},
		{"objective of one, with the quantile left alone", Options{Objective: 1}, FormatJSON, "option objective: 1 is not a share of requests"},
		{"objective above one", Options{Objective: 99}, FormatJSON, "option objective: 99 is not a share of requests"},
		{"data source variable with a dollar", Options{DatasourceVariable: "$ds"}, FormatJSON, `option datasource variable: "$ds" is not a Grafana variable name`},
		{"unknown format", Options{}, Format("xml"), `unknown dashboard format "xml" (want json or configmap)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Render(tc.opts, tc.format)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Render error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestEveryBadOptionIsReportedOnceAndNamed(t *testing.T) {
	_, err := Render(Options{PageHeadroom: 2, SLOQuantile: "x", DatasourceVariable: "a b"}, FormatJSON)
	want := "dashboard kneewatch-fleet: " +
		"dashboards option datasource variable: \"a b\" is not a Grafana variable name (letters, digits and _ only)\n" +
		"dashboards option page headroom: 2 is not a headroom ratio in (-1, 1)\n" +
		"dashboards option page headroom: 2 must be below the warning headroom 0.2 (the page is the later, tighter alarm)\n" +
		"dashboards option SLO quantile: \"x\" is not a quantile label value in (0, 1), such as \"0.99\""
	if err == nil || err.Error() != want {
		t.Errorf("error =\n%v\nwant\n%s", err, want)
	}
}

func TestOptionsChangeTheThresholdsAndQueriesTheyName(t *testing.T) {
	opts := Options{PageHeadroom: 0.1, WarningHeadroom: 0.3, SLOQuantile: "0.95", DatasourceVariable: "prom", DefaultDatasource: "Mimir", TitlePrefix: "LLM"}
	files, err := Render(opts, FormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	all := string(files[0].Data) + string(files[1].Data)
	for _, want := range []string{
		`"title": "LLM / Fleet capacity"`,
		`"title": "LLM / Replica"`,
		`kneewatch_replica_headroom_ratio{cluster=\"$cluster\", job=~\"$job\", namespace=~\"$namespace\", model=~\"$model\"} < 0.1`,
		`kneewatch_replica_headroom_ratio{cluster=\"$cluster\", job=~\"$job\", namespace=~\"$namespace\", model=~\"$model\"} < 0.3`,
		`quantile=\"0.95\"`,
		`histogram_quantile(0.95,`,
		`(1 - 0.95)`, // the objective follows the SLO quantile by default
		`"uid": "${prom}"`,
		`"value": 0.3`,
		`"text": "Mimir"`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("output does not contain %s", want)
		}
	}
	if strings.Contains(all, "${datasource}") {
		t.Errorf("output still names ${datasource} after the variable was renamed")
	}
}

func TestTheUpstreamLinksFollowTheTagOptionsAndRejectAnEmptyTag(t *testing.T) {
	files, err := Render(Options{VLLMDashboardTags: []string{"engine", "llm"}, DCGMDashboardTags: []string{"gpu"}}, FormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\"tags\": [\n        \"engine\",\n        \"llm\"\n      ]", "\"tags\": [\n        \"gpu\"\n      ]"} {
		if !strings.Contains(string(files[0].Data), want) {
			t.Errorf("fleet dashboard does not contain the link tags %s", want)
		}
	}
	_, err = Render(Options{DCGMDashboardTags: []string{"gpu", " "}}, FormatJSON)
	if err == nil || !strings.Contains(err.Error(), "dashboards option DCGM dashboard tags") {
		t.Errorf("an empty tag: err = %v, want one naming the DCGM dashboard tags option", err)
	}
}
