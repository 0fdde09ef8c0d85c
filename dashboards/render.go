package dashboards

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// Format is an output format of `kneewatch dashboards`.
type Format string

// The output formats.
const (
	// FormatJSON is Grafana's dashboard JSON, one file per dashboard, for
	// import or file provisioning.
	FormatJSON Format = "json"
	// FormatConfigMap is one Kubernetes ConfigMap per dashboard, labelled
	// for the Grafana sidecar of kube-prometheus-stack.
	FormatConfigMap Format = "configmap"
)

// Formats lists the output formats, in usage order.
func Formats() []Format { return []Format{FormatJSON, FormatConfigMap} }

// File is one generated output file.
type File struct {
	Name string // base name, e.g. kneewatch-fleet.json
	Data []byte
}

// builders lists every dashboard in output order, by UID.
var builders = []struct {
	uid   string
	build func(Options) (dashboard.Dashboard, error)
}{
	{FleetUID, Fleet},
	{ReplicaUID, Replica},
}

// Render builds every dashboard and encodes it in format. The output is
// deterministic: keys sorted, no timestamps, no generated IDs.
func Render(opts Options, format Format) ([]File, error) {
	o := opts.withDefaults()
	var files []File
	for _, b := range builders {
		d, err := b.build(o)
		if err != nil {
			return nil, fmt.Errorf("dashboard %s: %w", b.uid, err)
		}
		js, err := MarshalJSON(d)
		if err != nil {
			return nil, fmt.Errorf("dashboard %s: %w", b.uid, err)
		}
		switch format {
		case FormatJSON:
			files = append(files, File{Name: b.uid + ".json", Data: js})
		case FormatConfigMap:
			y, err := configMapYAML(b.uid, o.Folder, js)
			if err != nil {
				return nil, fmt.Errorf("dashboard %s: %w", b.uid, err)
			}
			files = append(files, File{Name: b.uid + ".yaml", Data: y})
		default:
			return nil, fmt.Errorf("unknown dashboard format %q (want %s or %s)", format, FormatJSON, FormatConfigMap)
		}
	}
	return files, nil
}

// MarshalJSON encodes a dashboard as indented JSON with every object's keys
// sorted, so the output does not change when the SDK reorders its struct
// fields, and diffs of generated dashboards stay small.
func MarshalJSON(d dashboard.Dashboard) ([]byte, error) {
	raw, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("encode dashboard: %w", err)
	}
	// Decoding into interface values turns objects into maps, which
	// encoding/json writes with sorted keys; UseNumber keeps numbers as
	// written.
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("re-read dashboard JSON: %w", err)
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false) // PromQL's < and & stay readable
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode dashboard: %w", err)
	}
	return out.Bytes(), nil
}

// Join puts rendered files into one stream for standard output: JSON
// documents one after another (as jq reads them), ConfigMaps as one YAML
// stream of documents separated by "---".
func Join(format Format, files []File) []byte {
	var out bytes.Buffer
	for i, f := range files {
		if format == FormatConfigMap && i > 0 {
			out.WriteString("---\n")
		}
		out.Write(f.Data)
	}
	return out.Bytes()
}
