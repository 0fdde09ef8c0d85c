package strictyaml

import (
	"errors"
	"fmt"
	"testing"
)

type slo struct {
	TTFT     string  `yaml:"ttft"`
	Quantile float64 `yaml:"quantile"`
}

type point struct {
	Concurrency int `yaml:"concurrency"`
	TTFT        struct {
		P50 float64 `yaml:"p50"`
		P99 float64 `yaml:"p99"`
	} `yaml:"ttft"`
}

type profile struct {
	SLO    slo     `yaml:"slo"`
	Points []point `yaml:"points"`
}

const valid = `slo:
  ttft: 500ms
  quantile: 0.99
points:
  - concurrency: 1
    ttft: {p50: 0.1, p99: 0.2}
  - concurrency: 2
    ttft: {p50: 0.1, p99: 0.3}
`

func TestDecodingErrorsNameTheFileTheLineAndTheField(t *testing.T) {
	for _, tc := range []struct {
		name    string
		data    string
		emptyOK bool
		want    string
	}{
		{"an unknown key", "slo:\n  ttft: 1s\n  quantlie: 0.9\n",
			false, "p.yaml: line 3: slo.quantlie: unknown key \"quantlie\" (did you mean \"quantile\"?); the keys here are quantile, ttft"},
		{"a wrong type in a list item", valid[:len(valid)-len("    ttft: {p50: 0.1, p99: 0.3}\n")-len("  - concurrency: 2\n")] + "  - concurrency: two\n",
			false, "p.yaml: line 7: points[1].concurrency: cannot unmarshal !!str `two` into int"},
		{"a wrong type in a flow mapping names the mapping", "points:\n  - ttft: {p50: fast, p99: 0.2}\n",
			false, "p.yaml: line 2: points[0].ttft: cannot unmarshal !!str `fast` into float64"},
		{"every problem, one a line", "slo: {quantile: high}\npoints: 3\n",
			false, "p.yaml: line 1: slo: cannot unmarshal !!str `high` into float64\np.yaml: line 2: points: cannot unmarshal !!int `3` into []strictyaml.point"},
		{"a duplicate key", "slo:\n  ttft: 1s\n  ttft: 2s\n",
			false, `p.yaml: line 3: slo.ttft: mapping key "ttft" already defined at line 2`},
		// The line is the parser's: where the construct it was reading began.
		{"broken YAML", "slo:\n  ttft: 1s\n quantile: 2\n",
			false, "p.yaml: line 2: did not find expected key"},
		{"an empty document", "# nothing\n", false, "p.yaml: empty document, want a test profile"},
		{"a second document", valid + "---\nslo: {}\n", false, "p.yaml: line 9: a second YAML document, want exactly one test profile"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p profile
			err := Doc{Source: "p.yaml", Data: []byte(tc.data), Want: "test profile", EmptyOK: tc.emptyOK}.Decode(&p)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error:\n got: %v\nwant: %s", err, tc.want)
			}
			var l *List
			if !errors.As(err, &l) {
				t.Errorf("error %T is not a *List", err)
			}
		})
	}
}

func TestAnEmptyDocumentCanMeanTheDefaults(t *testing.T) {
	p := profile{SLO: slo{TTFT: "1s"}}
	if err := (Doc{Data: []byte("\n# defaults\n"), EmptyOK: true}).Decode(&p); err != nil || p.SLO.TTFT != "1s" {
		t.Errorf("Decode = %v, ttft %q; want nil and the default kept", err, p.SLO.TTFT)
	}
}

func TestLocateGivesValidationErrorsTheirLines(t *testing.T) {
	doc := Doc{Source: "p.yaml", Data: []byte(valid)}
	var l List
	l.Add("slo.quantile", "must be in (0,1), got %g", 1.5)
	l.Add("points[1].ttft.p99", "too slow")
	l.Add("slo.tpot", "required") // absent: the line of its parent
	l.Add("knee", "required")     // absent, and so is every parent
	wrapped := fmt.Errorf("checking: %w", Errorf("points[0].concurrency", "must be even"))
	err := doc.Locate(errors.Join(&l, wrapped, errors.New("profiles_dir: unreadable")))
	want := "p.yaml: line 3: slo.quantile: must be in (0,1), got 1.5\n" +
		"p.yaml: line 8: points[1].ttft.p99: too slow\n" +
		"p.yaml: line 1: slo.tpot: required\n" +
		"p.yaml: knee: required\n" +
		"p.yaml: line 5: points[0].concurrency: must be even\n" +
		"p.yaml: profiles_dir: unreadable"
	if err == nil || err.Error() != want {
		t.Errorf("Locate:\n got: %v\nwant: %s", err, want)
	}
	if doc.Locate(nil) != nil {
		t.Error("Locate(nil) is not nil")
	}
}

func TestAnEmptyListIsNoError(t *testing.T) {
	var l List
	if err := l.Err(); err != nil {
		t.Errorf("Err() = %v", err)
	}
	l.Add("x", "bad")
	if err := l.Err(); err == nil || err.Error() != "x: bad" {
		t.Errorf("Err() = %v, want x: bad", err)
	}
}

// viaOther decodes through another type, as an HTTP client's settings
// decode through prometheus/common's: its keys are not its fields.
type viaOther struct{ Real string }

func (v *viaOther) UnmarshalYAML(unmarshal func(any) error) error {
	var other struct {
		Real string `yaml:"real_name"`
	}
	err := unmarshal(&other)
	v.Real = other.Real
	return err
}

type inlined struct {
	Name string `yaml:"name"`
}

type withInline struct {
	inlined `yaml:",inline"`
	Pages   map[string]point `yaml:"pages"`
	Via     viaOther         `yaml:"via"`
	Skipped string           `yaml:"-"`
	Plain   int
}

func TestAnUnknownKeyIsToldWithTheKeysItsMappingTakes(t *testing.T) {
	for _, tc := range []struct {
		name, data, want string
	}{
		{"two letters swapped are one slip", "nmae: x\n",
			`p.yaml: line 1: nmae: unknown key "nmae" (did you mean "name"?); the keys here are name, pages, plain, via`},
		{"a key far from every one is not guessed at", "colour: x\n",
			`p.yaml: line 1: colour: unknown key "colour"; the keys here are name, pages, plain, via`},
		{"a map's values share one type", "pages:\n  home:\n    concurency: 3\n",
			`p.yaml: line 3: pages.home.concurency: unknown key "concurency" (did you mean "concurrency"?); the keys here are concurrency, ttft`},
		{"a type that decodes through another keeps the decoder's words", "via:\n  rael_name: x\n",
			"p.yaml: line 2: via.rael_name: field rael_name not found in type struct { Real string \"yaml:\\\"real_name\\\"\" }"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v withInline
			err := Doc{Source: "p.yaml", Data: []byte(tc.data), Want: "test document"}.Decode(&v)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error:\n got: %v\nwant: %s", err, tc.want)
			}
		})
	}
}
