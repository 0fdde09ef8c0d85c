package sweep

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// sseServer answers every completion request with the given events, each
// written as "data: <event>\n\n", with contentType.
func sseServer(t testing.TB, contentType string, events ...string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		for _, e := range events {
			fmt.Fprintf(w, "data: %s\n\n", e)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

const (
	textChunk  = `{"choices":[{"text":" the","index":0}]}`
	chatRole   = `{"choices":[{"delta":{"role":"assistant"},"index":0}]}`
	chatChunk  = `{"choices":[{"delta":{"content":" the"},"index":0}]}`
	usageChunk = `{"choices":[],"usage":{"prompt_tokens":16,"completion_tokens":3,"total_tokens":19}}`
)

func TestClientReadsAStreamedCompletion(t *testing.T) {
	for _, tc := range []struct {
		name   string
		chat   bool
		events []string
	}{
		{"completions", false, []string{textChunk, textChunk, textChunk, usageChunk, "[DONE]"}},
		{"chat completions, role chunk first (no content, no TTFT)", true, []string{chatRole, chatChunk, chatChunk, chatChunk, usageChunk, "[DONE]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var path string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				path = r.URL.Path
				w.Header().Set("Content-Type", "text/event-stream")
				for _, e := range tc.events {
					fmt.Fprintf(w, "data: %s\n\n", e)
				}
			}))
			defer srv.Close()
			c := &Client{BaseURL: srv.URL + "/v1", Model: "m", Chat: tc.chat, Stream: true, Prompt: UniquePrompts()}
			res := c.Do(context.Background(), Request{PromptTokens: 16, MaxTokens: 3})
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			if want := map[bool]string{false: "/v1/completions", true: "/v1/chat/completions"}[tc.chat]; path != want {
				t.Errorf("posted to %s, want %s", path, want)
			}
			if res.PromptTokens != 16 || res.OutputTokens != 3 {
				t.Errorf("tokens %d/%d, want 16/3 from usage", res.PromptTokens, res.OutputTokens)
			}
			if res.TTFT <= 0 || res.TTFT > res.E2E {
				t.Errorf("TTFT %s, E2E %s: want 0 < TTFT ≤ E2E", res.TTFT, res.E2E)
			}
			if res.Request != (Request{PromptTokens: 16, MaxTokens: 3}) {
				t.Errorf("result carries request %+v", res.Request)
			}
		})
	}
}

func TestClientFailsClearlyOnBadStreams(t *testing.T) {
	for _, tc := range []struct {
		name        string
		contentType string
		events      []string
		want        error
		wantText    string
	}{
		{"a JSON answer to a streaming request", "application/json", []string{`{"usage":{}}`}, ErrNotStreaming, `Content-Type "application/json"`},
		{"no usage before [DONE]", "text/event-stream", []string{textChunk, "[DONE]"}, ErrNoUsage, ""},
		{"a stream cut before [DONE]", "text/event-stream", []string{textChunk, usageChunk}, ErrNoDone, ""},
		{"zero output tokens", "text/event-stream", []string{`{"choices":[],"usage":{"prompt_tokens":16,"completion_tokens":0}}`, "[DONE]"}, ErrNoTokens, ""},
		{"an error event mid-stream", "text/event-stream", []string{textChunk, `{"error":{"message":"engine died","code":500}}`, "[DONE]"}, nil, "error event in the stream: engine died"},
		{"a chunk that is not JSON", "text/event-stream", []string{"{nope"}, nil, "bad stream chunk"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := sseServer(t, tc.contentType, tc.events...)
			c := &Client{BaseURL: srv.URL, Model: "m", Stream: true, Prompt: UniquePrompts()}
			res := c.Do(context.Background(), Request{PromptTokens: 4, MaxTokens: 3})
			if res.Err == nil {
				t.Fatal("no error")
			}
			if tc.want != nil && !errors.Is(res.Err, tc.want) {
				t.Errorf("error %v, want %v", res.Err, tc.want)
			}
			if !strings.Contains(res.Err.Error(), tc.wantText) {
				t.Errorf("error %q does not say %q", res.Err, tc.wantText)
			}
		})
	}
}

func TestClientSendsTheAPIKeyAsABearerToken(t *testing.T) {
	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		http.Error(w, `{"error":{"message":"no"}}`, http.StatusUnauthorized)
	}))
	defer srv.Close()
	c := &Client{BaseURL: srv.URL, Model: "m", Stream: true, APIKey: "sk-test", Prompt: UniquePrompts()}
	res := c.Do(context.Background(), Request{PromptTokens: 4, MaxTokens: 3})
	var herr *HTTPError
	if !errors.As(res.Err, &herr) || herr.Code != http.StatusUnauthorized {
		t.Fatalf("error %v, want an HTTP 401", res.Err)
	}
	if auth != "Bearer sk-test" {
		t.Errorf("Authorization %q, want the bearer token", auth)
	}
}

func TestUniquePromptsHaveTheRequestedTokensAndDistinctStarts(t *testing.T) {
	prompt := UniquePrompts()
	other := UniquePrompts()
	seen := map[string]bool{}
	for _, n := range []int{2, 3, 16, 100, 2800} {
		for _, p := range []string{prompt(n), other(n)} {
			if got := countTokens(p); got != n {
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

func TestTPOTFollowsVLLMBench(t *testing.T) {
	r := Result{TTFT: 100 * time.Millisecond, E2E: 1100 * time.Millisecond, OutputTokens: 11}
	if got, ok := r.TPOT(); !ok || got != 100*time.Millisecond {
		t.Errorf("TPOT = %s, %v; want (1.1 s − 0.1 s) ÷ 10 = 100ms", got, ok)
	}
	r.OutputTokens = 1
	if _, ok := r.TPOT(); ok {
		t.Error("a single-token request has a TPOT")
	}
}
