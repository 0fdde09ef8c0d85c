package probe

import (
	"math"
	"time"
)

// The probe budget. Each replica's probe output tokens over a trailing span
// may not exceed cap × knee output tokens/s × span. A probe is charged its
// max_tokens when it is sent (with ignore_eos it generates them all) and
// the tokens it received once it ends; a probe that would overdraw is
// skipped with reason budget. kneewatch_probe_load_ratio is the same sum ÷
// span ÷ knee tokens/s, so it can never read above the cap: every probe
// started in the span passed the check counting all before it.

// budgetSpan is the span the budget and the load ratio are measured over:
// the summary span, stretched when the knee is so small that one probe's
// tokens need longer to fit (the replica is then probed less often).
func budgetSpan(summary time.Duration, maxTokens int, loadCap, kneeTPS float64) time.Duration {
	need := time.Duration(math.Ceil(float64(maxTokens) / (loadCap * kneeTPS) * float64(time.Second)))
	return max(summary, need)
}

// reserve charges a probe of maxTokens sent at now against the budget and
// records it; it returns the record's id, or false (counted as skipped for
// budget) when the probe would overdraw or there is no knee to budget against.
func (s *replicaState) reserve(now time.Time, maxTokens int, loadCap float64, summary time.Duration) (uint64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.target.kneeTPS()
	if !ok {
		s.skipped[ReasonBudget]++
		return 0, false
	}
	span := budgetSpan(summary, maxTokens, loadCap, k)
	s.trimLocked(now, span)
	if float64(s.tokensSinceLocked(now.Add(-span))+maxTokens) > loadCap*k*span.Seconds() {
		s.skipped[ReasonBudget]++
		return 0, false
	}
	s.nextID++
	s.records = append(s.records, record{id: s.nextID, start: now, tokens: maxTokens, ttft: math.NaN(), tpot: math.NaN()})
	return s.nextID, true
}

// loadRatioLocked is the probe output tokens of the probes started in the
// budget span ÷ the span ÷ the knee's output tokens/s; false without a knee.
func (s *replicaState) loadRatioLocked(now time.Time, maxTokens int, loadCap float64, summary time.Duration) (float64, bool) {
	k, ok := s.target.kneeTPS()
	if !ok {
		return 0, false
	}
	span := budgetSpan(summary, maxTokens, loadCap, k)
	return float64(s.tokensSinceLocked(now.Add(-span))) / span.Seconds() / k, true
}

// tokensSinceLocked sums the tokens of the probes started after since.
func (s *replicaState) tokensSinceLocked(since time.Time) int {
	n := 0
	for _, r := range s.records {
		if r.start.After(since) {
			n += r.tokens
		}
	}
	return n
}

// trimLocked forgets finished probes that started before now − keep, and
// keeps the ones still in flight.
func (s *replicaState) trimLocked(now time.Time, keep time.Duration) {
	cut := now.Add(-keep)
	i := 0
	for i < len(s.records) && s.records[i].start.Before(cut) && s.records[i].finished {
		i++
	}
	s.records = s.records[i:]
}
