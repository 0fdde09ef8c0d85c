package knee

import (
	"testing"
)

// FuzzParse fuzzes profile loading. Seeds are the valid and invalid
// profiles, under testdata/fuzz/FuzzParse/. Whatever the bytes, Parse does
// not panic; a profile it accepts saves and loads back to itself, and can
// be evaluated.
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
			r := Evaluate(o, p, Options{})
			if r.OK && !Known(r.Headroom) {
				t.Fatalf("evaluation ok at load %v with headroom %v", load, r.Headroom)
			}
		}
	})
}
