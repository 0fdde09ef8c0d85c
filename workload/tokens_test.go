package workload

import (
	"strings"
	"testing"
)

func TestCountTokens(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want int
	}{
		{"nothing is no tokens", "", 0},
		{"whitespace is no tokens", " \n\t ", 0},
		{"a short word is one token", "knee", 1},
		{"a longer word costs one token per 4 characters", "throughput", 3},
		{"words add up", "the knee of a gpu", 5},
		{"characters, not bytes, count", "ñandú", 2},
		{"an unbroken string is not one token", strings.Repeat("x", 40), 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CountTokens(tt.in); got != tt.want {
				t.Errorf("CountTokens(%q) = %d, want %d", tt.in, got, tt.want)
			}
		})
	}
}

func TestPromptOfTokensCountsBackToN(t *testing.T) {
	for _, n := range []int{0, 1, 2, 15, 16, 17, 100, 4096} {
		if got := CountTokens(PromptOfTokens(n)); got != n {
			t.Errorf("CountTokens(PromptOfTokens(%d)) = %d", n, got)
		}
	}
	if PromptOfTokens(-3) != "" {
		t.Error("PromptOfTokens of a negative count should be empty")
	}
}

func TestEveryOutputTokenIsOneToken(t *testing.T) {
	var all strings.Builder
	for i := range 2 * len(fillerWords) {
		w := TokenWord(i)
		if CountTokens(w) != 1 || !strings.HasPrefix(w, " ") {
			t.Errorf("TokenWord(%d) = %q: want one token with a leading space", i, w)
		}
		all.WriteString(w)
	}
	if got := CountTokens(all.String()); got != 2*len(fillerWords) {
		t.Errorf("concatenated output counts %d tokens, want %d", got, 2*len(fillerWords))
	}
}

func TestUniquePromptsHaveTheRequestedTokensAndDistinctStarts(t *testing.T) {
	prompt := UniquePrompts()
	other := UniquePrompts()
	seen := map[string]bool{}
	for _, n := range []int{2, 3, 16, 100, 2800} {
		for _, p := range []string{prompt(n), other(n)} {
			if got := CountTokens(p); got != n {
				t.Errorf("prompt of %d tokens counts %d under the word rule", n, got)
			}
			first := strings.Fields(p)[0]
			if seen[first] {
				t.Errorf("first word %q repeats: prompts would share a cached prefix", first)
			}
			seen[first] = true
		}
	}
	if prompt(0) != "" {
		t.Error("a 0-token prompt is not empty")
	}
}
