package sim

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Faults is the set of faults active on one replica, as GET /admin/faults
// reports it. The zero value is a healthy replica.
type Faults struct {
	// Slowdown throttles the GPU: every step costs this factor more (≥ 1) and
	// DCGM's SM clock drops by the same factor.
	Slowdown float64 `json:"slowdown,omitempty"`
	// ErrorRate is the share (0..1) of completion requests answered with
	// ErrorCode instead of being served. Failures are spread evenly and
	// deterministically: a rate of 0.25 fails exactly every fourth request.
	ErrorRate float64 `json:"error_rate,omitempty"`
	// ErrorCode is 500 or 503.
	ErrorCode int `json:"error_code,omitempty"`
	// Stall stops the engine: no steps, no tokens; requests hang. It is
	// "forever" (until cleared) or the time left, e.g. "29.5s".
	Stall string `json:"stall,omitempty"`
	// MetricsDelay delays every /metrics response.
	MetricsDelay string `json:"metrics_delay,omitempty"`
	// MetricsMalformed makes /metrics return text that does not parse.
	MetricsMalformed bool `json:"metrics_malformed,omitempty"`
	// MetricsDown makes /metrics answer HTTP 500. The inference API stays up:
	// vLLM serves /metrics on the API port, so refusing connections would
	// take the whole replica down rather than only its metrics.
	MetricsDown bool `json:"metrics_down,omitempty"`
	// DropMetrics lists metric family names left out of /metrics, as after a
	// version rename (e.g. "vllm:kv_cache_usage_perc").
	DropMetrics []string `json:"drop_metrics,omitempty"`
	// Unhealthy makes GET /health answer 503.
	Unhealthy bool `json:"unhealthy,omitempty"`
}

// FaultPatch changes some faults of a replica: POST /admin/faults takes it as
// JSON, and each --fault key=value flag sets one field. A field that is
// absent (nil) is left as it is; Restart is an action, not a state.
type FaultPatch struct {
	Slowdown         *float64  `json:"slowdown,omitempty"`
	ErrorRate        *float64  `json:"error_rate,omitempty"`
	ErrorCode        *int      `json:"error_code,omitempty"`
	Stall            *string   `json:"stall,omitempty"`
	MetricsDelay     *string   `json:"metrics_delay,omitempty"`
	MetricsMalformed *bool     `json:"metrics_malformed,omitempty"`
	MetricsDown      *bool     `json:"metrics_down,omitempty"`
	DropMetrics      *[]string `json:"drop_metrics,omitempty"`
	Unhealthy        *bool     `json:"unhealthy,omitempty"`
	// Restart resets the engine and every metric; in-flight requests fail.
	Restart bool `json:"restart,omitempty"`
}

// FaultKeys lists the keys of FaultPatch, as JSON and --fault use them.
func FaultKeys() []string {
	return []string{"slowdown", "error_rate", "error_code", "stall", "metrics_delay",
		"metrics_malformed", "metrics_down", "drop_metrics", "unhealthy", "restart"}
}

// Set sets one field from its text form, as in `--fault key=value`:
// numbers for slowdown, error_rate and error_code; a duration or "forever"
// for stall; a duration for metrics_delay; true/false for the switches; a
// comma-separated list for drop_metrics.
func (p *FaultPatch) Set(key, value string) error {
	switch key {
	case "slowdown":
		f, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return fmt.Errorf("fault slowdown: %q is not a number", value)
		}
		p.Slowdown = &f
	case "error_rate":
		f, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return fmt.Errorf("fault error_rate: %q is not a number", value)
		}
		p.ErrorRate = &f
	case "error_code":
		c, err := strconv.Atoi(value)
		if err != nil {
			return fmt.Errorf("fault error_code: %q is not an integer", value)
		}
		p.ErrorCode = &c
	case "stall":
		p.Stall = &value
	case "metrics_delay":
		p.MetricsDelay = &value
	case "metrics_malformed", "metrics_down", "unhealthy", "restart":
		b, err := strconv.ParseBool(value)
		if err != nil {
			return fmt.Errorf("fault %s: %q is not true or false", key, value)
		}
		switch key {
		case "metrics_malformed":
			p.MetricsMalformed = &b
		case "metrics_down":
			p.MetricsDown = &b
		case "unhealthy":
			p.Unhealthy = &b
		case "restart":
			p.Restart = b
		}
	case "drop_metrics":
		var names []string
		for n := range strings.SplitSeq(value, ",") {
			if n = strings.TrimSpace(n); n != "" {
				names = append(names, n)
			}
		}
		p.DropMetrics = &names
	default:
		return fmt.Errorf("unknown fault %q (known: %s)", key, strings.Join(FaultKeys(), ", "))
	}
	return nil
}

