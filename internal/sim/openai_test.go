package sim

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/kneewatch/kneewatch/workload"
)

func openAIClient(url string) openai.Client {
	return openai.NewClient(option.WithBaseURL(url+"/v1/"), option.WithAPIKey("sim"), option.WithMaxRetries(0))
}

func TestOpenAIClientStreamsACompletionWithExactTokensAndUsage(t *testing.T) {
	url, _ := startReplica(t, FleetConfig{Speed: 10})
	client := openAIClient(url)
	const promptTokens, maxTokens = 37, 23
	stream := client.Completions.NewStreaming(context.Background(), openai.CompletionNewParams{
		Model:         openai.CompletionNewParamsModel(testModel),
		Prompt:        openai.CompletionNewParamsPromptUnion{OfString: openai.String(workload.PromptOfTokens(promptTokens))},
		MaxTokens:     openai.Int(maxTokens),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	var text strings.Builder
	chunks, finish := 0, ""
	var got openai.CompletionUsage
	for stream.Next() {
		c := stream.Current()
		for _, ch := range c.Choices {
			text.WriteString(ch.Text)
			chunks++
			if ch.FinishReason != "" {
				finish = string(ch.FinishReason)
			}
		}
		if c.Usage.TotalTokens > 0 {
			got = c.Usage
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if chunks != maxTokens {
		t.Errorf("got %d token chunks, want %d", chunks, maxTokens)
	}
	if n := workload.CountTokens(text.String()); n != maxTokens {
		t.Errorf("streamed text counts %d tokens, want %d: %q", n, maxTokens, text.String())
	}
	if finish != "length" {
		t.Errorf("finish_reason %q, want length", finish)
	}
	want := [3]int64{promptTokens, maxTokens, promptTokens + maxTokens}
	if diff := cmp.Diff(want, [3]int64{got.PromptTokens, got.CompletionTokens, got.TotalTokens}); diff != "" {
		t.Errorf("usage (prompt, completion, total) (-want +got):\n%s", diff)
	}
}

func TestOpenAIClientStreamsAChatCompletionWithExactTokensAndUsage(t *testing.T) {
	url, _ := startReplica(t, FleetConfig{Speed: 10})
	client := openAIClient(url)
	const maxTokens = 17
	system, user := "You are terse.", workload.PromptOfTokens(50)
	wantPrompt := int64(workload.CountTokens(system) + workload.CountTokens(user))
	stream := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:               testModel,
		Messages:            []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(system), openai.UserMessage(user)},
		MaxCompletionTokens: openai.Int(maxTokens),
		StreamOptions:       openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	acc := openai.ChatCompletionAccumulator{}
	contentChunks := 0
	for stream.Next() {
		c := stream.Current()
		acc.AddChunk(c)
		for _, ch := range c.Choices {
			if ch.Delta.Content != "" {
				contentChunks++
			}
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if contentChunks != maxTokens {
		t.Errorf("got %d content chunks, want %d", contentChunks, maxTokens)
	}
	if len(acc.Choices) != 1 {
		t.Fatalf("accumulated %d choices, want 1", len(acc.Choices))
	}
	msg := acc.Choices[0].Message
	if msg.Role != "assistant" || workload.CountTokens(msg.Content) != maxTokens {
		t.Errorf("message role %q with %d tokens, want assistant with %d", msg.Role, workload.CountTokens(msg.Content), maxTokens)
	}
	if acc.Choices[0].FinishReason != "length" {
		t.Errorf("finish_reason %q, want length", acc.Choices[0].FinishReason)
	}
	u := acc.Usage
	want := [3]int64{wantPrompt, maxTokens, wantPrompt + maxTokens}
	if diff := cmp.Diff(want, [3]int64{u.PromptTokens, u.CompletionTokens, u.TotalTokens}); diff != "" {
		t.Errorf("usage (prompt, completion, total) (-want +got):\n%s", diff)
	}
}

func TestOpenAIClientGetsWholeCompletionsWithoutStreaming(t *testing.T) {
	url, _ := startReplica(t, FleetConfig{Speed: 20})
	client := openAIClient(url)
	ctx := context.Background()

	c, err := client.Completions.New(ctx, openai.CompletionNewParams{
		Model:     openai.CompletionNewParamsModel(testModel),
		Prompt:    openai.CompletionNewParamsPromptUnion{OfArrayOfTokens: make([]int64, 64)},
		MaxTokens: openai.Int(9),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Choices) != 1 || workload.CountTokens(c.Choices[0].Text) != 9 || c.Usage.PromptTokens != 64 || c.Usage.CompletionTokens != 9 {
		t.Errorf("completion: %d choices, text %q, usage %+v; want 1 choice of 9 tokens, 64 prompt tokens", len(c.Choices), c.Choices[0].Text, c.Usage)
	}

	cc, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:     testModel,
		Messages:  []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi you")},
		MaxTokens: openai.Int(5),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(cc.Choices) != 1 || workload.CountTokens(cc.Choices[0].Message.Content) != 5 || cc.Usage.PromptTokens != 2 || cc.Usage.TotalTokens != 7 {
		t.Errorf("chat: %d choices, usage (%d, %d, %d); want 1 choice of 5 tokens, usage (2, 5, 7)",
			len(cc.Choices), cc.Usage.PromptTokens, cc.Usage.CompletionTokens, cc.Usage.TotalTokens)
	}
}

func TestOpenAIClientListsTheServedModel(t *testing.T) {
	url, _ := startReplica(t, FleetConfig{Model: "my-llama"})
	client := openAIClient(url)
	page, err := client.Models.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	if diff := cmp.Diff([]string{"my-llama"}, ids); diff != "" {
		t.Errorf("models (-want +got):\n%s", diff)
	}
}

func TestBadRequestsGetClearOpenAIErrors(t *testing.T) {
	url, _ := startReplica(t, FleetConfig{Speed: 50})
	long := h100(t).MaxModelLen
	tests := []struct {
		name       string
		path       string
		body       any
		wantStatus int
		wantParam  string
		wantInMsg  string
	}{
		{"a wrong model name is 404", "/v1/completions",
			map[string]any{"model": "gpt-4", "prompt": "hi", "max_tokens": 2}, 404, "model", "gpt-4"},
		{"a body that is not JSON is 400", "/v1/completions", "{not json", 400, "", "invalid JSON"},
		{"a wrongly typed field is 400", "/v1/completions",
			map[string]any{"model": testModel, "prompt": "hi", "max_tokens": "many"}, 400, "", "max_tokens"},
		{"max_tokens below 1 is 400", "/v1/completions",
			map[string]any{"model": testModel, "prompt": "hi", "max_tokens": 0}, 400, "max_tokens", "at least 1"},
		{"an empty prompt is 400", "/v1/completions",
			map[string]any{"model": testModel, "prompt": "   ", "max_tokens": 2}, 400, "prompt", "no tokens"},
		{"a missing prompt is 400", "/v1/completions",
			map[string]any{"model": testModel, "max_tokens": 2}, 400, "prompt", "prompt is required"},
		{"a batch of prompts is 400", "/v1/completions",
			map[string]any{"model": testModel, "prompt": []string{"a", "b"}, "max_tokens": 2}, 400, "prompt", "batch"},
		{"n above 1 is 400", "/v1/completions",
			map[string]any{"model": testModel, "prompt": "hi", "max_tokens": 2, "n": 3}, 400, "n", "n must be 1"},
		{"a request past max_model_len is 400", "/v1/completions",
			map[string]any{"model": testModel, "prompt": "hi", "max_tokens": long}, 400, "max_tokens", "maximum context length"},
		{"chat without messages is 400", "/v1/chat/completions",
			map[string]any{"model": testModel, "messages": []any{}}, 400, "messages", "must not be empty"},
		{"chat content of the wrong type is 400", "/v1/chat/completions",
			map[string]any{"model": testModel, "messages": []any{map[string]any{"role": "user", "content": 7}}}, 400, "messages", "messages[0].content"},
		{"chat max_completion_tokens below 1 is 400", "/v1/chat/completions",
			map[string]any{"model": testModel, "messages": []any{map[string]any{"role": "user", "content": "hi"}}, "max_completion_tokens": -1},
			400, "max_completion_tokens", "at least 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got struct {
				Error apiError `json:"error"`
			}
			status := doJSON(t, http.MethodPost, url+tt.path, tt.body, &got)
			if status != tt.wantStatus || got.Error.Code != tt.wantStatus {
				t.Errorf("status %d, error code %d; want %d", status, got.Error.Code, tt.wantStatus)
			}
			param := ""
			if got.Error.Param != nil {
				param = *got.Error.Param
			}
			if param != tt.wantParam {
				t.Errorf("param %q, want %q", param, tt.wantParam)
			}
			if !strings.Contains(got.Error.Message, tt.wantInMsg) {
				t.Errorf("message %q does not mention %q", got.Error.Message, tt.wantInMsg)
			}
		})
	}
}

func TestHealthAnswers200(t *testing.T) {
	url, _ := startReplica(t, FleetConfig{})
	if status := doJSON(t, http.MethodGet, url+"/health", nil, nil); status != http.StatusOK {
		t.Errorf("GET /health: %d, want 200", status)
	}
}

func TestTokensStreamAtTheTimesTheEngineProducesThem(t *testing.T) {
	// At speed 1 the default preset decodes one token per engine step (the
	// step of a lone request, from the preset's cost model: ~5.6 ms for an
	// 8B model on an H100), so 30 tokens must take 29 such steps and arrive
	// spread out, not in one burst.
	if raceEnabled {
		t.Skip("wall-clock precision test; the race detector slows the driver too much")
	}
	url, rep := startReplica(t, FleetConfig{})
	step, ok := runAlone(t, rep.Preset(), 100, 30).TPOT()
	if !ok {
		t.Fatal("no TPOT for a lone 30-token request")
	}
	res, err := streamSSE(context.Background(), http.DefaultClient, url+"/v1/completions", completionBody(100, 30, true))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.arrivals) != 30 {
		t.Fatalf("got %d tokens, want 30", len(res.arrivals))
	}
	span := res.arrivals[29].Sub(res.arrivals[0])
	if want := 29 * step; span < want*7/10 || span > want*2 {
		t.Errorf("29 inter-token gaps took %v, want about 29 × %v = %v", span, step, want)
	}
	// After a scheduling hiccup the driver delivers overdue tokens back to
	// back (up to maxCatchUp's worth), so allow a few short gaps, not a burst.
	var gaps []time.Duration
	short := 0
	for i := 1; i < len(res.arrivals); i++ {
		gap := res.arrivals[i].Sub(res.arrivals[i-1])
		gaps = append(gaps, gap)
		if gap < step/3 {
			short++
		}
	}
	slices.Sort(gaps)
	if median := gaps[len(gaps)/2]; median < step*7/10 || median > step*16/10 {
		t.Errorf("median inter-token gap %v, want the engine's %v", median, step)
	}
	if short > len(gaps)/5 {
		t.Errorf("%d of %d inter-token gaps were under %v; tokens came in bursts", short, len(gaps), step/3)
	}
}

func TestClientDisconnectAbortsTheRequestInTheEngine(t *testing.T) {
	url, rep := startReplica(t, FleetConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		streamSSE(ctx, http.DefaultClient, url+"/v1/completions", completionBody(10, 5000, true))
	}()
	eventually(t, 2*time.Second, "the request never started running", func() bool { return rep.State().Running == 1 })
	cancel()
	<-done
	eventually(t, 2*time.Second, "the engine still runs the request after the client left", func() bool {
		s := rep.State()
		return s.Running == 0 && s.Waiting == 0 && s.Totals.Aborted == 1
	})
	mfs := scrape(t, url+"/metrics")
	if got := value(t, mfs, "vllm:request_success_total", map[string]string{"finished_reason": "abort"}); got != 1 {
		t.Errorf("request_success_total{finished_reason=abort} = %v, want 1", got)
	}
}
