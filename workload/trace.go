package workload

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Record is one request of a recorded trace.
type Record struct {
	PromptTokens int
	// OutputTokens may be 0 in recorded traces (a request that produced
	// nothing); generators replay it as 1 token.
	OutputTokens int
	// Offset is the arrival time relative to the trace's first record; zero
	// for every record when the trace has no timestamps.
	Offset time.Duration
}

// Trace is a recorded sequence of requests.
type Trace struct {
	// Source is the file the trace was read from.
	Source  string
	Records []Record
	// Timed is true when the records carry arrival times.
	Timed bool
}

// MeanPromptTokens is the mean prompt length over the trace.
func (t Trace) MeanPromptTokens() float64 {
	return t.mean(func(r Record) int { return r.PromptTokens })
}

// MeanOutputTokens is the mean output length over the trace, counting
// zero-token outputs as the 1 token they are replayed as.
func (t Trace) MeanOutputTokens() float64 {
	return t.mean(func(r Record) int { return max(r.OutputTokens, 1) })
}

// PromptTokensQuantile is the q-quantile (0 < q < 1) of the trace's prompt
// lengths (see LengthQuantile).
func (t Trace) PromptTokensQuantile(q float64) float64 {
	return LengthQuantile(t.lengths(func(r Record) int { return r.PromptTokens }), q)
}

// LengthQuantile is the q-quantile (0 < q < 1) of token lengths: the
// shortest length at or above which no more than 1 − q of them lie; 0
// for none. lengths is sorted in place.
func LengthQuantile(lengths []int, q float64) float64 {
	if len(lengths) == 0 {
		return 0
	}
	slices.Sort(lengths)
	i := min(int(math.Ceil(q*float64(len(lengths))))-1, len(lengths)-1)
	return float64(lengths[max(i, 0)])
}

// PromptTokensCV and OutputTokensCV are the coefficients of variation of
// the trace's prompt and output lengths (see LengthCV), outputs counted as
// MeanOutputTokens counts them.
func (t Trace) PromptTokensCV() float64 {
	return LengthCV(t.lengths(func(r Record) int { return r.PromptTokens }))
}

func (t Trace) OutputTokensCV() float64 {
	return LengthCV(t.lengths(func(r Record) int { return max(r.OutputTokens, 1) }))
}

func (t Trace) lengths(f func(Record) int) []int {
	out := make([]int, len(t.Records))
	for i, r := range t.Records {
		out[i] = f(r)
	}
	return out
}

// LengthCV is the coefficient of variation (population standard deviation
// ÷ mean) of token lengths; 0 for none or a mean of 0.
func LengthCV(lengths []int) float64 {
	if len(lengths) == 0 {
		return 0
	}
	var sum float64
	for _, l := range lengths {
		sum += float64(l)
	}
	mean := sum / float64(len(lengths))
	if !(mean > 0) {
		return 0
	}
	var sq float64
	for _, l := range lengths {
		d := float64(l) - mean
		sq += d * d
	}
	return math.Sqrt(sq/float64(len(lengths))) / mean
}

func (t Trace) mean(f func(Record) int) float64 {
	if len(t.Records) == 0 {
		return 0
	}
	sum := 0.0
	for _, r := range t.Records {
		sum += float64(f(r))
	}
	return sum / float64(len(t.Records))
}

// ReadTraceFile reads a trace by extension: .jsonl (see ReadJSONL) or .csv
// (the Azure LLM inference trace, see ReadAzureCSV).
func ReadTraceFile(path string) (Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return Trace{}, fmt.Errorf("reading trace: %w", err)
	}
	defer f.Close()
	switch strings.ToLower(filepath.Ext(path)) {
	case ".jsonl":
		return ReadJSONL(f, path)
	case ".csv":
		return ReadAzureCSV(f, path)
	}
	return Trace{}, fmt.Errorf("%s: unknown trace format: want a .jsonl or .csv file", path)
}

// maxLine bounds one JSONL line; traces that carry the prompt text can have
// long lines, but not unbounded ones.
const maxLine = 16 << 20

// ReadJSONL reads one request per line:
//
//	{"prompt_tokens": 812, "output_tokens": 95, "timestamp": "2024-05-10T12:00:00.250Z"}
//
// timestamp is optional and is either RFC 3339 text or a number of seconds;
// when the first record has one, every record must, in non-decreasing order.
// Other keys are ignored (traces often carry the text too); blank lines are
// skipped. Errors name source:line and the field. name is used in errors.
func ReadJSONL(r io.Reader, name string) (Trace, error) {
	t := Trace{Source: name}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	var first, last time.Time
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		where := fmt.Sprintf("%s:%d", name, line)
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(b, &raw); err != nil {
			return Trace{}, fmt.Errorf("%s: want a JSON object like {\"prompt_tokens\":N,\"output_tokens\":M}, got %.40s", where, b)
		}
		prompt, err := tokenField(raw, "prompt_tokens", 1)
		if err != nil {
			return Trace{}, fmt.Errorf("%s: %w", where, err)
		}
		output, err := tokenField(raw, "output_tokens", 0)
		if err != nil {
			return Trace{}, fmt.Errorf("%s: %w", where, err)
		}
		ts, hasTS, err := timestampField(raw["timestamp"])
		if err != nil {
			return Trace{}, fmt.Errorf("%s: timestamp: %w", where, err)
		}
		rec := Record{PromptTokens: prompt, OutputTokens: output}
		if len(t.Records) == 0 {
			t.Timed, first, last = hasTS, ts, ts
		}
		switch {
		case hasTS != t.Timed && t.Timed:
			return Trace{}, fmt.Errorf("%s: timestamp: missing, but earlier records have one", where)
		case hasTS != t.Timed:
			return Trace{}, fmt.Errorf("%s: timestamp: present, but the first record has none (all records or none must have one)", where)
		case hasTS && ts.Before(last):
			return Trace{}, fmt.Errorf("%s: timestamp: %s is earlier than the previous record's %s (records must be in arrival order)",
				where, ts.Format(time.RFC3339Nano), last.Format(time.RFC3339Nano))
		case hasTS:
			rec.Offset, last = ts.Sub(first), ts
		}
		t.Records = append(t.Records, rec)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return Trace{}, fmt.Errorf("%s:%d: line longer than %d bytes", name, line+1, maxLine)
		}
		return Trace{}, fmt.Errorf("%s: %w", name, err)
	}
	if len(t.Records) == 0 {
		return Trace{}, fmt.Errorf("%s: trace has no records", name)
	}
	return t, nil
}

