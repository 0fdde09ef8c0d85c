package detection

import (
	"slices"
	"strings"
	"testing"

	"github.com/kneewatch/kneewatch/knee"
)

func TestTheWithoutModelsWhatIfRefitsTheMixModelAtTheScalesGiven(t *testing.T) {
	p, err := knee.Load("../../knee/testdata/valid-mix.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p0, o0 := p.Workload.MeanPromptTokens, p.Workload.MeanOutputTokens
	m := mixModelAt(p.MixModel, []knee.MixScale{{Prompt: 2, Output: 1}, {Prompt: 1, Output: 2}, {Prompt: 2, Output: 2}}, p0, o0)
	if m == nil {
		t.Fatal("no mix model fitted at 2:1, 1:2 and 2:2 of a profile that measured them")
	}
	var got []knee.MixScale
	for _, pt := range m.Points {
		got = append(got, knee.MixScale{Prompt: pt.PromptScale, Output: pt.OutputScale})
	}
	if want := []knee.MixScale{{Prompt: 1, Output: 1}, {Prompt: 1, Output: 2}, {Prompt: 2, Output: 1}, {Prompt: 2, Output: 2}}; !slices.Equal(got, want) {
		t.Errorf("the refit's points are at %v, want the profile's own mix and the three scales given, %v", got, want)
	}
	if m.RequestsPerSecond == p.MixModel.RequestsPerSecond {
		t.Error("the refit kept the full model's coefficients")
	}
	// Scales the profile did not measure leave too few points: no model,
	// as a sweep whose scaled mixes had no knee writes none.
	if m := mixModelAt(p.MixModel, knee.QuickMixScales, p0, o0); m != nil {
		t.Errorf("a mix model fitted at scales the profile never measured: %+v", m.Points)
	}
}

func TestTheWithoutModelsWhatIfNamesTheScalesItKept(t *testing.T) {
	r := &Report{Options: Options{WithoutModelsWhatIf: true}}
	if got := r.withoutModelsLabels().title; got != "kneewatch given a profile without models" {
		t.Errorf("title without scales = %q", got)
	}
	r.Options.WithoutModelsMixScales = knee.QuickMixScales
	l := r.withoutModelsLabels()
	for _, got := range []string{l.title, l.name, l.sweep} {
		if !strings.Contains(got, "2:1,1:2,0.5:0.5") {
			t.Errorf("%q does not name the scales the mix model was fitted at", got)
		}
	}
}