// faultState is the parsed form of Faults that the replica acts on.
type faultState struct {
	slowdown         float64 // 1 when off
	errorRate        float64
	errorCode        int
	stallForever     bool
	stallUntil       time.Time
	metricsDelay     time.Duration
	metricsMalformed bool
	metricsDown      bool
	dropMetrics      []string
	unhealthy        bool

	// errorDebt accumulates errorRate per request; a request fails when it
	// reaches 1, which spreads failures evenly.
	errorDebt float64
}

func healthyFaults() faultState { return faultState{slowdown: 1, errorCode: 500} }

// maxFaultDuration bounds stall and metrics_delay so a typo cannot wedge a
// replica for years; "forever" is the explicit way to stall indefinitely.
const maxFaultDuration = 24 * time.Hour

// apply validates p and returns the state with p's fields changed, as of now.
// On error the state is unchanged and the error names the bad field.
func (s faultState) apply(p FaultPatch, now time.Time) (faultState, error) {
	out := s
	if p.Slowdown != nil {
		f := *p.Slowdown
		if !(f >= 1) || math.IsInf(f, 0) {
			return s, fmt.Errorf("fault slowdown must be a finite factor ≥ 1, got %v", f)
		}
		out.slowdown = f
	}
	if p.ErrorRate != nil {
		f := *p.ErrorRate
		if !(f >= 0 && f <= 1) {
			return s, fmt.Errorf("fault error_rate must be between 0 and 1, got %v", f)
		}
		out.errorRate = f
		out.errorDebt = 0
	}
	if p.ErrorCode != nil {
		c := *p.ErrorCode
		if c != 500 && c != 503 {
			return s, fmt.Errorf("fault error_code must be 500 or 503, got %d", c)
		}
		out.errorCode = c
	}
	if p.Stall != nil {
		switch v := strings.TrimSpace(*p.Stall); v {
		case "forever":
			out.stallForever, out.stallUntil = true, time.Time{}
		case "", "0", "off", "false":
			out.stallForever, out.stallUntil = false, time.Time{}
		default:
			d, err := parseFaultDuration("stall", v)
			if err != nil {
				return s, fmt.Errorf("%w, or \"forever\"", err)
			}
			out.stallForever, out.stallUntil = false, now.Add(d)
		}
	}
	if p.MetricsDelay != nil {
		v := strings.TrimSpace(*p.MetricsDelay)
		if v == "" {
			v = "0"
		}
		d, err := parseFaultDuration("metrics_delay", v)
		if err != nil {
			return s, err
		}
		out.metricsDelay = d
	}
	if p.MetricsMalformed != nil {
		out.metricsMalformed = *p.MetricsMalformed
	}
	if p.MetricsDown != nil {
		out.metricsDown = *p.MetricsDown
	}
	if p.DropMetrics != nil {
		names := slices.Clone(*p.DropMetrics)
		for i, n := range names {
			if strings.TrimSpace(n) == "" {
				return s, fmt.Errorf("fault drop_metrics[%d] is empty: name a metric family", i)
			}
		}
		out.dropMetrics = names
	}
	if p.Unhealthy != nil {
		out.unhealthy = *p.Unhealthy
	}
	return out, nil
}

