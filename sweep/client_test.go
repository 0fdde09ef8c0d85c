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

	"github.com/kneewatch/kneewatch/config"
	"github.com/kneewatch/kneewatch/openai"
	"github.com/kneewatch/kneewatch/probe"
	"github.com/kneewatch/kneewatch/workload"
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
			c := &Client{BaseURL: srv.URL + "/v1", Model: "m", Chat: tc.chat, Stream: true, Prompt: workload.UniquePrompts()}
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
		{"a JSON answer to a streaming request", "application/json", []string{`{"usage":{}}`}, openai.ErrNotStreaming, `Content-Type "application/json"`},
		{"no usage before [DONE]", "text/event-stream", []string{textChunk, "[DONE]"}, openai.ErrNoUsage, ""},
		{"a stream cut before [DONE]", "text/event-stream", []string{textChunk, usageChunk}, openai.ErrNoDone, ""},
		{"zero output tokens", "text/event-stream", []string{`{"choices":[],"usage":{"prompt_tokens":16,"completion_tokens":0}}`, "[DONE]"}, ErrNoTokens, ""},
		{"a usage that counts fewer than zero tokens", "text/event-stream", []string{textChunk, `{"choices":[],"usage":{"prompt_tokens":16,"completion_tokens":-3}}`, "[DONE]"},
			openai.ErrBadUsage, "(prompt_tokens 16, completion_tokens -3)"},
		{"an error event mid-stream", "text/event-stream", []string{textChunk, `{"error":{"message":"engine died","code":500}}`, "[DONE]"}, nil, "error event in the stream: engine died"},
		{"a chunk that is not JSON", "text/event-stream", []string{"{nope"}, nil, "stream chunk 1 is not JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := sseServer(t, tc.contentType, tc.events...)
			c := &Client{BaseURL: srv.URL, Model: "m", Stream: true, Prompt: workload.UniquePrompts()}
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
	c := &Client{BaseURL: srv.URL, Model: "m", Stream: true, APIKey: "sk-test", Prompt: workload.UniquePrompts()}
	res := c.Do(context.Background(), Request{PromptTokens: 4, MaxTokens: 3})
	var herr *openai.HTTPError
	if !errors.As(res.Err, &herr) || herr.Code != http.StatusUnauthorized {
		t.Fatalf("error %v, want an HTTP 401", res.Err)
	}
	if auth != "Bearer sk-test" {
		t.Errorf("Authorization %q, want the bearer token", auth)
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

// TestTheProbeAndTheSweepStampTTFTAtTheFirstReasoningToken runs both
// clients against one reasoning model's stream: the reasoning arrives, a
// pause, then the answer. Both stamp TTFT at the reasoning, so each sees
// about the pause between its first token and the end (a little less when
// the client reads the reasoning late on a busy machine: half of it is
// asked); stamped at the answer instead, the two would be a few
// microseconds apart.
func TestTheProbeAndTheSweepStampTTFTAtTheFirstReasoningToken(t *testing.T) {
	const pause = 300 * time.Millisecond
	for _, field := range []string{"reasoning_content", "reasoning"} {
		t.Run(field, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				for _, e := range []string{chatRole, `{"choices":[{"delta":{"` + field + `":"Let me think."},"index":0}]}`} {
					fmt.Fprintf(w, "data: %s\n\n", e)
				}
				w.(http.Flusher).Flush()
				time.Sleep(pause)
				for _, e := range []string{chatChunk, chatChunk, usageChunk, "[DONE]"} {
					fmt.Fprintf(w, "data: %s\n\n", e)
				}
			}))
			defer srv.Close()

			swept := (&Client{BaseURL: srv.URL + "/v1", Model: "m", Chat: true, Stream: true, Prompt: workload.UniquePrompts()}).
				Do(context.Background(), Request{PromptTokens: 16, MaxTokens: 3})
			probed := (&probe.Client{API: config.ProbeAPIChat, PromptTokens: 16, MaxTokens: 3, Timeout: 10 * time.Second}).
				Probe(context.Background(), probe.Request{BaseURL: srv.URL + "/v1", Model: "m"})
			if swept.Err != nil || !probed.OK() {
				t.Fatalf("sweep: %v; probe: %s %v", swept.Err, probed.Class, probed.Err)
			}
			for who, r := range map[string]struct{ ttft, e2e time.Duration }{
				"sweep": {swept.TTFT, swept.E2E},
				"probe": {probed.TTFT, probed.E2E},
			} {
				if r.ttft <= 0 || r.e2e-r.ttft < pause/2 {
					t.Errorf("%s: TTFT %s of E2E %s: the first token was stamped after the pause, at the answer, not at the reasoning", who, r.ttft, r.e2e)
				}
			}
		})
	}
}
