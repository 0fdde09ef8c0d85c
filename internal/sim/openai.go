package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/kneewatch/kneewatch/workload"
)

const (
	// defaultCompletionMaxTokens is OpenAI's documented default for
	// /v1/completions.
	defaultCompletionMaxTokens = 16
	// defaultChatMaxTokens bounds chat requests without max_tokens. vLLM's
	// default is the rest of the context, but the simulator has no EOS, so
	// that would generate up to max_model_len tokens every time.
	defaultChatMaxTokens = 256
	// maxRequestBytes bounds a request body (a 128k-token prompt as text is
	// well under 1 MiB; as token IDs under 1 MiB too).
	maxRequestBytes = 16 << 20
)

// completionJob is a validated completion request.
type completionJob struct {
	chat                    bool
	promptTokens, maxTokens int
	stream, includeUsage    bool
}

func (r *Replica) handleCompletions(w http.ResponseWriter, req *http.Request) {
	var body completionRequest
	if !decodeJSON(w, req, &body) || !r.checkModel(w, body.Model) || !checkN(w, body.N) {
		return
	}
	prompt, err := promptTokens(body.Prompt)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error(), "prompt")
		return
	}
	maxTokens, ok := maxTokensParam(w, "max_tokens", body.MaxTokens, defaultCompletionMaxTokens)
	if !ok {
		return
	}
	r.serveJob(w, req, completionJob{
		promptTokens: prompt, maxTokens: maxTokens,
		stream: body.Stream, includeUsage: body.StreamOptions != nil && body.StreamOptions.IncludeUsage,
	})
}

func (r *Replica) handleChatCompletions(w http.ResponseWriter, req *http.Request) {
	var body chatRequest
	if !decodeJSON(w, req, &body) || !r.checkModel(w, body.Model) || !checkN(w, body.N) {
		return
	}
	if len(body.Messages) == 0 {
		writeError(w, http.StatusBadRequest, "messages must not be empty", "messages")
		return
	}
	prompt := 0
	for i, m := range body.Messages {
		n, err := contentTokens(m.Content)
		if err != nil {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("messages[%d].%s", i, err), "messages")
			return
		}
		prompt += n
	}
	// max_completion_tokens replaces the deprecated max_tokens.
	limit, field := body.MaxCompletionTokens, "max_completion_tokens"
	if limit == nil {
		limit, field = body.MaxTokens, "max_tokens"
	}
	maxTokens, ok := maxTokensParam(w, field, limit, defaultChatMaxTokens)
	if !ok {
		return
	}
	r.serveJob(w, req, completionJob{
		chat: true, promptTokens: prompt, maxTokens: maxTokens,
		stream: body.Stream, includeUsage: body.StreamOptions != nil && body.StreamOptions.IncludeUsage,
	})
}

func decodeJSON(w http.ResponseWriter, req *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, req.Body, maxRequestBytes))
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body exceeds %d bytes", tooBig.Limit), "")
			return false
		}
		writeError(w, http.StatusBadRequest, "invalid JSON body: "+err.Error(), "")
		return false
	}
	return true
}

// checkModel accepts the served model name, or no name (the served model).
func (r *Replica) checkModel(w http.ResponseWriter, model string) bool {
	if model == "" || model == r.model {
		return true
	}
	writeError(w, http.StatusNotFound, fmt.Sprintf("The model `%s` does not exist; this replica serves `%s`.", model, r.model), "model")
	return false
}

func checkN(w http.ResponseWriter, n *int) bool {
	if n == nil || *n == 1 {
		return true
	}
	writeError(w, http.StatusBadRequest, fmt.Sprintf("n must be 1 (the simulator generates one choice), got %d", *n), "n")
	return false
}

func maxTokensParam(w http.ResponseWriter, field string, v *int, def int) (int, bool) {
	if v == nil {
		return def, true
	}
	if *v < 1 {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("%s must be at least 1, got %d", field, *v), field)
		return 0, false
	}
	return *v, true
}

// serveJob submits a validated request and answers it, streamed or whole.
func (r *Replica) serveJob(w http.ResponseWriter, req *http.Request, j completionJob) {
	if j.promptTokens < 1 {
		param := "prompt"
		if j.chat {
			param = "messages"
		}
		writeError(w, http.StatusBadRequest, "the prompt has no tokens (it is empty or only whitespace)", param)
		return
	}
	if code, fail := r.injectedError(); fail {
		writeError(w, code, errFaultInjected.Error(), "")
		return
	}
	s, err := r.submit(j.promptTokens, j.maxTokens)
	switch {
	case errors.Is(err, ErrTooLong):
		writeError(w, http.StatusBadRequest, fmt.Sprintf(
			"This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the prompt, %d in the completion). Please reduce the length of the prompt or completion.",
			r.preset.MaxModelLen, j.promptTokens+j.maxTokens, j.promptTokens, j.maxTokens), "max_tokens")
		return
	case errors.Is(err, errClosed):
		writeError(w, http.StatusServiceUnavailable, err.Error(), "")
		return
	case err != nil:
		writeError(w, http.StatusBadRequest, err.Error(), "")
		return
	}
	if j.stream {
		r.streamJob(w, req, s, j)
	} else {
		r.answerJob(w, req, s, j)
	}
}

