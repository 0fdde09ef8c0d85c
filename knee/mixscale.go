package knee

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// MixScale is one mix a mix model is measured at: the profile's mix with
// every prompt length multiplied by Prompt and every output by Output.
type MixScale struct {
	Prompt, Output float64
}

func (s MixScale) String() string {
	return strconv.FormatFloat(s.Prompt, 'g', -1, 64) + ":" + strconv.FormatFloat(s.Output, 'g', -1, 64)
}

// DefaultMixScales are the mixes a mix model is measured at besides the
// profile's own: a 3×3 grid of prompts and outputs ×1, ×2 and ×4, where
// requests grow and kneewatch must not read headroom that is not there,
// and three lighter mixes: prompts halved, outputs halved (which can lower
// the knee: a prefill then weighs on fewer output tokens) and both. Chosen
// by validation against the simulator's knees at mixes not swept (see
// knee.MixModel): without the lighter three the model's error at shorter
// outputs was 2–3×; with outputs at ×0.5 but no lighter prompts, the
// error elsewhere grew. Eleven extra searches: under Poisson arrivals about
// 11× the profile's own search time.
var DefaultMixScales = []MixScale{
	{1, 2}, {1, 4}, {2, 1}, {2, 2}, {2, 4}, {4, 1}, {4, 2}, {4, 4},
	{0.5, 1}, {1, 0.5}, {0.5, 0.5},
}

// QuickMixScales are the fewest mixes that fit a mix model in both
// directions: prompts ×2, outputs ×2, and both halved. Three extra
// searches, against DefaultMixScales' eleven. With fewer points the model
// fits fewer terms (see FitMixModel), and the traffic the detection bench
// shifts is read nearly as well: given a mix model fitted to the truth's
// knees at these mixes only (no speed model, the curve cut to the
// doubling), kneewatch read the test half's mix-ramp headroom error p95 at
// 0.139 and mix-step at 0.101, against 0.142 and 0.108 with the default
// grid and both models, and 0.398 and 0.399 with no models; on the tune
// half, where it was chosen, 0.263 and 0.294 against 0.253 and 0.195, and
// 0.320 and 0.334 with none. Adding prompts and outputs ×2 together broke
// the fit: an 8B/L4 summarize deployment then read its knee's rate as
// rising with longer prompts (2026-12-07). Further out it is the coarser
// model: at the simulator's held-out mixes (prompts or outputs ×3,
// blends, lighter mixes, minorities) its knee rate's p90 error was 66–92%
// where the default grid's was 36–58% (TestMixModelPredictsKneesAtMixes-
// ItWasNotFittedTo with KNEEWATCH_MIX_VALIDATION_SCALES=quick).
//
// Grids of four and five were measured against it and not kept
// (2026-12-07). At the simulator's held-out mixes, 4:1,1:4,2:2,0.5:0.5
// read the scaled mixes' knee rate nearly as well as the default grid
// (median / p90 error 11% / 48%) and the blends' p90 at 56%, but on the
// detection bench the halves disagreed: on the tune half the mix steps'
// headroom error p95 went 0.294 → 0.234 and the ramps' 0.263 → 0.259, on
// the test half 0.101 → 0.112 and 0.139 → 0.162 (kneewatch-bench
// --without-models-mix-scales). 2:1,1:2,2:2,0.5:0.5 read the held-out
// mixes about as quick does (scaled 23% / 77%, blends 16% / 61%), and
// 2:1,1:2,4:1,1:4,0.5:0.5, with more terms to fit, read the blends worse
// (28% / 85%).
var QuickMixScales = []MixScale{{2, 1}, {1, 2}, {0.5, 0.5}}

// ParseMixScales reads a comma-separated list of PROMPT:OUTPUT factors,
// e.g. "2:1,1:2,2:2"; "default" is DefaultMixScales and "quick"
// QuickMixScales. Factors must be finite and > 0, and no pair may repeat.
func ParseMixScales(s string) ([]MixScale, error) {
	switch strings.TrimSpace(s) {
	case "default":
		return append([]MixScale(nil), DefaultMixScales...), nil
	case "quick":
		return append([]MixScale(nil), QuickMixScales...), nil
	}
	var out []MixScale
	seen := map[MixScale]bool{}
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		ps, os, ok := strings.Cut(item, ":")
		if !ok {
			return nil, fmt.Errorf("mix scale %q: want PROMPT:OUTPUT factors, e.g. 2:1", item)
		}
		p, err := scaleFactor(ps)
		if err != nil {
			return nil, fmt.Errorf("mix scale %q: prompt factor: %w", item, err)
		}
		o, err := scaleFactor(os)
		if err != nil {
			return nil, fmt.Errorf("mix scale %q: output factor: %w", item, err)
		}
		m := MixScale{p, o}
		if seen[m] {
			return nil, fmt.Errorf("mix scale %q is listed twice", item)
		}
		seen[m] = true
		out = append(out, m)
	}
	return out, nil
}

// FormatMixScales is scales as ParseMixScales reads them: "2:1,1:2,0.5:0.5".
func FormatMixScales(scales []MixScale) string {
	parts := make([]string, len(scales))
	for i, m := range scales {
		parts[i] = m.String()
	}
	return strings.Join(parts, ",")
}

func scaleFactor(s string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || !(f > 0) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("want a finite number > 0, got %q", s)
	}
	return f, nil
}
