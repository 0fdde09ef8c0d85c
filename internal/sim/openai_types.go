package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/kneewatch/kneewatch/workload"
)

// The OpenAI wire format, as far as the simulator serves it. Request fields
// it does not model (temperature, top_p, logprobs, …) are accepted and ignored.

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type completionRequest struct {
	Model         string          `json:"model"`
	Prompt        json.RawMessage `json:"prompt"`
	MaxTokens     *int            `json:"max_tokens"`
	N             *int            `json:"n"`
	Stream        bool            `json:"stream"`
	StreamOptions *streamOptions  `json:"stream_options"`
	// IgnoreEOS is vLLM's extension; the simulator never stops early anyway.
	IgnoreEOS bool `json:"ignore_eos"`
}

type chatRequest struct {
	Model               string         `json:"model"`
	Messages            []chatMessage  `json:"messages"`
	MaxTokens           *int           `json:"max_tokens"`
	MaxCompletionTokens *int           `json:"max_completion_tokens"`
	N                   *int           `json:"n"`
	Stream              bool           `json:"stream"`
	StreamOptions       *streamOptions `json:"stream_options"`
	IgnoreEOS           bool           `json:"ignore_eos"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func newUsage(prompt, completion int) *usage {
	return &usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
}

type completionChoice struct {
	Index        int     `json:"index"`
	Text         string  `json:"text"`
	Logprobs     any     `json:"logprobs"`
	FinishReason *string `json:"finish_reason"`
}

type chatDelta struct {
	Role    string `json:"role,omitempty"`
	Content string `json:"content"`
}

type chatChoice struct {
	Index        int        `json:"index"`
	Message      *chatDelta `json:"message,omitempty"`
	Delta        *chatDelta `json:"delta,omitempty"`
	Logprobs     any        `json:"logprobs"`
	FinishReason *string    `json:"finish_reason"`
}

// completionResponse is both a response and a stream chunk: Object tells
// which ("text_completion", "chat.completion", "chat.completion.chunk").
type completionResponse struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices any    `json:"choices"`
	Usage   *usage `json:"usage,omitempty"`
}

type modelList struct {
	Object string      `json:"object"`
	Data   []modelCard `json:"data"`
}

type modelCard struct {
	ID          string `json:"id"`
	Object      string `json:"object"`
	Created     int64  `json:"created"`
	OwnedBy     string `json:"owned_by"`
	Root        string `json:"root"`
	MaxModelLen int    `json:"max_model_len"`
}

type apiError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int     `json:"code"`
}

// promptTokens counts a completions prompt: a string, a one-element list of
// strings, a list of token IDs, or a one-element list of token-ID lists.
func promptTokens(raw json.RawMessage) (int, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return 0, errors.New("prompt is required")
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return workload.CountTokens(s), nil
	}
	var ss []string
	if json.Unmarshal(raw, &ss) == nil {
		if len(ss) != 1 {
			return 0, fmt.Errorf("prompt: a list of %d prompts is a batch, which the simulator does not serve; send one prompt per request", len(ss))
		}
		return workload.CountTokens(ss[0]), nil
	}
	var ids []int
	if json.Unmarshal(raw, &ids) == nil {
		return len(ids), nil
	}
	var idss [][]int
	if json.Unmarshal(raw, &idss) == nil {
		if len(idss) != 1 {
			return 0, fmt.Errorf("prompt: a list of %d token lists is a batch, which the simulator does not serve; send one prompt per request", len(idss))
		}
		return len(idss[0]), nil
	}
	return 0, errors.New("prompt must be a string, a list of one string, or a list of token IDs")
}

// contentTokens counts a chat message's content: a string, or a list of parts
// of which the "text" ones count. null (an assistant tool call) counts 0.
func contentTokens(raw json.RawMessage) (int, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return 0, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return workload.CountTokens(s), nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return 0, errors.New("content must be a string or a list of content parts")
	}
	n := 0
	for _, p := range parts {
		if p.Type == "text" {
			n += workload.CountTokens(p.Text)
		}
	}
	return n, nil
}
