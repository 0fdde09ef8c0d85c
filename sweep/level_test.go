package sweep

import "testing"

// Every worker turns over once before the window opens, plus up to 8 more
// to wash out the staggered start; one worker has no stagger.
func TestDefaultWarmupTurnsEveryWorkerOver(t *testing.T) {
	for _, tc := range []struct{ c, want int }{{1, 1}, {2, 4}, {4, 8}, {8, 16}, {64, 72}, {256, 264}} {
		if got := DefaultWarmup(tc.c); got != tc.want {
			t.Errorf("DefaultWarmup(%d) = %d, want %d", tc.c, got, tc.want)
		}
	}
}
