// Package openai is kneewatch's one client of the OpenAI-compatible
// completion APIs that serving engines expose (vLLM, SGLang, TGI, TRT-LLM,
// the simulator): the request a completion or chat completion sends, the
// answer that is not 200 OK, and the reader of a streamed answer that says
// which server-sent events carry output tokens.
//
// It holds the wire format and the rules every caller must agree on, above
// all which chunk is the first token (see Chunk.Token), and no policy: the
// probe classifies failures and times every token chunk, the sweep stamps
// TTFT and takes the usage, each on top of this package.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Request is one completion to send. Prompt is the text as the caller built
// it; the API decides where it goes (prompt, or one user message).
type Request struct {
	Model     string // sent as "model"; empty leaves it out (the server's only model)
	Prompt    string
	Chat      bool // POST /chat/completions with one user message instead of /completions
	MaxTokens int
	// IgnoreEOS sends vLLM's ignore_eos, so the server generates MaxTokens
	// whatever the model would say.
	IgnoreEOS bool
	// Stream asks for server-sent events with a usage chunk at the end
	// (stream_options.include_usage), so TTFT can be measured and the token
	// counts still arrive.
	Stream bool
}

// Path is the endpoint under the API base: /completions or /chat/completions.
func (r Request) Path() string {
	if r.Chat {
		return "/chat/completions"
	}
	return "/completions"
}

type body struct {
	Model         string         `json:"model,omitempty"`
	Prompt        string         `json:"prompt,omitempty"`
	Messages      []message      `json:"messages,omitempty"`
	MaxTokens     int            `json:"max_tokens"`
	Stream        bool           `json:"stream,omitempty"`
	StreamOptions *streamOptions `json:"stream_options,omitempty"`
	IgnoreEOS     bool           `json:"ignore_eos,omitempty"`
}

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// Body is the request's JSON.
func (r Request) Body() ([]byte, error) {
	b := body{Model: r.Model, MaxTokens: r.MaxTokens, IgnoreEOS: r.IgnoreEOS}
	if r.Chat {
		b.Messages = []message{{Role: "user", Content: r.Prompt}}
	} else {
		b.Prompt = r.Prompt
	}
	if r.Stream {
		b.Stream = true
		b.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	return json.Marshal(b)
}

// HTTPRequest is the POST of r to baseURL (the API base, e.g.
// http://h:8000/v1, with or without a trailing slash). apiKey, when set, is
// sent as a bearer token.
func (r Request) HTTPRequest(ctx context.Context, baseURL, apiKey string) (*http.Request, error) {
	payload, err := r.Body()
	if err != nil {
		return nil, err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(baseURL, "/")+r.Path(), bytes.NewReader(payload))
	if err != nil {
		return nil, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	if r.Stream {
		hreq.Header.Set("Accept", "text/event-stream")
	}
	if apiKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+apiKey)
	}
	return hreq, nil
}

// Usage is the token count a response or its last stream chunk reports.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// ErrNoUsage means a response carries no usage (token counts).
var ErrNoUsage = errors.New("the response carries no usage (token counts)")

// ReadUsage reads a whole (not streamed) completion and returns its usage.
func ReadUsage(r io.Reader) (Usage, error) {
	var full struct {
		Usage *Usage `json:"usage"`
	}
	if err := json.NewDecoder(r).Decode(&full); err != nil {
		return Usage{}, fmt.Errorf("bad response body: %w", err)
	}
	if full.Usage == nil {
		return Usage{}, ErrNoUsage
	}
	if err := full.Usage.Check(); err != nil {
		return Usage{}, err
	}
	return *full.Usage, nil
}

// ErrBadUsage means a response's usage counts fewer than zero tokens: a
// server that says so is not counting, and every rate and TPOT taken from
// its counts would be wrong.
var ErrBadUsage = errors.New("the response's usage counts fewer than zero tokens")

// Check returns an error wrapping ErrBadUsage when u counts fewer than zero
// tokens. ReadUsage checks; a Stream passes usage on as the server sent it
// (the probe, which counts the chunks itself, only refines its count with
// a usage that is positive), so a caller that takes its counts from a
// stream's usage checks it.
func (u *Usage) Check() error {
	if u.PromptTokens < 0 || u.CompletionTokens < 0 {
		return fmt.Errorf("%w (prompt_tokens %d, completion_tokens %d)", ErrBadUsage, u.PromptTokens, u.CompletionTokens)
	}
	return nil
}

// HTTPError is an answer that is not 200 OK, with the start of its body:
// servers say why in it (OpenAI-style error JSON). The body is the server's
// text, so a caller that logs it redacts its secrets from it.
type HTTPError struct {
	Code int
	Body string
}

func (e *HTTPError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.Code, e.Body) }

// maxErrorBody bounds the excerpt of an error answer's body.
const maxErrorBody = 512

// CheckStatus returns nil for 200 OK, else an *HTTPError with the start of
// the body.
func CheckStatus(resp *http.Response) error {
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	return &HTTPError{Code: resp.StatusCode, Body: strings.TrimSpace(string(msg))}
}
