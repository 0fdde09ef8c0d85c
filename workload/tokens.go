package workload

import (
	"crypto/rand"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode/utf8"
)

// The token-word rule. The simulator has no tokenizer: it bills tokens by
// one deterministic rule, and the prompts the sweep, the demo and the bench
// send are sized by the same rule, so a prompt built for n tokens is billed
// as n tokens:
//
//	every whitespace-separated word costs ceil(characters ÷ 4) tokens, at least 1.
//
// Plain English comes out near real BPE tokenizers (about 1.3 tokens per
// word), and long unbroken strings (base64, code) are not undercounted to one
// token. It lives here, not in the simulator, because the product's sweep
// builds its prompts by it too.
const charsPerToken = 4

// CountTokens is the token-word rule's count of s (see the rule above).
// Whitespace alone counts as no tokens.
func CountTokens(s string) int {
	n := 0
	for _, w := range strings.Fields(s) {
		n += (utf8.RuneCountInString(w) + charsPerToken - 1) / charsPerToken
	}
	return n
}

// fillerWords are short words (each one token under CountTokens) used for
// generated prompts and for the text of the simulator's output tokens.
var fillerWords = [...]string{
	"the", "knee", "of", "a", "gpu", "is", "the", "last", "load", "at",
	"that", "it", "can", "take", "with", "slo",
}

// TokenWord is the text of the i-th output token, one CountTokens token.
// Output tokens are words with a leading space, so the concatenated output
// text counts as exactly as many tokens as were generated.
func TokenWord(i int) string {
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
		w := TokenWord(i)
		if i == 0 {
			w = w[1:]
		}
		b.WriteString(w)
	}
	return b.String()
}

// UniquePrompts returns a concurrency-safe prompt builder that builds prompt
// text of n tokens by the token-word rule (a word of up to four characters
// is one token) and starts every prompt with a word no other prompt of this
// or any other run shares.
//
// The unique first word matters on real engines: vLLM and SGLang cache KV
// blocks by prefix, so prompts that all began with the same filler would be
// prefilled once and then served from cache, and the sweep would measure a
// knee no real workload reaches. A differing first token changes the hash
// of every block after it.
//
// Real tokenizers count the same text differently (the filler words are
// about one BPE token each, the unique word two or three), which is why the
// sweep takes every token count from the response's usage, never from here.
func UniquePrompts() func(n int) string {
	var run [3]byte
	_, _ = rand.Read(run[:]) // never fails (crypto/rand panics rather than return an error)
	runID := strconv.FormatUint(uint64(run[0])<<16|uint64(run[1])<<8|uint64(run[2]), 36)
	var seq atomic.Uint64
	return func(n int) string {
		if n <= 0 {
			return ""
		}
		// "r<run>-<seq>" is one word; its token count under the word rule
		// is ceil(len/4), which the filler makes up to n.
		head := "r" + runID + "-" + strconv.FormatUint(seq.Add(1), 36)
		cost := CountTokens(head)
		if cost >= n {
			// Too long for the budget: the unique part alone, cut to n
			// four-character tokens.
			return head[:min(len(head), 4*n)]
		}
		var b strings.Builder
		b.Grow(len(head) + 5*(n-cost))
		b.WriteString(head)
		b.WriteByte(' ')
		b.WriteString(PromptOfTokens(n - cost))
		return b.String()
	}
}
