package rules

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"

	"github.com/kneewatch/kneewatch/internal/testtools"
)

// TestHelmHelpersPrintAsTheGenerator runs the chart template's helpers in
// the real helm over thousands of numbers and durations and compares what
// they print with the generator's own formatting: a PromQL number, a
// percentage and a number in text for each ratio (and for 1 − it, as the
// error budget is printed), and the duration as Prometheus writes it for
// each duration, whichever way it was written.
func TestHelmHelpersPrintAsTheGenerator(t *testing.T) {
	helm := testtools.Path(t, "helm")
	r := rand.New(rand.NewPCG(16, 3))

	ratios := []float64{0, 1, -1, 0.07, 0.12345, 0.2, 0.99, 1e-7, 1.5e-10, -3e-9, 1e20, 1e21, 1.234e25, 123456789012345678, 5e-324, math.MaxFloat64}
	for range 3000 {
		v := r.Float64() * math.Pow(10, float64(r.IntN(31)-9))
		if r.IntN(2) == 0 {
			p := math.Pow(10, float64(r.IntN(9)))
			v = math.Round(v*p) / p
		}
		if r.IntN(4) == 0 {
			v = -v
		}
		if v == 0 {
			v = 0 // not -0: YAML's -0 reaches the chart as the integer 0
		}
		ratios = append(ratios, v)
	}
	var objectives []float64
	for range 1000 {
		p := math.Pow(10, float64(1+r.IntN(15)))
		objectives = append(objectives, math.Round((0.9+0.1*r.Float64())*p)/p)
	}
	durations := []any{0, "0", "0s", "1ms", "999ms", "1000ms", "60s", "90s", "3600s", "24h", "7d", "1w", "365d", "366d", "52w", "1y1d", "2y", "1h30m", "1d1ms", "292y"}
	units := []struct {
		unit string
		ms   int64
	}{{"y", 365 * 86400000}, {"w", 7 * 86400000}, {"d", 86400000}, {"h", 3600000}, {"m", 60000}, {"s", 1000}, {"ms", 1}}
	for range 2000 {
		var b strings.Builder
		for _, u := range units {
			if r.IntN(3) == 0 {
				fmt.Fprintf(&b, "%d%s", r.Int64N(1+int64(1e9)/u.ms*int64(1+r.IntN(3))), u.unit)
			}
		}
		if b.Len() == 0 {
			b.WriteString(fmt.Sprintf("%ds", r.IntN(100000)))
		}
		durations = append(durations, b.String())
	}

	chart := t.TempDir()
	write := func(name, text string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(chart, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(chart, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("Chart.yaml", "apiVersion: v2\nname: helpers\nversion: 0.1.0\n")
	write("templates/_helpers.tpl", helmHelpers)
	write("templates/out.yaml", `{{- range .Values.ratios }}
{{ include "kneewatch.rules.ratio" (dict "value" .) }}
{{- end }}
{{- range .Values.objectives }}
{{ include "kneewatch.rules.ratio" (dict "value" (subf 1 .)) }}
{{- end }}
{{- range .Values.durations }}
{{ include "kneewatch.rules.duration" (dict "values" (dict "d" .) "path" "d" "default" "0s") }}
{{- end }}
`)
	values, err := yaml.Marshal(map[string]any{"ratios": ratios, "objectives": objectives, "durations": durations})
	if err != nil {
		t.Fatal(err)
	}
	write("values.yaml", string(values))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, helm, "template", chart)
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr.String())
	}
	var got []map[string]any
	for _, line := range strings.Split(stdout.String(), "\n") {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		got = append(got, m)
	}
	if want := len(ratios) + len(objectives) + len(durations); len(got) != want {
		t.Fatalf("helm printed %d values, want %d", len(got), want)
	}

	ratio, duration := helmParam{kind: ratioParam}, helmParam{kind: durationParam}
	check := func(what string, want map[string]string, got map[string]any) {
		t.Helper()
		for form, w := range want {
			if got[form] != w {
				t.Errorf("%s: helm prints the %s form %q, the generator %q", what, form, got[form], w)
			}
		}
	}
	for i, v := range ratios {
		check(fmt.Sprint(v), ratio.forms(v), got[i])
	}
	for i, v := range objectives {
		check(fmt.Sprintf("1 - %v", v), ratio.forms(complement(v)), got[len(ratios)+i])
	}
	for i, d := range durations {
		s := fmt.Sprint(d)
		parsed, err := model.ParseDuration(s)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		check(s, duration.forms(float64(time.Duration(parsed)/time.Millisecond)), got[len(ratios)+len(objectives)+i])
	}
}
