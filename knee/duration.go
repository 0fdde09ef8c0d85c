package knee

import (
	"fmt"
	"time"
)

// Duration is a time.Duration written as Go duration text ("500ms", "1.5s")
// in YAML and JSON, so profiles stay readable.
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// Seconds returns the value in seconds.
func (d Duration) Seconds() float64 { return time.Duration(d).Seconds() }

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("invalid duration %q (want e.g. 500ms, 1.5s)", b)
	}
	*d = Duration(v)
	return nil
}
