package collector

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// vllmMixScrape is a vLLM exposition whose counters and per-request token
// histograms disagree, as they do while a backlog is admitted: finished
// requests (and the histograms, observed as each finishes) against prompt
// and output tokens counted as prefills and decode steps run.
func vllmMixScrape(finished, prompt, output, histPrompt, histOutput float64, withOutputHistogram bool) string {
	text := fmt.Sprintf(`# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} 20
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name="m"} 0
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{model_name="m"} %[2]g
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{model_name="m"} %[3]g
# TYPE vllm:request_success_total counter
vllm:request_success_total{model_name="m",finished_reason="stop"} %[1]g
# TYPE vllm:request_prompt_tokens histogram
vllm:request_prompt_tokens_bucket{model_name="m",le="+Inf"} %[1]g
vllm:request_prompt_tokens_sum{model_name="m"} %[4]g
vllm:request_prompt_tokens_count{model_name="m"} %[1]g
`, finished, prompt, output, histPrompt)
	if withOutputHistogram {
		text += fmt.Sprintf(`# TYPE vllm:request_generation_tokens histogram
vllm:request_generation_tokens_bucket{model_name="m",le="+Inf"} %[1]g
vllm:request_generation_tokens_sum{model_name="m"} %[2]g
vllm:request_generation_tokens_count{model_name="m"} %[1]g
`, finished, histOutput)
	}
	return text
}

// TestTheMixIsThatOfTheRequestsThatFinished: between two scrapes 10
// requests of 1000 prompt and 100 output tokens finished, while 20 more
// were admitted from the queue (their 1000-token prefills done, 5 tokens
// each decoded). The counters' ratio reads a mean prompt of 3000 and
// output of 110; the histograms, observed as each request finishes, read
// the 1000 and 100 the finished requests had. Without the output
// histogram the mix is the counters' whole, never a mean of one source
// over the other.
func TestTheMixIsThatOfTheRequestsThatFinished(t *testing.T) {
	observe := func(withOutputHistogram bool) (prompt, output, requests float64) {
		t.Helper()
		a := normalizeText(t, vllmMixScrape(100, 100*1000, 100*100, 100*1000, 100*100, withOutputHistogram), Options{})
		b := normalizeText(t, vllmMixScrape(110, 130*1000, 110*100+20*5, 110*1000, 110*100, withOutputHistogram), Options{})
		a.Time, b.Time = sec(10), sec(60)
		w := mustWindow(t, time.Minute, 10, a, b)
		o := Observe(w, sec(60), nil)
		return o.MeanPromptTokens, o.MeanOutputTokens, o.MixRequests
	}
	prompt, output, n := observe(true)
	if !(math.Abs(prompt-1000) < 1e-9 && math.Abs(output-100) < 1e-9) {
		t.Errorf("mean prompt, output = %g, %g; want the finished requests' 1000, 100", prompt, output)
	}
	if !(n >= 10) {
		t.Errorf("mix requests = %g, want the 10 that finished (or more, extrapolated to the window's edges)", n)
	}
	prompt, output, _ = observe(false)
	if !(math.Abs(prompt-3000) < 1e-9 && math.Abs(output-110) < 1e-9) {
		t.Errorf("without the output histogram: mean prompt, output = %g, %g; want the counters' 3000, 110", prompt, output)
	}
}

func TestMixHistoryStartsOverWhenTheMixChangesSource(t *testing.T) {
	var h MixHistory
	for s := 0.0; s <= 120; s += 15 {
		h.Add(mixSnap(s, s, 1000, 100))
	}
	// The engine now exports the token histograms: their totals are not
	// the counters', so no span reaches across the change.
	withHist := snap(135, nil, map[Signal]float64{
		SignalRequestsFinished: 135, SignalPromptTokens: 135 * 1000, SignalGenerationTokens: 135 * 100,
		SignalMixRequests: 5, SignalMixPromptTokens: 5 * 1000, SignalMixOutputTokens: 5 * 100,
	}, nil)
	h.Add(withHist)
	if sp, ok := h.Span(1, 1); ok {
		t.Errorf("Span across the change of source = %+v, want none", sp)
	}
}
