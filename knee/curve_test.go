package knee

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var approx = cmp.Options{cmpopts.EquateApprox(0, 1e-9), cmpopts.EquateNaNs()}

func curveProfile() *Profile {
	return &Profile{Points: []Point{
		pt(2, 200, 0.02, 0.05, 0.010, true),
		pt(10, 1000, 0.10, 0.10, 0.020, true),
		pt(20, 1500, 0.20, 0.30, 0.040, true),
	}}
}

func TestCurveAt(t *testing.T) {
	tests := []struct {
		name   string
		load   float64
		want   CurvePoint
		wantOK bool
	}{
		{"zero load makes no tokens at the first point's latency", 0,
			CurvePoint{Concurrency: 0, TTFTP99: 0.05, TPOTP99: 0.010}, true},
		{"below the first point throughput scales from zero", 1,
			CurvePoint{Concurrency: 1, OutputTokensPerSecond: 100, GoodputTokensPerSecond: 100, KVCacheUsage: 0.01, TTFTP99: 0.05, TPOTP99: 0.010}, true},
		{"on a point the curve is that point", 10,
			CurvePoint{Concurrency: 10, OutputTokensPerSecond: 1000, GoodputTokensPerSecond: 1000, KVCacheUsage: 0.10, TTFTP99: 0.10, TPOTP99: 0.020}, true},
		{"between points the curve is interpolated linearly", 15,
			CurvePoint{Concurrency: 15, OutputTokensPerSecond: 1250, GoodputTokensPerSecond: 1250, KVCacheUsage: 0.15, TTFTP99: 0.20, TPOTP99: 0.030}, true},
		{"on the last point the curve is not extrapolated", 20,
			CurvePoint{Concurrency: 20, OutputTokensPerSecond: 1500, GoodputTokensPerSecond: 1500, KVCacheUsage: 0.20, TTFTP99: 0.30, TPOTP99: 0.040}, true},
		{"past the last point the curve stays flat and says it extrapolated", 40,
			CurvePoint{Concurrency: 40, OutputTokensPerSecond: 1500, GoodputTokensPerSecond: 1500, KVCacheUsage: 0.20, TTFTP99: 0.30, TPOTP99: 0.040, Extrapolated: true}, true},
		{"an unknown load has no curve point", math.NaN(), CurvePoint{}, false},
		{"a negative load has no curve point", -1, CurvePoint{}, false},
	}
	p := curveProfile()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := p.CurveAt(tt.load)
			if ok != tt.wantOK {
				t.Fatalf("CurveAt(%g) ok = %v, want %v", tt.load, ok, tt.wantOK)
			}
			if diff := cmp.Diff(tt.want, got, approx); diff != "" {
				t.Errorf("CurveAt(%g) (-want +got):\n%s", tt.load, diff)
			}
		})
	}
}

func TestCurveAtWithoutPointsHasNoCurve(t *testing.T) {
	if _, ok := (&Profile{}).CurveAt(5); ok {
		t.Error("CurveAt on a profile without points: ok = true, want false")
	}
	var nilProfile *Profile
	if _, ok := nilProfile.CurveAt(5); ok {
		t.Error("CurveAt on a nil profile: ok = true, want false")
	}
}
