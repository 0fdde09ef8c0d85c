package discovery

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kneewatch/kneewatch/knee"
)

// matchProfile picks the profile whose match describes a replica serving
// model on gpu with engine (gpu and engine may be unknown: ""). A profile
// fits when its model is the replica's, and its GPU and engine, where both
// sides name one, agree. Among fits, one that names the replica's known GPU
// beats one that names no GPU. It is an error when no profile fits, or when
// several fit equally well: guessing would compare the replica with another
// hardware's knee.
func matchProfile(profiles map[string]*knee.Profile, model, gpu, engine string) (string, error) {
	type fit struct {
		name  string
		score int
	}
	var fits []fit
	for name, p := range profiles {
		if p == nil || p.Match.Model != model {
			continue
		}
		score := 0
		switch {
		case p.Match.GPU == "":
		case gpu == "":
			// The replica's GPU is unknown: a GPU-specific profile might
			// be for other hardware, so it only fits when it is alone.
		case sameGPU(p.Match.GPU, gpu):
			score++
		default:
			continue
		}
		if p.Match.Engine != "" && engine != "" && !strings.EqualFold(p.Match.Engine, engine) {
			continue
		}
		fits = append(fits, fit{name, score})
	}
	if len(fits) == 0 {
		return "", fmt.Errorf("no profile matches model %q%s", model, onGPU(gpu))
	}
	best := slices.MaxFunc(fits, func(a, b fit) int { return a.score - b.score })
	var tied []string
	for _, f := range fits {
		if f.score == best.score {
			tied = append(tied, f.name)
		}
	}
	if len(tied) > 1 {
		slices.Sort(tied)
		return "", fmt.Errorf("profiles %s all match model %q%s; name one with the profile label or annotation", strings.Join(tied, ", "), model, onGPU(gpu))
	}
	return best.name, nil
}

func onGPU(gpu string) string {
	if gpu == "" {
		return " (GPU unknown)"
	}
	return fmt.Sprintf(" on GPU %q", gpu)
}

// sameGPU compares GPU model names across their spellings: DCGM's modelName
// ("NVIDIA H100 80GB HBM3") and GPU feature discovery's node label
// ("NVIDIA-H100-80GB-HBM3").
func sameGPU(a, b string) bool {
	norm := func(s string) string {
		return strings.Map(func(r rune) rune {
			switch r {
			case ' ', '_':
				return '-'
			}
			return r
		}, strings.ToLower(strings.TrimSpace(s)))
	}
	return norm(a) == norm(b)
}
