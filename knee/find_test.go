package knee

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// pt is a sweep point with the fields knee finding reads.
func pt(c, outTPS, kv, ttftP99, tpotP99 float64, meets bool) Point {
	return Point{
		Concurrency:            c,
		OutputTokensPerSecond:  outTPS,
		GoodputTokensPerSecond: outTPS,
		TTFT:                   Quantiles{P50: ttftP99 / 2, P99: ttftP99},
		TPOT:                   Quantiles{P50: tpotP99 / 2, P99: tpotP99},
		KVCacheUsage:           kv,
		MeetsSLO:               meets,
	}
}

var testSLO = SLO{TTFT: Duration(500 * time.Millisecond), TPOT: Duration(50 * time.Millisecond), Quantile: 0.99}

func TestFindFromPoints(t *testing.T) {
	tests := []struct {
		name    string
		points  []Point
		slo     SLO
		want    Knee
		wantErr string
	}{
		{
			name:   "the last of the passing points before the first failure is the knee",
			points: []Point{pt(1, 100, 0.01, 0.1, 0.01, true), pt(2, 190, 0.02, 0.2, 0.02, true), pt(4, 300, 0.04, 0.9, 0.06, false)},
			slo:    testSLO,
			want:   Knee{Concurrency: 2, OutputTokensPerSecond: 190, GoodputTokensPerSecond: 190, KVCacheUsage: 0.02, LimitingResource: ResourceCompute},
		},
		{
			name:   "a pass above a failure is not trusted",
			points: []Point{pt(1, 100, 0, 0.1, 0.01, true), pt(2, 190, 0, 0.6, 0.02, false), pt(4, 300, 0, 0.2, 0.02, true)},
			slo:    testSLO,
			want:   Knee{Concurrency: 1, OutputTokensPerSecond: 100, GoodputTokensPerSecond: 100, LimitingResource: ResourceCompute},
		},
		{
			name:   "points in run order are sorted by concurrency first",
			points: []Point{pt(4, 300, 0, 0.9, 0.06, false), pt(1, 100, 0, 0.1, 0.01, true), pt(3, 260, 0, 0.4, 0.04, true), pt(2, 190, 0, 0.2, 0.02, true)},
			slo:    testSLO,
			want:   Knee{Concurrency: 3, OutputTokensPerSecond: 260, GoodputTokensPerSecond: 260, LimitingResource: ResourceCompute},
		},
		{
			name:   "every point passing makes the highest the knee",
			points: []Point{pt(1, 100, 0, 0.1, 0.01, true), pt(2, 190, 0, 0.2, 0.02, true)},
			slo:    testSLO,
			want:   Knee{Concurrency: 2, OutputTokensPerSecond: 190, GoodputTokensPerSecond: 190, LimitingResource: ResourceCompute},
		},
		{
			name:   "a p99 over the threshold fails a point marked as meeting a p99 SLO",
			points: []Point{pt(1, 100, 0, 0.1, 0.01, true), pt(2, 190, 0, 0.7, 0.02, true)},
			slo:    testSLO,
			want:   Knee{Concurrency: 1, OutputTokensPerSecond: 100, GoodputTokensPerSecond: 100, LimitingResource: ResourceCompute},
		},
		{
			name:   "for a p95 SLO the point's own verdict stands, as it records no p95",
			points: []Point{pt(1, 100, 0, 0.1, 0.01, true), pt(2, 190, 0, 0.7, 0.02, true)},
			slo:    SLO{TTFT: testSLO.TTFT, TPOT: testSLO.TPOT, Quantile: 0.95},
			want:   Knee{Concurrency: 2, OutputTokensPerSecond: 190, GoodputTokensPerSecond: 190, LimitingResource: ResourceCompute},
		},
		{
			name:   "a full KV cache at the knee makes it KV-bound",
			points: []Point{pt(8, 800, 0.93, 0.1, 0.01, true), pt(16, 900, 1, 0.9, 0.06, false)},
			slo:    testSLO,
			want:   Knee{Concurrency: 8, OutputTokensPerSecond: 800, GoodputTokensPerSecond: 800, KVCacheUsage: 0.93, LimitingResource: ResourceKVCache},
		},
		{
			name:    "no points is an error",
			slo:     testSLO,
			wantErr: "finding the knee: no sweep points",
		},
		{
			name:    "a sweep whose lowest level already breaks the SLO has no knee",
			points:  []Point{pt(1, 100, 0, 0.9, 0.01, false), pt(2, 190, 0, 1.2, 0.02, false)},
			slo:     testSLO,
			wantErr: "finding the knee: the lowest concurrency swept (1) already breaks the SLO, so there is no knee to report",
		},
		{
			name:    "two points at one concurrency are an error",
			points:  []Point{pt(1, 100, 0, 0.1, 0.01, true), pt(1, 110, 0, 0.1, 0.01, true)},
			slo:     testSLO,
			wantErr: "finding the knee: two sweep points at concurrency 1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FindFromPoints(tt.points, tt.slo)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("FindFromPoints error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("knee (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFindFromPointsAgreesWithTheValidFixturesKnee(t *testing.T) {
	p, err := Load("testdata/valid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got, err := FindFromPoints(p.Points, p.SLO)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(p.Knee, got); diff != "" {
		t.Errorf("knee (-profile +found):\n%s", diff)
	}
}

func TestFindFromPointsDoesNotReorderTheCallersPoints(t *testing.T) {
	points := []Point{pt(4, 300, 0, 0.9, 0.06, false), pt(1, 100, 0, 0.1, 0.01, true)}
	if _, err := FindFromPoints(points, testSLO); err != nil {
		t.Fatal(err)
	}
	if points[0].Concurrency != 4 {
		t.Errorf("points[0].Concurrency = %g after FindFromPoints, want 4 (unchanged)", points[0].Concurrency)
	}
}

func TestLimitingResource(t *testing.T) {
	tests := []struct {
		name string
		kv   float64
		pre  float64
		want Resource
	}{
		{"a cache at 0.9 is KV-bound", 0.9, 0, ResourceKVCache},
		{"a cache just under 0.9 without preemptions is compute-bound", 0.89, 0, ResourceCompute},
		{"any preemption is KV-bound however empty the cache looks", 0.5, 0.1, ResourceKVCache},
		{"a nearly empty cache is compute-bound", 0.014, 0, ResourceCompute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := LimitingResource(Point{KVCacheUsage: tt.kv, PreemptionsPerSecond: tt.pre}); got != tt.want {
				t.Errorf("LimitingResource(kv=%g, preemptions=%g) = %s, want %s", tt.kv, tt.pre, got, tt.want)
			}
		})
	}
}
