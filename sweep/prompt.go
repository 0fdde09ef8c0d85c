package sweep

import (
	"crypto/rand"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/kneewatch/kneewatch/sim"
)

// UniquePrompts returns a concurrency-safe Client.Prompt that builds prompt
// text of n tokens by the simulator's word rule (sim.CountTokens: a word of
// up to four characters is one token) and starts every prompt with a word
// no other prompt of this or any other run shares.
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
		cost := sim.CountTokens(head)
		if cost >= n {
			// Too long for the budget: the unique part alone, cut to n
			// four-character tokens.
			return head[:min(len(head), 4*n)]
		}
		var b strings.Builder
		b.Grow(len(head) + 5*(n-cost))
		b.WriteString(head)
		b.WriteByte(' ')
		b.WriteString(sim.PromptOfTokens(n - cost))
		return b.String()
	}
}
