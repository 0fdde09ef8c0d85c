package probe

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// streamChunk is the part of an OpenAI-style stream chunk a probe reads:
// completions carry text, chat carries delta.content (or, from reasoning
// parsers, delta.reasoning_content), the last chunk may carry usage, and
// a failure inside the stream is an error object.
type streamChunk struct {
	Choices []struct {
		Text  string `json:"text"`
		Delta struct {
			Content          string `json:"content"`
			ReasoningContent string `json:"reasoning_content"`
			Reasoning        string `json:"reasoning"`
		} `json:"delta"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// hasToken reports whether the chunk carries output text.
func (c *streamChunk) hasToken() bool {
	for _, ch := range c.Choices {
		if ch.Text != "" || ch.Delta.Content != "" || ch.Delta.ReasoningContent != "" || ch.Delta.Reasoning != "" {
			return true
		}
	}
	return false
}

// Errors of a malformed stream.
var (
	errNoDone       = errors.New("the stream ended without data: [DONE]")
	errBodyTooLarge = errors.New("the response body exceeds the probe's size limit")
)

// readStream reads server-sent events until data: [DONE], stamping TTFT at
// the first chunk with output text and TPOT from the first and last such
// chunks. It sets res.OutputTokens from the usage chunk when there is one,
// else from the chunks with text.
func readStream(r io.Reader, res *Result) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4<<10), 256<<10)
	var first, last time.Time
	chunks, usageTokens := 0, -1
	finish := func() {
		res.OutputTokens = chunks
		if usageTokens > 0 {
			res.OutputTokens = usageTokens
		}
		if chunks >= 2 && res.OutputTokens >= 2 && last.After(first) {
			res.TPOT = last.Sub(first) / time.Duration(res.OutputTokens-1)
		}
	}
	for sc.Scan() {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:"))
		if !ok {
			continue // blank separators, event:, id: and : comments
		}
		data = bytes.TrimSpace(data)
		if bytes.Equal(data, []byte("[DONE]")) {
			finish()
			return nil
		}
		var ch streamChunk
		if err := json.Unmarshal(data, &ch); err != nil {
			finish()
			return fmt.Errorf("stream chunk %d is not JSON: %w", chunks+1, err)
		}
		if len(ch.Error) > 0 && !bytes.Equal(ch.Error, []byte("null")) {
			finish()
			return fmt.Errorf("the server reported an error inside the stream: %s", excerpt(ch.Error, 200))
		}
		if ch.hasToken() {
			now := time.Now()
			if chunks == 0 {
				first = now
				res.TTFT = now.Sub(res.Start)
			}
			last = now
			chunks++
		}
		if ch.Usage != nil {
			usageTokens = ch.Usage.CompletionTokens
			res.PromptTokens = max(ch.Usage.PromptTokens, 0)
		}
	}
	finish()
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading the stream: %w", err)
	}
	return errNoDone
}

func excerpt(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// limitedReader reads at most left bytes, then fails with errBodyTooLarge
// (io.LimitReader would end with a clean EOF, read as a cut stream).
type limitedReader struct {
	r        io.Reader
	left     int64
	exceeded bool
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		l.exceeded = true
		return 0, errBodyTooLarge
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}
