package probe

import (
	"errors"
	"io"
	"time"

	"github.com/kneewatch/kneewatch/openai"
)

var errBodyTooLarge = errors.New("the response body exceeds the probe's size limit")

// readStream reads the stream to data: [DONE], stamping TTFT at the first
// chunk with an output token (reasoning included: openai.Chunk.Token) and
// TPOT from the first and last such chunks, so every chunk is decoded. It
// sets res.OutputTokens from the usage chunk when there is one, else from
// the chunks with a token.
func readStream(r io.Reader, res *Result) error {
	s := openai.NewStream(r)
	var first, last time.Time
	chunks, usageTokens := 0, -1
	for s.Next() {
		c := s.Chunk()
		if c.Token {
			now := time.Now()
			if chunks == 0 {
				first = now
				res.TTFT = now.Sub(res.Start)
			}
			last = now
			chunks++
		}
		if c.Usage != nil {
			usageTokens = c.Usage.CompletionTokens
			res.PromptTokens = max(c.Usage.PromptTokens, 0)
		}
	}
	res.OutputTokens = chunks
	if usageTokens > 0 {
		res.OutputTokens = usageTokens
	}
	if chunks >= 2 && res.OutputTokens >= 2 && last.After(first) {
		res.TPOT = last.Sub(first) / time.Duration(res.OutputTokens-1)
	}
	return s.Err()
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
