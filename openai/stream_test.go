package openai

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// events is a stream body of one data event per string.
func events(data ...string) *strings.Reader {
	var b strings.Builder
	for _, d := range data {
		b.WriteString("data: " + d + "\n\n")
	}
	return strings.NewReader(b.String())
}

// read returns the chunks of a whole stream and how it ended.
func read(s *Stream) ([]Chunk, error) {
	var got []Chunk
	for s.Next() {
		got = append(got, s.Chunk())
	}
	return got, s.Err()
}

func TestWhichChunksCarryATokenIsOneRule(t *testing.T) {
	usage := &Usage{PromptTokens: 16, CompletionTokens: 3}
	for _, tc := range []struct {
		name   string
		events []string
		want   []bool // Token, chunk by chunk
	}{
		{"completion text", []string{`{"choices":[{"text":" the"}]}`}, []bool{true}},
		{"an empty completion text", []string{`{"choices":[{"text":""}]}`}, []bool{false}},
		{"a chat role chunk, then content", []string{`{"choices":[{"delta":{"role":"assistant"}}]}`, `{"choices":[{"delta":{"content":" a"}}]}`}, []bool{false, true}},
		{"vLLM's and SGLang's reasoning_content", []string{`{"choices":[{"delta":{"reasoning_content":"hm"}}]}`, `{"choices":[{"delta":{"content":"42"}}]}`}, []bool{true, true}},
		{"reasoning, as other servers name it", []string{`{"choices":[{"delta":{"reasoning":"hm"}}]}`}, []bool{true}},
		{"a usage chunk with no choices", []string{`{"choices":[],"usage":{"prompt_tokens":16,"completion_tokens":3}}`}, []bool{false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := read(NewStream(events(append(tc.events, "[DONE]")...)))
			if err != nil {
				t.Fatal(err)
			}
			var tokens []bool
			for _, c := range got {
				tokens = append(tokens, c.Token)
			}
			if diff := cmp.Diff(tc.want, tokens); diff != "" {
				t.Errorf("Token by chunk (-want +got):\n%s", diff)
			}
		})
	}
	got, _ := read(NewStream(events(`{"choices":[],"usage":{"prompt_tokens":16,"completion_tokens":3}}`, "[DONE]")))
	if len(got) != 1 || !cmp.Equal(got[0].Usage, usage) {
		t.Errorf("usage chunk read as %+v, want usage %+v", got, usage)
	}
}

func TestSkippingAfterTheFirstTokenStillReadsTheUsageAndErrors(t *testing.T) {
	reasoning := `{"choices":[{"delta":{"reasoning_content":"hm"}}]}`
	content := `{"choices":[{"delta":{"content":" a"}}]}`
	usage := `{"choices":[],"usage":{"prompt_tokens":16,"completion_tokens":3}}`

	s := NewStream(events(`{"choices":[{"delta":{"role":"assistant"}}]}`, reasoning, content, content, usage, "[DONE]"))
	s.SkipAfterFirstToken = true
	got, err := read(s)
	if err != nil {
		t.Fatal(err)
	}
	want := []Chunk{{}, {Token: true}, {Usage: &Usage{PromptTokens: 16, CompletionTokens: 3}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("chunks (-want +got):\n%s", diff)
	}

	s = NewStream(events(content, `{"error":{"message":"engine died","code":500}}`, "[DONE]"))
	s.SkipAfterFirstToken = true
	if _, err := read(s); err == nil || err.Error() != "error event in the stream: engine died" {
		t.Errorf("error %v, want the error event's message", err)
	}
}

func TestABadStreamSaysWhatIsWrong(t *testing.T) {
	text := `{"choices":[{"text":" the"}]}`
	for _, tc := range []struct {
		name   string
		body   *strings.Reader
		is     error
		wanted string
	}{
		{"a stream cut before [DONE]", events(text), ErrNoDone, "the stream ended without data: [DONE]"},
		{"a chunk that is not JSON", events(text, "{nope"), nil, "stream chunk 2 is not JSON: invalid character 'n' looking for beginning of object key string"},
		{"an error event with a message", events(`{"error":{"message":"engine died","code":500}}`), nil, "error event in the stream: engine died"},
		{"an error event without one", events(`{"error":"overloaded"}`), nil, `error event in the stream: "overloaded"`},
		{"a line longer than a megabyte", events(`{"choices":[{"text":"` + strings.Repeat("x", maxLine) + `"}]}`), nil, "reading the stream: bufio.Scanner: token too long"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := read(NewStream(tc.body))
			if err == nil || err.Error() != tc.wanted {
				t.Fatalf("error %v, want %q", err, tc.wanted)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v is not %v", err, tc.is)
			}
		})
	}
}

func TestAStreamIsRecognizedByItsContentType(t *testing.T) {
	for ct, ok := range map[string]bool{
		"text/event-stream":                true,
		"Text/Event-Stream; charset=utf-8": true,
		"application/json":                 false,
		"":                                 false,
	} {
		resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {ct}}}
		err := CheckEventStream(resp)
		if (err == nil) != ok || (err != nil && !errors.Is(err, ErrNotStreaming)) {
			t.Errorf("Content-Type %q: %v", ct, err)
		}
	}
}

// FuzzStream reads whatever a server streams back. Whatever the bytes, the
// stream ends (at [DONE], or with an error that says what was wrong), with
// no more chunks than it has bytes.
func FuzzStream(f *testing.F) {
	f.Add([]byte("data: {\"choices\":[{\"text\":\" the\"}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("event: x\n: comment\ndata:{\"choices\":[{\"delta\":{\"reasoning_content\":\"hm\"}}]}\r\ndata: [DONE]"))
	f.Add([]byte("data: {\"error\":{\"message\":\"engine died\"}}\n\n"))
	f.Add([]byte("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":-3,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, skip := range []bool{false, true} {
			s := NewStream(bytes.NewReader(body))
			s.SkipAfterFirstToken = skip
			for n := 0; s.Next(); n++ {
				if n > len(body) {
					t.Fatalf("more chunks (%d) than bytes (%d)", n, len(body))
				}
			}
			if err := s.Err(); err != nil && err.Error() == "" {
				t.Fatal("an error with no text")
			}
		}
	})
}
