package sim

import (
	"strings"
	"unicode/utf8"
)

// The simulator has no tokenizer. It counts tokens with one deterministic
// rule that the sweep also uses to size its prompts, so a prompt built for n
// tokens is billed as n tokens:
//
//	every whitespace-separated word costs ceil(characters ÷ 4) tokens, at least 1.
//
// Plain English comes out near real BPE tokenizers (about 1.3 tokens per
// word), and long unbroken strings (base64, code) are not undercounted to one
// token.
const charsPerToken = 4

// CountTokens is the simulator's token count of s (see the rule above).
// Whitespace alone counts as no tokens.
func CountTokens(s string) int {
	n := 0
	for _, w := range strings.Fields(s) {
		n += (utf8.RuneCountInString(w) + charsPerToken - 1) / charsPerToken
	}
	return n
}

// fillerWords are short words (each one token under CountTokens) used for
// generated prompts and for the text of output tokens.
var fillerWords = [...]string{
	"the", "knee", "of", "a", "gpu", "is", "the", "last", "load", "at",
	"that", "it", "can", "take", "with", "slo",
}

// tokenWord is the text of the i-th output token, one CountTokens token.
// Output tokens are words with a leading space, so the concatenated output
// text counts as exactly as many tokens as were generated.
func tokenWord(i int) string {
	return " " + fillerWords[i%len(fillerWords)]
}

// PromptOfTokens returns a prompt that CountTokens counts as exactly n tokens
// (the empty string for n ≤ 0).
func PromptOfTokens(n int) string {
	if n <= 0 {
		return ""
	}
	var b strings.Builder
	b.Grow(n * 5)
	for i := range n {
		w := tokenWord(i)
		if i == 0 {
			w = w[1:]
		}
		b.WriteString(w)
	}
	return b.String()
}