func parseFaultDuration(field, v string) (time.Duration, error) {
	if v == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("fault %s: %q is not a duration like \"500ms\" or \"30s\"", field, v)
	}
	if d < 0 || d > maxFaultDuration {
		return 0, fmt.Errorf("fault %s must be between 0 and %v, got %v", field, maxFaultDuration, d)
	}
	return d, nil
}

// stalled reports whether the stall fault holds at now, and until when
// (zero for forever).
func (s *faultState) stalled(now time.Time) (bool, time.Time) {
	if s.stallForever {
		return true, time.Time{}
	}
	if now.Before(s.stallUntil) {
		return true, s.stallUntil
	}
	return false, time.Time{}
}

// nextError reports whether the next request should fail, and with which code.
func (s *faultState) nextError() (int, bool) {
	if s.errorRate <= 0 {
		return 0, false
	}
	s.errorDebt += s.errorRate
	if s.errorDebt >= 1-1e-9 {
		s.errorDebt--
		return s.errorCode, true
	}
	return 0, false
}

// public renders the state as GET /admin/faults reports it.
func (s faultState) public(now time.Time) Faults {
	f := Faults{
		ErrorRate:        s.errorRate,
		MetricsMalformed: s.metricsMalformed,
		MetricsDown:      s.metricsDown,
		DropMetrics:      slices.Clone(s.dropMetrics),
		Unhealthy:        s.unhealthy,
	}
	if s.slowdown > 1 {
		f.Slowdown = s.slowdown
	}
	if s.errorRate > 0 {
		f.ErrorCode = s.errorCode
	}
	if on, until := s.stalled(now); on {
		if until.IsZero() {
			f.Stall = "forever"
		} else {
			f.Stall = until.Sub(now).Round(time.Millisecond).String()
		}
	}
	if s.metricsDelay > 0 {
		f.MetricsDelay = s.metricsDelay.String()
	}
	return f
}

// FaultFlag is one `--fault [REPLICA:]KEY=VALUE` flag: a fault for one
// replica (by index) or, without the prefix, for all.
type FaultFlag struct {
	// Replica is the replica index, or -1 for all replicas.
	Replica int
	Key     string
	Value   string
}

// ParseFaultFlag parses `[REPLICA:]KEY=VALUE`, e.g. "slowdown=2",
// "1:error_rate=0.1" or "drop_metrics=vllm:kv_cache_usage_perc".
func ParseFaultFlag(s string) (FaultFlag, error) {
	key, value, ok := strings.Cut(s, "=")
	if !ok {
		return FaultFlag{}, fmt.Errorf("fault %q: want [REPLICA:]KEY=VALUE, e.g. slowdown=2 or 1:error_rate=0.1", s)
	}
	ff := FaultFlag{Replica: -1, Key: strings.TrimSpace(key), Value: value}
	if idx, k, ok := strings.Cut(ff.Key, ":"); ok {
		n, err := strconv.Atoi(idx)
		if err != nil || n < 0 {
			return FaultFlag{}, fmt.Errorf("fault %q: replica %q is not an index ≥ 0", s, idx)
		}
		ff.Replica, ff.Key = n, k
	}
	// Check the key and value now, so a bad flag fails before anything starts.
	var p FaultPatch
	if err := p.Set(ff.Key, ff.Value); err != nil {
		return FaultFlag{}, err
	}
	if _, err := healthyFaults().apply(p, time.Now()); err != nil {
		return FaultFlag{}, err
	}
	return ff, nil
}

// patchFor folds the flags that apply to replica i into one patch.
func patchFor(flags []FaultFlag, i int) (FaultPatch, error) {
	var p FaultPatch
	for _, f := range flags {
		if f.Replica != -1 && f.Replica != i {
			continue
		}
		if err := p.Set(f.Key, f.Value); err != nil {
			return FaultPatch{}, err
		}
	}
	return p, nil
}

var errRestarted = errors.New("the replica restarted (fault restart); the request was lost")
