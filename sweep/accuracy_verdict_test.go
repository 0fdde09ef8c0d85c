package sweep

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kneewatch/kneewatch/knee"
)

// The accuracy must-show's verdicts decide whether a miss fails the build
// or is put down to the machine, so they are checked on made-up runs.

func levelAt(c, tokPerS, ttftP50 float64) Level {
	return Level{Point: knee.Point{Concurrency: c, OutputTokensPerSecond: tokPerS, TTFT: knee.Quantiles{P50: ttftP50}}}
}

func truthWith(kneeAt float64, points ...knee.Point) knee.Profile {
	return knee.Profile{Points: points, Knee: knee.Knee{Concurrency: kneeAt}}
}

func TestMachineTroubleOnlyBlamesTheMachineForLevelsUpToTheTrueKnee(t *testing.T) {
	slo := knee.SLO{TTFT: knee.Duration(100 * time.Millisecond), TPOT: knee.Duration(time.Second), Quantile: 0.9}
	truth := truthWith(8,
		knee.Point{Concurrency: 4, OutputTokensPerSecond: 1000, TTFT: knee.Quantiles{P50: 0.010}},
		knee.Point{Concurrency: 8, OutputTokensPerSecond: 2000, TTFT: knee.Quantiles{P50: 0.012}},
		knee.Point{Concurrency: 16, OutputTokensPerSecond: 2100, TTFT: knee.Quantiles{P50: 0.200}},
	)
	tests := []struct {
		name   string
		levels []Level
		want   string // a substring of the verdict; "" means no trouble
	}{
		{"a faithful run is no excuse", []Level{levelAt(4, 990, 0.011), levelAt(8, 1950, 0.013)}, ""},
		{"a throughput shortfall at the knee is the machine's", []Level{levelAt(4, 990, 0.011), levelAt(8, 1700, 0.013)},
			"at concurrency 8 it made 15% fewer tokens/s"},
		{"a shortfall past the knee is not", []Level{levelAt(8, 1950, 0.013), levelAt(16, 1000, 0.4)}, ""},
		{"a median TTFT far above the truth is the machine's", []Level{levelAt(4, 1000, 0.040)},
			"median TTFT was 30ms above"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := machineTrouble(&Outcome{Levels: tt.levels}, truth, slo)
			if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
				t.Errorf("machineTrouble = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestAccuracyProblemsNameEveryWayTheMustShowIsMissed(t *testing.T) {
	withKnee := func(c float64, levels int) *Outcome {
		out := &Outcome{Profile: &knee.Profile{Knee: knee.Knee{Concurrency: c}}}
		for i := range levels {
			out.Levels = append(out.Levels, levelAt(float64(i+1), 1, 0))
		}
		return out
	}
	tests := []struct {
		name string
		out  *Outcome
		err  error
		want []string // substrings, one per problem
	}{
		{"within 10% in 8 levels passes", withKnee(14, 8), nil, nil},
		{"off by more than 10% is a miss", withKnee(11, 7), nil, []string{"knee 11, true knee 13"}},
		{"more than 8 levels is a miss", withKnee(13, 9), nil, []string{"9 levels"}},
		{"an SLO broken at concurrency 1 is a miss", withKnee(1, 1), ErrSLOUnreachable, []string{"even concurrency 1"}},
		{"any other error is a miss", &Outcome{}, errors.New("boom"), []string{"boom"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := accuracyProblems(tt.out, tt.err, 13)
			if len(got) != len(tt.want) {
				t.Fatalf("problems %q, want %d", got, len(tt.want))
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %q does not say %q", got[i], w)
				}
			}
		})
	}
}
