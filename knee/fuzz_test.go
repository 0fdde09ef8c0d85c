package knee

import (
	"testing"
)

// FuzzParse fuzzes profile loading. Seeds are the valid and invalid
// profiles, under testdata/fuzz/FuzzParse/. Whatever the bytes, Parse does
// not panic; a profile it accepts saves and loads back to itself, and
// evaluates to no wrong number (see wrongNumber).
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data, "fuzz.yaml")
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error with no text")
			}
			return
		}
		out, err := p.Marshal()
		if err != nil {
			t.Fatalf("a profile Parse accepted does not marshal: %v", err)
		}
		if _, err := Parse(out, "saved.yaml"); err != nil {
			t.Fatalf("a profile Parse accepted does not load back after saving: %v\n%s", err, out)
		}
		for _, load := range []float64{0, 0.5 * p.Knee.Concurrency, p.Knee.Concurrency, 3 * p.Knee.Concurrency} {
			o := NewObservation()
			o.InFlight, o.OutputTokensPerSecond, o.MeanPromptTokens, o.MeanOutputTokens = load, 100*load, 300, 150
			o.Running, o.KVCacheUsage, o.MixRequests, o.PromptTokensP99 = load, 0.5, 200, 2000
			o.TTFT.P99, o.TPOT.P99, o.TTFTAttainment, o.TPOTAttainment = 0.5, 0.05, 0.99, 0.98
			if msg := wrongNumber(Evaluate(o, p, Options{})); msg != "" {
				t.Fatalf("at load %v: %s", load, msg)
			}
		}
	})
}
