package knee_test

import (
	"testing"

	"github.com/kneewatch/kneewatch/knee"
)

func TestMixShiftClear(t *testing.T) {
	p := &knee.Profile{}
	p.Workload.MeanPromptTokens, p.Workload.MeanOutputTokens = 1000, 200
	p.Workload.PromptTokensCV, p.Workload.OutputTokensCV = 1, 1
	// Over 25 requests a mean's noise band is 1/5: clear past 3 of them.
	for _, tt := range []struct {
		prompt, output, n float64
		want              bool
	}{
		{1000, 200, 25, false},
		{1500, 200, 25, false},
		{1700, 200, 25, true},
		{1000, 70, 25, true},
		{1000, 90, 25, false},
		{knee.Unknown(), 500, 25, true},
		{1700, 200, 100, true},
		{1250, 200, 100, false}, // the band is at least 0.1: 0.3
		{1350, 200, 100, true},
		{5000, 200, knee.Unknown(), false},
		{5000, 200, 0, false},
	} {
		if got := p.MixShiftClear(tt.prompt, tt.output, tt.n); got != tt.want {
			t.Errorf("MixShiftClear(%g, %g, %g) = %v, want %v", tt.prompt, tt.output, tt.n, got, tt.want)
		}
	}
	if (*knee.Profile)(nil).MixShiftClear(5000, 200, 25) {
		t.Error("a nil profile judged a shift")
	}
}
