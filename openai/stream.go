package openai

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Errors of a stream that is not a well-formed completion stream.
var (
	// ErrNotStreaming means a streaming request was answered with something
	// other than server-sent events, so TTFT cannot be measured.
	ErrNotStreaming = errors.New("the server did not stream the response as server-sent events")
	ErrNoDone       = errors.New("the stream ended without data: [DONE]")
)

// CheckEventStream returns nil when resp is a stream of server-sent events,
// else an error wrapping ErrNotStreaming that names what came instead.
func CheckEventStream(resp *http.Response) error {
	ct := resp.Header.Get("Content-Type")
	if strings.HasPrefix(strings.ToLower(ct), "text/event-stream") {
		return nil
	}
	return fmt.Errorf("%w (HTTP %d with Content-Type %q, not an event stream: does the server support stream: true?)", ErrNotStreaming, resp.StatusCode, ct)
}

// Chunk is what a caller reads from one stream chunk.
type Chunk struct {
	// Token is true when the chunk carries output text: a completion's text,
	// a chat delta's content, or a reasoning model's reasoning
	// (delta.reasoning_content from vLLM's and SGLang's reasoning parsers,
	// delta.reasoning from others). Reasoning is generated output the user
	// waits through, and the engines' own TTFT histograms stamp it, so the
	// first reasoning chunk is the first token for every caller alike.
	Token bool
	// Usage is the chunk's usage (the last chunk's, with include_usage); nil
	// when it has none.
	Usage *Usage
}

// chunk is the part of an OpenAI-style stream chunk kneewatch reads:
// completions carry text, chat carries delta.content (or reasoning), the
// last chunk may carry usage, and a failure inside the stream is an error
// object (vLLM's and the simulator's way to report one mid-stream).
type chunk struct {
	Choices []struct {
		Text  string `json:"text"`
		Delta struct {
			Content          string `json:"content"`
			ReasoningContent string `json:"reasoning_content"`
			Reasoning        string `json:"reasoning"`
		} `json:"delta"`
	} `json:"choices"`
	Usage *Usage          `json:"usage"`
	Error json.RawMessage `json:"error"`
}

func (c *chunk) hasToken() bool {
	for _, ch := range c.Choices {
		if ch.Text != "" || ch.Delta.Content != "" || ch.Delta.ReasoningContent != "" || ch.Delta.Reasoning != "" {
			return true
		}
	}
	return false
}

// maxLine bounds one event line: a chunk carries a token or a few, so a
// megabyte is a server that is not streaming tokens.
const maxLine = 1 << 20

// Stream reads a completion stream event by event until data: [DONE]:
//
//	s := openai.NewStream(resp.Body)
//	for s.Next() {
//		c := s.Chunk()
//		…
//	}
//	if err := s.Err(); err != nil { … } // nil only after [DONE]
type Stream struct {
	// SkipAfterFirstToken passes over, once a token chunk has been read,
	// every chunk that names neither "usage" nor "error" without decoding
	// it: a caller that needs only the first token and the usage (the
	// sweep, at thousands of tokens a second) then pays a line scan per
	// token. A caller that times every token (the probe's TPOT) leaves it off.
	SkipAfterFirstToken bool

	sc        *bufio.Scanner
	chunk     Chunk
	events    int // data events decoded or passed over, for error messages
	seenToken bool
	err       error
	done      bool
}

// NewStream reads server-sent events from r.
func NewStream(r io.Reader) *Stream {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4<<10), maxLine)
	return &Stream{sc: sc}
}

// Next reads up to the next chunk worth returning and reports whether there
// is one; false at data: [DONE] or at the first error.
func (s *Stream) Next() bool {
	if s.done || s.err != nil {
		return false
	}
	for s.sc.Scan() {
		data, ok := bytes.CutPrefix(s.sc.Bytes(), []byte("data:"))
		if !ok {
			continue // blank separators, event:, id: and : comments
		}
		data = bytes.TrimSpace(data)
		if bytes.Equal(data, []byte("[DONE]")) {
			s.done = true
			return false
		}
		s.events++
		if s.SkipAfterFirstToken && s.seenToken && !bytes.Contains(data, []byte(`"usage"`)) && !bytes.Contains(data, []byte(`"error"`)) {
			continue
		}
		var ch chunk
		if err := json.Unmarshal(data, &ch); err != nil {
			s.err = fmt.Errorf("stream chunk %d is not JSON: %w", s.events, err)
			return false
		}
		if len(ch.Error) > 0 && !bytes.Equal(ch.Error, []byte("null")) {
			s.err = fmt.Errorf("error event in the stream: %s", errorText(ch.Error))
			return false
		}
		s.chunk = Chunk{Token: ch.hasToken(), Usage: ch.Usage}
		s.seenToken = s.seenToken || s.chunk.Token
		return true
	}
	if err := s.sc.Err(); err != nil {
		s.err = fmt.Errorf("reading the stream: %w", err)
	} else {
		s.err = ErrNoDone
	}
	return false
}

// Chunk is the chunk the last Next read.
func (s *Stream) Chunk() Chunk { return s.chunk }

// Err is nil once data: [DONE] was read, else why the stream ended.
func (s *Stream) Err() error {
	if s.done {
		return nil
	}
	if s.err == nil {
		return errors.New("the stream has not been read to its end")
	}
	return s.err
}

// errorText is an error event's message, or an excerpt of the error value
// when it is not an object with a message.
func errorText(raw json.RawMessage) string {
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &e) == nil && e.Message != "" {
		return e.Message
	}
	const n = 200
	if len(raw) > n {
		return string(raw[:n]) + "…"
	}
	return string(raw)
}
