package probe

import "strings"

// promptWords are short common English words: BPE tokenizers (Llama, GPT,
// Qwen) encode each, with its leading space, as one token, so a prompt of n
// words is about n tokens (a chat template adds its own few).
//
// This is not the token-word rule (workload.CountTokens), which sizes the
// sweep's and the simulator's prompts exactly: under it "probe" and "watch"
// cost two tokens each. The probe needs a prompt that is about n tokens on
// a real tokenizer and the same text on every probe, not an exact count
// under the simulator's rule, so it keeps its own words; the server's
// usage gives the real count.
var promptWords = [...]string{
	"this", "is", "a", "tiny", "probe", "from", "the", "load", "watch",
	"so", "say", "any", "word", "you", "like", "now",
}

// Prompt returns the probe prompt of about n tokens (at least one word).
// It is the same every time, so probes of one size are comparable.
func Prompt(n int) string {
	n = max(n, 1)
	var b strings.Builder
	b.Grow(n * 5)
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(promptWords[i%len(promptWords)])
	}
	return b.String()
}
