package openai

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestARequestIsTheOpenAIBodyOfItsAPI(t *testing.T) {
	for _, tc := range []struct {
		name     string
		req      Request
		wantPath string
		wantBody string
	}{
		{"a streamed completion", Request{Model: "m", Prompt: "hi there", MaxTokens: 8, IgnoreEOS: true, Stream: true}, "/v1/completions",
			`{"model":"m","prompt":"hi there","max_tokens":8,"stream":true,"stream_options":{"include_usage":true},"ignore_eos":true}`},
		{"a whole chat completion without a model", Request{Prompt: "hi", Chat: true, MaxTokens: 2}, "/v1/chat/completions",
			`{"messages":[{"role":"user","content":"hi"}],"max_tokens":2}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hreq, err := tc.req.HTTPRequest(context.Background(), "http://h:8000/v1/", "sk-1")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(hreq.Body)
			got := []string{hreq.Method, hreq.URL.Path, string(body), hreq.Header.Get("Content-Type"), hreq.Header.Get("Authorization"), hreq.Header.Get("Accept")}
			accept := map[bool]string{true: "text/event-stream"}[tc.req.Stream]
			want := []string{http.MethodPost, tc.wantPath, tc.wantBody, "application/json", "Bearer sk-1", accept}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAnAnswerThatIsNot200SaysItsStatusAndWhy(t *testing.T) {
	resp := &http.Response{StatusCode: 503, Body: io.NopCloser(strings.NewReader(" overloaded\n" + strings.Repeat("x", 1000)))}
	err := CheckStatus(resp)
	var herr *HTTPError
	if !errors.As(err, &herr) || herr.Code != 503 || len(herr.Body) != maxErrorBody-1 || !strings.HasPrefix(err.Error(), "HTTP 503: overloaded\n") {
		t.Errorf("error %v, want HTTP 503 with the body's first %d bytes, the leading space trimmed", err, maxErrorBody)
	}
	if err := CheckStatus(&http.Response{StatusCode: 200}); err != nil {
		t.Errorf("200 OK: %v", err)
	}
}

func TestAWholeAnswerIsReadForItsUsage(t *testing.T) {
	u, err := ReadUsage(strings.NewReader(`{"choices":[{"text":"a b"}],"usage":{"prompt_tokens":5,"completion_tokens":2}}`))
	if err != nil || u != (Usage{PromptTokens: 5, CompletionTokens: 2}) {
		t.Errorf("usage %+v, %v", u, err)
	}
	if _, err := ReadUsage(strings.NewReader(`{"choices":[]}`)); !errors.Is(err, ErrNoUsage) {
		t.Errorf("no usage: %v, want ErrNoUsage", err)
	}
	// A negative count made a sweep level's tokens/s and TPOT negative.
	_, err = ReadUsage(strings.NewReader(`{"choices":[],"usage":{"prompt_tokens":-1,"completion_tokens":2}}`))
	if want := "the response's usage counts fewer than zero tokens (prompt_tokens -1, completion_tokens 2)"; !errors.Is(err, ErrBadUsage) || err.Error() != want {
		t.Errorf("negative usage: %v, want %q", err, want)
	}
}