// follow calls emit for each token as the driver delivers it, until the
// request is done. It returns the replica's error (restart, shutdown), or
// the context's when the client went away (the request is then aborted).
func (r *Replica) follow(ctx context.Context, s *stream, emit func(i int) error) error {
	sent := 0
	for {
		produced, done, err := r.poll(s)
		for ; sent < produced; sent++ {
			if werr := emit(sent); werr != nil {
				r.cancel(s)
				return werr
			}
		}
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		select {
		case <-s.notify:
		case <-ctx.Done():
			r.cancel(s)
			return ctx.Err()
		}
	}
}

var finishLength = "length"

func (r *Replica) jobID(j completionJob, s *stream) string {
	if j.chat {
		return fmt.Sprintf("chatcmpl-%s-%d", r.name, s.req.ID)
	}
	return fmt.Sprintf("cmpl-%s-%d", r.name, s.req.ID)
}

// streamJob answers with server-sent events: one chunk per token, sent when
// the engine produces it, the usage chunk if asked for, then [DONE].
func (r *Replica) streamJob(w http.ResponseWriter, req *http.Request, s *stream, j completionJob) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	chunk := completionResponse{ID: r.jobID(j, s), Object: "text_completion", Created: time.Now().Unix(), Model: r.model}
	if j.chat {
		chunk.Object = "chat.completion.chunk"
		// Like vLLM, announce the assistant role before the first token.
		chunk.Choices = []chatChoice{{Delta: &chatDelta{Role: "assistant"}}}
		if writeEvent(w, chunk) != nil || rc.Flush() != nil {
			r.cancel(s)
			return
		}
	}
	err := r.follow(req.Context(), s, func(i int) error {
		var finish *string
		if i == j.maxTokens-1 {
			finish = &finishLength
		}
		if j.chat {
			chunk.Choices = []chatChoice{{Delta: &chatDelta{Content: workload.TokenWord(i)}, FinishReason: finish}}
		} else {
			chunk.Choices = []completionChoice{{Text: workload.TokenWord(i), FinishReason: finish}}
		}
		if err := writeEvent(w, chunk); err != nil {
			return err
		}
		return rc.Flush()
	})
	if err != nil {
		if req.Context().Err() != nil {
			return // the client is gone
		}
		// vLLM reports a failure inside the stream as an error event.
		writeEvent(w, map[string]apiError{"error": {Message: err.Error(), Type: "InternalServerError", Code: http.StatusInternalServerError}})
	} else if j.includeUsage {
		chunk.Choices = []struct{}{}
		chunk.Usage = newUsage(j.promptTokens, j.maxTokens)
		writeEvent(w, chunk)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	rc.Flush()
}

func writeEvent(w http.ResponseWriter, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "data: %s\n\n", b)
	return err
}

// answerJob waits for the whole completion and answers with one JSON document.
func (r *Replica) answerJob(w http.ResponseWriter, req *http.Request, s *stream, j completionJob) {
	var text strings.Builder
	err := r.follow(req.Context(), s, func(i int) error {
		text.WriteString(workload.TokenWord(i))
		return nil
	})
	if err != nil {
		if req.Context().Err() == nil {
			writeError(w, http.StatusInternalServerError, err.Error(), "")
		}
		return
	}
	resp := completionResponse{
		ID: r.jobID(j, s), Object: "text_completion", Created: time.Now().Unix(), Model: r.model,
		Usage: newUsage(j.promptTokens, j.maxTokens),
	}
	if j.chat {
		resp.Object = "chat.completion"
		resp.Choices = []chatChoice{{Message: &chatDelta{Role: "assistant", Content: text.String()}, FinishReason: &finishLength}}
	} else {
		resp.Choices = []completionChoice{{Text: text.String(), FinishReason: &finishLength}}
	}
	writeJSON(w, http.StatusOK, resp)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers in the OpenAI error format; param names the bad
// request field, if any.
func writeError(w http.ResponseWriter, status int, msg, param string) {
	e := apiError{Message: msg, Code: status}
	if param != "" {
		e.Param = &param
	}
	switch status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		e.Type = "BadRequestError"
	case http.StatusNotFound:
		e.Type = "NotFoundError"
	case http.StatusServiceUnavailable:
		e.Type = "ServiceUnavailableError"
	default:
		e.Type = "InternalServerError"
	}
	writeJSON(w, status, map[string]apiError{"error": e})
}