// tokenField reads a required whole-number field that must be at least lo.
func tokenField(raw map[string]json.RawMessage, key string, lo int) (int, error) {
	v, ok := raw[key]
	if !ok {
		return 0, fmt.Errorf("%s: missing", key)
	}
	n, err := strconv.Atoi(string(v))
	if err != nil || n < lo {
		return 0, fmt.Errorf("%s: want a whole number ≥ %d, got %s", key, lo, v)
	}
	if n > MaxRequestTokens {
		return 0, fmt.Errorf("%s: %d tokens is longer than any model's context (at most %d)", key, n, MaxRequestTokens)
	}
	return n, nil
}

// timestampField parses an optional timestamp: RFC 3339 text or seconds.
func timestampField(v json.RawMessage) (time.Time, bool, error) {
	if len(v) == 0 || string(v) == "null" {
		return time.Time{}, false, nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err == nil {
		ts, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return time.Time{}, false, fmt.Errorf("want RFC 3339 text (2024-05-10T12:00:00Z) or seconds, got %q", s)
		}
		return ts, true, nil
	}
	sec, err := strconv.ParseFloat(string(v), 64)
	if err != nil || sec < 0 || sec > 1e12 {
		return time.Time{}, false, fmt.Errorf("want RFC 3339 text or a non-negative number of seconds, got %s", v)
	}
	whole := math.Floor(sec)
	return time.Unix(int64(whole), int64((sec-whole)*1e9)), true, nil
}

// azureTimeLayout is the Azure trace's TIMESTAMP, e.g. "2023-11-16 18:15:46.6805900";
// Go's parser accepts any number of fractional digits after the seconds.
const azureTimeLayout = "2006-01-02 15:04:05"

// ReadAzureCSV reads the Azure LLM inference trace format: a header
// `TIMESTAMP,ContextTokens,GeneratedTokens` (in any order; extra columns
// are ignored) and one request per row. Errors name source:line and the column.
func ReadAzureCSV(r io.Reader, name string) (Trace, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1 // checked per row below, with a better message
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return Trace{}, fmt.Errorf("%s: empty file: want the header TIMESTAMP,ContextTokens,GeneratedTokens", name)
		}
		return Trace{}, fmt.Errorf("%s:1: %w", name, err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))] = i
	}
	need := []string{"TIMESTAMP", "ContextTokens", "GeneratedTokens"}
	for _, h := range need {
		if _, ok := col[h]; !ok {
			return Trace{}, fmt.Errorf("%s:1: header has no %s column: want TIMESTAMP,ContextTokens,GeneratedTokens, got %s",
				name, h, strings.Join(header, ","))
		}
	}
	width := len(header)
	t := Trace{Source: name, Timed: true}
	var first, last time.Time
	for {
		row, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		line, _ := cr.FieldPos(0)
		if err != nil {
			return Trace{}, fmt.Errorf("%s: %w", name, err)
		}
		where := fmt.Sprintf("%s:%d", name, line)
		if len(row) != width {
			return Trace{}, fmt.Errorf("%s: want %d columns like the header, got %d", where, width, len(row))
		}
		tsText := strings.TrimSpace(row[col["TIMESTAMP"]])
		ts, err := time.Parse(azureTimeLayout, tsText)
		if err != nil {
			return Trace{}, fmt.Errorf("%s: TIMESTAMP: want e.g. 2023-11-16 18:15:46.6805900, got %q", where, tsText)
		}
		prompt, err := csvTokens(row[col["ContextTokens"]], "ContextTokens", 1)
		if err != nil {
			return Trace{}, fmt.Errorf("%s: %w", where, err)
		}
		output, err := csvTokens(row[col["GeneratedTokens"]], "GeneratedTokens", 0)
		if err != nil {
			return Trace{}, fmt.Errorf("%s: %w", where, err)
		}
		if len(t.Records) == 0 {
			first, last = ts, ts
		}
		if ts.Before(last) {
			return Trace{}, fmt.Errorf("%s: TIMESTAMP: %s is earlier than the previous row's (rows must be in arrival order)", where, tsText)
		}
		last = ts
		t.Records = append(t.Records, Record{PromptTokens: prompt, OutputTokens: output, Offset: ts.Sub(first)})
	}
	if len(t.Records) == 0 {
		return Trace{}, fmt.Errorf("%s: trace has a header but no rows", name)
	}
	return t, nil
}

func csvTokens(s, column string, lo int) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < lo {
		return 0, fmt.Errorf("%s: want a whole number ≥ %d, got %q", column, lo, s)
	}
	if n > MaxRequestTokens {
		return 0, fmt.Errorf("%s: %d tokens is longer than any model's context (at most %d)", column, n, MaxRequestTokens)
	}
	return n, nil
}
